// cluster-blocklist.test.mjs - the blocklist on two nodes sharing one
// PostgreSQL and one Redis (issue 22, item 4): a host blocked through one
// node is refused by the other within the bus's second, at create and at a
// PATCH of the URL, even when that node had counted an empty blocklist
// before; a host unblocked on one node is accepted by the other again; a
// custom domain registered on one node (a destination that is shortd itself,
// item 8) is refused by the other.
//
// Needs SHORTD_TEST_PG (tests/pg.sh) and SHORTD_TEST_REDIS (tests/redis.sh):
// run as
//     tests/pg.sh tests/redis.sh node --test tests/e2e/cluster-blocklist.test.mjs
// Every test is skipped when either URL is unset (as in the plain e2e runs).
// The test works in a PostgreSQL schema of its own and drops it.

import assert from 'node:assert/strict';

import { twoNodes } from './cluster-kit.mjs';
import { api, it, poll } from './harness.mjs';

const PG = process.env.SHORTD_TEST_PG || '';
const REDIS = process.env.SHORTD_TEST_REDIS || '';
const skip = PG && REDIS ? false
    : 'SHORTD_TEST_PG and SHORTD_TEST_REDIS must both be set (tests/pg.sh tests/redis.sh node --test ...)';

const SCHEMA = `clusterbl_${process.pid}`;
const BOUND_MS = 1000 + 2000;   // the bus's second, and an ASan build's slowness
const pair = twoNodes({ pg: PG, redis: REDIS, schema: SCHEMA, prefix: 'bl', skip });

const create = (node, dest) => api(node, 'POST', '/api/links', { key: pair.admin, body: { url: dest } });

it('a host blocked on one node is refused by the other; unblocked, accepted again', async () => {
    // B creates first, so it has counted the blocklist while it was empty.
    const before = await create(pair.b, 'https://shop.evil-bl.example/before');
    assert.equal(before.status, 201, before.text);
    const other = await create(pair.a, 'https://example.com/warm-a');
    assert.equal(other.status, 201, other.text);

    const add = await api(pair.a, 'POST', '/api/admin/blocklist', { key: pair.admin, body: { host: 'evil-bl.example' } });
    assert.equal(add.status, 201, add.text);
    const onA = await create(pair.a, 'https://evil-bl.example/a');
    assert.equal(onA.status, 400, onA.text);

    let last;
    const refused = await poll(async () => {
        last = await create(pair.b, 'https://www.evil-bl.example/b');
        return last.status === 400;
    }, { timeoutMs: BOUND_MS, intervalMs: 100 });
    assert.ok(refused, `node B still accepts the blocked host after ${BOUND_MS} ms: ${last.status} ${last.text}`);
    assert.equal(last.json.error.field, 'url');
    assert.match(last.json.error.message, /blocked/);

    const patch = await api(pair.b, 'PATCH', `/api/links/${before.json.code}`,
        { key: pair.admin, body: { url: 'https://evil-bl.example/patched' } });
    assert.equal(patch.status, 400, patch.text);
    assert.equal(patch.json.error.field, 'url');

    const del = await api(pair.a, 'DELETE', '/api/admin/blocklist/evil-bl.example', { key: pair.admin });
    assert.equal(del.status, 204, del.text);
    const accepted = await poll(async () => {
        last = await create(pair.b, 'https://evil-bl.example/again');
        return last.status === 201;
    }, { timeoutMs: BOUND_MS, intervalMs: 100 });
    assert.ok(accepted, `node B still refuses the unblocked host: ${last.status} ${last.text}`);
}, { skip });

it('a host blocked on one node while the other had counted a non-empty list is refused there too', async () => {
    const first = await api(pair.a, 'POST', '/api/admin/blocklist', { key: pair.admin, body: { host: 'one-bl.example' } });
    assert.equal(first.status, 201, first.text);
    let last;
    assert.ok(await poll(async () => {
        last = await create(pair.b, 'https://one-bl.example/x');
        return last.status === 400;
    }, { timeoutMs: BOUND_MS, intervalMs: 100 }), `B accepts one-bl.example: ${last.status} ${last.text}`);
    const second = await api(pair.b, 'POST', '/api/admin/blocklist', { key: pair.admin, body: { host: 'two-bl.example' } });
    assert.equal(second.status, 201, second.text);
    assert.ok(await poll(async () => {
        last = await create(pair.a, 'https://two-bl.example/x');
        return last.status === 400;
    }, { timeoutMs: BOUND_MS, intervalMs: 100 }), `A accepts two-bl.example: ${last.status} ${last.text}`);
}, { skip });

it('a custom domain registered on one node is refused as a destination by the other', async () => {
    const warm = await create(pair.b, 'https://go.brand-bl.example/before');
    assert.equal(warm.status, 201, warm.text);  // B has counted no domain yet
    const reg = await api(pair.a, 'POST', '/api/domains', { key: pair.admin, body: { host: 'go.brand-bl.example' } });
    assert.equal(reg.status, 201, reg.text);
    let last;
    assert.ok(await poll(async () => {
        last = await create(pair.b, 'https://go.brand-bl.example/loop');
        return last.status === 400;
    }, { timeoutMs: BOUND_MS, intervalMs: 100 }), `B still links to the registered domain: ${last.status} ${last.text}`);
    assert.equal(last.json.error.field, 'url');
}, { skip });
