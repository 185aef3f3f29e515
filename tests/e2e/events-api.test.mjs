// events-api.test.mjs - /api/sinks (admin only; the secret shown once, at
// creation and rotation; filters by type, owner and domain) and the link
// events: created, updated, disabled, deleted, expired (at the sweep) and
// exhausted (at the click that takes the last allowed one), each once.

import assert from 'node:assert/strict';
import { after, before, describe } from 'node:test';

import { api, createKey, createLink, it, poll, sleep, startServer, visit } from './harness.mjs';
import { Receiver } from './receiver.mjs';

const FAST = [
    '--events-retry-base-ms', '100', '--events-retry-cap-ms', '400',
    '--events-batch-wait-ms', '100', '--events-timeout-ms', '1000', '--sweep-interval', '1',
];

describe('/api/sinks and link events', () => {
    let srv;
    let rx;
    let admin;
    let user;

    before(async () => {
        rx = await new Receiver().start();
        srv = await startServer({ args: FAST });
        admin = srv.adminKey;
        user = createKey(srv, 'member');
    });

    after(async () => {
        if (srv?.running) await srv.stop();
        await rx?.stop();
    });

    it('manages sinks: admin only, the secret shown once, bad input named', async () => {
        assert.equal((await api(srv, 'GET', '/api/sinks', { key: user })).status, 403);
        const bad = await api(srv, 'POST', '/api/sinks', { key: admin,
            body: { kind: 'webhook', endpoint: 'ftp://x.example/', types: ['click'] } });
        assert.equal(bad.status, 400);
        assert.match(bad.json.error.message, /http:\/\/ or https:\/\//);
        const badType = await api(srv, 'POST', '/api/sinks', { key: admin,
            body: { kind: 'webhook', endpoint: `${rx.url}/h`, types: ['click', 'link.gone'] } });
        assert.equal(badType.status, 400);
        assert.match(badType.json.error.message, /'link.gone'/);
        const badKind = await api(srv, 'POST', '/api/sinks', { key: admin,
            body: { kind: 'kafka', endpoint: `${rx.url}/h` } });
        assert.equal(badKind.status, 400);

        const made = await api(srv, 'POST', '/api/sinks', { key: admin,
            body: { kind: 'webhook', endpoint: `${rx.url}/h`, types: ['click'] } });
        assert.equal(made.status, 201, made.text);
        assert.match(made.json.secret, /^whsec_/);
        const got = await api(srv, 'GET', `/api/sinks/${made.json.id}`, { key: admin });
        assert.equal(got.status, 200);
        assert.equal(got.json.secret, undefined, 'a read shows the secret');
        assert.deepEqual(got.json.types, ['click']);
        const patched = await api(srv, 'PATCH', `/api/sinks/${made.json.id}`, { key: admin,
            body: { types: ['link.created'], domain: 'short.example' } });
        assert.equal(patched.status, 200, patched.text);
        assert.equal(patched.json.domain, 'short.example');
        const rot = await api(srv, 'POST', `/api/sinks/${made.json.id}/rotate-secret`, { key: admin });
        assert.equal(rot.status, 200);
        assert.notEqual(rot.json.secret, made.json.secret);
        assert.equal(rot.json.rotating, true);
        assert.equal((await api(srv, 'DELETE', `/api/sinks/${made.json.id}`, { key: admin })).status, 204);
        assert.equal((await api(srv, 'GET', `/api/sinks/${made.json.id}`, { key: admin })).status, 404);
        assert.equal((await api(srv, 'DELETE', `/api/sinks/${made.json.id}`, { key: admin })).status, 404);
    });

    it('sends each link event once, and only what the filter wants', async () => {
        const all = await api(srv, 'POST', '/api/sinks', { key: admin,
            body: { kind: 'webhook', endpoint: `${rx.url}/all`, types: [
                'link.created', 'link.updated', 'link.deleted', 'link.disabled', 'link.expired',
                'link.exhausted'] } });
        assert.equal(all.status, 201, all.text);
        const mine = await api(srv, 'POST', '/api/sinks', { key: admin,
            body: { kind: 'webhook', endpoint: `${rx.url}/mine`, owner: 999999 } });
        assert.equal(mine.status, 201);
        await sleep(1500); // the sinks are read every second

        const a = await createLink(srv, user, { url: 'https://example.com/a' });
        await api(srv, 'PATCH', `/api/links/${a.code}`, { key: user, body: { title: 'A' } });
        assert.equal((await api(srv, 'POST', `/api/links/${a.code}/disable`, { key: admin })).status, 200);
        assert.equal((await api(srv, 'DELETE', `/api/links/${a.code}`, { key: user })).status, 204);
        const lim = await createLink(srv, user, { url: 'https://example.com/lim', max_clicks: 2 });
        await visit(srv, lim.code);
        await visit(srv, lim.code);
        await visit(srv, lim.code); // refused: no third event
        const exp = await createLink(srv, user, { url: 'https://example.com/exp',
            expires_at: new Date(Date.now() + 1500).toISOString() });

        const want = [
            ['link.created', a.code], ['link.updated', a.code], ['link.disabled', a.code],
            ['link.deleted', a.code], ['link.created', lim.code], ['link.exhausted', lim.code],
            ['link.created', exp.code], ['link.expired', exp.code],
        ];
        const have = () => rx.requests.filter((q) => q.path === '/all')
            .flatMap((q) => JSON.parse(q.body).events).map((e) => [e.type, e.data.code]);
        const ok = await poll(() => want.every(([t, c]) => have().some(([t2, c2]) => t === t2 && c === c2)),
            { timeoutMs: 15_000 });
        assert.ok(ok, `have ${JSON.stringify(have())}\n${srv.logs()}`);
        await sleep(1500);
        for (const [t, c] of want) {
            assert.equal(have().filter(([t2, c2]) => t === t2 && c === c2).length, 1, `${t} ${c} once`);
        }
        // In order of their changes, each with its time and the link as it stood.
        const ev = rx.requests.filter((q) => q.path === '/all').flatMap((q) => JSON.parse(q.body).events);
        const ofA = ev.filter((e) => e.data.code === a.code).map((e) => e.type);
        assert.deepEqual(ofA, ['link.created', 'link.updated', 'link.disabled', 'link.deleted']);
        assert.equal(ev.find((e) => e.type === 'link.updated').data.title, 'A');
        assert.equal(ev.find((e) => e.type === 'link.exhausted').data.used, 2);
        // No click and no other owner's link went to the filtered sinks.
        assert.ok(!ev.some((e) => e.type === 'click'));
        assert.equal(rx.requests.filter((q) => q.path === '/mine').length, 0);
    });
});
