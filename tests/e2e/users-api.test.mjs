// users-api.test.mjs - /api/users, the dashboard's Users page's API: an
// admin (a session or an admin key) lists users with their role and last
// sign-in, makes one, changes a role, disables and enables, resets a
// password; a member, a viewer and a plain key are refused; a disabled
// user's session and API keys stop at once; an admin cannot lock themselves
// out; bad input says what is wrong and where. Runs on PostgreSQL too.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { RFC3339, api, cli, createKey, it, startServer } from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer();
    for (const [name, role] of [['ada', 'admin'], ['mel', 'member'], ['val', 'viewer'], ['dee', 'member']]) {
        const r = cli(['user', 'create', name, '--role', role, '--db', srv.db], { input: `${name}-password\n` });
        assert.equal(r.code, 0, r.stderr);
    }
});

after(async () => {
    if (srv) await srv.stop();
});

async function signIn(name, password = `${name}-password`) {
    const r = await api(srv, 'POST', '/api/session', { body: { name, password } });
    const cookie = (r.headers.get('set-cookie') || '').split(';')[0];
    return { status: r.status, cookie, csrf: r.json && r.json.csrf_token, json: r.json };
}

/* A request as a page of this site makes it, signed in as 's'. */
function as(s, method, path, body) {
    const headers = { cookie: s.cookie };
    if (method !== 'GET') Object.assign(headers, { 'sec-fetch-site': 'same-origin', 'x-csrf-token': s.csrf });
    return api(srv, method, path, { body, headers });
}

const idOf = async (s, name) => (await as(s, 'GET', '/api/users')).json.users.find((u) => u.name === name).id;

it('an admin lists users with role, state and last sign-in; never a password hash', async () => {
    const ada = await signIn('ada');
    const r = await as(ada, 'GET', '/api/users');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('cache-control'), 'no-store');
    const byName = Object.fromEntries(r.json.users.map((u) => [u.name, u]));
    assert.deepEqual(Object.keys(byName).sort(), ['ada', 'dee', 'mel', 'val']);
    assert.equal(byName.mel.role, 'member');
    assert.equal(byName.val.role, 'viewer');
    assert.equal(byName.val.disabled, false);
    assert.match(byName.ada.last_signin_at, RFC3339);
    assert.ok(Date.now() - Date.parse(byName.ada.last_signin_at) < 60_000, byName.ada.last_signin_at);
    assert.equal(byName.val.last_signin_at, null);
    assert.ok(!/argon2|pwhash/i.test(r.text), r.text);
    // An admin key may too.
    assert.equal((await api(srv, 'GET', '/api/users', { key: srv.adminKey })).status, 200);
});

it('members, viewers and plain keys are refused every users route', async () => {
    const mel = await signIn('mel');
    const val = await signIn('val');
    const key = createKey(srv, 'plain');
    for (const who of [mel, val]) {
        assert.equal((await as(who, 'GET', '/api/users')).status, 403);
        assert.equal((await as(who, 'POST', '/api/users', { name: 'x', password: 'long-enough-1' })).status, 403);
        assert.equal((await as(who, 'PATCH', '/api/users/1', { role: 'admin' })).status, 403);
    }
    assert.equal((await api(srv, 'GET', '/api/users', { key })).status, 403);
    const me = await as(mel, 'GET', '/api/session');
    assert.equal(me.json.role, 'member');   // unchanged by the attempt
});

it('an admin makes a user who can sign in; bad input names the field', async () => {
    const ada = await signIn('ada');
    const made = await as(ada, 'POST', '/api/users', { name: 'newbie', password: 'newbie-password', role: 'viewer' });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.json.role, 'viewer');
    assert.equal((await signIn('newbie')).status, 200);
    const dup = await as(ada, 'POST', '/api/users', { name: 'newbie', password: 'newbie-password' });
    assert.equal(dup.status, 409, dup.text);
    for (const [body, field] of [
        [{ name: 'Bad Name', password: 'long-enough-1' }, 'name'],
        [{ name: 'ok', password: 'short' }, 'password'],
        [{ name: 'ok', password: 'long-enough-1', role: 'owner' }, 'role'],
        [{ name: 'ok', password: 'long-enough-1', colour: 'red' }, 'colour'],
    ]) {
        const r = await as(ada, 'POST', '/api/users', body);
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
        assert.equal(r.json.error.field, field, r.text);
    }
    const none = await as(ada, 'PATCH', '/api/users/999999', { role: 'viewer' });
    assert.equal(none.status, 404, none.text);
});

it('a role change holds at once, for the session and the keys of the user', async () => {
    const ada = await signIn('ada');
    const mel = await signIn('mel');
    const key = await as(mel, 'POST', '/api/keys', { name: 'mel-script' });
    assert.equal(key.status, 201, key.text);
    const write = () => api(srv, 'POST', '/api/links', { key: key.json.key, body: { url: 'https://example.com/mel' } });
    assert.equal((await write()).status, 201);
    const id = await idOf(ada, 'mel');
    const r = await as(ada, 'PATCH', `/api/users/${id}`, { role: 'viewer' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.role, 'viewer');
    assert.equal((await as(mel, 'GET', '/api/session')).json.role, 'viewer');
    assert.equal((await as(mel, 'POST', '/api/links', { url: 'https://example.com/v' })).status, 403);
    assert.equal((await write()).status, 403, 'the key still writes as a member');
    assert.equal((await as(ada, 'PATCH', `/api/users/${id}`, { role: 'member' })).status, 200);
    assert.equal((await write()).status, 201);
});

it('disabling ends the user\'s sessions and stops their keys at once; enabling lets them sign in again', async () => {
    const ada = await signIn('ada');
    const dee = await signIn('dee');
    const key = await as(dee, 'POST', '/api/keys', { name: 'dee-read' });
    assert.equal(key.status, 201, key.text);
    assert.equal((await api(srv, 'GET', '/api/links', { key: key.json.key })).status, 200);
    const id = await idOf(ada, 'dee');
    const r = await as(ada, 'PATCH', `/api/users/${id}`, { disabled: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.disabled, true);
    assert.match(r.json.disabled_at, RFC3339);
    assert.equal((await as(dee, 'GET', '/api/session')).status, 401);
    assert.equal((await api(srv, 'GET', '/api/links', { key: key.json.key })).status, 401);
    assert.equal((await signIn('dee')).status, 401);
    const back = await as(ada, 'PATCH', `/api/users/${id}`, { disabled: false });
    assert.equal(back.status, 200, back.text);
    assert.equal(back.json.disabled_at, null);
    assert.equal((await signIn('dee')).status, 200);
});

it('a password reset by an admin ends the user\'s sessions; the new password signs in', async () => {
    const ada = await signIn('ada');
    const mel = await signIn('mel');
    const id = await idOf(ada, 'mel');
    const r = await as(ada, 'PATCH', `/api/users/${id}`, { password: 'mel-new-password' });
    assert.equal(r.status, 200, r.text);
    assert.equal((await as(mel, 'GET', '/api/session')).status, 401);
    assert.equal((await signIn('mel')).status, 401);
    assert.equal((await signIn('mel', 'mel-new-password')).status, 200);
    const bad = await as(ada, 'PATCH', `/api/users/${id}`, { password: 'x' });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.error.field, 'password');
});

it('an admin cannot disable themselves or give up their own admin role', async () => {
    const ada = await signIn('ada');
    const id = await idOf(ada, 'ada');
    for (const body of [{ disabled: true }, { role: 'member' }]) {
        const r = await as(ada, 'PATCH', `/api/users/${id}`, body);
        assert.equal(r.status, 409, `${JSON.stringify(body)}: ${r.text}`);
        assert.match(r.json.error.message, /another admin/);
    }
    assert.equal((await as(ada, 'GET', '/api/session')).json.role, 'admin');
    for (const [body, field] of [[{}, null], [{ disabled: 'yes' }, 'disabled'], [{ role: 'root' }, 'role']]) {
        const r = await as(ada, 'PATCH', `/api/users/${id}`, body);
        assert.equal(r.status, 400, r.text);
        assert.equal(r.json.error.field ?? null, field, r.text);
    }
});
