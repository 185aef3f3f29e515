// cors.test.mjs - CORS over real connections: a preflight answered without a
// key, actual answers (errors too: the 401 a key check sends before the body
// is read, the 429 of the auth limit) carrying the headers for a listed
// origin only, nothing for the redirect, never credentials; and a bad
// `cors-origins` value refused at startup. The router's table of cases is
// tests/unit/test_cors.c.

import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before } from 'node:test';

import { api, cli, createLink, it, startServer, tempDir } from './harness.mjs';

const APP = 'https://app.example';
let srv;

before(async () => {
    srv = await startServer({ args: ['--cors-origins', `${APP}, chrome-extension://abcdefgh`, '--rate-auth', '2/60'] });
});

after(async () => {
    if (srv) await srv.stop();
});

const acao = (r) => r.headers.get('access-control-allow-origin');

it('a preflight is answered without a key, with the methods of the path', async () => {
    const r = await api(srv, 'OPTIONS', '/api/links/abcd', {
        headers: { origin: APP, 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization,content-type' },
    });
    assert.equal(r.status, 204);
    assert.equal(acao(r), APP);
    assert.equal(r.headers.get('access-control-allow-methods'), 'GET, DELETE, PATCH');
    assert.match(r.headers.get('access-control-allow-headers'), /Authorization, Content-Type, Idempotency-Key/);
    assert.equal(r.headers.get('access-control-max-age'), '7200');
    assert.equal(r.headers.get('vary'), 'Origin');
    assert.equal(r.headers.get('access-control-allow-credentials'), null);
    assert.equal(r.text, '');
    const other = await api(srv, 'OPTIONS', '/api/links', { headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    assert.equal(other.status, 204);
    assert.equal(acao(other), null);
    assert.equal(other.headers.get('access-control-allow-methods'), null);
});

it('answers carry the headers for a listed origin, errors included; never credentials', async () => {
    const link = await createLink(srv, srv.adminKey, { url: 'https://example.com/cors' });
    const ok = await api(srv, 'GET', '/api/links?limit=1', { key: srv.adminKey, headers: { origin: 'chrome-extension://abcdefgh' } });
    assert.equal(ok.status, 200);
    assert.equal(acao(ok), 'chrome-extension://abcdefgh');
    assert.equal(ok.headers.get('vary'), 'Origin');
    assert.match(ok.headers.get('access-control-expose-headers'), /\bLink\b.*\bRetry-After\b/);
    assert.equal(ok.headers.get('access-control-allow-credentials'), null);
    const plain = await api(srv, 'GET', '/api/links?limit=1', { key: srv.adminKey });
    assert.equal(acao(plain), null);
    assert.equal(plain.headers.get('vary'), null);
    const evil = await api(srv, 'GET', '/api/links?limit=1', { key: srv.adminKey, headers: { origin: 'https://evil.example' } });
    assert.equal(evil.status, 200);
    assert.equal(acao(evil), null);

    // The redirect is no API route: nothing, whatever the Origin.
    const hop = await api(srv, 'GET', `/${link.code}`, { headers: { origin: APP } });
    assert.equal(hop.status, 302);
    assert.equal(acao(hop), null);
    assert.equal(hop.headers.get('vary'), null);

    // A bad key on a request with a body is refused before the body is read
    // (the precheck), and the page can still read why; so can it the 429 of
    // the auth limit (2 a minute here), which drops the 401's challenge.
    const body = { url: 'https://example.com/x' };
    for (let i = 0; i < 2; i++) {
        const r = await api(srv, 'POST', '/api/links', { key: 'sk_wrong', body, headers: { origin: APP } });
        assert.equal(r.status, 401);
        assert.equal(acao(r), APP);
        assert.match(r.headers.get('www-authenticate'), /^Bearer/);
    }
    const limited = await api(srv, 'POST', '/api/links', { key: 'sk_wrong', body, headers: { origin: APP } });
    assert.equal(limited.status, 429);
    assert.equal(acao(limited), APP);
    assert.equal(limited.headers.get('vary'), 'Origin');
    assert.equal(limited.headers.get('www-authenticate'), null);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    const limitedGet = await api(srv, 'GET', '/api/links', { key: 'sk_wrong', headers: { origin: APP } });
    assert.equal(limitedGet.status, 429);
    assert.equal(acao(limitedGet), APP);
    assert.equal(limitedGet.headers.get('www-authenticate'), null);
});

it('a cors-origins value that is no origin stops the server at startup', async () => {
    const dir = tempDir();
    const r = cli(['serve', '--listen', '127.0.0.1:1', '--db', path.join(dir, 's.db'), '--cors-origins', 'https://app.example/']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /cors-origins: 'https:\/\/app\.example\/' is not an origin/);
});
