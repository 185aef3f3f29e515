// adminkey.test.mjs - the first start's admin key when stdout is not a
// terminal (a service manager, a pipe into a log collector): it is written to
// a file only shortd's user can read, beside the database (on a shared store
// beside the node's journal), and only that file's path is logged.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { BIN, PG_MODE, api, freePort, it, poll, sqliteOnlyReason, startServer, tempDir } from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer();
});

after(async () => {
    if (srv) await srv.stop();
});

it('a first start on a pipe puts the admin key in a 0600 file beside the store, never in its output', async () => {
    const expected = PG_MODE ? `${srv.journal}.admin-key` : `${srv.db}.admin-key`;
    assert.equal(srv.adminKeyFile, expected, 'the key file is not where the README says');
    const st = fs.statSync(srv.adminKeyFile);
    assert.equal(st.mode & 0o777, 0o600, `the key file has mode ${(st.mode & 0o777).toString(8)}`);
    assert.equal(st.uid, process.getuid(), 'the key file belongs to another user');
    assert.match(srv.adminKey, /^sk_[0-9A-Za-z]{20,}$/);
    assert.ok(!srv.stdout().includes(srv.adminKey), `stdout holds the admin key:\n${srv.stdout()}`);
    assert.ok(!srv.stderr().includes(srv.adminKey), `the log holds the admin key:\n${srv.stderr()}`);
    assert.ok(srv.stderr().includes(srv.adminKeyFile), `the log does not say where the key is:\n${srv.stderr()}`);

    const r = await api(srv, 'GET', '/api/links', { key: srv.adminKey });
    assert.equal(r.status, 200, `the key from the file does not work: ${r.text}`);
    const all = await api(srv, 'GET', '/api/admin/blocklist', { key: srv.adminKey });
    assert.equal(all.status, 200, `the key from the file is not an admin key: ${all.text}`);
});

it('a restart makes no new key and leaves the file alone', async () => {
    const before = fs.readFileSync(srv.adminKeyFile, 'utf8');
    await srv.stop();
    fs.unlinkSync(srv.adminKeyFile);
    await srv.restart();    // the harness asserts no key line and no key file path in this run's output
    assert.ok(!fs.existsSync(srv.adminKeyFile), 'a restart wrote a key file again');
    const r = await api(srv, 'GET', '/api/links', { key: before.trim() });
    assert.equal(r.status, 200, `the first key stopped working after a restart: ${r.text}`);
});

it('on a terminal the first start prints the key and writes no file', async () => {
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
        const line = await poll(() => out.split('\n').find((l) => /admin key \(shown once, keep it\): sk_/.test(l)),
            { timeoutMs: 20_000 });
        assert.ok(line, `no key printed on the terminal:\n${out}`);
        const key = line.trim().split(/\s+/).pop();
        const srvLike = { url: `http://127.0.0.1:${port}` };
        // The key is printed just before the listener is up.
        const r = await poll(() => api(srvLike, 'GET', '/api/links', { key }).catch(() => null), { timeoutMs: 20_000 });
        assert.equal(r && r.status, 200, r && r.text);
        assert.ok(!fs.existsSync(`${db}.admin-key`), 'a terminal start wrote the key file too');
    } finally {
        const pid = Number(fs.readFileSync(pidFile, 'utf8'));
        process.kill(pid, 'SIGTERM');
    }
    assert.equal(await exit, 0, `the server did not exit cleanly:\n${out}`);
}, { skip: sqliteOnlyReason('a SQLite file of its own') });
