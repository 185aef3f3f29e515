// reserved.test.mjs - single-segment paths kept from aliases (favicon.ico,
// admin, login...; robots.txt is served now) that no route serves answer 404 to every method, as
// a JSON error; short codes keep their own answers (404 unknown, 405 for a
// method they do not take).

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, createLink, errorOf, it, startServer, visit } from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer();
});

after(async () => {
    if (srv) await srv.stop();
});

const RESERVED = ['/favicon.ico', '/admin', '/ADMIN', '/api', '/static', '/login', '/.well-known',
    '/stats', '/qr'];

it('GET and HEAD of a reserved path no route serves answer 404, not 405', async () => {
    for (const p of RESERVED) {
        const g = await api(srv, 'GET', p);
        assert.equal(g.status, 404, `GET ${p}: ${g.text}`);
        assert.equal(errorOf(g).code, 'not_found', `GET ${p}`);
        assert.equal(g.headers.get('allow'), null, `GET ${p} has an Allow header`);
        const h = await api(srv, 'HEAD', p);
        assert.equal(h.status, 404, `HEAD ${p}`);
    }
});

it('other methods of a reserved path answer 404 too', async () => {
    for (const p of ['/favicon.ico', '/admin']) {
        for (const m of ['POST', 'PUT', 'DELETE']) {
            const r = await api(srv, m, p, { body: {} });
            assert.equal(r.status, 404, `${m} ${p}: ${r.text}`);
            assert.equal(errorOf(r).code, 'not_found');
        }
    }
});

it('short codes keep their answers: a redirect, 404 unknown, 405 for PUT', async () => {
    const l = await createLink(srv, srv.adminKey, { url: 'https://example.com/kept' });
    assert.equal((await visit(srv, l.code)).status, 302);
    assert.equal((await visit(srv, 'zzzzzzzz')).status, 404);
    const put = await api(srv, 'PUT', `/${l.code}`, { body: {} });
    assert.equal(put.status, 405, put.text);
    assert.equal(errorOf(put).code, 'method_not_allowed');
    // Routes of one segment keep theirs.
    assert.equal((await api(srv, 'GET', '/healthz')).status, 200);
    assert.equal((await api(srv, 'DELETE', '/dashboard')).status, 405);
});
