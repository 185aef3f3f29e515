// cluster-events.test.mjs - events out on two nodes sharing one PostgreSQL
// (issue 28): each node delivers the clicks of its own journal, and the
// link events go out once in all, whichever node made the change (one node
// at a time holds the sink's lease on the outbox).
//
// Needs SHORTD_TEST_PG (tests/pg.sh) and SHORTD_TEST_REDIS (tests/redis.sh):
//     tests/pg.sh tests/redis.sh node --test tests/e2e/cluster-events.test.mjs
// Skipped when either is unset. Works in a PostgreSQL schema of its own.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { migratedSchema, psql, startNode } from './cluster-kit.mjs';
import { api, cli, createLink, it, lastWord, poll, visit } from './harness.mjs';
import { Receiver } from './receiver.mjs';

const PG = process.env.SHORTD_TEST_PG || '';
const REDIS = process.env.SHORTD_TEST_REDIS || '';
const skip = PG && REDIS ? false
    : 'SHORTD_TEST_PG and SHORTD_TEST_REDIS must both be set (tests/pg.sh tests/redis.sh node --test ...)';
const SCHEMA = `clusterevents_${process.pid}`;
const FAST = [
    '--events-retry-base-ms', '100', '--events-retry-cap-ms', '400',
    '--events-batch-wait-ms', '100', '--events-timeout-ms', '1000',
];

let url;
let admin;
let rx;
const nodes = [];

before(async () => {
    if (skip) return;
    url = migratedSchema(PG, SCHEMA);
    const k = cli(['key', 'create', '--store', url, '--name', 'events-admin', '--admin']);
    assert.equal(k.code, 0, k.stderr);
    admin = lastWord(k.stdout);
    rx = await new Receiver().start();
    const s = cli(['sink', 'add', '--store', url, '--kind', 'webhook', '--endpoint', `${rx.url}/hook`]);
    assert.equal(s.code, 0, s.stderr);
    for (const name of ['ev-a', 'ev-b']) {
        nodes.push(await startNode({ url, redis: REDIS, name, args: FAST, adminKey: admin }));
    }
});

after(async () => {
    if (skip) return;
    for (const n of nodes) await n.stop();
    await rx.stop();
    psql(PG, `DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
});

it('each node sends its clicks, and every link event goes out once', async () => {
    const [a, b] = nodes;
    const links = [];
    for (let i = 0; i < 6; i++) links.push(await createLink(i % 2 ? b : a, admin, { url: `https://example.com/c${i}` }));
    for (const l of links) {
        await Promise.all([visit(a, l.code), visit(a, l.code), visit(b, l.code)]);
    }
    const patched = await api(b, 'PATCH', `/api/links/${links[0].code}`, { key: admin, body: { title: 'T' } });
    assert.equal(patched.status, 200, patched.text);
    const want = links.length * 3;
    const ok = await poll(() => {
        const ev = rx.list();
        return ev.filter((e) => e.type === 'click').length === want &&
            ev.filter((e) => e.type === 'link.created').length === links.length &&
            ev.some((e) => e.type === 'link.updated');
    }, { timeoutMs: 20_000 });
    const ev = rx.list();
    assert.ok(ok, `receiver: ${ev.filter((e) => e.type === 'click').length} clicks of ${want}, ` +
        `${ev.filter((e) => e.type === 'link.created').length} creates of ${links.length}\n` +
        `${a.logs()}\n${b.logs()}`);
    // Link events: one copy each, though both nodes could deliver them.
    for (const e of rx.events.values()) {
        if (e.event.type !== 'click') assert.equal(e.copies, 1, `${e.event.type} ${e.event.data.code} sent ${e.copies} times`);
    }
    assert.deepEqual(rx.conflicts, []);
    // The clicks equal what the cluster counted.
    for (const l of links) {
        const s = await poll(async () => {
            const r = await api(a, 'GET', `/api/links/${l.code}/stats`, { key: admin });
            return r.json?.total_clicks === 3 ? r.json : null;
        });
        assert.ok(s, `${l.code} counted`);
        assert.equal(ev.filter((e) => e.type === 'click' && e.data.code === l.code).length, 3);
    }
}, { skip });
