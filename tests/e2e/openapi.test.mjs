// openapi.test.mjs - the OpenAPI document (web/openapi.json, served at
// /api/openapi.json) against the running binary: the document is valid
// OpenAPI 3.1 (@seriousme/openapi-schema-validator), and every answer of a
// tour of the API (create, get, list with Link, patch, delete, stats,
// history, QR, export, domains, the admin routes, errors 400, 401, 403, 404,
// 409, 413, 422, ...) has a status the document lists for its path and
// method, a content type it lists, and a body that its schema accepts (ajv,
// JSON Schema 2020-12 as OpenAPI 3.1 uses it). Both validators are pinned in
// package-lock.json. The closed shapes (additionalProperties: false) make an
// undocumented field fail; the last tests prove that the checks have teeth.
// tests/unit/test_openapi.c checks the document's paths against the route
// table.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

import { ROOT, api, createKey, createLink, it, nextLink, startServer, visit } from './harness.mjs';

const DOC_FILE = path.join(ROOT, 'web/openapi.json');
const DOC = JSON.parse(fs.readFileSync(DOC_FILE, 'utf8'));

/* A JSON pointer's segment, as a URI fragment holds it. */
const seg = (s) => encodeURIComponent(String(s).replaceAll('~', '~0').replaceAll('/', '~1'));

/* check(method, template, r): asserts that answer r (harness api()) of
 * METHOD on the path TEMPLATE ("/api/links/{code}") is what 'doc' says. */
function checker(doc) {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(doc, 'openapi');
    return function check(method, template, r) {
        const where = `${method} ${template} -> ${r.status}`;
        const op = doc.paths[template] && doc.paths[template][method.toLowerCase()];
        assert.ok(op, `${method} ${template} is not in the document`);
        let ptr = `/paths/${seg(template)}/${seg(method.toLowerCase())}/responses/${r.status}`;
        let resp = op.responses[String(r.status)];
        assert.ok(resp, `${where}: status not documented; body ${r.text.slice(0, 300)}`);
        if (resp.$ref) {
            ptr = resp.$ref.slice(1).split('/').map((s) => encodeURIComponent(s)).join('/');
            resp = resp.$ref.slice(2).split('/').reduce((o, k) => o[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
        }
        const type = (r.headers.get('content-type') || '').split(';')[0].trim();
        if (!resp.content) {
            assert.equal(r.text, '', `${where}: a body the document does not have`);
            return;
        }
        assert.ok(resp.content[type] || resp.content['*/*'], `${where}: content type '${type}' not documented`);
        if (type !== 'application/json' || !resp.content[type].schema) return;
        assert.notEqual(r.json, null, `${where}: not JSON: ${r.text.slice(0, 300)}`);
        const validate = ajv.getSchema(`openapi#${ptr}/content/${seg('application/json')}/schema`);
        assert.ok(validate, `${where}: no schema at ${ptr}`);
        if (!validate(r.json)) {
            assert.fail(`${where}: the body does not match the document:\n` +
                `${JSON.stringify(validate.errors, null, 1).slice(0, 3000)}\nbody: ${r.text.slice(0, 1000)}`);
        }
    };
}

const check = checker(DOC);

let srv;
let admin;
let alice;
let bob;

before(async () => {
    // A small body limit, so that a 413 costs little.
    srv = await startServer({ args: ['--max-body-bytes', '65536'] });
    admin = srv.adminKey;
    alice = createKey(srv, 'alice');
    bob = createKey(srv, 'bob');
});

after(async () => {
    if (srv) await srv.stop();
});

/* api() and check() in one: the answer, once the document has accepted it. */
async function call(method, template, p, opts = {}) {
    const r = await api(srv, method, p, opts);
    check(method, template, r);
    return r;
}

it('the document is valid OpenAPI 3.1, and the server serves it as it is in the repository', async () => {
    const v = new Validator();
    const res = await v.validate(structuredClone(DOC));
    assert.ok(res.valid, JSON.stringify(res.errors, null, 1));
    assert.equal(v.version, '3.1');

    const r = await call('GET', '/api/openapi.json', '/api/openapi.json');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/json');
    assert.equal(r.text, fs.readFileSync(DOC_FILE, 'utf8'));
    const etag = r.headers.get('etag');
    assert.match(etag, /^"[0-9a-f]{24}"$/);
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    const again = await call('GET', '/api/openapi.json', '/api/openapi.json', { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
});

it('links: create, get, list with Link, patch, history, delete', async () => {
    const full = await call('POST', '/api/links', '/api/links', {
        key: alice,
        body: {
            url: 'https://example.com/oa/full', title: 'Full', note: 'a note', tags: ['oa', 'docs'],
            ttl: 3600, max_clicks: 50, utm: { source: 'mail', campaign: 'spring' },
        },
    });
    assert.equal(full.status, 201);
    assert.ok(full.json.destination.includes('utm_source=mail'));
    const ab = await call('POST', '/api/links', '/api/links', {
        key: alice,
        body: { url: 'https://example.com/oa/ab', variants: [{ url: 'https://example.com/a' }, { url: 'https://example.com/b', weight: 3 }] },
    });
    assert.equal(ab.status, 201);
    const pw = await call('POST', '/api/links', '/api/links', {
        key: alice, body: { url: 'https://example.com/oa/pw', password: 'hunter22', permanent: null },
    });
    assert.equal(pw.status, 201);
    assert.equal(pw.json.protected, true);
    const reused = await call('POST', '/api/links', '/api/links', {
        key: alice, body: { url: 'https://example.com/oa/ab', reuse: true },
    });
    assert.equal(reused.status, 200);
    const idem = { 'idempotency-key': 'oa-1' };
    const first = await call('POST', '/api/links', '/api/links', { key: alice, body: { url: 'https://example.com/oa/i' }, headers: idem });
    assert.equal(first.status, 201);
    const replay = await call('POST', '/api/links', '/api/links', { key: alice, body: { url: 'https://example.com/oa/i' }, headers: idem });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');

    const one = await call('GET', '/api/links/{code}', `/api/links/${full.json.code}`, { key: alice });
    assert.equal(one.status, 200);

    const page = await call('GET', '/api/links', '/api/links?limit=2', { key: alice });
    assert.equal(page.status, 200);
    assert.equal(page.json.length, 2);
    const next = nextLink(page.headers.get('link'));
    assert.ok(next, 'a Link header with rel="next"');
    const page2 = await call('GET', '/api/links', next.replace(/^https?:\/\/[^/]+/, ''), { key: alice });
    assert.equal(page2.status, 200);
    const filtered = await call('GET', '/api/links', '/api/links?state=all&tag=oa&q=full', { key: alice });
    assert.deepEqual(filtered.json.map((l) => l.code), [full.json.code]);

    const patched = await call('PATCH', '/api/links/{code}', `/api/links/${full.json.code}`, {
        key: alice, body: { url: 'https://example.com/oa/v2', title: null, tags: ['x'], utm: null },
    });
    assert.equal(patched.status, 200);
    assert.equal(patched.json.title, null);
    const hist = await call('GET', '/api/links/{code}/history', `/api/links/${full.json.code}/history`, { key: alice });
    assert.equal(hist.status, 200);
    assert.equal(hist.json.length, 1);

    const del = await call('DELETE', '/api/links/{code}', `/api/links/${first.json.code}`, { key: alice });
    assert.equal(del.status, 204);
    const gone = await call('GET', '/api/links/{code}', `/api/links/${first.json.code}`, { key: alice });
    assert.equal(gone.json.state, 'deleted');
    assert.equal(gone.json.url, null);
});

it('bulk creates: every item as the document says', async () => {
    await createLink(srv, alice, { url: 'https://example.com/oa/b0', alias: 'oa-bulk-taken' });
    const r = await call('POST', '/api/links/bulk', '/api/links/bulk', {
        key: alice,
        body: { links: [{ url: 'https://example.com/oa/b1' }, { url: 'https://example.com/oa/b2', alias: 'oa-bulk-taken' },
            { url: 'ftp://example.com/' }] },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.results.map((x) => x.status), [201, 409, 400]);
    const bad = await call('POST', '/api/links/bulk', '/api/links/bulk', { key: alice, body: { links: [] } });
    assert.equal(bad.status, 400);
});

it('stats, top, service stats, export and QR codes', async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/oa/stats' });
    assert.equal((await visit(srv, l.code, { headers: { referer: 'https://news.example/' } })).status, 302);
    const stats = await call('GET', '/api/links/{code}/stats', `/api/links/${l.code}/stats`, { key: alice });
    assert.equal(stats.status, 200);
    assert.equal(stats.json.days.length, 30);
    const range = await call('GET', '/api/links/{code}/stats', `/api/links/${l.code}/stats?from=2026-01-01&to=2026-01-03`, { key: alice });
    assert.equal(range.json.days.length, 3);
    assert.equal((await call('GET', '/api/links/{code}/stats', `/api/links/${l.code}/stats?from=yesterday`, { key: alice })).status, 400);

    assert.equal((await call('GET', '/api/links/top', '/api/links/top', { key: alice })).status, 200);
    assert.equal((await call('GET', '/api/links/top', '/api/links/top?day=2026-02-30x', { key: alice })).status, 400);
    assert.equal((await call('GET', '/api/stats', '/api/stats', { key: admin })).status, 200);

    const exp = await call('GET', '/api/export', '/api/export', { key: alice });
    assert.equal(exp.status, 200);
    assert.ok(exp.json.some((x) => x.code === l.code));
    const csv = await call('GET', '/api/export', '/api/export?format=csv', { key: alice });
    assert.equal(csv.status, 200);
    assert.equal((await call('GET', '/api/export', '/api/export?format=xml', { key: alice })).status, 400);

    const svg = await call('GET', '/api/links/{code}/qr', `/api/links/${l.code}/qr`, { key: alice });
    assert.equal(svg.status, 200);
    const png = await call('GET', '/api/links/{code}/qr', `/api/links/${l.code}/qr?format=png&scale=2`, { key: alice });
    assert.equal(png.headers.get('content-type'), 'image/png');
    assert.equal((await call('GET', '/api/links/{code}/qr', `/api/links/${l.code}/qr?scale=99`, { key: alice })).status, 400);
});

it('domains and the admin routes', async () => {
    const host = 'go.oa-test.example';
    const add = await call('POST', '/api/domains', '/api/domains', { key: alice, body: { host } });
    assert.equal(add.status, 201);
    assert.equal((await call('POST', '/api/domains', '/api/domains', { key: alice, body: { host } })).status, 200);
    assert.equal((await call('POST', '/api/domains', '/api/domains', { key: bob, body: { host } })).status, 409);
    assert.equal((await call('POST', '/api/domains', '/api/domains', { key: bob, body: { host: 'nodots' } })).status, 400);
    const onDomain = await call('POST', '/api/links', '/api/links', { key: alice, body: { url: 'https://example.com/d', domain: host } });
    assert.equal(onDomain.status, 201);
    assert.equal(onDomain.json.domain, host);
    const notYours = await call('POST', '/api/links', '/api/links', { key: bob, body: { url: 'https://example.com/d', domain: host } });
    assert.equal(notYours.status, 403);
    assert.equal((await call('GET', '/api/domains', '/api/domains', { key: alice })).json.length, 1);
    assert.equal((await call('DELETE', '/api/domains/{host}', `/api/domains/${host}`, { key: bob })).status, 404);
    assert.equal((await call('DELETE', '/api/domains/{host}', `/api/domains/${host}`, { key: alice })).status, 204);

    const block = await call('POST', '/api/admin/blocklist', '/api/admin/blocklist', { key: admin, body: { host: 'evil-oa.example' } });
    assert.equal(block.status, 201);
    assert.equal((await call('POST', '/api/admin/blocklist', '/api/admin/blocklist', { key: admin, body: { host: 'evil-oa.example' } })).status, 409);
    assert.equal((await call('GET', '/api/admin/blocklist', '/api/admin/blocklist', { key: admin })).status, 200);
    assert.equal((await call('GET', '/api/admin/blocklist', '/api/admin/blocklist', { key: alice })).status, 403);
    const blocked = await call('POST', '/api/links', '/api/links', { key: alice, body: { url: 'https://www.evil-oa.example/' } });
    assert.equal(blocked.status, 400);
    assert.equal(blocked.json.error.field, 'url');
    assert.equal((await call('DELETE', '/api/admin/blocklist/{host}', '/api/admin/blocklist/evil-oa.example', { key: admin })).status, 204);
    assert.equal((await call('DELETE', '/api/admin/blocklist/{host}', '/api/admin/blocklist/evil-oa.example', { key: admin })).status, 404);

    const l = await createLink(srv, alice, { url: 'https://example.com/oa/admin' });
    assert.equal((await call('POST', '/api/links/{code}/disable', `/api/links/${l.code}/disable`, { key: admin })).json.state, 'disabled');
    assert.equal((await call('POST', '/api/links/{code}/disable', `/api/links/${l.code}/disable`, { key: alice })).status, 403);
    assert.equal((await call('POST', '/api/links/{code}/enable', `/api/links/${l.code}/enable`, { key: admin })).json.state, 'active');
    assert.equal((await call('DELETE', '/api/links/{code}', `/api/links/${l.code}`, { key: alice })).status, 204);
    assert.equal((await call('POST', '/api/links/{code}/enable', `/api/links/${l.code}/enable`, { key: admin })).status, 409);
    assert.equal((await call('POST', '/api/links/{code}/disable', '/api/links/nosuchcode/disable', { key: admin })).status, 404);
});

it('errors: 400, 401, 404, 409, 413, 422 in the documented shape', async () => {
    const cases = [
        ['POST', '/api/links', '/api/links', { key: alice, body: { url: 'ftp://example.com/' } }, 400, 'invalid_field'],
        ['POST', '/api/links', '/api/links', { key: alice, body: { url: 'https://example.com/', colour: 'red' } }, 400, 'invalid_field'],
        ['POST', '/api/links', '/api/links', { key: alice, raw: '{"url": ' }, 400, 'invalid_json'],
        ['POST', '/api/links', '/api/links', { key: alice, body: { url: 'https://example.com/' }, headers: { 'idempotency-key': ' ' } }, 400, 'invalid_header'],
        ['GET', '/api/links', '/api/links?limit=0', { key: alice }, 400, 'invalid_field'],
        ['GET', '/api/links', '/api/links', {}, 401, 'unauthorized'],
        ['GET', '/api/links', '/api/links', { key: 'sk_nope' }, 401, 'unauthorized'],
        ['POST', '/api/links', '/api/links', { body: { url: 'https://example.com/' } }, 401, 'unauthorized'],
        ['GET', '/api/links/{code}', '/api/links/nosuchcode', { key: alice }, 404, 'not_found'],
        ['DELETE', '/api/links/{code}', '/api/links/nosuchcode', { key: alice }, 404, 'not_found'],
        ['POST', '/api/links', '/api/links', { key: alice, raw: JSON.stringify({ url: 'https://example.com/', note: 'x'.repeat(70000) }) }, 413, 'too_large'],
    ];
    for (const [method, template, p, opts, status, code] of cases) {
        const r = await call(method, template, p, opts);
        assert.equal(r.status, status, `${method} ${p}: ${r.text}`);
        assert.equal(r.json.error.code, code, `${method} ${p}: ${r.text}`);
    }
    const mine = await createLink(srv, alice, { url: 'https://example.com/oa/e', alias: 'oa-err-taken' });
    assert.equal((await call('GET', '/api/links/{code}', `/api/links/${mine.code}`, { key: bob })).status, 404);
    const taken = await call('POST', '/api/links', '/api/links', { key: bob, body: { url: 'https://example.com/', alias: 'oa-err-taken' } });
    assert.equal(taken.status, 409);
    assert.equal(taken.json.error.field, 'alias');
    const empty = await call('PATCH', '/api/links/{code}', `/api/links/${mine.code}`, { key: alice, body: {} });
    assert.equal(empty.status, 400);
    assert.equal(empty.json.error.field, 'body');
    const alias = await call('PATCH', '/api/links/{code}', `/api/links/${mine.code}`, { key: alice, body: { alias: 'other' } });
    assert.equal(alias.status, 400);
    assert.equal((await call('DELETE', '/api/links/{code}', `/api/links/${mine.code}`, { key: alice })).status, 204);
    const deleted = await call('PATCH', '/api/links/{code}', `/api/links/${mine.code}`, { key: alice, body: { title: 't' } });
    assert.equal(deleted.status, 409);
    assert.equal(deleted.json.error.code, 'deleted');

    const idem = { 'idempotency-key': 'oa-mismatch' };
    assert.equal((await call('POST', '/api/links', '/api/links', { key: alice, body: { url: 'https://example.com/m1' }, headers: idem })).status, 201);
    const mismatch = await call('POST', '/api/links', '/api/links', { key: alice, body: { url: 'https://example.com/m2' }, headers: idem });
    assert.equal(mismatch.status, 422);

    // 405 is the router's, for any path: its body is the document's Error.
    const wrong = await api(srv, 'PUT', '/api/links');
    assert.equal(wrong.status, 405);
    const validateError = new Ajv2020({ strict: false }).addSchema(DOC, 'openapi').getSchema('openapi#/components/schemas/Error');
    assert.ok(validateError(wrong.json), JSON.stringify(validateError.errors));
});

it('the routes outside /api', async () => {
    assert.equal((await call('GET', '/', '/')).status, 302);
    assert.equal((await call('GET', '/dashboard', '/dashboard')).status, 200);
    assert.equal((await call('GET', '/static/{file}', '/static/app.js')).status, 200);
    assert.equal((await call('GET', '/static/{file}', '/static/nope.js')).status, 404);
    assert.equal((await call('GET', '/healthz', '/healthz')).status, 200);
    assert.equal((await call('GET', '/readyz', '/readyz')).status, 200);
    assert.equal((await call('GET', '/metrics', '/metrics')).status, 200);
});

it('the checks have teeth: an undocumented field, or a field the document lost, fails', async () => {
    const r = await call('GET', '/api/links', '/api/links?limit=1', { key: alice });
    assert.equal(r.status, 200);
    const link = r.json[0];
    // The server's answer with one field more than the document knows.
    const extra = { ...r, json: [{ ...link, surprise: 1 }] };
    assert.throws(() => check('GET', '/api/links', extra), /surprise|additional/);
    // The document without `clicks` in the link object: the real answer fails.
    const lost = structuredClone(DOC);
    delete lost.components.schemas.Link.properties.clicks;
    lost.components.schemas.Link.required = lost.components.schemas.Link.required.filter((k) => k !== 'clicks');
    assert.throws(() => checker(lost)('GET', '/api/links', r), /additional/);
    // A status the document does not list for the route fails too.
    assert.throws(() => check('GET', '/api/links', { ...r, status: 201 }), /not documented/);
});
