// bitly.test.mjs - Bitly's API v4 (/v4/...) against the real binary, through
// the npm `bitly` SDK (7.x, pinned in package-lock.json) used as its README
// shows: `new BitlyClient(token)`, then shorten, getBitlink/info, expand,
// clicks/clicksByDay/clicksByMinute, referrers, countries, and its generic
// bitlyRequest for the calls it has no method for (POST /v4/bitlinks,
// PATCH, /clicks/summary, /user, /groups). The links it makes are ordinary
// shortd links: they
// redirect, their clicks show in GET /api/links/CODE/stats, GET /api/links
// lists them. Errors come in Bitly's shape (also for paths and methods under
// /v4/ that no route serves), and bad input stores nothing.
//
// Pointing the SDK at shortd: its `apiUrl` option only names the host of an
// https:// URL (a port cannot be given: Node's url.format brackets
// "host:port" as an IPv6 address), so the test rewrites the SDK's requests
// on the axios instance the SDK itself loads: every request to
// https://api-ssl.bitly.com is sent to the test server instead, and any
// other is refused.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before } from 'node:test';

import { api, createKey, it, poll, startServer, unique, visit } from './harness.mjs';

const require = createRequire(import.meta.url);
const { BitlyClient } = require('bitly');
const axios = createRequire(require.resolve('bitly'))('axios');

const BASE = 'https://sho.example.test';
const HOST = 'sho.example.test';
const APP = 'https://app.example';
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/;
let srv;
let key;
let otherKey;
let bitly;

before(async () => {
    srv = await startServer({ baseUrl: BASE, args: ['--cors-origins', APP] });
    key = createKey(srv, 'bitly-user');
    otherKey = createKey(srv, 'bitly-other');
    axios.interceptors.request.use((cfg) => {
        const u = new URL(cfg.url);
        if (u.origin !== 'https://api-ssl.bitly.com') throw new Error(`unexpected SDK request to ${cfg.url}`);
        cfg.url = srv.url + u.pathname + u.search;
        return cfg;
    });
    bitly = new BitlyClient(key);
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

/* The SDK's promise rejected with Bitly's error object: returns it. */
async function bitlyError(promise) {
    try {
        await promise;
    } catch (e) {
        assert.equal(typeof e.message, 'string', JSON.stringify(e));
        assert.equal(typeof e.description, 'string', JSON.stringify(e));
        assert.equal(typeof e.resource, 'string', JSON.stringify(e));
        return e;
    }
    assert.fail('the call succeeded');
}

/* The bitlink object of Bitly v4 (ShortenBitlinkBody / BitlinkBody). */
function assertBitlink(b, url) {
    assert.match(b.id, new RegExp(`^${HOST}/[0-9A-Za-z_-]+$`));
    assert.equal(b.link, `https://${b.id}`);
    assert.equal(b.long_url, url);
    assert.match(b.created_at, TIME);
    assert.equal(b.archived, false);
    assert.deepEqual(b.custom_bitlinks, []);
    assert.deepEqual(b.deeplinks, []);
    assert.ok(Array.isArray(b.tags));
    assert.match(b.references.group, new RegExp(`^${BASE}/v4/groups/B[0-9A-Za-z]{10}$`));
    return b.id.slice(HOST.length + 1);
}

async function listed(owner) {
    const list = await api(srv, 'GET', '/api/links?limit=1000', { key: owner });
    assert.equal(list.status, 200);
    return list.json;
}

/* A link made through Bitly's API is an ordinary shortd link. */
async function assertOrdinary(code, url) {
    const v = await visit(srv, code);
    assert.equal(v.status, 302, v.text);
    assert.equal(v.headers.get('location'), url);
    const clicks = await poll(async () => {
        const s = await api(srv, 'GET', `/api/links/${code}/stats`, { key });
        assert.equal(s.status, 200, s.text);
        return s.json.total_clicks >= 1 ? s.json.total_clicks : 0;
    });
    assert.equal(clicks, 1, 'the click shows in GET /api/links/CODE/stats');
    assert.ok((await listed(key)).some((l) => l.code === code && l.url === url), 'listed by GET /api/links');
}

it('shorten makes an ordinary link; the same URL again answers the same bitlink, 200 not 201', async () => {
    const url = `https://example.com/bitly/${unique('s')}`;
    const b = await bitly.shorten(url);
    const code = assertBitlink(b, url);
    assert.equal(b.title, undefined, '/v4/shorten answers no title');
    await assertOrdinary(code, url);
    const again = await bitly.shorten(url);
    assert.equal(again.id, b.id);
    const direct = await api(srv, 'POST', '/v4/shorten', { key, body: { long_url: url, domain: HOST } });
    assert.equal(direct.status, 200, direct.text);
    assert.equal(direct.json.id, b.id);
    const fresh = await api(srv, 'POST', '/v4/shorten', { key, body: { long_url: `${url}/new` } });
    assert.equal(fresh.status, 201, fresh.text);
});

it('getBitlink and info find a bitlink by short URL, id or hash; each bitlink form the route takes', async () => {
    const url = `https://example.com/bitly/${unique('g')}`;
    const b = await bitly.shorten(url);
    const code = b.id.slice(HOST.length + 1);
    for (const item of [b.link, b.id, code]) {
        const got = await bitly.getBitlink(item);   // the SDK turns each into bit.ly/CODE
        assertBitlink(got, url);
        assert.equal(got.id, b.id);
        assert.equal(got.title, null);
    }
    assert.equal((await bitly.info(b.link)).id, b.id);
    for (const p of [`${HOST}/${code}`, encodeURIComponent(`${HOST}/${code}`), `bit.ly%2F${code}`]) {
        const r = await api(srv, 'GET', `/v4/bitlinks/${p}`, { key });
        assert.equal(r.status, 200, `${p}: ${r.text}`);
        assert.equal(r.json.id, b.id);
    }
    const wrongHost = await api(srv, 'GET', `/v4/bitlinks/other.example/${code}`, { key });
    assert.equal(wrongHost.status, 404);
    assert.equal(wrongHost.json.message, 'NOT_FOUND');
});

it("another key's bitlink is Bitly's 404, for every route that names one", async () => {
    const url = `https://example.com/bitly/${unique('o')}`;
    const b = await bitly.shorten(url);
    const other = new BitlyClient(otherKey);
    for (const call of [() => other.getBitlink(b.link), () => other.expand(b.link), () => other.clicksByDay(b.link),
        () => other.bitlyRequest(`bitlinks/${b.id}`, { title: 'x' }, 'PATCH'),
        () => other.bitlyRequest(`bitlinks/${b.id}/clicks/summary`, {}, 'GET'), () => other.referrers(b.link),
        () => other.countries(b.link)]) {
        const e = await bitlyError(call());
        assert.equal(e.message, 'NOT_FOUND');
        assert.equal(e.resource, 'bitlinks');
    }
    assert.equal((await bitly.getBitlink(b.link)).title, null, 'unchanged');
});

it('expand answers the long URL of a bitlink', async () => {
    const url = `https://example.com/bitly/${unique('e')}`;
    const b = await bitly.shorten(url);
    const x = await bitly.expand(b.link);
    assert.deepEqual(x, { created_at: b.created_at, link: b.link, id: b.id, long_url: url });
    const e = await bitlyError(bitly.expand('https://sho.example.test/nosuchcode1'));
    assert.equal(e.message, 'NOT_FOUND');
    const missing = await api(srv, 'POST', '/v4/expand', { key, body: {} });
    assert.equal(missing.status, 400);
    assert.equal(missing.json.message, 'INVALID_ARG_BITLINK_ID');
});

it('clicks, clicks/summary, referrers and countries count the redirects', async () => {
    const url = `https://example.com/bitly/${unique('c')}`;
    const b = await bitly.shorten(url);
    const code = b.id.slice(HOST.length + 1);
    await assertOrdinary(code, url);
    const today = new Date().toISOString().slice(0, 10) + 'T00:00:00+0000';
    const all = await poll(async () => {
        const c = await bitly.clicksByDay(b.link);
        return c.link_clicks.length && c.link_clicks[0].clicks === 1 ? c : null;
    });
    assert.equal(all.unit, 'day');
    assert.equal(all.units, -1);
    assert.match(all.unit_reference, TIME);
    assert.deepEqual(all.link_clicks, [{ clicks: 1, date: today }]);
    const week = await bitly.clicks(b.id, 'day', 7);
    assert.equal(week.link_clicks.length, 7);
    assert.equal(week.link_clicks[0].date, today);
    assert.equal(week.link_clicks.reduce((n, d) => n + d.clicks, 0), 1);
    const sum = await bitly.bitlyRequest(`bitlinks/${b.id}/clicks/summary`, { unit: 'day', units: -1 }, 'GET');
    assert.equal(sum.total_clicks, 1);
    assert.equal(sum.unit, 'day');
    const encoded = await api(srv, 'GET', `/v4/bitlinks/${encodeURIComponent(b.id)}/clicks/summary?units=7`, { key });
    assert.equal(encoded.status, 200, encoded.text);
    assert.equal(encoded.json.total_clicks, 1);
    assert.equal(encoded.json.units, 7);
    const old = await bitly.clicks(b.id, 'day', 3, 50, '2020-01-10T00:00:00+0000');
    assert.deepEqual(old.link_clicks.map((d) => d.clicks), [0, 0, 0]);
    assert.equal(old.link_clicks[0].date, '2020-01-10T00:00:00+0000');
    const refs = await bitly.referrers(b.link);
    assert.equal(refs.facet, 'referrers');
    assert.deepEqual(refs.metrics, [{ value: 'direct', clicks: 1 }]);
    const countries = await bitly.countries(b.link);
    assert.equal(countries.facet, 'countries');
    assert.ok(Array.isArray(countries.metrics));
    const minute = await bitlyError(bitly.clicksByMinute(b.link));
    assert.equal(minute.message, 'INVALID_ARG_UNIT');
    assert.deepEqual(minute.errors.map((f) => f.field), ['unit']);
});

it('POST /v4/bitlinks keeps title and tags; PATCH changes them and the long URL', async () => {
    const url = `https://example.com/bitly/${unique('b')}`;
    const b = await bitly.bitlyRequest('bitlinks', { long_url: url, title: 'Docs', tags: ['api', 'bitly'] });
    const code = assertBitlink(b, url);
    assert.equal(b.title, 'Docs');
    assert.deepEqual(b.tags, ['api', 'bitly']);
    const own = await api(srv, 'GET', `/api/links/${code}`, { key });
    assert.equal(own.json.title, 'Docs');
    assert.deepEqual(own.json.tags, ['api', 'bitly']);
    await assertOrdinary(code, url);

    const moved = `${url}/moved`;
    const p = await bitly.bitlyRequest(`bitlinks/${b.id}`, { title: 'New', tags: ['x'], long_url: moved }, 'PATCH');
    assert.equal(p.title, 'New');
    assert.deepEqual(p.tags, ['x']);
    assert.equal(p.long_url, moved);
    const v = await poll(async () => {
        const r = await visit(srv, code);
        return r.headers.get('location') === moved ? r : null;
    });
    assert.equal(v.status, 302);
    const hist = await api(srv, 'GET', `/api/links/${code}/history`, { key });
    assert.equal(hist.status, 200);
    // The whole object sent back, as read, changes nothing else.
    const same = await api(srv, 'PATCH', `/v4/bitlinks/${encodeURIComponent(b.id)}`, { key, body: p });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.json.title, 'New');

    const archive = await bitlyError(bitly.bitlyRequest(`bitlinks/${b.id}`, { archived: true }, 'PATCH'));
    assert.equal(archive.message, 'INVALID_ARG_ARCHIVED');
    const badTags = await bitlyError(bitly.bitlyRequest(`bitlinks/${b.id}`, { tags: 'x' }, 'PATCH'));
    assert.equal(badTags.message, 'INVALID_ARG_TAGS');
    assert.deepEqual(badTags.errors.map((f) => f.field), ['tags']);
    assert.equal((await api(srv, 'GET', `/api/links/${code}`, { key })).json.title, 'New', 'unchanged');
});

it('user and groups: one group per key, its guid stable, taken as group_guid', async () => {
    const user = await bitly.bitlyRequest('user', {}, 'GET');
    assert.equal(user.login, 'bitly-user');
    assert.match(user.created, TIME);
    const groups = await bitly.bitlyRequest('groups', {}, 'GET');
    assert.equal(groups.groups.length, 1);
    const g = groups.groups[0];
    assert.equal(g.guid, user.default_group_guid);
    assert.equal(g.name, 'bitly-user');
    assert.equal((await bitly.bitlyRequest('groups', {}, 'GET')).groups[0].guid, g.guid, 'stable');
    const otherGroups = await new BitlyClient(otherKey).bitlyRequest('groups', {}, 'GET');
    assert.notEqual(otherGroups.groups[0].guid, g.guid);

    const url = `https://example.com/bitly/${unique('grp')}`;
    const b = await bitly.bitlyRequest('shorten', { long_url: url, group_guid: g.guid });
    assert.match(b.references.group, new RegExp(`/v4/groups/${g.guid}$`));
    const e = await bitlyError(bitly.bitlyRequest('shorten', { long_url: `${url}/x`, group_guid: otherGroups.groups[0].guid }));
    assert.equal(e.message, 'FORBIDDEN');
    assert.ok(!(await listed(key)).some((l) => l.url === `${url}/x`), 'nothing stored');
});

it("groups/{guid}/bitlinks lists the group's bitlinks, newest first, in Bitly's pages and filters",
   async () => {
    // A key of its own, so that the listing holds exactly what is made here.
    const k = createKey(srv, 'bitly-lister');
    const sdk = new BitlyClient(k);
    const { groups } = await sdk.bitlyRequest('groups', {}, 'GET');
    const guid = groups[0].guid;
    const tag = unique('t');
    const made = [];
    for (let i = 0; i < 5; i++) {
        const url = `https://example.com/bitly/list/${unique('l')}`;
        const body = { long_url: url, title: `item ${i}`, ...(i % 2 ? { tags: [tag] } : {}) };
        made.push(await sdk.bitlyRequest('bitlinks', body));
    }
    await bitly.shorten(`https://example.com/bitly/list/${unique('other')}`); // another key's

    const p1 = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { size: 2 }, 'GET');
    assert.deepEqual(p1.links.map((b) => b.id), [made[4].id, made[3].id], 'newest first');
    p1.links.forEach((b, i) => assertBitlink(b, made[4 - i].long_url));
    assert.equal(p1.links[0].title, 'item 4');
    assert.deepEqual(p1.links[1].tags, [tag]);
    assert.equal(p1.pagination.prev, '');
    assert.equal(p1.pagination.next, `${BASE}/v4/groups/${guid}/bitlinks?size=2&page=2`);
    assert.deepEqual([p1.pagination.size, p1.pagination.page, p1.pagination.total], [2, 1, 5]);

    // Following `next` (its path on the test server) gives the next page.
    const next = await api(srv, 'GET', p1.pagination.next.slice(BASE.length), { key: k });
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(next.json.links.map((b) => b.id), [made[2].id, made[1].id]);
    assert.equal(next.json.pagination.prev, `${BASE}/v4/groups/${guid}/bitlinks?size=2&page=1`);
    const p3 = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { size: 2, page: 3 }, 'GET');
    assert.deepEqual(p3.links.map((b) => b.id), [made[0].id]);
    assert.equal(p3.pagination.next, '');
    const all = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, {}, 'GET');
    assert.deepEqual([all.links.length, all.pagination.size, all.pagination.page], [5, 50, 1], 'defaults');

    // Filters: query, tags, created_after/before, archived, encoding_login.
    const q = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { query: 'item 2' }, 'GET');
    assert.deepEqual(q.links.map((b) => b.id), [made[2].id]);
    const t = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { tags: [tag, 'none'] }, 'GET');
    assert.deepEqual(t.links.map((b) => b.id), [made[3].id, made[1].id]);
    assert.equal(t.pagination.total, 2);
    const future = Math.floor(Date.now() / 1000) + 3600;
    const later = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { created_after: future }, 'GET');
    assert.deepEqual([later.links, later.pagination.total], [[], 0]);
    const earlier = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { created_before: future }, 'GET');
    assert.equal(earlier.pagination.total, 5);
    const archived = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { archived: 'on' }, 'GET');
    assert.deepEqual(archived.links, [], 'no shortd link is archived');
    assert.equal((await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { archived: 'both' }, 'GET')).pagination.total, 5);
    const mine = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { encoding_login: 'bitly-lister' }, 'GET');
    assert.equal(mine.pagination.total, 5);
    const theirs = await sdk.bitlyRequest(`groups/${guid}/bitlinks`, { encoding_login: 'someone' }, 'GET');
    assert.equal(theirs.pagination.total, 0);

    // Another key's group is FORBIDDEN (as a group_guid in a create); a bad
    // parameter Bitly's INVALID_ARG_*.
    let e = await bitlyError(bitly.bitlyRequest(`groups/${guid}/bitlinks`, {}, 'GET'));
    assert.deepEqual([e.message, e.resource], ['FORBIDDEN', 'groups']);
    for (const [params, message] of [[{ size: 0 }, 'INVALID_ARG_SIZE'], [{ size: 101 }, 'INVALID_ARG_SIZE'],
        [{ page: 'two' }, 'INVALID_ARG_PAGE'], [{ archived: 'maybe' }, 'INVALID_ARG_ARCHIVED'],
        [{ created_after: 'yesterday' }, 'INVALID_ARG_CREATED_AFTER']]) {
        e = await bitlyError(sdk.bitlyRequest(`groups/${guid}/bitlinks`, params, 'GET'));
        assert.equal(e.message, message, JSON.stringify(params));
        assert.equal(e.resource, 'groups');
        assert.deepEqual(e.errors.map((f) => f.field), [Object.keys(params)[0]]);
    }
    const raw = await api(srv, 'GET', `/v4/groups/${guid}/bitlinks?size=0`, { key: k });
    assert.equal(raw.status, 400);
});

it("paths and methods /v4 does not serve get Bitly's NOT_FOUND and METHOD_NOT_ALLOWED", async () => {
    const { groups } = await bitly.bitlyRequest('groups', {}, 'GET');
    let e = await bitlyError(bitly.bitlyRequest(`groups/${groups[0].guid}/tags`, {}, 'GET'));
    assert.deepEqual([e.message, e.resource], ['NOT_FOUND', 'groups']);
    e = await bitlyError(bitly.bitlyRequest('organizations', {}, 'GET'));
    assert.deepEqual([e.message, e.resource], ['NOT_FOUND', 'organizations']);
    const b = await bitly.shorten(`https://example.com/bitly/${unique('m')}`);
    e = await bitlyError(bitly.bitlyRequest(`bitlinks/${b.id}`, { title: 'x' }, 'POST'));
    assert.deepEqual([e.message, e.resource], ['METHOD_NOT_ALLOWED', 'bitlinks']);
    const raw = await api(srv, 'DELETE', `/v4/bitlinks/${b.id}`, { key });
    assert.equal(raw.status, 405);
    assert.equal(raw.headers.get('allow'), 'GET, PATCH');
    assert.equal(raw.json.message, 'METHOD_NOT_ALLOWED');
    assert.equal((await bitly.info(b.link)).id, b.id, 'the bitlink is unchanged');
});

it('Idempotency-Key: the same shorten again replays its answer, another under the key is refused, and ' +
   'a concurrent pair makes one link', async () => {
    const urls = async () => (await listed(key)).map((l) => l.url);
    const post = (path, body, idem) => api(srv, 'POST', path, { key, body, headers: { 'Idempotency-Key': idem } });
    const url = `https://example.com/bitly/idem/${unique('i')}`;
    const idem = unique('idem-key');
    const first = await post('/v4/bitlinks', { long_url: url, title: 'Once' }, idem);
    assert.equal(first.status, 201, first.text);
    // Without the key the same URL answers the existing bitlink with 200:
    // the replay is the first answer, 201.
    const again = await post('/v4/bitlinks', { long_url: url, title: 'Once' }, idem);
    assert.deepEqual([again.status, again.text], [201, first.text]);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const mismatch = await post('/v4/bitlinks', { long_url: `${url}/other` }, idem);
    assert.equal(mismatch.status, 422, mismatch.text);
    assert.deepEqual(mismatch.json, { message: 'UNPROCESSABLE_ENTITY',
        description: 'This Idempotency-Key was used with a different request.', resource: 'bitlinks' });
    assert.ok(!(await urls()).includes(`${url}/other`), 'nothing stored');
    const bad = await post('/v4/shorten', { long_url: `${url}/bad` }, 'a\tb');
    assert.equal(bad.status, 400);
    assert.equal(bad.json.message, 'INVALID_ARG_IDEMPOTENCY_KEY');

    const url2 = `https://example.com/bitly/idem/${unique('c')}`;
    const pairKey = unique('idem-pair');
    const pair = await Promise.all([1, 2].map(() => post('/v4/shorten', { long_url: url2 }, pairKey)));
    assert.deepEqual(pair.map((p) => p.status), [201, 201], pair.map((p) => p.text).join('\n'));
    assert.equal(pair[0].text, pair[1].text);
    assert.equal((await urls()).filter((u) => u === url2).length, 1, 'one link');
});

it("bad input gets Bitly's error and stores nothing; a wrong or missing token is FORBIDDEN", async () => {
    const before = (await listed(key)).length;
    let e = await bitlyError(bitly.shorten('not a url'));
    assert.equal(e.message, 'INVALID_ARG_LONG_URL');
    assert.equal(e.resource, 'bitlinks');
    assert.deepEqual(e.errors.map((f) => f.field), ['long_url']);
    e = await bitlyError(bitly.shorten(`${BASE}/abcdefg`));
    assert.equal(e.message, 'ALREADY_A_BITLY_LINK');
    e = await bitlyError(bitly.bitlyRequest('bitlinks', { long_url: 'https://example.com/t', tags: [1] }));
    assert.equal(e.message, 'INVALID_ARG_TAGS');
    e = await bitlyError(bitly.bitlyRequest('bitlinks', { long_url: 'https://example.com/d',
        deeplinks: [{ app_id: 'com.x', app_uri_path: '/x' }] }));
    assert.equal(e.message, 'INVALID_ARG_DEEPLINKS');
    e = await bitlyError(bitly.bitlyRequest('shorten', { long_url: 'https://example.com/dom', domain: 'nope.example' }));
    assert.equal(e.message, 'INVALID_ARG_DOMAIN');
    const raw = await api(srv, 'POST', '/v4/shorten', { key, raw: '{"long_url":' });
    assert.equal(raw.status, 400);
    assert.equal(raw.json.message, 'INVALID_BODY');
    assert.equal((await listed(key)).length, before, 'nothing stored');

    e = await bitlyError(new BitlyClient('sk_wrong').shorten('https://example.com/wrongkey'));
    assert.equal(e.message, 'FORBIDDEN');
    const none = await api(srv, 'GET', '/v4/user');
    assert.equal(none.status, 403);
    assert.equal(none.json.message, 'FORBIDDEN');
    assert.equal(none.json.resource, 'user');
    const bearer = await api(srv, 'GET', '/v4/groups', { key });   // Authorization: Bearer KEY
    assert.equal(bearer.status, 200);
});

it('browsers of a listed origin may call /v4 (CORS)', async () => {
    const pre = await api(srv, 'OPTIONS', '/v4/shorten', {
        headers: { origin: APP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), APP);
    const r = await api(srv, 'GET', '/v4/user', { key, headers: { origin: APP } });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), APP);
});
