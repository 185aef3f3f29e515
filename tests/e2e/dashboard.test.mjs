// dashboard.test.mjs - how shortd serves its dashboard: /dashboard under the
// Content-Security-Policy, /static/FILE from the table compiled into the
// binary (uPlot byte for byte from the pinned npm package), ETags and 304s,
// HEAD, unknown files; /s.js, the page script built from web/site/; and a
// look through web/ for ways around escaping.
// The dashboard itself is tested in Chromium by tests/browser/.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';
import { gzipSync } from 'node:zlib';

import { ROOT, api, errorOf, it, startServer } from './harness.mjs';

const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
let srv;

before(async () => {
    srv = await startServer();
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

async function get(p, headers = {}, method = 'GET') {
    const res = await fetch(srv.url + p, { method, headers, redirect: 'manual' });
    const body = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, body, text: body.toString('utf8') };
}

it('GET /dashboard is the app page under a strict Content-Security-Policy', async () => {
    const r = await get('/dashboard');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(r.headers.get('content-security-policy'), CSP);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('x-frame-options'), 'DENY');
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    assert.match(r.headers.get('etag'), /^"[0-9a-f]{24}"$/);
    assert.equal(r.text, fs.readFileSync(path.join(ROOT, 'web/index.html'), 'utf8'));
    // Nothing inline: every script has a src, no style elements or attributes,
    // no inline event handlers.
    assert.doesNotMatch(r.text, /<script(?![^>]*\ssrc=)[^>]*>/i);
    assert.doesNotMatch(r.text, /<style|\sstyle=|\son[a-z]+=/i);
    const home = await api(srv, 'GET', '/');
    assert.equal(home.status, 302);
    assert.equal(home.headers.get('location'), '/dashboard');
});

it('every file the page and its modules load is served with its type', async () => {
    const index = (await get('/dashboard')).text;
    const refs = [...index.matchAll(/(?:src|href)="\/static\/([^"]+)"/g)].map((m) => m[1]);
    assert.ok(refs.includes('app.js') && refs.includes('uPlot.iife.min.js') && refs.includes('app.css'), refs.join());
    const seen = new Set();
    const queue = [...new Set(refs)];
    const types = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml' };
    while (queue.length) {
        const f = queue.shift();
        if (seen.has(f)) continue;
        seen.add(f);
        const r = await get(`/static/${f}`);
        assert.equal(r.status, 200, `/static/${f}`);
        assert.equal(r.headers.get('content-type'), types[f.split('.').pop()], f);
        assert.equal(r.headers.get('cache-control'), 'no-cache');
        assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
        assert.ok(r.headers.get('etag'));
        // Modules import their siblings relatively.
        if (f.endsWith('.js') && !f.startsWith('uPlot')) {
            for (const m of r.text.matchAll(/^import [^;]*? from '\.\/([^']+)';$/gm)) queue.push(m[1]);
        }
    }
    assert.ok(seen.size >= 10, [...seen].join());
    // Every file in web/ is served as it is (web/site/ is the page script's
    // source, built into /s.js).
    for (const f of fs.readdirSync(path.join(ROOT, 'web')).filter((n) => n !== 'site')) {
        const r = await get(`/static/${f}`);
        assert.equal(r.status, 200, f);
        assert.ok(r.body.equals(fs.readFileSync(path.join(ROOT, 'web', f))), `${f} differs from web/${f}`);
    }
});

it('uPlot comes from the pinned npm package, byte for byte', async () => {
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/uplot/package.json'), 'utf8'));
    assert.equal(pkg.version, lock.packages['node_modules/uplot'].version);
    for (const f of ['uPlot.iife.min.js', 'uPlot.min.css']) {
        const r = await get(`/static/${f}`);
        assert.equal(r.status, 200);
        assert.ok(r.body.equals(fs.readFileSync(path.join(ROOT, 'node_modules/uplot/dist', f))), f);
    }
});

it('ETag revalidation answers 304; HEAD answers like GET without a body', async () => {
    const first = await get('/static/app.css');
    const etag = first.headers.get('etag');
    for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
        const r = await get('/static/app.css', { 'if-none-match': inm });
        assert.equal(r.status, 304, inm);
        assert.equal(r.body.length, 0);
        assert.equal(r.headers.get('etag'), etag);
    }
    assert.equal((await get('/static/app.css', { 'if-none-match': '"other"' })).status, 200);
    assert.notEqual((await get('/static/app.js')).headers.get('etag'), etag, 'each file its own tag');
    const head = await get('/static/app.css', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.equal(Number(head.headers.get('content-length')), first.body.length);
    assert.equal(head.headers.get('etag'), etag);
    const dhead = await get('/dashboard', {}, 'HEAD');
    assert.equal(dhead.status, 200);
    assert.equal(dhead.headers.get('content-security-policy'), CSP);
});

it('unknown files are a JSON 404; other methods a 405', async () => {
    for (const p of ['/static/nope.js', '/static/APP.JS', '/static/..%2fMakefile', '/static/index.html.bak',
        '/static/app.js/x', '/static/']) {
        const r = await api(srv, 'GET', p);
        assert.equal(r.status, 404, p);
        assert.equal(errorOf(r).code, 'not_found');
    }
    const post = await api(srv, 'POST', '/static/app.js', { body: {} });
    assert.equal(post.status, 405);
    assert.equal((await api(srv, 'DELETE', '/dashboard')).status, 405);
});

it('GET /s.js: the page script as web/site/ builds, within 2 KB gzipped, ETag, any origin may load it', async () => {
    const built = execFileSync(process.execPath, [path.join(ROOT, 'scripts/build-site-script.mjs'), '--print']);
    const r = await get('/s.js');
    assert.equal(r.status, 200);
    assert.ok(r.body.equals(built), 'the bytes esbuild makes of web/site/ now');
    assert.ok(gzipSync(r.body, { level: 9 }).length <= 2048, `${gzipSync(r.body, { level: 9 }).length} bytes gzipped`);
    assert.equal(r.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('cross-origin-resource-policy'), 'cross-origin');
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
    // Readable source only: no hand-made build output in web/.
    assert.doesNotMatch(r.text, /^\/\/ /m, 'comments are gone from the build');
    const etag = r.headers.get('etag');
    assert.match(etag, /^"[0-9a-f]{24}"$/);
    assert.notEqual(etag, (await get('/static/app.js')).headers.get('etag'));
    for (const inm of [etag, `W/${etag}`, '*']) assert.equal((await get('/s.js', { 'if-none-match': inm })).status, 304, inm);
    assert.equal((await get('/s.js', { 'if-none-match': '"other"' })).status, 200);
    const head = await get('/s.js', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(Number(head.headers.get('content-length')), r.body.length);
    assert.equal((await api(srv, 'POST', '/s.js', { body: {} })).status, 405);
    // A reserved word: no link may take it as its alias.
    const taken = await api(srv, 'POST', '/api/links', { key: srv.adminKey, body: { url: 'https://example.com/', alias: 's.js' } });
    assert.equal(taken.status, 400, taken.text);
});

it('web/ never parses data as HTML or sets inline styles', () => {
    const dir = path.join(ROOT, 'web');
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.js'))) {
        const src = fs.readFileSync(path.join(dir, f), 'utf8').replace(/^\s*\/\/.*$/gm, '');
        for (const bad of [/\.innerHTML\s*=/, /\.outerHTML\s*=/, /insertAdjacentHTML/, /document\.write/, /\beval\(/,
            /new Function\(/, /setAttribute\(\s*['"]style['"]/, /\.cssText\s*=/]) {
            assert.doesNotMatch(src, bad, `web/${f}`);
        }
    }
});
