// ratelimit.test.mjs - rate limits and the client address (issue 6, point 2),
// over HTTP against the real binary, on SQLite and on PostgreSQL
// (SHORTD_E2E_STORE=pg): the auth limit stops key guessing (429 with
// Retry-After, RateLimit-* headers and a JSON error; even a right key is
// turned away once over it); create and read limits per key and per address
// are separate buckets; X-Forwarded-For from an untrusted peer is ignored,
// and behind --trusted-proxies each forwarded client has its own bucket (a
// forged hop on the left does not help) and its own unique-visitor identity;
// redirects are never limited; no client address ever reaches the logs or
// the store.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { after } from 'node:test';

import { PG_MODE, api, createKey, createLink, errorOf, filesUnder, it, poll, startServer, visit } from './harness.mjs';

const servers = [];
async function start(args) {
    const s = await startServer({ args });
    servers.push(s);
    return s;
}

after(async () => {
    for (const s of servers) if (s.running) await s.stop();
});

/* Addresses from the documentation ranges, never the test's own. */
const ADDR = ['198.51.100.23', '198.51.100.24', '203.0.113.77', '203.0.113.78', '2001:db8::4d'];

function rl(r) {
    const h = (n) => (r.headers.get(n) === null ? null : Number(r.headers.get(n)));
    return {
        limit: h('ratelimit-limit'), remaining: h('ratelimit-remaining'), reset: h('ratelimit-reset'),
        retry: h('retry-after'), policy: r.headers.get('ratelimit-policy'),
    };
}

function check429(r, limit, window) {
    assert.equal(r.status, 429, r.text);
    const e = errorOf(r);
    assert.equal(e.code, 'rate_limited');
    assert.match(e.message, /too many requests/);
    const h = rl(r);
    assert.equal(h.limit, limit);
    assert.equal(h.remaining, 0);
    assert.ok(h.retry >= 1 && h.retry <= 2 * window, `Retry-After ${h.retry}`);
    assert.ok(h.reset >= 1, `RateLimit-Reset ${h.reset}`);
    assert.equal(h.policy, `${limit};w=${window}`);
}

const post = (s, key, headers = {}) =>
    api(s, 'POST', '/api/links', { key, body: { url: 'https://example.com/rl' }, headers });

it('the auth limit: 20 failed keys a minute per address by default, then 429 with Retry-After; ' +
    'a right key is turned away too, so guessing stops', async () => {
    const s = await start([]);
    const link = await createLink(s, s.adminKey, { url: 'https://example.com/still-redirects' });
    for (let i = 0; i < 20; i++) {
        const r = await api(s, 'GET', '/api/links', { key: `sk_wrong${i}` });
        assert.equal(r.status, 401, r.text);
        const h = rl(r);
        assert.equal(h.limit, 20);
        assert.equal(h.remaining, 19 - i);
        assert.ok(h.reset >= 1 && h.reset <= 60);
        assert.equal(h.policy, '20;w=60');
    }
    const over = await api(s, 'GET', '/api/links', { key: 'sk_wrong-again' });
    check429(over, 20, 60);
    assert.equal(over.headers.get('www-authenticate'), null, 'a 429 does not ask for credentials');
    // No key at all counts the same, and is refused the same.
    check429(await api(s, 'GET', '/api/links'), 20, 60);
    // The right key from the same address learns nothing either...
    check429(await api(s, 'GET', '/api/links', { key: s.adminKey }), 20, 60);
    // ...and redirects are never limited.
    for (let i = 0; i < 30; i++) assert.equal((await visit(s, link.code)).status, 302);
    for (let i = 0; i < 30; i++) assert.equal((await visit(s, 'Zz9Zz9Z')).status, 404);
});

it('create limits per key and per address are separate buckets; headers on every limited answer',
    async () => {
        const s = await start(['--rate-create-key', '3/3600', '--rate-create-addr', '5/3600',
            '--trusted-proxies', '127.0.0.1/32']);
        const k1 = createKey(s, 'one');
        const k2 = createKey(s, 'two');
        const from = (a) => ({ 'x-forwarded-for': a });
        // Key one, address A: the key's 3 (the tighter limit speaks).
        for (let i = 0; i < 3; i++) {
            const r = await post(s, k1, from(ADDR[0]));
            assert.equal(r.status, 201, r.text);
            assert.equal(rl(r).limit, 3);
            assert.equal(rl(r).remaining, 2 - i);
        }
        check429(await post(s, k1, from(ADDR[0])), 3, 3600);
        check429(await post(s, k1, from(ADDR[1])), 3, 3600);   // the key is spent anywhere
        // Key two, address A: 2 more fit in A's 5 (requests the key refused
        // did not count for the address).
        for (let i = 0; i < 2; i++) assert.equal((await post(s, k2, from(ADDR[0]))).status, 201);
        check429(await post(s, k2, from(ADDR[0])), 5, 3600);
        // That refusal still used key two's third (the key is counted first).
        check429(await post(s, k2, from(ADDR[2])), 3, 3600);
        // A third key: any address but A.
        const k3 = createKey(s, 'three');
        const r = await post(s, k3, from(ADDR[2]));
        assert.equal(r.status, 201, r.text);
        assert.equal(rl(r).limit, 3);
        assert.equal(rl(r).remaining, 2);
        check429(await post(s, k3, from(ADDR[0])), 5, 3600);
        // Reads are another class, off by default: no headers.
        const list = await api(s, 'GET', '/api/links', { key: k1, headers: from(ADDR[0]) });
        assert.equal(list.status, 200);
        assert.equal(list.headers.get('ratelimit-limit'), null);
    });

it('read limits per key; other keys and creates are unaffected', async () => {
    const s = await start(['--rate-read-key', '4/3600']);
    const k1 = createKey(s, 'reader');
    for (let i = 0; i < 4; i++) {
        const r = await api(s, 'GET', '/api/links', { key: k1 });
        assert.equal(r.status, 200, r.text);
        assert.equal(rl(r).remaining, 3 - i);
    }
    check429(await api(s, 'GET', '/api/stats', { key: k1 }), 4, 3600);
    assert.equal((await api(s, 'GET', '/api/links', { key: s.adminKey })).status, 200);
    assert.equal((await post(s, k1)).status, 201);
});

it('X-Forwarded-For from an untrusted peer is ignored: one bucket whatever it says', async () => {
    const s = await start(['--rate-create-addr', '3/3600']);
    const key = createKey(s, 'forger');
    for (let i = 0; i < 3; i++) {
        assert.equal((await post(s, key, { 'x-forwarded-for': ADDR[i] })).status, 201);
    }
    check429(await post(s, key, { 'x-forwarded-for': ADDR[3] }), 3, 3600);
    check429(await post(s, key, { 'x-forwarded-for': `${ADDR[4]}, ${ADDR[3]}` }), 3, 3600);
});

it('behind --trusted-proxies each forwarded client has its own auth bucket; a forged hop on the left ' +
    'does not help', async () => {
    const s = await start(['--rate-auth', '2/3600', '--trusted-proxies', '10.0.0.0/8, 127.0.0.1/32']);
    const bad = (xff) => api(s, 'GET', '/api/links', { key: 'sk_guess', headers: { 'x-forwarded-for': xff } });
    assert.equal((await bad(ADDR[0])).status, 401);
    assert.equal((await bad(ADDR[0])).status, 401);
    check429(await bad(ADDR[0]), 2, 3600);
    // Another client: its own bucket.
    assert.equal((await bad(ADDR[1])).status, 401);
    assert.equal((await bad(ADDR[4])).status, 401);
    // A client that writes someone else on the left is still itself.
    check429(await bad(`${ADDR[2]}, ${ADDR[0]}`), 2, 3600);
    // Trusted hops on the right are skipped.
    check429(await bad(`${ADDR[0]}, 10.1.2.3`), 2, 3600);
    // A malformed hop stops the walk at the last good one (the proxy here):
    // the proxy's own bucket, not the forged client's.
    assert.equal((await bad(`${ADDR[0]}, not-an-address`)).status, 401);
    // The admin key still works from a client that has not failed.
    assert.equal((await api(s, 'GET', '/api/links',
        { key: s.adminKey, headers: { 'x-forwarded-for': ADDR[3] } })).status, 200);
});

async function uniques(s, key, code, clicks) {
    let last;
    const ok = await poll(async () => {
        const r = await api(s, 'GET', `/api/links/${code}/stats`, { key });
        last = r.json;
        return r.status === 200 && last.clicks === clicks;
    }, { timeoutMs: 10_000, intervalMs: 100 });
    assert.ok(ok, `stats of ${code}: ${JSON.stringify(last)}`);
    return last.unique_visitors;
}

it('behind a trusted proxy the forwarded client is the visitor; otherwise the peer is', async () => {
    const trusting = await start(['--trusted-proxies', '127.0.0.1/32']);
    const plain = await start([]);
    for (const [s, want] of [[trusting, 3], [plain, 1]]) {
        const l = await createLink(s, s.adminKey, { url: 'https://example.com/uniq' });
        for (const a of [ADDR[0], ADDR[1], ADDR[4]]) {
            assert.equal((await visit(s, l.code, { headers: { 'x-forwarded-for': a } })).status, 302);
        }
        assert.equal(await uniques(s, s.adminKey, l.code, 3), want);
    }
});

it('no client address reaches the logs or the store', async () => {
    const s = await start(['--trusted-proxies', '127.0.0.1/32', '--rate-create-addr', '2/3600',
        '--rate-auth', '1/3600', '--log-level', 'debug']);
    const l = await createLink(s, s.adminKey, { url: 'https://example.com/private' },
        { 'x-forwarded-for': ADDR[2] });
    for (const a of ADDR) {
        await visit(s, l.code, { headers: { 'x-forwarded-for': a } });
        await post(s, s.adminKey, { 'x-forwarded-for': a });
        await post(s, s.adminKey, { 'x-forwarded-for': a });
        await post(s, s.adminKey, { 'x-forwarded-for': a });
        await api(s, 'GET', '/api/links', { key: 'sk_nope', headers: { 'x-forwarded-for': a } });
        await api(s, 'GET', '/api/links', { key: 'sk_nope', headers: { 'x-forwarded-for': a } });
    }
    await uniques(s, s.adminKey, l.code, ADDR.length);
    await s.stop();
    const logs = s.stdout() + s.stderr();
    for (const a of ADDR) assert.ok(!logs.includes(a), `the logs hold ${a}`);
    let stored;
    if (PG_MODE) {
        const schema = /search_path%3D([A-Za-z0-9_]+)/.exec(s.store)[1];
        const r = spawnSync('pg_dump', ['-d', process.env.SHORTD_TEST_PG, '-n', schema, '--data-only'],
            { encoding: 'utf8', maxBuffer: 1 << 28 });
        assert.equal(r.status, 0, `pg_dump: ${r.stderr}`);
        stored = r.stdout;
    } else {
        stored = filesUnder(s.dir).map((f) => fs.readFileSync(f).toString('latin1')).join('\n');
    }
    assert.ok(stored.length > 1000, 'the store was read');
    assert.ok(stored.includes('https://example.com/private'), 'the store holds the link');
    for (const a of ADDR) assert.ok(!stored.includes(a), `the store holds ${a}`);
});
