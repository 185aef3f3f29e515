// events.test.mjs - events out (issue 28): a webhook sink across outages
// of its receiver (down, 500s, garbage, timeouts, slow), kill -9 of shortd
// during delivery and a restart; the receiver ends with exactly one event
// per ID, the same bytes under each ID, as many clicks (bots apart) as
// shortd's own stats; every request verifies with the Standard Webhooks
// reference library. A batch that exhausts its retries lands in the failed
// archive, replays and resolves; /readyz and /metrics say so meanwhile.
// Times are shortened by the events-* settings.

import assert from 'node:assert/strict';
import { after, before, describe } from 'node:test';
import { Webhook } from 'standardwebhooks';

import {
    BROWSER_UA, api, cli, cliAsync, createKey, createLink, it, poll, sleep, startServer, visit,
} from './harness.mjs';
import { Receiver } from './receiver.mjs';

const FAST = [
    '--events-retry-base-ms', '100', '--events-retry-cap-ms', '400',
    '--events-batch-wait-ms', '100', '--events-timeout-ms', '1000',
];

/* Adds a sink with the CLI: {id, secret}. */
function addSink(srv, args) {
    const r = cli(['sink', 'add', '--db', srv.db, ...args]);
    assert.equal(r.code, 0, r.stderr);
    const id = Number(/created sink (\d+)/.exec(r.stdout)[1]);
    const m = /secret \(shown once, keep it\): (\S+)/.exec(r.stdout);
    return { id, secret: m ? m[1] : null };
}

/* Waits until the server delivers to sink 'id' (it reads sinks every second). */
async function sinkSeen(srv, id) {
    const ok = await poll(async () => {
        const r = await api(srv, 'GET', '/metrics');
        return r.text.includes(`shortd_sink_deliveries_total{sink="${id}"`);
    }, { timeoutMs: 10_000 });
    assert.ok(ok, `sink ${id} never showed in /metrics`);
}

async function statsOf(srv, key, code) {
    const r = await api(srv, 'GET', `/api/links/${code}/stats`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

function clicksOf(rx, code) {
    const c = rx.list().filter((e) => e.type === 'click' && e.data.code === code);
    return { human: c.filter((e) => e.data.human).length, bots: c.filter((e) => !e.data.human).length };
}

describe('webhook sink', () => {
    let srv;
    let rx;
    let key;
    let sink;

    before(async () => {
        rx = await new Receiver().start();
        srv = await startServer({ args: FAST });
        key = createKey(srv, 'events');
        sink = addSink(srv, ['--kind', 'webhook', '--endpoint', `${rx.url}/hook`]);
        await sinkSeen(srv, sink.id);
    });

    after(async () => {
        if (srv?.running) await srv.stop();
        await rx?.stop();
    });

    it('delivers every click and change once per ID across outages, signed', async () => {
        const link = await createLink(srv, key, { url: 'https://example.com/events' });
        const click = (n, ua = BROWSER_UA) => Promise.all(Array.from({ length: n }, () =>
            visit(srv, link.code, { headers: { 'user-agent': ua } })));
        await click(10);
        await click(3, 'curl/8.5.0');
        for (const mode of ['down', '500', 'garbage', 'timeout', 'slow', 'rawGarbage']) {
            rx.slowMs = 300;
            rx.rawGarbage = mode === 'rawGarbage';
            await rx.setMode(mode === 'rawGarbage' ? 'garbage' : mode);
            await click(5);
            await sleep(mode === 'timeout' ? 1500 : 400);
        }
        await rx.setMode('up');
        const patched = await api(srv, 'PATCH', `/api/links/${link.code}`, { key, body: { title: 'Events' } });
        assert.equal(patched.status, 200, patched.text);
        const stats = await poll(async () => {
            const s = await statsOf(srv, key, link.code);
            return s.total_clicks === 40 && s.total_bot_clicks === 3 ? s : null;
        });
        assert.ok(stats, 'shortd counted the clicks');
        const done = await poll(() => {
            const c = clicksOf(rx, link.code);
            return c.human === stats.total_clicks && c.bots === stats.total_bot_clicks &&
                rx.list().some((e) => e.type === 'link.updated');
        }, { timeoutMs: 20_000 });
        const c = clicksOf(rx, link.code);
        assert.ok(done, `receiver has ${c.human} human and ${c.bots} bot clicks, shortd ` +
            `${stats.total_clicks} and ${stats.total_bot_clicks}\n${srv.logs()}`);
        assert.deepEqual(rx.conflicts, [], 'an ID came again with other bytes');
        const types = rx.list().map((e) => e.type);
        assert.equal(types.filter((t) => t === 'link.created').length, 1);
        assert.equal(types.filter((t) => t === 'link.updated').length, 1);
        // Bots are marked, with their kind; no address anywhere.
        const bot = rx.list().find((e) => e.type === 'click' && !e.data.human);
        assert.equal(bot.data.bot_kind, 'http_library');
        assert.ok(!JSON.stringify(rx.list()).includes('127.0.0.1'));
        // Every request that was acknowledged verifies with the reference library.
        const wh = new Webhook(sink.secret);
        const acked = rx.requests.filter((q) => q.path === '/hook');
        assert.ok(acked.length > 0);
        for (const q of acked) {
            assert.doesNotThrow(() => wh.verify(q.body, q.headers), `signature of ${q.headers['webhook-id']}`);
        }
        // A tampered body does not (one byte more: the first request may
        // hold link events only, so no word of it is sure to be there).
        const q = acked[0];
        assert.throws(() => wh.verify(`${q.body} `, q.headers));
        // The metrics name the sink's deliveries and failures.
        const m = await api(srv, 'GET', '/metrics');
        assert.match(m.text, new RegExp(`shortd_sink_failures_total\\{sink="${sink.id}",kind="webhook"\\} [1-9]`));
        assert.match(m.text, new RegExp(`shortd_sink_events_total\\{sink="${sink.id}",kind="webhook"\\} [1-9]`));
    });

    it('a rotated secret signs with both until the next rotation', async () => {
        const r = cli(['sink', 'rotate-secret', '--db', srv.db, String(sink.id)]);
        assert.equal(r.code, 0, r.stderr);
        const fresh = /new secret \(shown once, keep it\): (\S+)/.exec(r.stdout)[1];
        await sleep(1500); // read again within a second
        const before = rx.requests.length;
        const link = await createLink(srv, key, { url: 'https://example.com/rotated' });
        assert.ok(await poll(() => rx.list().some((e) => e.data.code === link.code)));
        const q = rx.requests.slice(before).find((x) => x.body.includes(link.code));
        assert.equal(q.headers['webhook-signature'].split(' ').length, 2);
        assert.doesNotThrow(() => new Webhook(fresh).verify(q.body, q.headers));
        assert.doesNotThrow(() => new Webhook(sink.secret).verify(q.body, q.headers));
    });

    it('kill -9 during delivery, then a restart: every event once per ID', async () => {
        const link = await createLink(srv, key, { url: 'https://example.com/kill9' });
        rx.slowMs = 1500;
        await rx.setMode('slow');
        await Promise.all(Array.from({ length: 30 }, () => visit(srv, link.code)));
        await poll(() => rx.requests.some((q) => q.body.includes(link.code) && q.body.includes('"click"')),
            { timeoutMs: 5000 });
        await srv.kill9(); // a batch is in flight, unacknowledged
        await rx.setMode('up');
        await srv.restart();
        const stats = await poll(async () => {
            const s = await statsOf(srv, key, link.code);
            return s.total_clicks === 30 ? s : null;
        });
        assert.ok(stats, 'shortd lost clicks in kill -9');
        assert.ok(await poll(() => clicksOf(rx, link.code).human === 30, { timeoutMs: 20_000 }),
            `receiver has ${clicksOf(rx, link.code).human} of 30\n${srv.logs()}`);
        assert.deepEqual(rx.conflicts, []);
    });
});

describe('failed archive', () => {
    let srv;
    let rx;
    let key;
    let sink;

    before(async () => {
        rx = await new Receiver().start();
        srv = await startServer({ args: [...FAST, '--events-retry-budget', '1'] });
        key = createKey(srv, 'archive');
        sink = addSink(srv, ['--kind', 'webhook', '--endpoint', `${rx.url}/hook`, '--types', 'link.created']);
        await sinkSeen(srv, sink.id);
    });

    after(async () => {
        if (srv?.running) await srv.stop();
        await rx?.stop();
    });

    it('a batch that exhausts its retries is archived, replayed and resolved', async () => {
        await rx.setMode('500');
        const link = await createLink(srv, key, { url: 'https://example.com/archived' });
        const listed = await poll(() => {
            const r = cli(['events', 'failed', 'list', '--db', srv.db]);
            return r.stdout.split('\n').length > 2 ? r.stdout : null;
        }, { timeoutMs: 15_000 });
        assert.ok(listed, `nothing archived\n${srv.logs()}`);
        const id = /^(\d+)\s/m.exec(listed.split('\n')[1])[1];
        assert.match(listed, /answered HTTP 500/);
        // Ready, and says so.
        const ready = await poll(async () => {
            const r = await api(srv, 'GET', '/readyz');
            return r.json?.events?.unresolved_failed === 1 ? r : null;
        });
        assert.equal(ready.status, 200);
        const m = await api(srv, 'GET', '/metrics');
        assert.match(m.text, /shortd_events_failed_unresolved 1/);
        // The operations checks fail on it, with what to do.
        const health = await api(srv, 'GET', '/api/ops/health', { key: srv.adminKey });
        assert.equal(health.status, 200, health.text);
        const sinks = health.json.checks.find((c) => c.code === 'sinks');
        assert.equal(sinks?.state, 'fail', JSON.stringify(health.json));
        assert.match(sinks.measured, /1 failed batch\(es\) archived and not resolved/);
        // The position moved on: a later event is delivered once the receiver is up.
        await rx.setMode('up');
        const later = await createLink(srv, key, { url: 'https://example.com/later' });
        assert.ok(await poll(() => rx.list().some((e) => e.data.code === later.code)));
        assert.ok(!rx.list().some((e) => e.data.code === link.code));
        // Inspect: the body and its hash.
        const ins = cli(['events', 'failed', 'inspect', '--db', srv.db, id]);
        assert.equal(ins.code, 0, ins.stderr);
        assert.match(ins.stdout, /sha256\s+[0-9a-f]{64}/);
        assert.ok(ins.stdout.includes(link.code));
        const body = ins.stdout.trim().split('\n').pop();
        // Replay: the same bytes under the same IDs.
        const rep = await cliAsync(['events', 'failed', 'replay', '--db', srv.db, id]); // the receiver runs here
        assert.equal(rep.code, 0, rep.stderr);
        const got = rx.list().find((e) => e.data.code === link.code);
        assert.ok(got, 'replayed event not received');
        assert.ok(body.includes(rx.events.get(got.id).text), 'replay changed the bytes');
        // Resolve needs who and why; keeps the evidence.
        const bad = cli(['events', 'failed', 'resolve', '--db', srv.db, id]);
        assert.equal(bad.code, 2);
        assert.match(bad.stderr, /--operator/);
        const ok = cli(['events', 'failed', 'resolve', '--db', srv.db, id, '--operator', 'ann',
            '--reason', 'replayed and seen at the receiver']);
        assert.equal(ok.code, 0, ok.stderr);
        const again = cli(['events', 'failed', 'inspect', '--db', srv.db, id]);
        assert.match(again.stdout, /resolved by\s+ann: replayed and seen at the receiver/);
        assert.match(again.stdout, /last replay result delivered/);
        assert.equal(cli(['events', 'failed', 'list', '--db', srv.db]).stdout.trim().split('\n').length, 1);
        assert.equal(cli(['events', 'failed', 'list', '--all', '--db', srv.db]).stdout.trim().split('\n').length, 2);
        assert.ok(await poll(async () => (await api(srv, 'GET', '/readyz')).json?.events?.unresolved_failed === 0));
        const healed = await api(srv, 'GET', '/api/ops/health', { key: srv.adminKey });
        assert.equal(healed.json.checks.find((c) => c.code === 'sinks')?.state, 'ok', JSON.stringify(healed.json));
    });
});

describe('journal retention', () => {
    let srv;
    let rx;
    let key;

    before(async () => {
        rx = await new Receiver().start();
        // Counters stored and the journal rotated every 100 ms: without the
        // sinks' hold its segments would be gone long before the receiver is back.
        srv = await startServer({ args: [...FAST, '--click-flush-ms', '100'] });
        key = createKey(srv, 'retention');
        const sink = addSink(srv, ['--kind', 'webhook', '--endpoint', `${rx.url}/hook`, '--types', 'click']);
        await sinkSeen(srv, sink.id);
    });

    after(async () => {
        if (srv?.running) await srv.stop();
        await rx?.stop();
    });

    it('keeps the clicks a sink has not taken, across a restart too', async () => {
        const link = await createLink(srv, key, { url: 'https://example.com/retention' });
        await rx.setMode('down');
        for (let i = 0; i < 4; i++) {
            await Promise.all(Array.from({ length: 10 }, () => visit(srv, link.code)));
            await sleep(400); // several flushes and rotations between each
        }
        const stored = await poll(async () =>
            (await statsOf(srv, key, link.code)).total_clicks === 40);
        assert.ok(stored, 'shortd counted the clicks');
        await srv.stop();
        await srv.restart();
        await sleep(1000);
        await rx.setMode('up');
        assert.ok(await poll(() => clicksOf(rx, link.code).human === 40, { timeoutMs: 20_000 }),
            `receiver has ${clicksOf(rx, link.code).human} of 40\n${srv.logs()}`);
    });
});
