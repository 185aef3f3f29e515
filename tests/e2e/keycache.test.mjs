// keycache.test.mjs - API keys known to a running node (issue 23, item 3):
// a key once used is let in from the node's key cache (its hits counted in
// /metrics), and a key revoked with `shortd key revoke` is refused by the
// running server within the README's bound: on SQLite through the store's
// change generation (read every 100 ms), on PostgreSQL (SHORTD_E2E_STORE=pg)
// through the NOTIFY of the revoking transaction.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, cli, createKey, it, metricsOf, poll, PG_MODE, startServer, unique } from './harness.mjs';

// 100 ms (the generation's check) on SQLite, a few ms over the bus on
// PostgreSQL; the rest is an ASan build's slowness on a shared machine.
const BOUND_MS = 2000;

let srv;

before(async () => {
    srv = await startServer();
});

after(async () => {
    if (srv) await srv.stop();
});

const metrics = () => metricsOf(srv, 'shortd_key_cache_');

function keyId(name) {
    const r = cli(['key', 'list', '--db', srv.db]);
    assert.equal(r.code, 0, r.stderr);
    const line = r.stdout.split('\n').find((l) => l.split(/\s+/)[1] === name);
    assert.ok(line, `no key named ${name} in:\n${r.stdout}`);
    return line.trim().split(/\s+/)[0];
}

it('a key used once is let in from the key cache; /metrics counts hits, misses, entries', async () => {
    const key = createKey(srv, unique('kc-hit'));
    const m0 = await metrics();
    for (const name of ['shortd_key_cache_hits_total', 'shortd_key_cache_misses_total',
        'shortd_key_cache_entries', 'shortd_key_cache_bytes']) {
        assert.ok(name in m0, `/metrics has no ${name}`);
    }
    assert.equal((await api(srv, 'GET', '/api/links', { key })).status, 200);
    const m1 = await metrics();
    assert.equal(m1.shortd_key_cache_misses_total, m0.shortd_key_cache_misses_total + 1);
    assert.ok(m1.shortd_key_cache_entries >= 1, JSON.stringify(m1));
    for (let i = 0; i < 3; i++) assert.equal((await api(srv, 'GET', '/api/links', { key })).status, 200);
    const m2 = await metrics();
    assert.equal(m2.shortd_key_cache_hits_total, m1.shortd_key_cache_hits_total + 3);
    assert.equal(m2.shortd_key_cache_misses_total, m1.shortd_key_cache_misses_total);
    assert.equal(m2.shortd_key_cache_bytes, m0.shortd_key_cache_bytes);
    // A token nobody holds is asked of the store every time, never held.
    const bogus = `sk_${'x'.repeat(40)}`;
    for (let i = 0; i < 2; i++) assert.equal((await api(srv, 'GET', '/api/links', { key: bogus })).status, 401);
    const m3 = await metrics();
    assert.equal(m3.shortd_key_cache_misses_total, m2.shortd_key_cache_misses_total + 2);
    assert.equal(m3.shortd_key_cache_entries, m2.shortd_key_cache_entries);
});

it(`a key revoked with the CLI is refused by the running server within ${BOUND_MS} ms`, async () => {
    const name = unique('kc-revoked');
    const key = createKey(srv, name);
    const other = createKey(srv, unique('kc-other'));
    // Both known to the node (the second request of each is a cache hit).
    for (const k of [key, key, other, other]) {
        assert.equal((await api(srv, 'GET', '/api/links', { key: k })).status, 200);
    }
    const r = cli(['key', 'revoke', '--db', srv.db, keyId(name)]);
    assert.equal(r.code, 0, r.stderr);
    const t0 = Date.now();
    let last;
    const refused = await poll(async () => {
        last = await api(srv, 'GET', '/api/links', { key });
        return last.status === 401;
    }, { timeoutMs: BOUND_MS, intervalMs: 5 });
    const ms = Date.now() - t0;
    assert.ok(refused, `the revoked key still answers ${last.status} after ${BOUND_MS} ms`);
    console.log(`${PG_MODE ? 'postgres' : 'sqlite'}: the revoked key was refused ${ms} ms after the CLI exited`);
    assert.equal(last.json.error.code, 'unauthorized');
    // The other key works (read from the store again: the cache was emptied).
    assert.equal((await api(srv, 'GET', '/api/links', { key: other })).status, 200);
    assert.equal((await api(srv, 'POST', '/api/links', { key, body: { url: 'https://example.com/' } })).status, 401);
});
