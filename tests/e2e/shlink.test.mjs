// shlink.test.mjs - Shlink's REST API v3 (/rest/v3/...) against the real
// binary, through the real client: @shlinkio/shlink-js-sdk 3.2.1, its
// ShlinkApiClient with the FetchHttpClient, as its docs show it
// (docs/getting-started/http-clients.md), pointed at shortd by baseUrl.
// Every call the issue lists that the SDK offers: createShortUrl,
// listShortUrls, getShortUrl, updateShortUrl, deleteShortUrl,
// getShortUrlVisits, getVisitsOverview, listTags, health. Each link made is
// checked to be an ordinary shortd link (it redirects, its click shows in
// GET /api/links/CODE/stats, GET /api/links lists it); bad input gets
// Shlink's problem+json (the SDK throws the parsed body) and stores nothing.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { ShlinkApiClient } from '@shlinkio/shlink-js-sdk';
import { FetchHttpClient } from '@shlinkio/shlink-js-sdk/fetch';

import { api, createKey, it, poll, startServer, unique, visit } from './harness.mjs';

const BASE = 'https://sho.example.test';
const ERR = 'https://shlink.io/api/error/';
const WEB_CLIENT = 'https://app.shlink.io';     /* Shlink's web client, a browser page */
let srv;
let key;
let client;
let other;

before(async () => {
    srv = await startServer({ baseUrl: BASE, args: ['--cors-origins', WEB_CLIENT] });
    key = createKey(srv, 'shlink-user');
    client = new ShlinkApiClient(new FetchHttpClient(), { baseUrl: srv.url, apiKey: key });
    other = new ShlinkApiClient(new FetchHttpClient(),
                                { baseUrl: srv.url, apiKey: createKey(srv, 'shlink-other') });
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

/* What the SDK throws for an answer that is not ok: the parsed problem. */
async function problemOf(promise) {
    try {
        await promise;
    } catch (e) {
        return e;
    }
    assert.fail('the call was expected to fail');
}

/* A link made through Shlink's API is an ordinary shortd link. */
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
    const list = await api(srv, 'GET', '/api/links?limit=1000', { key });
    assert.ok(list.json.some((l) => l.code === code && l.url === url), 'listed by GET /api/links');
}

async function countLinks() {
    return (await api(srv, 'GET', '/api/links?limit=1000&state=all', { key })).json.length;
}

it('createShortUrl makes an ordinary link, in Shlink\'s ShortUrl shape', async () => {
    const longUrl = `https://example.com/shlink/${unique('p')}`;
    const validUntil = new Date(Date.now() + 86400_000).toISOString().replace(/\.\d+Z$/, '+00:00');
    const s = await client.createShortUrl({ longUrl, tags: ['docs', 'shlink'], title: 'A title',
                                            maxVisits: 50, validUntil });
    assert.match(s.shortCode, /^[0-9A-Za-z]{7}$/);
    assert.equal(s.shortUrl, `${BASE}/${s.shortCode}`);
    assert.equal(s.longUrl, longUrl);
    assert.deepEqual(s.tags, ['docs', 'shlink']);
    assert.equal(s.title, 'A title');
    assert.deepEqual(s.meta, { validSince: null, validUntil, maxVisits: 50 });
    assert.deepEqual(s.visitsSummary, { total: 0, nonBots: 0, bots: 0 });
    assert.equal(s.domain, null);
    assert.match(s.dateCreated, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    for (const k of ['crawlable', 'forwardQuery', 'hasRedirectRules']) assert.equal(typeof s[k], 'boolean');
    await assertOrdinary(s.shortCode, longUrl);

    // A custom slug; findIfExists hands back the key's link to the same URL.
    const customSlug = unique('sl');
    const c = await client.createShortUrl({ longUrl, customSlug });
    assert.equal(c.shortCode, customSlug);
    await assertOrdinary(customSlug, longUrl);
    const found = await client.createShortUrl({ longUrl, findIfExists: true });
    assert.ok([s.shortCode, customSlug].includes(found.shortCode), 'the existing link');
});

it('getShortUrl, listShortUrls, updateShortUrl, deleteShortUrl, listTags', async () => {
    const longUrl = `https://example.com/list/${unique('l')}`;
    const tag = unique('tag');
    const s = await client.createShortUrl({ longUrl, tags: [tag], title: 'Listed', customSlug: unique('ls') });

    const got = await client.getShortUrl({ shortCode: s.shortCode });
    assert.equal(got.longUrl, longUrl);
    assert.deepEqual(got.tags, [tag]);

    const page = await client.listShortUrls({ tags: [tag], itemsPerPage: 5 });
    assert.deepEqual(page.data.map((u) => u.shortCode), [s.shortCode]);
    assert.deepEqual(page.pagination, { currentPage: 1, pagesCount: 1, itemsPerPage: 5,
                                        itemsInCurrentPage: 1, totalItems: 1 });
    const search = await client.listShortUrls({ searchTerm: longUrl.split('/').pop() });
    assert.deepEqual(search.data.map((u) => u.shortCode), [s.shortCode]);
    const all = await client.listShortUrls({ itemsPerPage: 1, page: '1',
                                             orderBy: { field: 'dateCreated', dir: 'ASC' } });
    assert.equal(all.data.length, 1);
    assert.ok(all.pagination.totalItems >= 3 && all.pagination.pagesCount === all.pagination.totalItems);
    assert.notEqual(all.data[0].shortCode, s.shortCode, 'the oldest first');

    const tags = await client.listTags();
    assert.ok(tags.data.includes(tag) && tags.data.includes('docs'));

    const newUrl = `${longUrl}/moved`;
    const ed = await client.updateShortUrl({ shortCode: s.shortCode },
                                           { longUrl: newUrl, title: null, tags: ['moved'] });
    assert.equal(ed.longUrl, newUrl);
    assert.equal(ed.title, null);
    assert.deepEqual(ed.tags, ['moved']);
    await assertOrdinary(s.shortCode, newUrl);

    // Another key sees none of it.
    const p = await problemOf(other.getShortUrl({ shortCode: s.shortCode }));
    assert.equal(p.type, `${ERR}short-url-not-found`);
    assert.equal(p.status, 404);
    assert.equal(p.shortCode, s.shortCode);
    assert.equal(p.detail, `No URL found with short code "${s.shortCode}"`);
    const pd = await problemOf(other.deleteShortUrl({ shortCode: s.shortCode }));
    assert.equal(pd.type, `${ERR}short-url-not-found`);

    await client.deleteShortUrl({ shortCode: s.shortCode });
    const gone = await problemOf(client.getShortUrl({ shortCode: s.shortCode }));
    assert.equal(gone.status, 404);
    assert.equal((await visit(srv, s.shortCode)).status, 410, 'a tombstone, as DELETE /api/links');
    const reuse = await problemOf(client.createShortUrl({ longUrl, customSlug: s.shortCode }));
    assert.equal(reuse.type, `${ERR}non-unique-slug`, 'a deleted slug is never handed out again');
    assert.equal(reuse.customSlug, s.shortCode);
});

it('getShortUrlVisits, getVisitsOverview and health', async () => {
    const longUrl = `https://example.com/visits/${unique('v')}`;
    const s = await client.createShortUrl({ longUrl });
    await assertOrdinary(s.shortCode, longUrl);
    const visits = await poll(async () => {
        const v = await client.getShortUrlVisits({ shortCode: s.shortCode });
        return v.data.length ? v : null;
    });
    assert.equal(visits.data.length, 1);
    const [one] = visits.data;
    assert.equal(one.potentialBot, false);
    assert.equal(one.visitedUrl, `${BASE}/${s.shortCode}`);
    assert.equal(one.redirectUrl, longUrl);
    assert.match(one.date, /\+00:00$/);
    assert.deepEqual(visits.pagination, { currentPage: 1, pagesCount: 1, itemsPerPage: 10,
                                          itemsInCurrentPage: 1, totalItems: 1 });
    const got = await client.getShortUrl({ shortCode: s.shortCode });
    assert.deepEqual(got.visitsSummary, { total: 1, nonBots: 1, bots: 0 });

    const ov = await client.getVisitsOverview();
    assert.ok(ov.nonOrphanVisits.total >= 3 && ov.nonOrphanVisits.nonBots >= 3);
    assert.deepEqual(ov.orphanVisits, { total: 0, nonBots: 0, bots: 0 });

    const h = await client.health();
    assert.equal(h.status, 'pass');
    assert.match(h.version, /^\d+\.\d+\.\d+$/);
    const rest = await api(srv, 'GET', '/rest/health');
    assert.equal(rest.status, 200);
    assert.match(rest.headers.get('content-type'), /^application\/health\+json/);
});

it('Idempotency-Key: the same create again replays its answer, another under the key is refused, and ' +
   'a concurrent pair makes one link', async () => {
    const urls = async () => (await api(srv, 'GET', '/api/links?limit=1000', { key })).json.map((l) => l.url);
    const post = async (body, idem) => {
        const res = await fetch(`${srv.url}/rest/v3/short-urls`, {
            method: 'POST', body: JSON.stringify(body),
            headers: { 'X-Api-Key': key, 'Content-Type': 'application/json', 'Idempotency-Key': idem },
        });
        const text = await res.text();
        return { status: res.status, text, json: JSON.parse(text), headers: res.headers };
    };
    const longUrl = `https://example.com/shlink/idem/${unique('i')}`;
    const idem = unique('idem-key');
    const first = await post({ longUrl, title: 'Once' }, idem);
    assert.equal(first.status, 200, first.text);
    // Without the key the same body makes a second short URL.
    const again = await post({ longUrl, title: 'Once' }, idem);
    assert.deepEqual([again.status, again.text], [200, first.text]);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.headers.get('content-type'), 'application/json');
    assert.equal((await urls()).filter((u) => u === longUrl).length, 1);
    const mismatch = await post({ longUrl: `${longUrl}/other` }, idem);
    assert.equal(mismatch.status, 422, mismatch.text);
    assert.match(mismatch.headers.get('content-type'), /^application\/problem\+json/);
    assert.deepEqual(mismatch.json, { type: 'about:blank', title: 'Unprocessable Entity',
        detail: 'This Idempotency-Key was used with a different request.', status: 422 });
    assert.ok(!(await urls()).includes(`${longUrl}/other`), 'nothing stored');

    // A refusal is remembered too, in its problem+json.
    const slug = unique('sl');
    assert.equal((await post({ longUrl, customSlug: slug }, unique('idem-slug'))).status, 200);
    const takenKey = unique('idem-taken');
    const taken = await post({ longUrl: `${longUrl}/2`, customSlug: slug }, takenKey);
    assert.equal(taken.status, 400);
    assert.equal(taken.json.type, `${ERR}non-unique-slug`);
    const takenAgain = await post({ longUrl: `${longUrl}/2`, customSlug: slug }, takenKey);
    assert.deepEqual([takenAgain.status, takenAgain.text], [400, taken.text]);
    assert.match(takenAgain.headers.get('content-type'), /^application\/problem\+json/);

    const url2 = `https://example.com/shlink/idem/${unique('c')}`;
    const pairKey = unique('idem-pair');
    const pair = await Promise.all([1, 2].map(() => post({ longUrl: url2 }, pairKey)));
    assert.deepEqual(pair.map((p) => p.status), [200, 200], pair.map((p) => p.text).join('\n'));
    assert.equal(pair[0].json.shortCode, pair[1].json.shortCode);
    assert.equal((await urls()).filter((u) => u === url2).length, 1, 'one link');
});

it('bad input gets Shlink\'s problem+json and stores nothing', async () => {
    const before = await countLinks();
    const future = new Date(Date.now() + 86400_000).toISOString();
    const since = await problemOf(client.createShortUrl({ longUrl: 'https://example.com/f', validSince: future }));
    assert.deepEqual(since, { type: `${ERR}invalid-data`, title: 'Invalid data',
                              detail: 'Provided data is not valid', status: 400,
                              invalidElements: ['validSince'] });
    const url = await problemOf(client.createShortUrl({ longUrl: 'not a url' }));
    assert.equal(url.type, `${ERR}invalid-data`);
    assert.deepEqual(url.invalidElements, ['longUrl']);
    const slug = await problemOf(client.createShortUrl({ longUrl: 'https://example.com/s', customSlug: 'rest' }));
    assert.deepEqual(slug.invalidElements, ['customSlug'], 'a reserved word');
    const max = await problemOf(client.createShortUrl({ longUrl: 'https://example.com/m', maxVisits: -1 }));
    assert.deepEqual(max.invalidElements, ['maxVisits']);
    const taken = unique('tk');
    await client.createShortUrl({ longUrl: 'https://example.com/t', customSlug: taken });
    const dup = await problemOf(client.createShortUrl({ longUrl: 'https://example.com/u', customSlug: taken }));
    assert.deepEqual(dup, { type: `${ERR}non-unique-slug`, title: 'Invalid custom slug',
                            detail: `Provided slug "${taken}" is already in use.`, status: 400,
                            customSlug: taken });
    assert.equal(await countLinks(), before + 1, 'only the first of the slug is stored');

    const res = await fetch(`${srv.url}/rest/v3/short-urls`, {
        method: 'POST', headers: { 'X-Api-Key': key, 'content-type': 'application/json' }, body: '{"longUrl":',
    });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.equal((await res.json()).type, `${ERR}malformed-request-body`);

    const wrong = new ShlinkApiClient(new FetchHttpClient(), { baseUrl: srv.url, apiKey: 'sk_wrong' });
    const bad = await problemOf(wrong.listShortUrls());
    assert.equal(bad.type, `${ERR}invalid-api-key`);
    assert.equal(bad.status, 401);
    const none = await fetch(`${srv.url}/rest/v3/short-urls`);
    assert.equal(none.status, 401);
    assert.equal((await none.json()).type, `${ERR}missing-authentication`);
    assert.equal(await countLinks(), before + 1);

    // A route Shlink has and shortd does not is Shlink's not-found problem.
    const domains = await problemOf(client.listDomains());
    assert.equal(domains.type, `${ERR}not-found`);
    assert.equal(domains.status, 404);
});

it('a browser page of a cors-origins origin may call it (Shlink\'s web client)', async () => {
    const pre = await fetch(`${srv.url}/rest/v3/short-urls/abc`, {
        method: 'OPTIONS',
        headers: { origin: WEB_CLIENT, 'access-control-request-method': 'PATCH',
                   'access-control-request-headers': 'x-api-key,content-type' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), WEB_CLIENT);
    assert.equal(pre.headers.get('access-control-allow-methods'), 'GET, PATCH, DELETE');
    assert.match(pre.headers.get('access-control-allow-headers'), /X-API-KEY/i);
    const res = await fetch(`${srv.url}/rest/v3/tags`, { headers: { origin: WEB_CLIENT, 'X-Api-Key': key } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), WEB_CLIENT);
    const refused = await fetch(`${srv.url}/rest/v3/tags`, { headers: { origin: WEB_CLIENT } });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('access-control-allow-origin'), WEB_CLIENT, 'its errors are readable too');
});
