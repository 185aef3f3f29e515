// spark.test.mjs - GET /api/links?spark=N adds each link's human clicks of
// the last N days (UTC, today last) for the dashboard's sparklines; bots are
// left out; the next page's Link keeps it; bad values are refused by name.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, createLink, errorOf, it, poll, startServer, unique, visit } from './harness.mjs';

let srv;
let busy;
let quiet;

before(async () => {
    srv = await startServer();
    quiet = await createLink(srv, srv.adminKey, { url: 'https://example.com/quiet', alias: unique('quiet') });
    busy = await createLink(srv, srv.adminKey, { url: 'https://example.com/busy', alias: unique('busy') });
    for (let i = 0; i < 3; i++) assert.equal((await visit(srv, busy.code)).status, 302);
    assert.equal((await visit(srv, busy.code, { headers: { 'user-agent': 'curl/8.5.0' } })).status, 302);
    assert.ok(await poll(async () => (await api(srv, 'GET', `/api/links/${busy.code}`, { key: srv.adminKey })).json.clicks === 3));
});

after(async () => {
    if (srv) await srv.stop();
});

it('spark=30 gives 30 days per link, today last, human clicks only', async () => {
    const r = await api(srv, 'GET', '/api/links?spark=30', { key: srv.adminKey });
    assert.equal(r.status, 200, r.text);
    const by = Object.fromEntries(r.json.map((l) => [l.code, l.spark]));
    assert.equal(by[busy.code].length, 30);
    assert.equal(by[busy.code][29], 3);
    assert.equal(by[busy.code].reduce((a, b) => a + b, 0), 3);
    assert.deepEqual(by[quiet.code], new Array(30).fill(0));
});

it('without spark there is none; the next page keeps spark', async () => {
    const plain = await api(srv, 'GET', '/api/links', { key: srv.adminKey });
    assert.ok(plain.json.every((l) => !('spark' in l)));
    const first = await api(srv, 'GET', '/api/links?limit=1&spark=7', { key: srv.adminKey });
    assert.match(first.headers.get('link'), /[?&]spark=7[&>]/);
    const next = first.headers.get('link').match(/<([^>]+)>/)[1];
    const second = await api(srv, 'GET', next, { key: srv.adminKey });
    assert.equal(second.json[0].spark.length, 7);
});

it('a bad spark is refused, naming the field', async () => {
    for (const q of ['spark=0', 'spark=91', 'spark=x', 'spark=30&limit=101']) {
        const r = await api(srv, 'GET', `/api/links?${q}`, { key: srv.adminKey });
        assert.equal(r.status, 400, q);
        assert.equal(errorOf(r).field, 'spark', q);
    }
});
