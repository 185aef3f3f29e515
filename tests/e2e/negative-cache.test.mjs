// negative-cache.test.mjs - remembered misses do not wear out (issue 22,
// item 7): after a scan of more unknown codes than the misses' bound (an
// eighth of cache-size), once the scan's misses are out of time later
// unknown codes are remembered again: the second lookup of each is answered
// from the cache (shortd_cache_hits_total), not from the store.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, it, poll, startServer, visit } from './harness.mjs';

let srv;

before(async () => {
    // At most 10 remembered misses, each for 300 ms.
    srv = await startServer({ args: ['--cache-size', '80', '--miss-ttl', '300'] });
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

async function hits() {
    const r = await api(srv, 'GET', '/metrics');
    assert.equal(r.status, 200);
    const m = /^shortd_cache_hits_total (\d+)$/m.exec(r.text);
    assert.ok(m, 'no shortd_cache_hits_total in /metrics');
    return Number(m[1]);
}

let fresh = 0;
/* Two lookups of a code never asked for before: true when the second was
 * answered from the cache (a remembered miss). */
async function rememberedOnce() {
    const code = `nx${String(fresh++).padStart(5, '0')}`;
    const h0 = await hits();
    assert.equal((await visit(srv, code)).status, 404);
    assert.equal((await visit(srv, code)).status, 404);
    return (await hits()) - h0 === 1;
}

it('after a scan past the bound, later unknown codes are remembered again once the scan\'s misses expire', async () => {
    for (let i = 0; i < 40; i++) assert.equal((await visit(srv, `sc${String(i).padStart(5, '0')}`)).status, 404);
    // The scan's misses fill the bound; within a miss-ttl of it they are
    // replaced by new ones.
    assert.ok(await poll(rememberedOnce, { timeoutMs: 10_000, intervalMs: 50 }),
        'unknown codes are never remembered after the scan: every lookup reads the store');
    // And from then on, round after round of the bound's worth, as their
    // predecessors expire.
    for (let round = 0; round < 3; round++) {
        assert.ok(await poll(rememberedOnce, { timeoutMs: 10_000, intervalMs: 50 }), `round ${round}`);
        let n = 0;
        for (let i = 0; i < 5; i++) n += (await rememberedOnce()) ? 1 : 0;
        assert.ok(n >= 1, `round ${round}: ${n} of 5 remembered`);
    }
});
