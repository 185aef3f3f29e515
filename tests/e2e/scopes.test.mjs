// scopes.test.mjs - API keys' scopes, domain limit, revocation and last use,
// against the real binary: a links:read key is refused a create (403)
// through shortd's API and each compatible one (plain fetch, each API's own
// way of carrying the key); a key limited to a domain creates there alone
// and sees no other link; a key revoked through the API is refused by the
// running server at once; a key's last use shows; keys made before scopes
// (no scopes stored) keep every right. Runs on PostgreSQL too
// (SHORTD_E2E_STORE=pg).

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, cli, createKey, errorOf, it, poll, startServer, unique } from './harness.mjs';

let srv;
let admin;
let owner;

before(async () => {
    srv = await startServer();
    admin = srv.adminKey;
    owner = createKey(srv, unique('owner'));
});

after(async () => {
    if (srv) await srv.stop();
});

/* A key made through POST /api/keys by 'maker'; returns the answer's JSON. */
async function makeKey(maker, body) {
    const r = await api(srv, 'POST', '/api/keys', { key: maker, body });
    assert.equal(r.status, 201, r.text);
    assert.match(r.json.key, /^sk_/);
    return r.json;
}

it('a links:read key reads and cannot create through shortd\'s API (403)', async () => {
    const k = await makeKey(admin, { name: unique('reader'), scopes: ['links:read'] });
    assert.deepEqual(k.scopes, ['links:read']);
    assert.equal((await api(srv, 'GET', '/api/links', { key: k.key })).status, 200);
    const r = await api(srv, 'POST', '/api/links', { key: k.key, body: { url: 'https://example.com/r' } });
    assert.equal(r.status, 403, r.text);
    const e = errorOf(r);
    assert.equal(e.code, 'forbidden');
    assert.match(e.message, /links:write/);
    assert.equal((await api(srv, 'GET', '/api/stats', { key: k.key })).status, 403);
});

it('a links:read key cannot create through YOURLS, Kutt, Bitly or Shlink (403 in each shape)', async () => {
    const { key } = await makeKey(admin, { name: unique('reader'), scopes: ['links:read'] });
    const long = encodeURIComponent('https://example.com/compat');
    // YOURLS: the key as its signature.
    let r = await api(srv, 'GET', `/yourls-api.php?action=shorturl&format=json&url=${long}&signature=${key}`);
    assert.equal(r.status, 403, r.text);
    r = await api(srv, 'GET', `/yourls-api.php?action=expand&format=json&shorturl=nope&signature=${key}`);
    assert.notEqual(r.status, 403, r.text); // reading is within its scope
    // Kutt: X-API-KEY.
    r = await api(srv, 'POST', '/api/v2/links', {
        headers: { 'x-api-key': key }, body: { target: 'https://example.com/kutt' },
    });
    assert.equal(r.status, 403, r.text);
    assert.equal(typeof r.json.error, 'string');
    assert.equal((await api(srv, 'GET', '/api/v2/links', { headers: { 'x-api-key': key } })).status, 200);
    // Bitly: a bearer token.
    r = await api(srv, 'POST', '/v4/shorten', { key, body: { long_url: 'https://example.com/bitly' } });
    assert.equal(r.status, 403, r.text);
    assert.equal(typeof r.json.message, 'string');
    // Shlink: X-Api-Key, answers as RFC 7807 problems.
    r = await api(srv, 'POST', '/rest/v3/short-urls', {
        headers: { 'x-api-key': key }, body: { longUrl: 'https://example.com/shlink' },
    });
    assert.equal(r.status, 403, r.text);
    assert.equal(r.json.status, 403);
    assert.equal((await api(srv, 'GET', '/rest/v3/short-urls', { headers: { 'x-api-key': key } })).status, 200);
});

it('shortd key create --scopes and --domain: key list shows them', async () => {
    const name = unique('cli-reader');
    const r = cli(['key', 'create', '--db', srv.db, '--name', name, '--scopes', 'links:read,stats:read']);
    assert.equal(r.code, 0, r.stderr);
    const key = r.stdout.trim().split(/\s+/).pop();
    assert.equal((await api(srv, 'GET', '/api/stats', { key })).status, 200);
    const c = await api(srv, 'POST', '/api/links', { key, body: { url: 'https://example.com/cli' } });
    assert.equal(c.status, 403, c.text);
    const bad = cli(['key', 'create', '--db', srv.db, '--name', 'x', '--scopes', 'links:rw']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /links:rw/);
    const list = cli(['key', 'list', '--db', srv.db]).stdout;
    const line = list.split('\n').find((l) => l.split(/\s+/).includes(name));
    assert.ok(line, list);
    assert.match(line, /links:read,stats:read/);
});

it('a key limited to a domain creates there alone and sees no other link', async () => {
    const host = `${unique('go')}.example`;
    const other = `${unique('to')}.example`;
    for (const h of [host, other]) {
        const d = await api(srv, 'POST', '/api/domains', { key: owner, body: { host: h } });
        assert.equal(d.status, 201, d.text);
    }
    const mine = await api(srv, 'POST', '/api/links', { key: owner, body: { url: 'https://example.com/o', domain: other } });
    assert.equal(mine.status, 201, mine.text);
    const k = await makeKey(owner, { name: unique('limited'), domain: host });
    assert.equal(k.domain, host);
    let r = await api(srv, 'POST', '/api/links', { key: k.key, body: { url: 'https://example.com/l' } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.domain, host); // its domain by default
    r = await api(srv, 'POST', '/api/links', { key: k.key, body: { url: 'https://example.com/l2', domain: other } });
    assert.equal(r.status, 403, r.text);
    // The other domain's link is not there for it, to read or to edit.
    assert.equal((await api(srv, 'GET', `/api/links/${mine.json.code}`, { key: k.key })).status, 404);
    r = await api(srv, 'PATCH', `/api/links/${mine.json.code}`, { key: k.key, body: { title: 'x' } });
    assert.equal(r.status, 404, r.text);
    // Through Shlink too: another domain is refused.
    r = await api(srv, 'POST', '/rest/v3/short-urls', {
        headers: { 'x-api-key': k.key }, body: { longUrl: 'https://example.com/s', domain: other },
    });
    assert.ok(r.status >= 400 && r.status < 500, r.text);
    // Its keys are limited to the same domain.
    r = await api(srv, 'POST', '/api/keys', { key: k.key, body: { name: 'n', domain: other } });
    assert.equal(r.status, 403, r.text);
});

it('a key revoked through the API is refused by the running server at once', async () => {
    const k = await makeKey(admin, { name: unique('revoked'), scopes: ['links:read'] });
    assert.equal((await api(srv, 'GET', '/api/links', { key: k.key })).status, 200); // now held in the cache
    const d = await api(srv, 'DELETE', `/api/keys/${k.id}`, { key: admin });
    assert.equal(d.status, 204, d.text);
    assert.equal((await api(srv, 'GET', '/api/links', { key: k.key })).status, 401);
    const again = await api(srv, 'DELETE', `/api/keys/${k.id}`, { key: admin });
    assert.equal(again.status, 404, again.text);
    const listed = await api(srv, 'GET', '/api/keys', { key: admin });
    const row = listed.json.keys.find((x) => x.id === k.id);
    assert.ok(row && row.revoked_at, listed.text);
});

it('a key\'s last use shows after a request', async () => {
    const k = await makeKey(admin, { name: unique('used'), scopes: ['links:read'] });
    assert.equal(k.last_used_at, null);
    const before = Date.now();
    assert.equal((await api(srv, 'GET', '/api/links', { key: k.key })).status, 200);
    const row = await poll(async () => {
        const r = await api(srv, 'GET', '/api/keys', { key: k.key });
        const x = r.json.keys.find((y) => y.id === k.id);
        return x && x.last_used_at ? x : null;
    }, { timeoutMs: 5000 });
    assert.ok(row, 'no last use shown 5 s after a request');
    assert.ok(Date.parse(row.last_used_at) >= before - 1000, row.last_used_at);
    const list = cli(['key', 'list', '--db', srv.db]).stdout;
    const line = list.split('\n').find((l) => l.split(/\s+/).includes(k.name));
    assert.ok(line && /\d{4}-\d{2}-\d{2}T/.test(line.split(/\s+/)[6]), line);
});

it('keys made before scopes keep every right', async () => {
    // createKey and the first admin key are made as before: no scopes stored.
    const old = createKey(srv, unique('old'));
    const c = await api(srv, 'POST', '/api/links', { key: old, body: { url: 'https://example.com/old' } });
    assert.equal(c.status, 201, c.text);
    assert.equal((await api(srv, 'GET', '/api/links', { key: old })).status, 200);
    assert.equal((await api(srv, 'GET', `/api/links/${c.json.code}/stats`, { key: old })).status, 200);
    const r = await api(srv, 'GET', '/api/keys', { key: old });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.keys[0].scopes, ['links:read', 'links:write', 'stats:read']);
    assert.equal((await api(srv, 'GET', '/api/admin/blocklist', { key: admin })).status, 200);
    const a = await api(srv, 'GET', '/api/keys', { key: admin });
    const first = a.json.keys.find((x) => x.name === 'admin');
    assert.deepEqual(first.scopes, ['links:read', 'links:write', 'stats:read', 'admin']);
});

/* Signs in as 'name' (password NAME-password): the headers of a page of
 * this site, as a browser sends them. */
async function pageOf(name) {
    const r = await api(srv, 'POST', '/api/session', { body: { name, password: `${name}-password` } });
    assert.equal(r.status, 200, r.text);
    const cookie = (r.headers.get('set-cookie') || '').split(';')[0];
    return { cookie, 'sec-fetch-site': 'same-origin', 'x-csrf-token': r.json.csrf_token };
}

it('a user\'s key acts on the user\'s links, never beyond the role, and dies with the user', async () => {
    const name = unique('kim').replace(/[^a-z0-9]/g, '');
    const made = cli(['user', 'create', name, '--role', 'member', '--db', srv.db], { input: `${name}-password\n` });
    assert.equal(made.code, 0, made.stderr);
    const page = await pageOf(name);
    const link = await api(srv, 'POST', '/api/links', { headers: page, body: { url: 'https://example.com/kim' } });
    assert.equal(link.status, 201, link.text);
    // A key made in the dashboard: the user's, with the scopes asked for.
    let r = await api(srv, 'POST', '/api/keys', { headers: page, body: { name: 'laptop', scopes: ['links:read', 'links:write'] } });
    assert.equal(r.status, 201, r.text);
    assert.equal(typeof r.json.user_id, 'number');
    const key = r.json.key;
    // It sees the user's link, and can create as the user.
    assert.equal((await api(srv, 'GET', `/api/links/${link.json.code}`, { key })).status, 200);
    // A member's key has no admin, whatever it asks.
    r = await api(srv, 'POST', '/api/keys', { headers: page, body: { name: 'x', scopes: ['admin'] } });
    assert.equal(r.status, 403, r.text);
    assert.equal((await api(srv, 'GET', '/api/admin/blocklist', { key })).status, 403);
    // The user's keys are listed for the user, not another's.
    const mine = await api(srv, 'GET', '/api/keys', { headers: page });
    assert.deepEqual(mine.json.keys.map((k) => k.name), ['laptop']);
    // A key of the user limited to a domain sees none of the user's other links.
    const host = `${name}.example`;
    r = await api(srv, 'POST', '/api/domains', { headers: page, body: { host } });
    assert.equal(r.status, 201, r.text);
    r = await api(srv, 'POST', '/api/keys', { headers: page, body: { name: 'site', domain: host } });
    assert.equal(r.status, 201, r.text);
    const site = r.json.key;
    assert.equal((await api(srv, 'GET', `/api/links/${link.json.code}`, { key: site })).status, 404);
    r = await api(srv, 'POST', '/api/links', { key: site, body: { url: 'https://example.com/site' } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.domain, host);
    assert.equal((await api(srv, 'GET', `/api/links/${r.json.code}`, { key: site })).status, 200);
    // Disabled: the user's keys are refused.
    assert.equal(cli(['user', 'disable', name, '--db', srv.db]).code, 0);
    const refused = await poll(async () => (await api(srv, 'GET', '/api/links', { key })).status === 401,
        { timeoutMs: 3000 });
    assert.ok(refused, 'a disabled user\'s key is still let in');
});
