// bulk.test.mjs - POST /api/links/bulk: up to 1,000 creates in one durable
// transaction, a result per item in input order (the link, or the error a
// single create would answer), an item's refusal never failing the others
// and leaving nothing behind, aliases taken twice inside a batch, the
// envelope's errors, idempotency with a key (replays, another body, two
// requests with one key at once), and a batch surviving kill -9.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, createKey, createLink, errorOf, it, startServer, unique, visit } from './harness.mjs';

let srv;
let admin;

before(async () => {
    srv = await startServer();
    admin = srv.adminKey;
});

after(async () => {
    if (srv) await srv.stop();
});

const bulk = (key, body, headers = {}) => api(srv, 'POST', '/api/links/bulk', { key, body, headers });

async function allLinks(key) {
    const r = await api(srv, 'GET', '/api/links?state=all&limit=1000', { key });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

/* An alias no other test run uses: 4-30 of [0-9A-Za-z_-], never 7 plain base62. */
const alias = (p) => `${p}_${unique('').replace(/[^0-9A-Za-z]/g, '')}`.slice(0, 30);

it('creates every item and answers 200 with a result per item, in order', async () => {
    const key = createKey(srv, 'bulk-basic');
    const a = alias('b1');
    const items = [
        { url: 'https://example.com/one' },
        { url: 'https://example.com/two', alias: a, title: 'Two', tags: ['x', 'y'], note: 'n' },
        { url: 'https://example.com/three', ttl: 3600, permanent: true },
    ];
    const r = await bulk(key, { links: items });
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get('content-type') || '', /^application\/json/);
    assert.deepEqual(Object.keys(r.json), ['results']);
    const res = r.json.results;
    assert.equal(res.length, 3);
    assert.deepEqual(res.map((x) => x.status), [201, 201, 201]);
    res.forEach((x, i) => {
        assert.deepEqual(Object.keys(x).sort(), ['link', 'status']);
        assert.equal(x.link.url, items[i].url);
        assert.equal(x.link.state, 'active');
        assert.equal(x.link.short_url, `http://127.0.0.1:${srv.port}/${x.link.code}`);
    });
    assert.equal(res[1].link.code, a);
    assert.equal(res[1].link.title, 'Two');
    assert.deepEqual(res[1].link.tags, ['x', 'y']);
    assert.equal(res[2].link.permanent, true);
    assert.ok(res[2].link.expires_at);

    // They are real links: readable, listed, and they redirect.
    for (const x of res) {
        const g = await api(srv, 'GET', `/api/links/${x.link.code}`, { key });
        assert.equal(g.status, 200, g.text);
        assert.deepEqual({ ...g.json, clicks: 0 }, { ...x.link, clicks: 0 });
    }
    assert.equal((await allLinks(key)).length, 3);
    const v = await visit(srv, a);
    assert.equal(v.status, 302);
    assert.equal(v.headers.get('location'), 'https://example.com/two');
    assert.equal((await visit(srv, res[2].link.code)).status, 301);
});

it('a refused item gets the error a single create would answer; the others are created', async () => {
    const key = createKey(srv, 'bulk-mixed');
    const taken = alias('tk');
    await createLink(srv, key, { url: 'https://example.com/first', alias: taken });
    const twice = alias('tw');
    const blocked = `${unique('blk')}.example`;
    const add = await api(srv, 'POST', '/api/admin/blocklist', { key: admin, body: { host: blocked } });
    assert.equal(add.status, 201, add.text);
    const items = [
        { url: 'https://example.com/ok-0' },
        { url: 'ftp://example.com/' },                       // bad url
        { url: 'https://example.com/ok-2', alias: taken },    // alias taken before
        { url: 'https://example.com/ok-3', alias: twice },
        { url: 'https://example.com/ok-4', alias: twice },    // taken by item 3
        'https://example.com/not-an-object',
        { url: 'https://example.com/ok-6', colour: 'red' },   // unknown field
        { url: `https://www.${blocked}/x` },                  // blocked host
        { alias: alias('nu') },                               // no url
        { url: 'https://example.com/ok-9', alias: 'api' },    // reserved
        { url: 'https://example.com/ok-10', ttl: -5 },
        { url: 'https://example.com/ok-11' },
        { url: 'https://example.com/pw', password: 'secret' },  // never silently unprotected
    ];
    const r = await bulk(key, { links: items });
    assert.equal(r.status, 200, r.text);
    const res = r.json.results;
    assert.deepEqual(res.map((x) => x.status), [201, 400, 409, 201, 409, 400, 400, 400, 400, 400, 400, 201, 400]);
    const fields = res.map((x) => (x.status >= 400 ? errorOf({ json: x }).field : null));
    assert.deepEqual(fields, [null, 'url', 'alias', null, 'alias', null, 'colour', 'url', 'url', 'alias', 'ttl',
        null, 'password']);
    for (const x of res) {
        if (x.status >= 400) {
            assert.deepEqual(Object.keys(x).sort(), ['error', 'status']);
            assert.equal(x.error.code, x.status === 409 ? 'alias_taken' : 'invalid_field');
            assert.ok(x.error.message.length > 5);
        }
    }
    assert.match(res[1].error.message, /^url must start with http/);
    assert.equal(res[7].error.message, 'destination host is blocked');
    assert.equal(res[3].link.code, twice);

    // What a single create answers for the same refusal
    const single = await api(srv, 'POST', '/api/links', { key, body: items[2] });
    assert.equal(single.status, 409);
    assert.deepEqual(single.json.error, res[2].error);

    // Exactly the accepted items exist, and the duplicate alias kept the first URL.
    const urls = (await allLinks(key)).map((l) => l.url).sort();
    assert.deepEqual(urls, ['https://example.com/first', 'https://example.com/ok-0', 'https://example.com/ok-11',
        'https://example.com/ok-3']);
    assert.equal((await visit(srv, twice)).headers.get('location'), 'https://example.com/ok-3');
});

it('reuse inside a batch returns the link made earlier in the same batch', async () => {
    const key = createKey(srv, 'bulk-reuse');
    const r = await bulk(key, { links: [{ url: 'https://example.com/same', reuse: true },
        { url: 'https://example.com/same', reuse: true }, { url: 'https://example.com/same' }] });
    assert.equal(r.status, 200, r.text);
    const res = r.json.results;
    assert.deepEqual(res.map((x) => x.status), [201, 200, 201]);
    assert.equal(res[1].link.code, res[0].link.code);
    assert.notEqual(res[2].link.code, res[0].link.code);
    assert.equal((await allLinks(key)).length, 2);
});

it('a bad envelope is 400 naming "links" (or the field), and creates nothing', async () => {
    const key = createKey(srv, 'bulk-env');
    const tooMany = Array.from({ length: 1001 }, (_, i) => ({ url: `https://example.com/${i}` }));
    for (const body of [{}, { links: null }, { links: {} }, { links: 'x' }, { links: [] }, { links: tooMany }]) {
        const r = await bulk(key, body);
        assert.equal(r.status, 400, r.text);
        const e = errorOf(r);
        assert.equal(e.field, 'links');
        assert.equal(e.message, 'links must be an array of 1 to 1000 link objects');
    }
    const extra = await bulk(key, { links: [{ url: 'https://example.com/' }], dry_run: true });
    assert.equal(extra.status, 400, extra.text);
    assert.equal(errorOf(extra).field, 'dry_run');
    const arr = await api(srv, 'POST', '/api/links/bulk', { key, raw: '[{"url": "https://example.com/"}]' });
    assert.equal(arr.status, 400, arr.text);
    assert.equal(errorOf(arr).code, 'invalid_json');
    const bad = await api(srv, 'POST', '/api/links/bulk', { key, raw: '{"links": [' });
    assert.equal(bad.status, 400, bad.text);
    const noKey = await bulk(undefined, { links: [{ url: 'https://example.com/' }] });
    assert.equal(noKey.status, 401, noKey.text);
    const badIdem = await bulk(key, { links: [{ url: 'https://example.com/' }] }, { 'idempotency-key': '' });
    assert.equal(badIdem.status, 400, badIdem.text);
    assert.equal(errorOf(badIdem).field, 'Idempotency-Key');
    assert.equal((await allLinks(key)).length, 0);
});

it('1,000 links in one request fit the default body limit and are all created', async () => {
    const key = createKey(srv, 'bulk-1000');
    const p = unique('k');
    const items = Array.from({ length: 1000 }, (_, i) => ({
        url: `https://example.com/articles/${p}/${i}?utm_campaign=spring-sale&ref=newsletter-${i}`,
        title: `Article ${i} of the spring sale newsletter`,
        tags: ['bulk', `batch-${i % 10}`],
    }));
    const body = JSON.stringify({ links: items });
    assert.ok(body.length > 150_000 && body.length < 1_048_576, `body is ${body.length} bytes`);
    const r = await bulk(key, { links: items });
    assert.equal(r.status, 200, r.text.slice(0, 500));
    const res = r.json.results;
    assert.equal(res.length, 1000);
    assert.ok(res.every((x) => x.status === 201), 'every item created');
    assert.deepEqual(res.map((x) => x.link.url), items.map((x) => x.url));
    assert.equal(new Set(res.map((x) => x.link.code)).size, 1000);
    const listed = await allLinks(key);
    assert.equal(listed.length, 1000);
    const tagged = await api(srv, 'GET', '/api/links?tag=batch-3&limit=1000', { key });
    assert.equal(tagged.json.length, 100);
    const v = await visit(srv, res[999].link.code);
    assert.equal(v.headers.get('location'), items[999].url);
});

it('with an Idempotency-Key a retried batch replays the first answer; another body is 422', async () => {
    const key = createKey(srv, 'bulk-idem');
    const idem = unique('bulk-idem-');
    const a = alias('id');
    const body = { links: [{ url: 'https://example.com/i1' }, { url: 'https://example.com/i2', alias: a },
        { url: 'nope' }] };
    const first = await bulk(key, body, { 'idempotency-key': idem });
    assert.equal(first.status, 200, first.text);
    assert.notEqual(first.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(first.json.results.map((x) => x.status), [201, 201, 400]);
    for (let i = 0; i < 2; i++) {
        const again = await bulk(key, body, { 'idempotency-key': idem });
        assert.equal(again.status, 200, again.text);
        assert.equal(again.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(again.json, first.json);
    }
    assert.equal((await allLinks(key)).length, 2);

    const other = await bulk(key, { links: [{ url: 'https://example.com/other' }] }, { 'idempotency-key': idem });
    assert.equal(other.status, 422, other.text);
    assert.equal(errorOf(other).code, 'idempotency_mismatch');
    // The same key on a single create is another request too
    const single = await api(srv, 'POST', '/api/links', { key, body: body.links[0], headers: { 'idempotency-key': idem } });
    assert.equal(single.status, 422, single.text);
    assert.equal((await allLinks(key)).length, 2);

    // Without the key the same body is a new batch (its alias now taken)
    const fresh = await bulk(key, body);
    assert.deepEqual(fresh.json.results.map((x) => x.status), [201, 409, 400]);
});

it('two batches with one Idempotency-Key at once make one batch of links and one answer', async () => {
    const key = createKey(srv, 'bulk-race');
    const idem = unique('bulk-race-');
    const body = { links: Array.from({ length: 50 }, (_, i) => ({ url: `https://example.com/race/${i}` })) };
    const results = await Promise.all([0, 1, 2].map(() => bulk(key, body, { 'idempotency-key': idem })));
    assert.deepEqual(results.map((r) => r.status), [200, 200, 200], results.map((r) => r.text.slice(0, 200)).join('\n'));
    const fresh = results.filter((r) => r.headers.get('idempotent-replayed') !== 'true');
    assert.equal(fresh.length, 1, 'exactly one answer is the original, the others are replays');
    for (const r of results) assert.deepEqual(r.json, results[0].json);
    const codes = results[0].json.results.map((x) => x.link.code).sort();
    assert.deepEqual((await allLinks(key)).map((l) => l.code).sort(), codes);
});

it('an answered batch survives kill -9', async () => {
    const own = await startServer();
    try {
        const key = createKey(own, 'bulk-durable');
        const items = Array.from({ length: 200 }, (_, i) => ({ url: `https://example.com/durable/${i}` }));
        const r = await api(own, 'POST', '/api/links/bulk', { key, body: { links: items } });
        assert.equal(r.status, 200, r.text.slice(0, 300));
        await own.kill9();
        await own.restart();
        const list = await api(own, 'GET', '/api/links?limit=1000', { key });
        assert.equal(list.status, 200);
        assert.deepEqual(list.json.map((l) => l.code).sort(), r.json.results.map((x) => x.link.code).sort());
    } finally {
        await own.stop();
    }
});
