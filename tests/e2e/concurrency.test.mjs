// concurrency.test.mjs - races: one alias claimed 20 times at once, one
// Idempotency-Key sent 10 times at once, "reuse" creates of one URL at once,
// and exact click counts from 8 kept-alive clients × 250 clicks, kept across a
// clean restart.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { Conn, api, createKey, createLink, errorOf, it, poll, startServer, unique, visit } from './harness.mjs';

let srv;
let admin;

before(async () => {
    srv = await startServer();
    admin = srv.adminKey;
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

async function clicksOf(code) {
    const r = await api(srv, 'GET', `/api/links/${code}`, { key: admin });
    assert.equal(r.status, 200, r.text);
    return r.json.clicks;
}

/* Polls until the link shows 'want' clicks; fails at once on more. */
async function expectClicks(code, want, timeoutMs = 10_000) {
    let last;
    const ok = await poll(async () => {
        last = await clicksOf(code);
        assert.ok(last <= want, `clicks went past ${want}: ${last}`);
        return last === want;
    }, { timeoutMs, intervalMs: 100 });
    assert.ok(ok, `clicks are ${last} after ${timeoutMs} ms, want ${want}`);
}

/* --------------------------------------------------------------- alias race */

it('20 concurrent claims of one alias: exactly one 201, nineteen 409', async () => {
    const key = createKey(srv, 'racer');
    const alias = unique('race-');
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        api(srv, 'POST', '/api/links', { key, body: { url: `https://example.com/race/${i}`, alias } })));
    const statuses = results.map((r) => r.status);
    const won = results.filter((r) => r.status === 201);
    assert.equal(won.length, 1, `statuses: ${statuses}`);
    assert.equal(results.filter((r) => r.status === 409).length, 19, `statuses: ${statuses}`);
    for (const r of results.filter((x) => x.status === 409)) assert.equal(errorOf(r).code, 'alias_taken');
    const winner = won[0].json;
    assert.equal(winner.code, alias);
    const v = await visit(srv, alias);
    assert.equal(v.status, 302);
    assert.equal(v.headers.get('location'), winner.url, 'the alias must lead where the 201 said');
    const list = await api(srv, 'GET', '/api/links?state=all&limit=1000', { key });
    assert.equal(list.json.filter((l) => l.code === alias).length, 1);
    assert.equal(list.json.length, 1, `the losers left links behind: ${list.json.map((l) => l.code)}`);
});

it('20 concurrent claims from 20 different keys: still one winner', async () => {
    const keys = Array.from({ length: 20 }, (_, i) => createKey(srv, `racer-${i}`));
    const alias = unique('race2-');
    const results = await Promise.all(keys.map((key, i) =>
        api(srv, 'POST', '/api/links', { key, body: { url: `https://example.com/race2/${i}`, alias } })));
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 201).length, 1, `statuses: ${statuses}`);
    assert.equal(statuses.filter((s) => s === 409).length, 19, `statuses: ${statuses}`);
    const i = statuses.indexOf(201);
    assert.equal((await visit(srv, alias)).headers.get('location'), `https://example.com/race2/${i}`);
});

/* ------------------------------------------------------------- idempotency */

it('a retried create with the same Idempotency-Key replays the first answer', async () => {
    const key = createKey(srv, 'idem-seq');
    const idem = unique('idem-');
    const body = { url: 'https://example.com/idem', title: 'once' };
    const first = await api(srv, 'POST', '/api/links', { key, body, headers: { 'idempotency-key': idem } });
    assert.equal(first.status, 201, first.text);
    assert.notEqual(first.headers.get('idempotent-replayed'), 'true');
    for (let i = 0; i < 2; i++) {
        const again = await api(srv, 'POST', '/api/links', { key, body, headers: { 'idempotency-key': idem } });
        assert.equal(again.status, 201, again.text);
        assert.equal(again.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(again.json, first.json);
    }
    const list = await api(srv, 'GET', '/api/links?state=all', { key });
    assert.equal(list.json.length, 1, `a replay created another link: ${list.text}`);

    const other = await api(srv, 'POST', '/api/links', {
        key, body: { url: 'https://example.com/different' }, headers: { 'idempotency-key': idem },
    });
    assert.equal(other.status, 422, other.text);
    assert.equal(errorOf(other).code, 'idempotency_mismatch');
    assert.equal((await api(srv, 'GET', '/api/links?state=all', { key })).json.length, 1);

    // Without the header every create is a new link.
    const a = await createLink(srv, key, body);
    const b = await createLink(srv, key, body);
    assert.notEqual(a.code, b.code);
    assert.notEqual(a.code, first.json.code);
});

it('10 concurrent creates with one Idempotency-Key give one code and one link', async () => {
    const key = createKey(srv, 'idem-race');
    const idem = unique('idem-race-');
    const body = { url: 'https://example.com/idem-race', tags: ['t'] };
    const results = await Promise.all(Array.from({ length: 10 }, () =>
        api(srv, 'POST', '/api/links', { key, body, headers: { 'idempotency-key': idem } })));
    const statuses = results.map((r) => r.status);
    assert.deepEqual(statuses, Array(10).fill(201), `statuses: ${statuses}`);
    const codes = new Set(results.map((r) => r.json.code));
    assert.equal(codes.size, 1, `codes: ${[...codes]}`);
    const fresh = results.filter((r) => r.headers.get('idempotent-replayed') !== 'true');
    assert.equal(fresh.length, 1, 'exactly one answer is the original, the others are replays');
    for (const r of results) assert.deepEqual(r.json, results[0].json);
    const list = await api(srv, 'GET', '/api/links?state=all&limit=1000', { key });
    assert.equal(list.status, 200);
    assert.equal(list.json.length, 1, `links: ${list.json.map((l) => l.code)}`);
    assert.equal(list.json[0].code, [...codes][0]);
});

it('Idempotency-Keys are scoped to the API key', async () => {
    const k1 = createKey(srv, 'idem-a');
    const k2 = createKey(srv, 'idem-b');
    const idem = unique('shared-');
    const body = { url: 'https://example.com/scoped' };
    const a = await api(srv, 'POST', '/api/links', { key: k1, body, headers: { 'idempotency-key': idem } });
    const b = await api(srv, 'POST', '/api/links', { key: k2, body, headers: { 'idempotency-key': idem } });
    assert.equal(a.status, 201, a.text);
    assert.equal(b.status, 201, b.text);
    assert.notEqual(b.headers.get('idempotent-replayed'), 'true');
    assert.notEqual(a.json.code, b.json.code);
    const g = await api(srv, 'GET', `/api/links/${b.json.code}`, { key: k2 });
    assert.equal(g.status, 200, 'the second key owns its own link');
    // Different bodies under the same value from different keys are not a mismatch either.
    const c = await api(srv, 'POST', '/api/links', {
        key: createKey(srv, 'idem-c'), body: { url: 'https://example.com/other' }, headers: { 'idempotency-key': idem },
    });
    assert.equal(c.status, 201, c.text);
});

/* ------------------------------------------------------------------- reuse */

it('reuse returns the caller\'s live link to the same url with 200', async () => {
    const key = createKey(srv, 'reuser');
    const url = `https://example.com/reuse/${unique()}`;
    const first = await api(srv, 'POST', '/api/links', { key, body: { url, reuse: true } });
    assert.equal(first.status, 201, first.text);
    const again = await api(srv, 'POST', '/api/links', { key, body: { url, reuse: true } });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.code, first.json.code);
    // Without reuse: a new code.
    const plain = await createLink(srv, key, { url });
    assert.notEqual(plain.code, first.json.code);
    // Exactly the same url only.
    const near = await api(srv, 'POST', '/api/links', { key, body: { url: url + '/', reuse: true } });
    assert.equal(near.status, 201, near.text);
    // Another caller gets its own link.
    const other = await api(srv, 'POST', '/api/links', { key: createKey(srv, 'reuser-2'), body: { url, reuse: true } });
    assert.equal(other.status, 201, other.text);
    assert.ok(![first.json.code, plain.code].includes(other.json.code));
    // A deleted link is not live: reuse makes a new one.
    const solo = `https://example.com/reuse-del/${unique()}`;
    const d1 = await createLink(srv, key, { url: solo, reuse: true });
    assert.equal((await api(srv, 'DELETE', `/api/links/${d1.code}`, { key })).status, 204);
    const d2 = await api(srv, 'POST', '/api/links', { key, body: { url: solo, reuse: true } });
    assert.equal(d2.status, 201, d2.text);
    assert.notEqual(d2.json.code, d1.code);
});

it('10 concurrent reuse creates of one url give one code', async () => {
    const key = createKey(srv, 'reuse-race');
    const url = `https://example.com/reuse-race/${unique()}`;
    const results = await Promise.all(Array.from({ length: 10 }, () =>
        api(srv, 'POST', '/api/links', { key, body: { url, reuse: true } })));
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 201).length, 1, `statuses: ${statuses}`);
    assert.equal(statuses.filter((s) => s === 200).length, 9, `statuses: ${statuses}`);
    const codes = new Set(results.map((r) => r.json && r.json.code));
    assert.equal(codes.size, 1, `codes: ${[...codes]}`);
    const list = await api(srv, 'GET', '/api/links?state=all&limit=1000', { key });
    assert.equal(list.json.filter((l) => l.url === url).length, 1, `links: ${list.json.map((l) => l.code)}`);
});

/* ------------------------------------------------------------------ clicks */

async function clickStorm(code, clients, perClient) {
    const conns = await Promise.all(Array.from({ length: clients }, () => Conn.open(srv.port)));
    try {
        const counts = await Promise.all(conns.map(async (c) => {
            let n = 0;
            for (let i = 0; i < perClient; i++) {
                const r = await c.get(`/${code}`);
                assert.ok(r, `connection closed after ${n} redirects`);
                assert.equal(r.status, 302);
                n++;
            }
            return n;
        }));
        return counts.reduce((a, b) => a + b, 0);
    } finally {
        for (const c of conns) c.destroy();
    }
}

it('8 clients × 250 clicks count exactly 2,000, and a clean restart keeps them', async () => {
    const l = await createLink(srv, admin, { url: 'https://example.com/popular' });
    const sent = await clickStorm(l.code, 8, 250);
    assert.equal(sent, 2000);
    await expectClicks(l.code, 2000);

    // Clicks still pending in memory must be flushed by a clean shutdown:
    // stop right after the last answer, without waiting for a flush.
    const more = await clickStorm(l.code, 4, 25);
    assert.equal(more, 100);
    await srv.stop('SIGTERM');
    await srv.restart();
    assert.equal(await clicksOf(l.code), 2100, 'clicks lost or doubled across a clean restart');

    const v = await visit(srv, l.code);
    assert.equal(v.status, 302);
    await expectClicks(l.code, 2101);
}, { timeout: 120_000 });

it('SIGINT is a clean shutdown too', async () => {
    const l = await createLink(srv, admin, { url: 'https://example.com/sigint' });
    const sent = await clickStorm(l.code, 2, 10);
    assert.equal(sent, 20);
    await srv.stop('SIGINT');
    await srv.restart();
    assert.equal(await clicksOf(l.code), 20);
});
