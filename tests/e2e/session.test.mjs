// session.test.mjs - signing in to the dashboard (POST/GET/DELETE
// /api/session): the cookie's flags, a session acting as its user's role
// (admin, member's own links, viewer refused every write), CSRF refused from
// another site and without the token, sign-out and `user disable` ending it,
// the idle expiry with a short setting, failed sign-ins under the `auth` rate
// limit, and bearer keys working as before. Runs on PostgreSQL too.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before } from 'node:test';

import { PG_MODE, api, cli, createLink, it, poll, sleep, startServer } from './harness.mjs';

/* One value from a server's store, by SQL. */
function storeValue(server, sql) {
    const r = PG_MODE
        ? spawnSync('psql', ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', server.db, '-c', sql], { encoding: 'utf8' })
        : spawnSync('sqlite3', [server.db, sql], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${sql}: ${r.stderr}`);
    return r.stdout.trim();
}

let srv;

before(async () => {
    srv = await startServer({ baseUrl: 'https://sho.rt' });
    for (const [name, role] of [['ada', 'admin'], ['mel', 'member'], ['val', 'viewer'], ['dee', 'member']]) {
        const r = cli(['user', 'create', name, '--role', role, '--db', srv.db], { input: `${name}-password\n` });
        assert.equal(r.code, 0, r.stderr);
    }
});

after(async () => {
    if (srv) await srv.stop();
});

/* Signs in: {status, cookie (name=value), setCookie (the header), json}. */
async function signIn(server, name, password, headers = {}) {
    const r = await api(server, 'POST', '/api/session', { body: { name, password }, headers });
    const setCookie = r.headers.get('set-cookie') || '';
    return { ...r, setCookie, cookie: setCookie.split(';')[0] };
}

/* A request as a browser page of this site makes it. */
function asPage(s, extra = {}) {
    return { cookie: s.cookie, 'sec-fetch-site': 'same-origin', 'x-csrf-token': s.json.csrf_token, ...extra };
}

it('a sign-in sets an HttpOnly, SameSite=Strict, Secure cookie and says who is signed in', async () => {
    const s = await signIn(srv, 'mel', 'mel-password');
    assert.equal(s.status, 200, s.text);
    assert.match(s.setCookie, /^shortd_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=604800; HttpOnly; SameSite=Strict; Secure$/);
    assert.equal(s.headers.get('cache-control'), 'no-store');
    assert.equal(s.json.name, 'mel');
    assert.equal(s.json.role, 'member');
    assert.match(s.json.csrf_token, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(!s.text.includes(s.cookie.split('=')[1]), 'the token is in the body');
    const me = await api(srv, 'GET', '/api/session', { headers: { cookie: s.cookie } });
    assert.equal(me.status, 200, me.text);
    assert.deepEqual(me.json, s.json);
    // Without https, no Secure flag.
    const plain = await startServer();
    try {
        assert.equal(cli(['user', 'create', 'pat', '--db', plain.db], { input: 'pat-password\n' }).code, 0);
        const p = await signIn(plain, 'pat', 'pat-password');
        assert.equal(p.status, 200, p.text);
        assert.ok(!/Secure/.test(p.setCookie), p.setCookie);
    } finally {
        await plain.stop();
    }
});

it('wrong names and passwords are refused alike; a bad body says what is wrong', async () => {
    for (const [name, pw] of [['mel', 'wrong-password'], ['nobody', 'mel-password'], ['MEL', 'mel-password']]) {
        const r = await signIn(srv, name, pw);
        assert.equal(r.status, 401, r.text);
        assert.equal(r.json.error.code, 'invalid_credentials');
        assert.equal(r.setCookie, '');
    }
    // Another site's page may not sign a browser in (login CSRF); a script may.
    for (const headers of [{ 'sec-fetch-site': 'cross-site' }, { origin: 'https://evil.example' }]) {
        const r = await signIn(srv, 'mel', 'mel-password', headers);
        assert.equal(r.status, 403, `${JSON.stringify(headers)}: ${r.text}`);
        assert.equal(r.json.error.code, 'csrf');
        assert.equal(r.setCookie, '');
    }
    assert.equal((await signIn(srv, 'mel', 'mel-password', { 'sec-fetch-site': 'same-origin' })).status, 200);
    const bad = await api(srv, 'POST', '/api/session', { body: { name: 'mel' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.field, 'password');
    const none = await api(srv, 'GET', '/api/session', { headers: { cookie: 'shortd_session=' + 'A'.repeat(43) } });
    assert.equal(none.status, 401);
    assert.equal(none.json.error.code, 'session_ended');
});

it('a member acts on their own links; an admin on every link; a viewer only reads', async () => {
    const mel = await signIn(srv, 'mel', 'mel-password');
    const ada = await signIn(srv, 'ada', 'ada-password');
    const val = await signIn(srv, 'val', 'val-password');
    const made = await api(srv, 'POST', '/api/links', { body: { url: 'https://example.com/mel' }, headers: asPage(mel) });
    assert.equal(made.status, 201, made.text);
    const code = made.json.code;
    const other = await createLink(srv, srv.adminKey, { url: 'https://example.com/admin-key' });
    // The member sees their link, not the admin key's.
    assert.equal((await api(srv, 'GET', `/api/links/${code}`, { headers: { cookie: mel.cookie } })).status, 200);
    assert.equal((await api(srv, 'GET', `/api/links/${other.code}`, { headers: { cookie: mel.cookie } })).status, 404);
    assert.equal((await api(srv, 'GET', '/api/admin/blocklist', { headers: { cookie: mel.cookie } })).status, 403);
    // The admin user sees both and may use admin routes.
    assert.equal((await api(srv, 'GET', `/api/links/${code}`, { headers: { cookie: ada.cookie } })).status, 200);
    assert.equal((await api(srv, 'GET', `/api/links/${other.code}`, { headers: { cookie: ada.cookie } })).status, 200);
    const block = await api(srv, 'POST', '/api/admin/blocklist', { body: { host: 'evil.example' }, headers: asPage(ada) });
    assert.equal(block.status, 201, block.text);
    // The viewer reads (as a member: no links of its own) and may change nothing.
    assert.equal((await api(srv, 'GET', '/api/links', { headers: { cookie: val.cookie } })).status, 200);
    for (const [m, p, body] of [['POST', '/api/links', { url: 'https://example.com/v' }],
        ['PATCH', `/api/links/${code}`, { title: 'x' }], ['DELETE', `/api/links/${code}`, undefined]]) {
        const r = await api(srv, m, p, { body, headers: asPage(val) });
        assert.equal(r.status, 403, `${m} ${p}: ${r.text}`);
        assert.equal(r.json.error.code, 'forbidden');
    }
    const after1 = await api(srv, 'GET', `/api/links/${code}`, { headers: { cookie: mel.cookie } });
    assert.equal(after1.json.title ?? null, null);
    // Bearer keys are unchanged, and need no CSRF token.
    const k = await api(srv, 'POST', '/api/links', { key: srv.adminKey, body: { url: 'https://example.com/k' } });
    assert.equal(k.status, 201, k.text);
});

it('a cookie write without the CSRF token, or from another site, is refused and changes nothing', async () => {
    const mel = await signIn(srv, 'mel', 'mel-password');
    const count = async () => (await api(srv, 'GET', '/api/links?limit=100', { headers: { cookie: mel.cookie } })).json.length;
    const before1 = await count();
    const tries = [
        { cookie: mel.cookie, 'sec-fetch-site': 'same-origin' },                              // no token
        { cookie: mel.cookie, 'sec-fetch-site': 'same-origin', 'x-csrf-token': 'B'.repeat(43) }, // a wrong one
        asPage(mel, { 'sec-fetch-site': 'cross-site' }),                                         // another site
        asPage(mel, { 'sec-fetch-site': 'same-site' }),                                          // a sibling host
        { cookie: mel.cookie, origin: 'https://evil.example', 'x-csrf-token': mel.json.csrf_token },
        { cookie: mel.cookie, 'x-csrf-token': mel.json.csrf_token },                             // no origin at all
    ];
    for (const headers of tries) {
        const r = await api(srv, 'POST', '/api/links', { body: { url: 'https://example.com/csrf' }, headers });
        assert.equal(r.status, 403, `${JSON.stringify(headers)}: ${r.text}`);
        assert.equal(r.json.error.code, 'csrf');
    }
    assert.equal(await count(), before1);
    // An Origin of this very host is the site's own.
    const host = new URL(srv.url).host;
    const ok = await api(srv, 'POST', '/api/links', { body: { url: 'https://example.com/own' },
        headers: { cookie: mel.cookie, origin: `http://${host}`, 'x-csrf-token': mel.json.csrf_token } });
    assert.equal(ok.status, 201, ok.text);
});

it('sign-out and user disable end the session; a new password ends the old ones', async () => {
    const a = await signIn(srv, 'dee', 'dee-password');
    const b = await signIn(srv, 'dee', 'dee-password');
    const out = await api(srv, 'DELETE', '/api/session', { headers: asPage(a) });
    assert.equal(out.status, 204, out.text);
    assert.match(out.headers.get('set-cookie'), /^shortd_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Strict/);
    assert.equal((await api(srv, 'GET', '/api/session', { headers: { cookie: a.cookie } })).status, 401);
    assert.equal((await api(srv, 'GET', '/api/session', { headers: { cookie: b.cookie } })).status, 200);
    // Signing out is a write: another site cannot sign a user out either.
    const forged = await api(srv, 'DELETE', '/api/session', { headers: { cookie: b.cookie, 'sec-fetch-site': 'cross-site' } });
    assert.equal(forged.status, 403);
    assert.equal(cli(['user', 'set-password', 'dee', '--db', srv.db], { input: 'dee-password-2\n' }).code, 0);
    assert.equal((await api(srv, 'GET', '/api/session', { headers: { cookie: b.cookie } })).status, 401);
    assert.equal((await signIn(srv, 'dee', 'dee-password')).status, 401);
    const c = await signIn(srv, 'dee', 'dee-password-2');
    assert.equal(c.status, 200);
    assert.equal(cli(['user', 'disable', 'dee', '--db', srv.db]).code, 0);
    assert.equal((await api(srv, 'GET', '/api/session', { headers: { cookie: c.cookie } })).status, 401);
    assert.equal((await signIn(srv, 'dee', 'dee-password-2')).status, 401);
    // A viewer may sign out.
    const v = await signIn(srv, 'val', 'val-password');
    assert.equal((await api(srv, 'DELETE', '/api/session', { headers: asPage(v) })).status, 204);
});

it('a session unused for session-idle ends, and the sweeper removes it; one in use goes on', async () => {
    const s = await startServer({ args: ['--session-idle', '2', '--sweep-interval', '1'] });
    try {
        assert.equal(cli(['user', 'create', 'ida', '--db', s.db], { input: 'ida-password\n' }).code, 0);
        const used = await signIn(s, 'ida', 'ida-password');
        const idle = await signIn(s, 'ida', 'ida-password');
        for (let i = 0; i < 6; i++) {
            await sleep(500);
            const r = await api(s, 'GET', '/api/session', { headers: { cookie: used.cookie } });
            assert.equal(r.status, 200, `after ${(i + 1) * 500} ms: ${r.text}`);
        }
        const r = await api(s, 'GET', '/api/session', { headers: { cookie: idle.cookie } });
        assert.equal(r.status, 401, r.text);
        assert.equal(r.json.error.code, 'session_ended');
        // The store keeps only the session in use, and a keyed hash of it.
        assert.ok(await poll(() => storeValue(s, 'SELECT count(*) FROM sessions') === '1'), 'the idle session was not swept');
        await sleep(2500);
        assert.ok(await poll(() => storeValue(s, 'SELECT count(*) FROM sessions') === '0'), 'the last session was not swept');
    } finally {
        await s.stop();
    }
});

it('failed sign-ins count against the auth rate limit, then 429 even for the right password', async () => {
    const s = await startServer({ args: ['--rate-auth', '3/3600'] });
    try {
        assert.equal(cli(['user', 'create', 'rae', '--db', s.db], { input: 'rae-password\n' }).code, 0);
        assert.equal((await signIn(s, 'rae', 'rae-password')).status, 200); // a success is not counted
        for (let i = 0; i < 3; i++) assert.equal((await signIn(s, 'rae', `wrong-${i}-password`)).status, 401);
        const over = await signIn(s, 'rae', 'rae-password');
        assert.equal(over.status, 429, over.text);
        assert.ok(Number(over.headers.get('retry-after')) > 0);
        assert.equal(over.setCookie, '');
    } finally {
        await s.stop();
    }
});
