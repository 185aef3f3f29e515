// visitor-pages.test.mjs - what a visitor gets when a code opens nothing
// (issue 27, item 6): a browser gets a page saying which (unknown, expired,
// deleted, disabled, used up) with the status of before and the gate's
// strict CSP; anyone else the plain text of before. A custom domain's
// not-found redirects (PATCH /api/domains/:host, Shlink's) and the
// settings' for every other host; GET /robots.txt, by default and from a
// file; X-Robots-Tag: noindex on the API's and the dashboard's answers and
// not on redirects. With SHORTD_E2E_STORE=pg it all runs on PostgreSQL;
// with SHORTD_TEST_PG and SHORTD_TEST_REDIS, a last test shows a domain's
// redirects set on one node answered by another.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before } from 'node:test';

import { twoNodes } from './cluster-kit.mjs';
import { api, createKey, createLink, it, poll, sleep, startServer, tempDir, unique } from './harness.mjs';

const HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0';
const NOT_FOUND_TEXT = 'Not Found: no link has this code\n';
const GONE_TEXT = 'Gone: this link has expired or was removed\n';

let srv;        // no visitor settings
let set;        // fallbacks by setting, robots.txt from a file
let robotsFile;
const codes = {};

/* GET (or HEAD) PATH with a Host header of our choosing (fetch cannot set
 * it) and a raw path (fetch would percent-encode it). */
function get(server, p, { method = 'GET', host = `127.0.0.1:${server.port}`, headers = {} } = {}) {
    return new Promise((resolve, reject) => {
        const req = http.request({
            host: '127.0.0.1', port: server.port, path: p, method,
            headers: { host, 'user-agent': FIREFOX, ...headers },
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

const asBrowser = (server, p, opts = {}) => get(server, p, { ...opts, headers: { accept: HTML, ...opts.headers } });
const asCurl = (server, p, opts = {}) => get(server, p, { ...opts, headers: { 'user-agent': 'curl/8.5.0', accept: '*/*' } });

before(async () => {
    const dir = tempDir();
    robotsFile = path.join(dir, 'robots.txt');
    fs.writeFileSync(robotsFile, 'User-agent: *\nDisallow: /\n# from a file\n');
    [srv, set] = await Promise.all([
        startServer(),
        startServer({
            args: ['--invalid-short-url-redirect', 'https://www.example.org/missing',
                '--regular-404-redirect', 'https://www.example.org/404', '--robots-txt', robotsFile],
        }),
    ]);
    const key = srv.adminKey;
    const mk = async (body) => (await createLink(srv, key, { alias: unique('v'), ...body })).code;
    codes.deleted = await mk({ url: 'https://example.com/del' });
    codes.disabled = await mk({ url: 'https://example.com/off' });
    codes.expired = await mk({ url: 'https://example.com/ttl', ttl: 1 });
    const expiresBy = Date.now() + 1100;
    codes.usedUp = await mk({ url: 'https://example.com/once', max_clicks: 1 });
    codes.live = await mk({ url: 'https://example.com/live' });
    assert.equal((await api(srv, 'DELETE', `/api/links/${codes.deleted}`, { key })).status, 204);
    assert.equal((await api(srv, 'POST', `/api/links/${codes.disabled}/disable`, { key })).status, 200);
    assert.equal((await get(srv, `/${codes.usedUp}`)).status, 302);
    await sleep(Math.max(0, expiresBy - Date.now()));
});

after(async () => {
    if (srv) await srv.stop();
    if (set) await set.stop();
});

/* The page's CSP allows its one style block by hash, nothing else. */
function checkPage(r, status, heading) {
    assert.equal(r.status, status, r.text);
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.equal(r.headers['x-robots-tag'], undefined);
    const csp = r.headers['content-security-policy'];
    assert.match(csp, /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; /);
    assert.match(csp, /frame-ancestors 'none'/);
    const style = /<style>([\s\S]*?)<\/style>/.exec(r.text);
    assert.ok(style, 'the page has no style block');
    const hash = crypto.createHash('sha256').update(style[1]).digest('base64');
    assert.ok(csp.includes(`'sha256-${hash}'`), `the CSP does not allow the page's style: ${csp}`);
    assert.doesNotMatch(r.text, /<script/i);
    assert.ok(r.text.includes(`<h1>${heading}</h1>`), r.text);
}

const STATES = [
    ['unknown', () => 'zzzzzzzz', 404, 'Link not found', NOT_FOUND_TEXT],
    ['expired', () => codes.expired, 410, 'This link has expired', GONE_TEXT],
    ['deleted', () => codes.deleted, 410, 'This link was deleted', GONE_TEXT],
    ['disabled', () => codes.disabled, 410, 'This link was disabled', GONE_TEXT],
    ['used up', () => codes.usedUp, 410, 'This link is used up', GONE_TEXT],
];

for (const [state, code, status, heading, text] of STATES) {
    it(`${state}: a browser gets its page (${status}), curl the plain text of before`, async () => {
        checkPage(await asBrowser(srv, `/${code()}`), status, heading);
        const head = await asBrowser(srv, `/${code()}`, { method: 'HEAD' });
        assert.equal(head.status, status);
        const plain = await asCurl(srv, `/${code()}`);
        assert.equal(plain.status, status);
        assert.equal(plain.headers['content-type'], 'text/plain; charset=utf-8');
        assert.equal(plain.text, text);
        assert.equal(plain.headers['content-security-policy'], undefined);
        // No Accept at all: the plain text too.
        const none = await get(srv, `/${code()}`);
        assert.equal(none.text, text);
    });
}

it('a live link is untouched: 302, no page, no X-Robots-Tag', async () => {
    const r = await asBrowser(srv, `/${codes.live}`);
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, 'https://example.com/live');
    assert.equal(r.text, '');
    assert.equal(r.headers['x-robots-tag'], undefined);
    assert.equal(r.headers['content-security-policy'], undefined);
});

it('what the address holds is shown as text, never as markup', async () => {
    const r = await asBrowser(srv, `/<img_src=x_onerror=alert(1)>"'&`);
    checkPage(r, 404, 'Link not found');
    assert.ok(!r.text.includes('<img'), r.text);
    assert.ok(r.text.includes('<code>/&lt;img_src=x_onerror=alert(1)&gt;&quot;&#39;&amp;</code>'), r.text);
    assert.ok(r.text.includes('<title>&lt;img_src=x_onerror=alert(1)&gt;&quot;&#39;&amp; '), r.text);
});

it('the settings: a code that opens nothing and any other unknown path redirect, for every client', async () => {
    for (const client of [asBrowser, asCurl]) {
        const r = await client(set, '/zzzzzzzz');
        assert.equal(r.status, 302);
        assert.equal(r.headers.location, 'https://www.example.org/missing');
        assert.equal(r.headers['cache-control'], 'no-store');
    }
    const other = await get(set, '/no/such/page');
    assert.equal(other.status, 302);
    assert.equal(other.headers.location, 'https://www.example.org/404');
    // Not the API: its clients are told what is wrong.
    const apiPath = await api(set, 'GET', '/api/nothing', { key: set.adminKey });
    assert.equal(apiPath.status, 404);
    assert.equal(apiPath.json.error.code, 'not_found');
    // A live link is no fallback's business.
    const link = await createLink(set, set.adminKey, { url: 'https://example.com/fine' });
    assert.equal((await get(set, `/${link.code}`)).headers.location, 'https://example.com/fine');
    // Without the settings: the 404 of before.
    const plain = await api(srv, 'GET', '/no/such/page');
    assert.equal(plain.status, 404);
    assert.equal(plain.json.error.code, 'not_found');
});

it('a bad fallback setting or an unreadable robots-txt stops the start with a clear error', async () => {
    for (const [args, said] of [
        [['--invalid-short-url-redirect', 'javascript:alert(1)'], /invalid-short-url-redirect/],
        [['--robots-txt', '/nonexistent/robots.txt'], /cannot read robots-txt '\/nonexistent\/robots.txt'/],
    ]) {
        await assert.rejects(startServer({ args }), (e) => {
            assert.match(String(e.message), said);
            return true;
        });
    }
});

it('GET /robots.txt: by default the API and the dashboard only; the file when robots-txt is set', async () => {
    const r = await get(srv, '/robots.txt');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(r.text, 'User-agent: *\nDisallow: /api/\nDisallow: /dashboard\n');
    assert.equal(r.headers['x-robots-tag'], undefined);
    const f = await get(set, '/robots.txt');
    assert.equal(f.status, 200);
    assert.equal(f.text, fs.readFileSync(robotsFile, 'utf8'));
    // No alias may take it.
    const taken = await api(srv, 'POST', '/api/links', { key: srv.adminKey, body: { url: 'https://example.com/', alias: 'robots.txt' } });
    assert.equal(taken.status, 400);
});

it('X-Robots-Tag: noindex on the API and the dashboard, not on redirects or the home page', async () => {
    const key = srv.adminKey;
    for (const [p, k] of [['/api/links', key], ['/api/links', undefined], ['/dashboard', undefined],
        ['/api/openapi.json', undefined], ['/static/app.js', undefined], ['/healthz', undefined]]) {
        const r = await api(srv, 'GET', p, { key: k });
        assert.equal(r.headers.get('x-robots-tag'), 'noindex', `GET ${p} (${r.status})`);
    }
    const created = await api(srv, 'POST', '/api/links', { key, body: { url: 'https://example.com/n' } });
    assert.equal(created.headers.get('x-robots-tag'), 'noindex');
    const home = await get(srv, '/');
    assert.equal(home.status, 302);
    assert.equal(home.headers['x-robots-tag'], undefined);
    const link = await get(srv, `/${codes.live}`);
    assert.equal(link.headers['x-robots-tag'], undefined);
});

it('a custom domain\'s own redirects win on that host only; GET shows them, null removes one', async () => {
    const alice = createKey(srv, unique('alice'));
    const bob = createKey(srv, unique('bob'));
    const host = `${unique('go')}.example`.toLowerCase();
    assert.equal((await api(srv, 'POST', '/api/domains', { key: alice, body: { host } })).status, 201);
    const patch = await api(srv, 'PATCH', `/api/domains/${host}`, {
        key: alice,
        body: {
            base_url_redirect: 'https://brand.example/',
            regular_404_redirect: 'https://brand.example/404',
            invalid_short_url_redirect: 'https://brand.example/expired',
        },
    });
    assert.equal(patch.status, 200, patch.text);
    assert.equal(patch.json.host, host);
    assert.equal(patch.json.invalid_short_url_redirect, 'https://brand.example/expired');

    const onDomain = { host };
    let r = await asBrowser(srv, `/${codes.deleted}`, onDomain);
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, 'https://brand.example/expired');
    r = await asCurl(srv, '/zzzzzzzz', onDomain);
    assert.equal(r.headers.location, 'https://brand.example/expired');
    r = await get(srv, '/', onDomain);
    assert.equal(r.headers.location, 'https://brand.example/');
    r = await get(srv, '/a/b', onDomain);
    assert.equal(r.headers.location, 'https://brand.example/404');
    // The main host is untouched.
    checkPage(await asBrowser(srv, `/${codes.deleted}`), 410, 'This link was deleted');
    assert.equal((await get(srv, '/')).headers.location, '/dashboard');

    const list = await api(srv, 'GET', '/api/domains', { key: alice });
    const mine = list.json.find((d) => d.host === host);
    assert.equal(mine.regular_404_redirect, 'https://brand.example/404');

    // A field left out is kept; null removes it.
    const cleared = await api(srv, 'PATCH', `/api/domains/${host}`, { key: alice, body: { invalid_short_url_redirect: null } });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.json.invalid_short_url_redirect, null);
    assert.equal(cleared.json.base_url_redirect, 'https://brand.example/');
    checkPage(await asBrowser(srv, `/${codes.deleted}`, onDomain), 410, 'This link was deleted');

    // Refusals: another owner's domain, an unknown field, a URL that is none.
    assert.equal((await api(srv, 'PATCH', `/api/domains/${host}`, { key: bob, body: { base_url_redirect: null } })).status, 404);
    const unknown = await api(srv, 'PATCH', `/api/domains/${host}`, { key: alice, body: { not_found: 'https://a.example/' } });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.json.error.field, 'not_found');
    const bad = await api(srv, 'PATCH', `/api/domains/${host}`, { key: alice, body: { regular_404_redirect: 'ftp://a.example/' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.field, 'regular_404_redirect');

    // Gone with the domain.
    assert.equal((await api(srv, 'DELETE', `/api/domains/${host}`, { key: alice })).status, 204);
    assert.equal((await get(srv, '/a/b', onDomain)).status, 404);
});

it('a domain\'s redirects survive a restart (read from the store at start)', async () => {
    const host = `${unique('keep')}.example`.toLowerCase();
    const key = srv.adminKey;
    assert.equal((await api(srv, 'POST', '/api/domains', { key, body: { host } })).status, 201);
    assert.equal((await api(srv, 'PATCH', `/api/domains/${host}`, { key, body: { regular_404_redirect: 'https://kept.example/' } })).status, 200);
    await srv.stop();
    await srv.restart();
    const r = await get(srv, '/x/y', { host });
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, 'https://kept.example/');
});

/* ---- two nodes: set on one, answered by the other ---- */

const PG = process.env.SHORTD_TEST_PG || '';
const REDIS = process.env.SHORTD_TEST_REDIS || '';
const clusterSkip = PG && REDIS ? false
    : 'SHORTD_TEST_PG and SHORTD_TEST_REDIS must both be set (tests/pg.sh tests/redis.sh node --test ...)';
const pair = twoNodes({ pg: PG, redis: REDIS, schema: `visitors_${process.pid}`, prefix: 'vis', skip: clusterSkip });

it('a domain\'s redirects set on one node are answered by the other', async () => {
    const host = 'brand-vis.example';
    // B answers the domain's unknown path first: a 404, from its empty table.
    assert.equal((await api(pair.a, 'POST', '/api/domains', { key: pair.admin, body: { host } })).status, 201);
    assert.equal((await get(pair.b, '/a/b', { host })).status, 404);
    const r = await api(pair.a, 'PATCH', `/api/domains/${host}`, { key: pair.admin, body: { regular_404_redirect: 'https://other-node.example/' } });
    assert.equal(r.status, 200, r.text);
    await poll(async () => (await get(pair.b, '/a/b', { host })).status === 302, { timeoutMs: 3000 });
    assert.equal((await get(pair.b, '/a/b', { host })).headers.location, 'https://other-node.example/');
}, { skip: clusterSkip });
