// controls.test.mjs - link controls (issue 6, points 1, 3-7): editing a link
// (PATCH) and its destination history, click limits (max_clicks, exact under
// concurrency), custom domains and the host check of the redirect. Runs on
// both stores (make test runs the file with SHORTD_E2E_STORE=pg too).

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before } from 'node:test';

import { api, createKey, createLink, errorOf, it, poll, startServer, unique, visit } from './harness.mjs';

let srv;      // hosts = sho.rt, www.sho.rt, 127.0.0.1 (what fetch sends); base-url https://sho.rt
let alice;
let bob;
let admin;

const BOT_UA = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';

before(async () => {
    srv = await startServer({ baseUrl: 'https://sho.rt', args: ['--hosts', 'sho.rt, www.sho.rt, 127.0.0.1'] });
    alice = createKey(srv, 'alice');
    bob = createKey(srv, 'bob');
    admin = srv.adminKey;
});

after(async () => {
    if (srv) await srv.stop();
});

/* GET (or HEAD) /PATH with a Host header of our choosing (fetch cannot set it). */
function hostGet(server, host, p, { method = 'GET', headers = {} } = {}) {
    return new Promise((resolve, reject) => {
        const req = http.request({
            host: '127.0.0.1', port: server.port, path: p, method,
            headers: { host, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0', ...headers },
        }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d) => { text += d; });
            res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
        });
        req.on('error', reject);
        req.end();
    });
}

async function clicksOf(code, n) {
    return poll(async () => {
        const r = await api(srv, 'GET', `/api/links/${code}`, { key: admin });
        return r.json && r.json.clicks === n && r.json;
    });
}

/* ------------------------------------------------------------ PATCH + history */

it('PATCH changes the destination and the other fields; history lists every move, newest first', async () => {
    const l = await createLink(srv, alice, { url: 'https://one.example/a', title: 'T1', tags: ['x'] });
    let v = await visit(srv, l.code);
    assert.equal(v.status, 302);
    assert.equal(v.headers.get('location'), 'https://one.example/a');   // now cached

    let r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { url: 'https://two.example/b', title: null, note: 'n', tags: ['y', 'z'] } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.url, 'https://two.example/b');
    assert.equal(r.json.title, null);
    assert.equal(r.json.note, 'n');
    assert.deepEqual(r.json.tags, ['y', 'z']);
    v = await visit(srv, l.code);
    assert.equal(v.headers.get('location'), 'https://two.example/b', 'the cache was not updated');

    r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { url: 'https://three.example/c', ttl: 3600 } });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.expires_at);
    r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { expires_at: null, title: 'same url' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.expires_at, null);

    const h = await api(srv, 'GET', `/api/links/${l.code}/history`, { key: alice });
    assert.equal(h.status, 200, h.text);
    assert.deepEqual(h.json.map((x) => [x.seq, x.old_url, x.new_url]), [
        [2, 'https://two.example/b', 'https://three.example/c'],
        [1, 'https://one.example/a', 'https://two.example/b'],
    ]);
    assert.ok(h.json.every((x) => typeof x.changed_at === 'string' && typeof x.by_key === 'number'));
});

it('PATCH: another owner gets 404, an admin may; bad fields are 400 with the field', async () => {
    const l = await createLink(srv, alice, { url: 'https://own.example/' });
    let r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: bob, body: { url: 'https://bob.example/' } });
    assert.equal(r.status, 404);
    r = await api(srv, 'GET', `/api/links/${l.code}/history`, { key: bob });
    assert.equal(r.status, 404);
    r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: admin, body: { note: 'by admin' } });
    assert.equal(r.status, 200, r.text);
    for (const [body, field] of [
        [{ url: null }, 'url'],
        [{ url: 'ftp://x.example/' }, 'url'],
        [{ alias: 'newname' }, 'alias'],
        [{ max_clicks: 3 }, 'max_clicks'],
        [{ ttl: 0 }, 'ttl'],
        [{ title: 'x'.repeat(300) }, 'title'],
        [{}, 'body'],
    ]) {
        r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body });
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
        assert.equal(errorOf(r).field, field, JSON.stringify(body));
    }
    await api(srv, 'DELETE', `/api/links/${l.code}`, { key: alice });
    r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { url: 'https://after.example/' } });
    assert.equal(r.status, 409, r.text);
});

/* ------------------------------------------------------------- max_clicks */

it('max_clicks: exactly that many of 200 concurrent human clicks get the redirect, the rest 410', async () => {
    const l = await createLink(srv, alice, { url: 'https://limited.example/', max_clicks: 50 });
    assert.equal(l.max_clicks, 50);
    assert.equal(l.clicks_left, 50);
    // Bots, prefetches and HEAD do not use a slot.
    for (let i = 0; i < 5; i++) {
        assert.equal((await api(srv, 'GET', `/${l.code}`, { headers: { 'user-agent': BOT_UA } })).status, 302);
        assert.equal((await visit(srv, l.code, { method: 'HEAD' })).status, 302);
        assert.equal((await visit(srv, l.code, { headers: { 'sec-purpose': 'prefetch' } })).status, 302);
    }
    const rs = await Promise.all(Array.from({ length: 200 }, (_, i) =>
        visit(srv, `${l.code}?n=${i}`)));
    const ok = rs.filter((r) => r.status === 302).length;
    const goneN = rs.filter((r) => r.status === 410).length;
    assert.equal(ok, 50, `statuses: ${JSON.stringify(rs.map((r) => r.status))}`);
    assert.equal(goneN, 150);
    assert.ok(rs.filter((r) => r.status === 302).every((r) => r.headers.get('location').startsWith('https://limited.example/')));
    // Once exhausted, everyone gets 410, bots and HEAD too.
    assert.equal((await visit(srv, l.code)).status, 410);
    assert.equal((await visit(srv, l.code, { method: 'HEAD' })).status, 410);
    assert.equal((await api(srv, 'GET', `/${l.code}`, { headers: { 'user-agent': BOT_UA } })).status, 410);
    const g = await clicksOf(l.code, 50);
    assert.equal(g.clicks_left, 0);
});

it('max_clicks: the count survives a kill -9 restart', async (t) => {
    const own = await startServer();
    t.after(() => own.stop());
    const k = createKey(own, 'k');
    const l = await createLink(own, k, { url: 'https://restart.example/', max_clicks: 5 });
    for (let i = 0; i < 3; i++) assert.equal((await visit(own, l.code)).status, 302);
    await own.kill9();
    await own.restart();
    const rs = [];
    for (let i = 0; i < 4; i++) rs.push((await visit(own, l.code)).status);
    assert.deepEqual(rs, [302, 302, 410, 410]);
});

it('max_clicks: bad values are 400 with the field', async () => {
    for (const v of [0, -1, 1.5, '3', true]) {
        const r = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://x.example/', max_clicks: v } });
        assert.equal(r.status, 400, `${v}: ${r.text}`);
        assert.equal(errorOf(r).field, 'max_clicks');
    }
});

/* ------------------------------------------------------ domains + host check */

it('domains: register, list, idempotent for the owner, 409 for another, DELETE only the own', async () => {
    const host = `${unique('d')}.example`.toLowerCase();
    let r = await api(srv, 'POST', '/api/domains', { key: alice, body: { host } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.host, host);
    r = await api(srv, 'POST', '/api/domains', { key: alice, body: { host } });
    assert.equal(r.status, 200, r.text);
    r = await api(srv, 'POST', '/api/domains', { key: bob, body: { host } });
    assert.equal(r.status, 409, r.text);
    assert.equal(errorOf(r).field, 'host');
    r = await api(srv, 'GET', '/api/domains', { key: alice });
    assert.ok(r.json.some((d) => d.host === host));
    r = await api(srv, 'GET', '/api/domains', { key: bob });
    assert.ok(!r.json.some((d) => d.host === host));
    // bob cannot put a link on alice's domain
    r = await api(srv, 'POST', '/api/links', { key: bob, body: { url: 'https://b.example/', domain: host } });
    assert.equal(r.status, 403, r.text);
    assert.equal(errorOf(r).field, 'domain');
    r = await api(srv, 'POST', '/api/links', { key: bob, body: { url: 'https://b.example/', domain: 'nobody.example' } });
    assert.equal(r.status, 400, r.text);
    assert.equal(errorOf(r).field, 'domain');
    r = await api(srv, 'DELETE', `/api/domains/${host}`, { key: bob });
    assert.equal(r.status, 404, r.text);
    r = await api(srv, 'DELETE', `/api/domains/${host}`, { key: alice });
    assert.equal(r.status, 204, r.text);
    r = await api(srv, 'DELETE', `/api/domains/${host}`, { key: alice });
    assert.equal(r.status, 404, r.text);
    for (const bad of ['UPPER.example', 'x.example:8080', 'x.example.', 'localhost', '1.2.3.4', '-a.example', 'a..example', 'a b.example', '']) {
        r = await api(srv, 'POST', '/api/domains', { key: alice, body: { host: bad } });
        assert.equal(r.status, 400, `${bad}: ${r.text}`);
        assert.equal(errorOf(r).field, 'host', bad);
    }
});

it('host check: default hosts and the link\'s domain open it; any other host is 404 without a click', async () => {
    const host = `${unique('go')}.example`.toLowerCase();
    assert.equal((await api(srv, 'POST', '/api/domains', { key: alice, body: { host } })).status, 201);
    const l = await createLink(srv, alice, { url: 'https://dest.example/x', domain: host });
    assert.equal(l.domain, host);
    assert.equal(l.short_url, `https://${host}/${l.code}`);
    const plain = await createLink(srv, alice, { url: 'https://dest.example/plain' });
    assert.equal(plain.short_url, `https://sho.rt/${plain.code}`);

    for (const h of ['sho.rt', 'SHO.RT', 'sho.rt:443', 'sho.rt.', 'www.sho.rt', host, `${host.toUpperCase()}:8080`]) {
        const r = await hostGet(srv, h, `/${l.code}`);
        assert.equal(r.status, 302, `${h}: ${r.status}`);
    }
    for (const h of ['evil.example', `x.${host}`, 'sho.rt.evil.example', '127.0.0.2', '[::1]:80']) {
        const r = await hostGet(srv, h, `/${l.code}`);
        assert.equal(r.status, 404, `${h}: ${r.status}`);
        assert.equal((await hostGet(srv, h, `/${plain.code}`)).status, 404, h);
    }
    // The plain link does not open on the custom domain of another link.
    assert.equal((await hostGet(srv, host, `/${plain.code}`)).status, 404);
    await clicksOf(l.code, 7);
    await clicksOf(plain.code, 0);
    // A server without hosts accepts every host (as before).
    const own = await startServer();
    try {
        const k = createKey(own, 'k');
        const x = await createLink(own, k, { url: 'https://any.example/' });
        assert.equal((await hostGet(own, 'whatever.example', `/${x.code}`)).status, 302);
    } finally {
        await own.stop();
    }
});
