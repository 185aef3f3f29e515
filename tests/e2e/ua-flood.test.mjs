// ua-flood.test.mjs - a flood of distinct user agents (issue 23, item 4):
// N clicks, each with an agent of its own (people's browsers and bots, each
// with a token no other click has, so none is in the classifier's cache),
// are every one counted once, people as clicks and bots as bot clicks; and
// /metrics reports the fold's backlog (the clicks still to classify, the
// most there were, the agents classified afresh) and that it drained. Both
// stores (SHORTD_E2E_STORE).

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { Conn, api, createLink, it, poll, startServer } from './harness.mjs';

const N = 20_000;
const CONNS = 8;
const DEPTH = 50; // requests pipelined on a connection at a time

const PEOPLE = [
    (t) => `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.${t}.0 Safari/537.36`,
    (t) => `Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1 r${t}`,
    (t) => `Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.${t}`,
];
const BOTS = [
    (t) => `Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html) r${t}`,
    (t) => `curl/8.${t}.0`,
    (t) => `python-requests/2.${t}`,
];

// Click i's user agent: every fourth a bot.
const agent = (i) => (i % 4 === 3 ? BOTS[i % 3](i) : PEOPLE[i % 3](i));
const BOT_COUNT = Array.from({ length: N }, (_, i) => i).filter((i) => i % 4 === 3).length;

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv && srv.running) await srv.stop(); });

async function metrics() {
    const r = await api(srv, 'GET', '/metrics');
    assert.equal(r.status, 200);
    const m = {};
    for (const line of r.text.split('\n')) {
        const f = line.match(/^(shortd_[a-z_]+) (\d+)$/);
        if (f) m[f[1]] = Number(f[2]);
    }
    return m;
}

/* Clicks from..to-1 on one connection, DEPTH pipelined at a time, each
 * answered 302. */
async function send(code, from, to) {
    const c = await Conn.open(srv.port);
    try {
        for (let i = from; i < to; i += DEPTH) {
            const end = Math.min(to, i + DEPTH);
            let reqs = '';
            for (let k = i; k < end; k++)
                reqs += `GET /${code} HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nUser-Agent: ${agent(k)}\r\n\r\n`;
            c.write(reqs);
            for (let k = i; k < end; k++) {
                const r = await c.read({ timeoutMs: 30_000 });
                assert.ok(r && r.status === 302, `click ${k}: ${r && r.status}`);
            }
        }
    } finally {
        c.destroy();
    }
}

it(`${N} clicks with ${N} distinct agents are each counted once, and /metrics shows the backlog`, async () => {
    const l = await createLink(srv, srv.adminKey, { url: 'https://example.com/flood' });
    const before = await metrics();
    for (const name of ['shortd_clicks_unfolded', 'shortd_clicks_unfolded_max', 'shortd_clicks_backpressure_total',
        'shortd_classify_misses_total', 'shortd_classify_hurried_total'])
        assert.ok(name in before, `/metrics has ${name}`);

    const per = Math.ceil(N / CONNS);
    await Promise.all(Array.from({ length: CONNS }, (_, j) => send(l.code, j * per, Math.min(N, (j + 1) * per))));

    let s;
    const counted = await poll(async () => {
        const r = await api(srv, 'GET', `/api/links/${l.code}/stats`, { key: srv.adminKey });
        assert.equal(r.status, 200, r.text.slice(0, 300));
        s = r.json;
        return s.clicks + s.bot_clicks >= N;
    }, { timeoutMs: 120_000, intervalMs: 200 });
    assert.ok(counted, `not every click was counted: ${s && s.clicks} + ${s && s.bot_clicks}`);
    assert.equal(s.clicks, N - BOT_COUNT, 'people');
    assert.equal(s.bot_clicks, BOT_COUNT, 'bots');

    // Every person's browser is counted, or "Unknown" when classified in a
    // hurry; the hurried ones are what the metric says.
    const m = await metrics();
    const browsers = Object.values(s.browsers).reduce((a, b) => a + b, 0);
    assert.equal(browsers, s.clicks, JSON.stringify(s.browsers));
    assert.equal((s.browsers.Unknown || 0), m.shortd_classify_hurried_total - before.shortd_classify_hurried_total);
    // Each agent was new to the classifier.
    assert.equal(m.shortd_classify_misses_total - before.shortd_classify_misses_total, N);
    // The backlog was there and is gone.
    assert.ok(m.shortd_clicks_unfolded_max >= 1 && m.shortd_clicks_unfolded_max <= N,
        `unfolded_max ${m.shortd_clicks_unfolded_max}`);
    assert.equal(m.shortd_clicks_unfolded, 0);
    const drained = await poll(async () => (await metrics()).shortd_clicks_pending === 0,
        { timeoutMs: 30_000, intervalMs: 100 });
    assert.ok(drained, 'clicks_pending back to 0');
}, { timeout: 240_000 });
