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

async function scan(tag) {
    for (let i = 0; i < 40; i++) assert.equal((await visit(srv, `${tag}${String(i).padStart(5, '0')}`)).status, 404);
}

it('after a scan past the bound, later unknown codes are remembered again once the scan\'s misses expire', async () => {
    // Round after round: a scan of four times the bound fills it with
    // misses; within a miss-ttl of it they make room for new ones. (How many
    // of a burst fit depends on how fast the burst comes, so each round
    // asks only that a new unknown code is remembered at all.)
    for (let round = 0; round < 4; round++) {
        await scan(`s${round}`);
        assert.ok(await poll(rememberedOnce, { timeoutMs: 10_000, intervalMs: 50 }),
            `round ${round}: unknown codes are never remembered after the scan: every lookup reads the store`);
    }
});
