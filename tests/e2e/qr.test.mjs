// qr.test.mjs - GET /api/links/CODE/qr: SVG and PNG, the scale and its
// bounds, the owner rule, and that both formats decode to the link's short
// URL (base-url + "/" + code). The PNG is read by zbarimg (Debian's
// zbar-tools); the SVG's path is drawn here into a PBM image and read by
// zbarimg too, so its geometry is checked without a browser (the browser
// tests render it in Chromium as well).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { api, createKey, createLink, errorOf, it, startServer, tempDir, unique } from './harness.mjs';

const BASE = 'https://go.example.test';
let srv;
let userKey;
let otherKey;
let link;
let dir;

before(async () => {
    srv = await startServer({ baseUrl: BASE });
    userKey = createKey(srv, 'qr-user');
    otherKey = createKey(srv, 'qr-other');
    link = await createLink(srv, userKey, { url: 'https://example.com/qr', alias: unique('qr') });
    dir = tempDir();
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

/* GET with a key; the body as bytes. */
async function qr(code, query, key = userKey, method = 'GET') {
    const res = await fetch(`${srv.url}/api/links/${code}/qr${query}`, {
        method,
        headers: key ? { authorization: `Bearer ${key}` } : {},
    });
    const body = Buffer.from(await res.arrayBuffer());
    let json = null;
    try { json = JSON.parse(body.toString('utf8')); } catch { /* an image */ }
    return { status: res.status, headers: res.headers, body, json, text: body.toString('utf8') };
}

/* What zbarimg reads in an image file: the decoded text, or null. */
function zbar(file) {
    const r = spawnSync('zbarimg', ['--raw', '-q', file], { encoding: 'utf8' });
    if (r.error) throw new Error(`cannot run zbarimg (apt-get install zbar-tools): ${r.error.message}`);
    return r.status === 0 ? r.stdout.trim() : null;
}

function pngInfo(buf) {
    assert.deepEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
    assert.equal(buf.toString('latin1', 12, 16), 'IHDR');
    return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20), depth: buf[24], colorType: buf[25] };
}

/* The SVG's side in modules and its dark cells, from the viewBox and the
 * path's "Mx yhNv1h-Nz" runs. */
function svgModules(svg) {
    const vb = /viewBox="0 0 (\d+) (\d+)"/.exec(svg);
    assert.ok(vb, `no viewBox in ${svg.slice(0, 200)}`);
    assert.equal(vb[1], vb[2]);
    const side = Number(vb[1]);
    const d = /<path[^>]* d="([^"]*)"/.exec(svg);
    assert.ok(d, 'no path');
    assert.equal((svg.match(/<path/g) || []).length, 1, 'one path');
    const dark = new Set();
    const re = /M(\d+) (\d+)h(\d+)v1h-(\d+)z/gy;
    let m;
    let seen = 0;
    while ((m = re.exec(d[1]))) {
        const [x, y, n, back] = m.slice(1).map(Number);
        assert.equal(n, back);
        for (let i = 0; i < n; i++) dark.add(`${x + i},${y}`);
        seen = re.lastIndex;
    }
    assert.equal(seen, d[1].length, 'the path is nothing but runs');
    return { side, dark };
}

/* A PBM (P1) image of the modules, 'px' pixels each. */
function writePbm(file, { side, dark }, px) {
    const rows = [];
    for (let y = 0; y < side * px; y++) {
        const row = [];
        for (let x = 0; x < side * px; x++) row.push(dark.has(`${Math.floor(x / px)},${Math.floor(y / px)}`) ? '1' : '0');
        rows.push(row.join(' '));
    }
    fs.writeFileSync(file, `P1\n${side * px} ${side * px}\n${rows.join('\n')}\n`);
}

it('SVG by default: one path, a four-module quiet zone, 8 pixels a module, decoding to the short URL', async () => {
    assert.equal(link.short_url, `${BASE}/${link.code}`);
    const r = await qr(link.code, '');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('content-type'), 'image/svg+xml');
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('content-security-policy'), "default-src 'none'");
    assert.match(r.headers.get('content-disposition'), new RegExp(`filename="${link.code}-qr.svg"`));
    assert.match(r.text, /^<\?xml [^>]*\?>\n<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.doesNotMatch(r.text, /<script|on\w+=/i);
    const mods = svgModules(r.text);
    assert.match(r.text, new RegExp(`width="${mods.side * 8}" height="${mods.side * 8}"`));
    // Version 1..40 is 21..177 modules, plus 4 on each side.
    assert.ok((mods.side - 8 - 17) % 4 === 0 && mods.side >= 29 && mods.side <= 185, `side ${mods.side}`);
    for (const cell of mods.dark) {
        const [x, y] = cell.split(',').map(Number);
        assert.ok(x >= 4 && y >= 4 && x < mods.side - 4 && y < mods.side - 4, `dark module ${cell} in the quiet zone`);
    }
    const file = path.join(dir, 'svg.pbm');
    writePbm(file, mods, 4);
    assert.equal(zbar(file), link.short_url);

    const explicit = await qr(link.code, '?format=svg&scale=2');
    assert.equal(explicit.status, 200);
    assert.match(explicit.text, new RegExp(`width="${mods.side * 2}"`));
    assert.equal(svgModules(explicit.text).dark.size, mods.dark.size);
});

it('PNG: 1-bit greyscale, side = modules × scale, decodes to the short URL', async () => {
    const { side } = svgModules((await qr(link.code, '?format=svg')).text);
    for (const scale of [3, 8]) {
        const r = await qr(link.code, `?format=png&scale=${scale}`);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.headers.get('content-type'), 'image/png');
        assert.match(r.headers.get('content-disposition'), new RegExp(`filename="${link.code}-qr.png"`));
        const info = pngInfo(r.body);
        assert.deepEqual(info, { width: side * scale, height: side * scale, depth: 1, colorType: 0 });
        const file = path.join(dir, `qr-${scale}.png`);
        fs.writeFileSync(file, r.body);
        assert.equal(zbar(file), link.short_url, `scale ${scale}`);
    }
    const dflt = await qr(link.code, '?format=png');
    assert.equal(pngInfo(dflt.body).width, side * 8, 'default scale 8');
    const small = await qr(link.code, '?format=png&scale=1');
    assert.equal(pngInfo(small.body).width, side);
    const big = await qr(link.code, '?format=png&scale=40');
    assert.equal(pngInfo(big.body).width, side * 40);
    const file = path.join(dir, 'qr-40.png');
    fs.writeFileSync(file, big.body);
    assert.equal(zbar(file), link.short_url, 'scale 40');
});

it('a bad format or scale is 400 invalid_field naming the field', async () => {
    for (const f of ['gif', 'PNG', '', 'svg%20']) {
        const r = await qr(link.code, `?format=${f}`);
        assert.equal(r.status, 400, f);
        const e = errorOf(r);
        assert.equal(e.code, 'invalid_field');
        assert.equal(e.field, 'format');
    }
    for (const s of ['0', '41', '-1', '1.5', 'abc', '', '100', '8x', '%38']) {
        const r = await qr(link.code, `?format=png&scale=${s}`);
        assert.equal(r.status, 400, `scale=${s}`);
        const e = errorOf(r);
        assert.equal(e.code, 'invalid_field');
        assert.equal(e.field, 'scale');
        assert.match(e.message, /1 to 40/);
    }
});

it('owner or admin only: another key gets the 404 of an unknown code', async () => {
    const other = await qr(link.code, '?format=png', otherKey);
    assert.equal(other.status, 404);
    assert.equal(errorOf(other).code, 'not_found');
    const unknown = await qr('nosuchcode', '?format=png');
    assert.equal(unknown.status, 404);
    assert.deepEqual(other.json, unknown.json, 'the same answer as for a code that does not exist');
    assert.equal((await qr('bad!code', '')).status, 404);
    const admin = await qr(link.code, '?format=png', srv.adminKey);
    assert.equal(admin.status, 200);
    const none = await qr(link.code, '', null);
    assert.equal(none.status, 401);
    // The other key can still get a QR code of its own link.
    const theirs = await createLink(srv, otherKey, { url: 'https://example.com/theirs' });
    assert.equal((await qr(theirs.code, '', otherKey)).status, 200);
    assert.equal((await qr(theirs.code, '', userKey)).status, 404);
});

it('HEAD answers like GET without a body; other methods are 405', async () => {
    const get = await qr(link.code, '?format=png&scale=5');
    const head = await qr(link.code, '?format=png&scale=5', userKey, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.equal(head.headers.get('content-type'), 'image/png');
    assert.equal(Number(head.headers.get('content-length')), get.body.length);
    const post = await api(srv, 'POST', `/api/links/${link.code}/qr`, { key: userKey, body: {} });
    assert.equal(post.status, 405);
    assert.match(post.headers.get('allow'), /GET/);
});

it('the route has its own label in /metrics', async () => {
    await qr(link.code, '');
    const m = await api(srv, 'GET', '/metrics');
    assert.match(m.text, /shortd_requests_total\{route="GET \/api\/links\/:code\/qr",status="200"\} \d+/);
});

it('a link on a custom domain: the QR code holds its short URL on that domain', async () => {
    const host = `${unique('qr').toLowerCase().replace(/[^a-z0-9]/g, '')}.example`;
    const d = await api(srv, 'POST', '/api/domains', { key: userKey, body: { host } });
    assert.equal(d.status, 201, d.text);
    const onDomain = await createLink(srv, userKey, { url: 'https://example.com/qr-domain', domain: host });
    assert.ok(onDomain.short_url.includes(`//${host}/`), onDomain.short_url);
    const r = await qr(onDomain.code, '?format=png');
    assert.equal(r.status, 200, r.text);
    const file = path.join(dir, 'qr-domain.png');
    fs.writeFileSync(file, r.body);
    assert.equal(zbar(file), onDomain.short_url);
});
