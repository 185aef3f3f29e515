// controls.test.mjs - link controls (issue 6, points 1, 3-7): editing a link
// (PATCH) and its destination history, click limits (max_clicks, exact under
// concurrency), custom domains and the host check of the redirect. Runs on
// both stores (make test runs the file with SHORTD_E2E_STORE=pg too).

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before } from 'node:test';

import { api, createKey, createLink, errorOf, it, poll, startServer, unique, visit } from './harness.mjs';

let srv;      // hosts = sho.rt, www.sho.rt; base-url https://sho.rt
let alice;
let bob;
let admin;

const BOT_UA = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';

before(async () => {
    srv = await startServer({ baseUrl: 'https://sho.rt', args: ['--hosts', 'sho.rt,www.sho.rt'] });
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
