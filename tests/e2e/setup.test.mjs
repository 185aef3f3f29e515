// setup.test.mjs - the first start of an empty store: instead of a long-lived
// admin key it offers a one-time setup URL (BASE/setup?token=...), printed on
// a terminal, otherwise written to a 0600 file beside the store (on a shared
// store beside the node's journal) whose path alone is logged. The token
// opens POST /api/setup once, within an hour, to make the first admin
// account (signed in at once); a used, replaced or expired token is refused;
// a restart before use makes a new one; a store that is not empty (a script
// ran `shortd key create --admin` first) gets none. Runs on PostgreSQL too.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { BIN, PG_MODE, api, cli, freePort, it, poll, sqliteOnlyReason, startServer, tempDir } from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer({ firstStart: true });
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

/* One value from a server's store, by SQL. */
function storeValue(server, sql) {
    const r = PG_MODE
        ? spawnSync('psql', ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', server.db, '-c', sql], { encoding: 'utf8' })
        : spawnSync('sqlite3', [server.db, sql], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${sql}: ${r.stderr}`);
    return r.stdout.trim();
}

/* POST /api/setup as the setup page sends it. */
function setup(server, body, headers = { 'sec-fetch-site': 'same-origin' }) {
    return api(server, 'POST', '/api/setup', { body, headers });
}

const check = (server, token) => api(server, 'GET', `/api/setup?token=${encodeURIComponent(token)}`);

it('a first start on a pipe puts the setup URL in a 0600 file beside the store, never in its output', async () => {
    const expected = PG_MODE ? `${srv.journal}.setup-url` : `${srv.db}.setup-url`;
    assert.equal(srv.setupFile, expected, 'the setup file is not where the README says');
    const st = fs.statSync(srv.setupFile);
    assert.equal(st.mode & 0o777, 0o600, `the setup file has mode ${(st.mode & 0o777).toString(8)}`);
    assert.equal(st.uid, process.getuid(), 'the setup file belongs to another user');
    assert.ok(srv.setupUrl.startsWith(`${srv.url}/setup?token=`), srv.setupUrl);
    assert.match(srv.setupToken, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(!srv.stdout().includes(srv.setupToken), `stdout holds the token:\n${srv.stdout()}`);
    assert.ok(!srv.stderr().includes(srv.setupToken), `the log holds the token:\n${srv.stderr()}`);
    assert.ok(srv.stderr().includes(srv.setupFile), `the log does not say where the URL is:\n${srv.stderr()}`);
    // No API key was made, and the store keeps only a hash of the token.
    assert.equal(storeValue(srv, 'SELECT count(*) FROM api_keys'), '0');
    assert.equal(storeValue(srv, 'SELECT count(*) FROM setup_token'), '1');
    const stored = storeValue(srv, PG_MODE ? "SELECT encode(hash, 'hex') FROM setup_token" : 'SELECT hex(hash) FROM setup_token');
    assert.ok(!stored.toLowerCase().includes(Buffer.from(srv.setupToken).toString('hex')), 'the token is stored in clear');
    // The page is the dashboard's, under its strict CSP.
    const page = await api(srv, 'GET', `/setup?token=${srv.setupToken}`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy'), /script-src 'self'/);
    assert.equal((await check(srv, srv.setupToken)).status, 200);
});

it('bad input and a wrong token are refused with the reason, and leave the token usable', async () => {
    const wrong = await setup(srv, { token: 'x'.repeat(43), name: 'root', password: 'long-enough-1' });
    assert.equal(wrong.status, 401, wrong.text);
    assert.equal(wrong.json.error.code, 'invalid_setup_token');
    assert.match(wrong.json.error.message, /unknown, used or expired/);
    assert.equal((await check(srv, 'nope')).status, 401);
    const short = await setup(srv, { token: srv.setupToken, name: 'root', password: 'short' });
    assert.equal(short.status, 400, short.text);
    assert.equal(short.json.error.field, 'password');
    const badName = await setup(srv, { token: srv.setupToken, name: 'Root Admin', password: 'long-enough-1' });
    assert.equal(badName.status, 400, badName.text);
    assert.equal(badName.json.error.field, 'name');
    // Another site's page cannot make the account (and sign the browser in to it).
    const forged = await setup(srv, { token: srv.setupToken, name: 'root', password: 'long-enough-1' },
        { 'sec-fetch-site': 'cross-site' });
    assert.equal(forged.status, 403, forged.text);
    assert.equal(storeValue(srv, 'SELECT count(*) FROM users'), '0');
    assert.equal((await check(srv, srv.setupToken)).status, 200);
});

it('the token makes the first admin, signed in at once, and then never works again', async () => {
    const r = await setup(srv, { token: srv.setupToken, name: 'root', password: 'long-enough-1' });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.name, 'root');
    assert.equal(r.json.role, 'admin');
    const cookie = (r.headers.get('set-cookie') || '').split(';')[0];
    assert.match(cookie, /^shortd_session=/);
    const me = await api(srv, 'GET', '/api/session', { headers: { cookie } });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.json.role, 'admin');
    assert.equal((await api(srv, 'GET', '/api/admin/blocklist', { headers: { cookie } })).status, 200);
    // Used: refused, as is a second account through it.
    const again = await setup(srv, { token: srv.setupToken, name: 'other', password: 'long-enough-2' });
    assert.equal(again.status, 409, again.text);
    assert.equal(again.json.error.code, 'setup_done');
    assert.equal((await check(srv, srv.setupToken)).status, 409);
    assert.equal(storeValue(srv, 'SELECT count(*) FROM setup_token'), '0');
    assert.equal(storeValue(srv, 'SELECT count(*) FROM users'), '1');
    // The account signs in with its password like any other.
    const s = await api(srv, 'POST', '/api/session', { body: { name: 'root', password: 'long-enough-1' } });
    assert.equal(s.status, 200, s.text);
});

it('a restart of a store that is set up offers no setup and removes the old file', async () => {
    await srv.stop();
    await srv.restart();    // the harness asserts no setup URL in this run's output
    assert.ok(!fs.existsSync(srv.setupFile), 'the used setup URL file is still there');
    await srv.stop();
});

it('a restart before use makes a new token; the old one stops working; one past its hour is refused', async () => {
    const s = await startServer({ firstStart: true });
    try {
        const first = s.setupToken;
        await s.stop();
        await s.restart({ expectSetup: true });
        assert.notEqual(s.setupToken, first);
        const old = await check(s, first);
        assert.equal(old.status, 401, old.text);
        assert.equal((await check(s, s.setupToken)).status, 200);
        // An hour later (the stored expiry moved into the past): refused.
        storeValue(s, `UPDATE setup_token SET expires_at = ${Date.now() - 1000}`);
        const late = await setup(s, { token: s.setupToken, name: 'late', password: 'long-enough-1' });
        assert.equal(late.status, 401, late.text);
        assert.equal(late.json.error.code, 'invalid_setup_token');
        assert.equal(storeValue(s, 'SELECT count(*) FROM users'), '0');
    } finally {
        if (s.running) await s.stop();
    }
});

it('a store given an admin key by a script before its first start offers no setup', async () => {
    const s = await startServer();    // the harness runs shortd key create --admin first
    try {
        assert.equal(s.setupUrl, null);
        assert.ok(!/setup URL|setup?token/.test(s.stderr()), s.stderr());
        assert.equal(storeValue(s, 'SELECT count(*) FROM setup_token'), '0');
        assert.equal((await api(s, 'GET', '/api/admin/blocklist', { key: s.adminKey })).status, 200);
        // No token opens setup on it, and user create needs none.
        assert.equal((await check(s, 'x'.repeat(43))).status, 401);
        const u = cli(['user', 'create', 'ops', '--role', 'admin', ...(PG_MODE ? ['--store', s.db] : ['--db', s.db])],
            { input: 'ops-password\n' });
        assert.equal(u.code, 0, u.stderr);
    } finally {
        await s.stop();
    }
});

it('on a terminal the first start prints the setup URL and writes no file', async () => {
    // util-linux script(1) gives the server a pseudo-terminal for stdout.
    const dir = tempDir();
    const db = path.join(dir, 'tty.db');
    const port = await freePort();
    const pidFile = path.join(dir, 'pid');
    const cmd = `echo $$ > '${pidFile}'; exec '${BIN}' serve --listen 127.0.0.1:${port} --db '${db}'`;
    const p = spawn('script', ['-qfec', cmd, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.setEncoding('utf8');
    p.stdout.on('data', (d) => { out += d; });
    const exit = new Promise((resolve) => p.on('close', (code) => resolve(code)));
    try {
        const line = await poll(() => out.split('\n').find((l) => /\/setup\?token=[A-Za-z0-9_-]{43}/.test(l)),
            { timeoutMs: 20_000 });
        assert.ok(line, `no setup URL printed on the terminal:\n${out}`);
        assert.match(out, /first admin account/);
        const token = /token=([A-Za-z0-9_-]{43})/.exec(line)[1];
        const srvLike = { url: `http://127.0.0.1:${port}` };
        // The URL is printed just before the listener is up.
        const r = await poll(() => check(srvLike, token).catch(() => null), { timeoutMs: 20_000 });
        assert.equal(r && r.status, 200, r && r.text);
        const made = await setup(srvLike, { token, name: 'tty', password: 'long-enough-1' });
        assert.equal(made.status, 201, made.text);
        assert.ok(!fs.existsSync(`${db}.setup-url`), 'a terminal start wrote the setup file too');
    } finally {
        const pid = Number(fs.readFileSync(pidFile, 'utf8'));
        process.kill(pid, 'SIGTERM');
    }
    assert.equal(await exit, 0, `the server did not exit cleanly:\n${out}`);
}, { skip: sqliteOnlyReason('a SQLite file of its own') });

it('on a shared store, the setup URL of the node started last opens setup through every node', async () => {
    const a = await startServer({ firstStart: true });
    const journal = path.join(tempDir(), 'journal');
    const b = await startServer({ db: path.join(tempDir(), 'unused.db'), args: ['--store', a.store, '--journal', journal] });
    try {
        // b's start found the store still empty: its token replaced a's.
        const file = `${journal}.setup-url`;
        const url = await poll(() => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : null), { timeoutMs: 5000 });
        assert.ok(url, `node b wrote no setup URL\n${b.stderr()}`);
        const token = new URL(url).searchParams.get('token');
        assert.equal((await check(a, a.setupToken)).status, 401, 'the token of the node started first still works');
        assert.equal((await check(a, token)).status, 200, 'node a refuses node b\'s token');
        const made = await setup(a, { token, name: 'root', password: 'long-enough-1' });
        assert.equal(made.status, 201, made.text);
        // Spent on both nodes; the account signs in on either.
        assert.equal((await check(b, token)).status, 409);
        const s = await api(b, 'POST', '/api/session', { body: { name: 'root', password: 'long-enough-1' } });
        assert.equal(s.status, 200, s.text);
    } finally {
        await b.stop();
        await a.stop();
    }
}, { skip: PG_MODE ? false : 'a shared store: PostgreSQL mode (SHORTD_E2E_STORE=pg)' });
