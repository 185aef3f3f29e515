// events-sinks.test.mjs - the ingest sink (seed 004's contract: /batch with
// one result per event, statuses other than recorded and duplicate
// retried, a 404 on /batch falling back to /ingest per event) and the
// redis-stream sink (every event XADDed once, even when a batch is sent
// again). The Redis part needs SHORTD_TEST_REDIS (tests/redis.sh).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe } from 'node:test';

import { api, cli, createKey, createLink, it, poll, startServer, visit } from './harness.mjs';
import { Receiver } from './receiver.mjs';

const FAST = [
    '--events-retry-base-ms', '100', '--events-retry-cap-ms', '400',
    '--events-batch-wait-ms', '100', '--events-timeout-ms', '1000',
];
const REDIS = process.env.SHORTD_TEST_REDIS || '';

function addSink(srv, args) {
    const r = cli(['sink', 'add', '--db', srv.db, ...args]);
    assert.equal(r.code, 0, r.stderr);
    return Number(/created sink (\d+)/.exec(r.stdout)[1]);
}

async function sinkSeen(srv, id) {
    assert.ok(await poll(async () => (await api(srv, 'GET', '/metrics')).text
        .includes(`shortd_sink_deliveries_total{sink="${id}"`), { timeoutMs: 10_000 }));
}

describe('ingest sink', () => {
    let srv;
    let rx;
    let key;

    before(async () => {
        rx = await new Receiver().start();
        srv = await startServer({ args: FAST });
        key = createKey(srv, 'ingest');
        const id = addSink(srv, ['--kind', 'ingest', '--endpoint', rx.url, '--secret', 'write-secret']);
        await sinkSeen(srv, id);
    });

    after(async () => {
        if (srv?.running) await srv.stop();
        await rx?.stop();
    });

    it('retries what ingest did not record, then falls back to /ingest on a 404', async () => {
        const link = await createLink(srv, key, { url: 'https://example.com/ingest' });
        // Every third event is 'invalid' for a while: the batch is sent again
        // until all are recorded (those recorded come back as duplicates).
        let refusals = 0;
        rx.statusFor = (e, i) => (i % 3 === 1 && refusals++ < 4 ? 'invalid' : 'recorded');
        await rx.setMode('statuses');
        await Promise.all(Array.from({ length: 9 }, () => visit(srv, link.code)));
        const clicks = () => rx.list().filter((e) => e.type === 'click' && e.data.code === link.code).length;
        assert.ok(await poll(() => clicks() === 9, { timeoutMs: 15_000 }), `${clicks()} of 9\n${srv.logs()}`);
        assert.ok(refusals >= 4, 'ingest never refused');
        const batch = rx.requests.find((q) => q.path === '/batch');
        assert.equal(batch.headers.authorization, 'Bearer write-secret');
        assert.ok(Array.isArray(JSON.parse(batch.body).events));
        // A 404 on /batch: one POST /ingest per event.
        await rx.setMode('nobatch');
        const before = rx.requests.length;
        await Promise.all(Array.from({ length: 4 }, () => visit(srv, link.code)));
        assert.ok(await poll(() => clicks() === 13, { timeoutMs: 15_000 }), `${clicks()} of 13`);
        const singles = rx.requests.slice(before).filter((q) => q.path === '/ingest');
        assert.ok(singles.length >= 4);
        for (const q of singles) assert.equal(JSON.parse(q.body).type, 'click');
        // A malformed 200 is no acknowledgement.
        await rx.setMode('garbage');
        await visit(srv, link.code);
        await new Promise((r) => setTimeout(r, 800));
        assert.equal(clicks(), 13);
        await rx.setMode('up');
        assert.ok(await poll(() => clicks() === 14, { timeoutMs: 15_000 }));
        assert.deepEqual(rx.conflicts, []);
        assert.ok(await poll(async () =>
            (await api(srv, 'GET', `/api/links/${link.code}/stats`, { key })).json.total_clicks === 14));
    });
});

function xrange(stream) {
    const r = spawnSync('redis-cli', ['-u', REDIS, '--json', 'XRANGE', stream, '-', '+'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`redis-cli: ${r.stderr}`);
    const rows = JSON.parse(r.stdout || '[]');
    return rows.map(([, fields]) => ({ id: fields[1], event: JSON.parse(fields[3]) }));
}

describe('redis-stream sink', { skip: REDIS ? false : 'needs SHORTD_TEST_REDIS (tests/redis.sh)' }, () => {
    let srv;
    let key;
    const stream = `shortd-test-${process.pid}`;

    before(async () => {
        srv = await startServer({ args: FAST });
        key = createKey(srv, 'redis');
        const id = addSink(srv, ['--kind', 'redis-stream', '--endpoint', REDIS,
            '--options', JSON.stringify({ stream, maxlen: 10000 })]);
        await sinkSeen(srv, id);
    });

    after(async () => {
        if (srv?.running) await srv.stop();
    });

    it('every event is in the stream once, across a kill -9', async () => {
        const link = await createLink(srv, key, { url: 'https://example.com/stream' });
        await Promise.all(Array.from({ length: 25 }, () => visit(srv, link.code)));
        await srv.kill9();
        await srv.restart();
        await Promise.all(Array.from({ length: 5 }, () => visit(srv, link.code)));
        // kill -9 may lose the clicks of the last sync window: compare with
        // what shortd counted once its count settles.
        const countOf = async () =>
            (await api(srv, 'GET', `/api/links/${link.code}/stats`, { key })).json.total_clicks;
        let counted = -1;
        assert.ok(await poll(async () => {
            const c = await countOf();
            await new Promise((r) => setTimeout(r, 1200));
            const again = await countOf();
            if (c === again && c >= 5) counted = c;
            return counted >= 0;
        }, { timeoutMs: 20_000 }), 'the count settles');
        const clicks = () => xrange(stream).filter((x) => x.event.type === 'click').length;
        const ok = await poll(() => clicks() === counted, { timeoutMs: 15_000 });
        const rows = xrange(stream);
        assert.ok(ok, `${clicks()} clicks in the stream, shortd counted ${counted}\n${srv.logs()}`);
        const ids = rows.map((x) => x.id);
        assert.equal(new Set(ids).size, ids.length, 'an event is in the stream twice');
        for (const x of rows) assert.equal(x.id, x.event.id);
        assert.equal(rows.filter((x) => x.event.type === 'link.created').length, 1);
    });
});
