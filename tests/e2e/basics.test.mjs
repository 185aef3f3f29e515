// basics.test.mjs - the API and the redirect, driven over HTTP: create, get,
// list, delete, redirect, query passing, HEAD, home, permanent links, expiry,
// errors, unknown fields, authentication, ownership and the admin routes.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import {
    RFC3339, api, base62Decode, createKey, createLink, errorOf, isoSeconds, it, nextLink, poll, sleep,
    startServer, unique, until, visit,
} from './harness.mjs';

let srv;
let admin;
let alice;
let bob;

before(async () => {
    // The 401 test below makes 21 failed requests: over the default auth
    // rate limit (20 a minute), which ratelimit.test.mjs tests on its own.
    srv = await startServer({ args: ['--rate-auth', '100/60'] });
    admin = srv.adminKey;
    alice = createKey(srv, 'alice');
    bob = createKey(srv, 'bob');
});

after(async () => {
    if (srv) await srv.stop();
});

const linkFields = ['code', 'short_url', 'url', 'created_at', 'expires_at', 'state', 'days_remaining', 'clicks',
    'title', 'note', 'tags', 'permanent'];

function cacheControl(r) {
    return (r.headers.get('cache-control') || '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
}

async function clicksOf(code, key = admin) {
    const r = await api(srv, 'GET', `/api/links/${code}`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json.clicks;
}

/* ------------------------------------------------------------------ create */

it('POST /api/links answers 201 with the whole link object', async () => {
    const before_ = Date.now();
    const r = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://example.com/hello' } });
    assert.equal(r.status, 201, r.text);
    assert.match(r.headers.get('content-type') || '', /^application\/json/);
    const l = r.json;
    for (const f of linkFields) assert.ok(f in l, `link object lacks "${f}": ${r.text}`);
    assert.match(l.code, /^[0-9A-Za-z]{7}$/);
    assert.equal(l.short_url, `http://127.0.0.1:${srv.port}/${l.code}`);
    assert.equal(l.url, 'https://example.com/hello');
    assert.match(l.created_at, RFC3339);
    const created = Date.parse(l.created_at);
    assert.ok(Math.abs(created - before_) < 60_000, `created_at ${l.created_at} is not now`);
    assert.equal(l.expires_at, null);
    assert.equal(l.state, 'active');
    assert.equal(l.days_remaining, null);
    assert.equal(l.clicks, 0);
    assert.deepEqual(l.tags, []);
    assert.equal(l.permanent, false);
});

it('optional fields are stored and echoed', async () => {
    const alias = unique('full-');
    const l = await createLink(srv, alice, {
        url: 'https://example.com/full', alias, title: 'A title ✓', note: 'a note\nwith two lines',
        tags: ['one', 'two'], ttl: 3600, permanent: false,
    });
    assert.equal(l.code, alias);
    assert.equal(l.short_url, `http://127.0.0.1:${srv.port}/${alias}`);
    assert.equal(l.title, 'A title ✓');
    assert.equal(l.note, 'a note\nwith two lines');
    assert.deepEqual(l.tags, ['one', 'two']);
    assert.match(l.expires_at, RFC3339);
    const ttl = Date.parse(l.expires_at) - Date.parse(l.created_at);
    assert.ok(Math.abs(ttl - 3600_000) <= 1000, `expires_at - created_at = ${ttl} ms, want 3600 s`);
    assert.equal(l.days_remaining, 1);
    assert.equal(l.state, 'active');

    const g = await api(srv, 'GET', `/api/links/${alias}`, { key: alice });
    assert.equal(g.status, 200, g.text);
    assert.equal(g.json.code, alias);
    assert.equal(g.json.title, 'A title ✓');
    assert.equal(g.json.note, 'a note\nwith two lines');
    assert.deepEqual(g.json.tags, ['one', 'two']);
    assert.equal(g.json.expires_at, l.expires_at);
    assert.equal(g.json.url, 'https://example.com/full');
});

it('null counts as absent', async () => {
    const r = await api(srv, 'POST', '/api/links', {
        key: alice, body: { url: 'https://example.com/nulls', alias: null, ttl: null, expires_at: null, title: null,
            note: null, tags: null, permanent: null, reuse: null },
    });
    assert.equal(r.status, 201, r.text);
    assert.match(r.json.code, /^[0-9A-Za-z]{7}$/);
    assert.equal(r.json.expires_at, null);
    assert.equal(r.json.days_remaining, null);
    assert.equal(r.json.permanent, false);
});

it('generated codes are distinct and do not look sequential', async () => {
    const codes = [];
    for (let i = 0; i < 12; i++) {
        codes.push((await createLink(srv, alice, { url: `https://example.com/seq/${i}` })).code);
    }
    for (const c of codes) assert.match(c, /^[0-9A-Za-z]{7}$/);
    assert.equal(new Set(codes).size, codes.length, `duplicate codes: ${codes}`);
    const nums = codes.map(base62Decode);
    let close = 0;
    for (let i = 1; i < nums.length; i++) {
        const d = nums[i] > nums[i - 1] ? nums[i] - nums[i - 1] : nums[i - 1] - nums[i];
        if (d < 1000n) close++;
    }
    assert.ok(close <= 1, `consecutive codes are numerically close (sequential?): ${codes.join(' ')}`);
    // Nor a shared prefix: a counter in the low digits would keep the first five.
    const prefixes = new Set(codes.map((c) => c.slice(0, 5)));
    assert.ok(prefixes.size >= 10, `codes share prefixes: ${codes.join(' ')}`);
});

/* ---------------------------------------------------------------- redirect */

it('GET /CODE redirects with 302, Location and Cache-Control: private, no-store', async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/landing?x=1' });
    const r = await visit(srv, l.code);
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), 'https://example.com/landing?x=1');
    const cc = cacheControl(r);
    assert.ok(cc.includes('private') && cc.includes('no-store'), `Cache-Control: ${r.headers.get('cache-control')}`);
});

it('the request query string is appended to the destination', async () => {
    const cases = [
        ['https://example.com/p?a=1', '?b=2', 'https://example.com/p?a=1&b=2'],
        ['https://example.com/p', '?b=2', 'https://example.com/p?b=2'],
        ['https://example.com/p', '?b=2&c=3', 'https://example.com/p?b=2&c=3'],
        ['https://example.com/p#frag', '?b=2', 'https://example.com/p?b=2#frag'],
        ['https://example.com/p?a=1#frag', '?b=2', 'https://example.com/p?a=1&b=2#frag'],
        ['https://example.com/p?a=1', '', 'https://example.com/p?a=1'],
    ];
    for (const [dest, q, want] of cases) {
        const l = await createLink(srv, alice, { url: dest });
        const r = await visit(srv, l.code + q);
        assert.equal(r.status, 302, `${dest} + ${q}`);
        assert.equal(r.headers.get('location'), want, `destination ${dest}, request /CODE${q}`);
    }
});

it('HEAD answers like GET and is never counted as a click', async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/head' });
    for (let i = 0; i < 3; i++) {
        const h = await visit(srv, l.code, { method: 'HEAD' });
        assert.equal(h.status, 302);
        assert.equal(h.headers.get('location'), 'https://example.com/head');
    }
    const g = await visit(srv, l.code);
    assert.equal(g.status, 302);
    const n = await poll(async () => await clicksOf(l.code) || 0, { timeoutMs: 10_000 });
    assert.equal(n, 1, 'one GET after three HEADs must count exactly one click');
    await sleep(1200); // one more flush period: nothing late may arrive
    assert.equal(await clicksOf(l.code), 1);
    const h404 = await visit(srv, 'zzzzzzz', { method: 'HEAD' });
    assert.equal(h404.status, 404);
});

it('GET / redirects to /dashboard', async () => {
    const r = await api(srv, 'GET', '/');
    assert.equal(r.status, 302);
    const loc = r.headers.get('location');
    assert.ok(loc, 'no Location');
    assert.equal(new URL(loc, srv.url).pathname, '/dashboard');
});

it('permanent links answer 301 with a cacheable max-age', async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/forever', permanent: true });
    assert.equal(l.permanent, true);
    const r = await visit(srv, l.code);
    assert.equal(r.status, 301);
    assert.equal(r.headers.get('location'), 'https://example.com/forever');
    const cc = cacheControl(r);
    const maxAge = cc.find((d) => d.startsWith('max-age='));
    assert.ok(maxAge && Number(maxAge.slice(8)) > 0, `Cache-Control: ${r.headers.get('cache-control')}`);
    assert.ok(!cc.includes('no-store'), 'a permanent redirect is cacheable');
});

it('unknown codes answer 404; codes are case-sensitive', async () => {
    assert.equal((await visit(srv, 'zzzzzzz')).status, 404);
    assert.equal((await visit(srv, 'no-such-alias')).status, 404);
    const alias = unique('Case-');
    await createLink(srv, alice, { url: 'https://example.com/case' });
    const l = await createLink(srv, alice, { url: 'https://example.com/case', alias });
    assert.equal((await visit(srv, l.code)).status, 302);
    assert.equal((await visit(srv, l.code.toLowerCase())).status, 404);
    assert.equal((await visit(srv, l.code.toUpperCase())).status, 404);
});

it('a code looked up before it existed redirects as soon as it is created', async () => {
    const alias = unique('later-');
    assert.equal((await visit(srv, alias)).status, 404);
    assert.equal((await visit(srv, alias)).status, 404); // now cached as unknown, if at all
    const l = await createLink(srv, alice, { url: 'https://example.com/later', alias });
    const r = await visit(srv, alias);
    assert.equal(r.status, 302, 'a create through the API must not be hidden by a cached 404');
    assert.equal(r.headers.get('location'), l.url);
});

/* ------------------------------------------------------------------ delete */

it('DELETE makes the code answer 410 for ever and shows state "deleted"', async () => {
    const alias = unique('del-');
    const l = await createLink(srv, alice, { url: 'https://example.com/del', alias });
    assert.equal((await visit(srv, alias)).status, 302); // now it is cached
    const d = await api(srv, 'DELETE', `/api/links/${alias}`, { key: alice });
    assert.equal(d.status, 204, d.text);
    assert.equal(d.text, '');
    assert.equal((await visit(srv, alias)).status, 410);
    assert.equal((await visit(srv, alias, { method: 'HEAD' })).status, 410);
    const g = await api(srv, 'GET', `/api/links/${alias}`, { key: alice });
    assert.equal(g.status, 200, g.text);
    assert.equal(g.json.state, 'deleted');
    assert.equal(g.json.code, l.code);
    // A deleted alias is never handed out again, to anyone.
    for (const key of [alice, bob]) {
        const again = await api(srv, 'POST', '/api/links', { key, body: { url: 'https://example.com/again', alias } });
        assert.equal(again.status, 409, again.text);
        assert.equal(errorOf(again).code, 'alias_taken');
    }
    assert.equal((await visit(srv, alias)).status, 410);
});

it('deleting a generated code leaves a 410 tombstone', async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/del-gen' });
    assert.equal((await api(srv, 'DELETE', `/api/links/${l.code}`, { key: alice })).status, 204);
    assert.equal((await visit(srv, l.code)).status, 410);
});

/* ------------------------------------------------------------------ expiry */

it('ttl is honoured exactly: 302 until 1 s, 410 after', async () => {
    const alias = unique('ttl1-');
    const t0 = Date.now();
    const l = await createLink(srv, alice, { url: 'https://example.com/ttl1', alias, ttl: 1 });
    const t1 = Date.now();
    const ttl = Date.parse(l.expires_at) - Date.parse(l.created_at);
    assert.ok(Math.abs(ttl - 1000) <= 1000, `expires_at - created_at = ${ttl} ms for ttl 1`);
    assert.equal((await visit(srv, alias)).status, 302, 'a link with ttl 1 must redirect right after its creation');
    await until(t0 + 700);
    assert.equal((await visit(srv, alias)).status, 302, 'a link with ttl 1 expired before 1 s had passed');
    await until(t1 + 1250);
    assert.equal((await visit(srv, alias)).status, 410, 'a link with ttl 1 still redirects 1.25 s after creation');
    assert.equal((await visit(srv, alias, { method: 'HEAD' })).status, 410);
    const g = await api(srv, 'GET', `/api/links/${alias}`, { key: alice });
    assert.equal(g.status, 200);
    assert.equal(g.json.state, 'expired');
    assert.equal(g.json.days_remaining, 0);
    // In the default list (active and expired), with state "expired".
    const list = await api(srv, 'GET', '/api/links?limit=1000', { key: alice });
    const mine = list.json.find((x) => x.code === alias);
    assert.ok(mine, 'an expired link belongs to the default list');
    assert.equal(mine.state, 'expired');
    const active = await api(srv, 'GET', '/api/links?limit=1000&state=active', { key: alice });
    assert.ok(!active.json.some((x) => x.code === alias), 'state=active lists an expired link');
    // An expired alias is never handed out again.
    const again = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://example.com/x', alias } });
    assert.equal(again.status, 409, again.text);
    assert.equal(errorOf(again).code, 'alias_taken');
});

it('days_remaining counts whole days rounded up', async () => {
    const now = Date.now();
    const cases = [
        [{ ttl: 60 }, 1],
        [{ ttl: 86400 }, 1],
        [{ ttl: 86401 }, 2],
        [{ ttl: 3 * 86400 }, 3],
        [{ ttl: 2 * 86400 + 3600 }, 3],
        [{ expires_at: isoSeconds(now + 10 * 86400_000 + 3600_000) }, 11],
    ];
    for (const [extra, want] of cases) {
        const l = await createLink(srv, alice, { url: 'https://example.com/days', ...extra });
        assert.equal(l.days_remaining, want, `${JSON.stringify(extra)} → days_remaining ${l.days_remaining}`);
        const g = await api(srv, 'GET', `/api/links/${l.code}`, { key: alice });
        assert.equal(g.json.days_remaining, want);
    }
});

it('expires_at accepts RFC 3339 with an offset and refuses the past', async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/exp', expires_at: '2031-01-01T00:00:00+02:00' });
    assert.equal(Date.parse(l.expires_at), Date.parse('2031-01-01T00:00:00+02:00'));
    assert.equal(l.state, 'active');
    for (const v of [isoSeconds(Date.now() - 60_000), '2001-01-01T00:00:00Z']) {
        const r = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://example.com/p', expires_at: v } });
        assert.equal(r.status, 400, `expires_at ${v}: ${r.text}`);
        assert.equal(errorOf(r).code, 'invalid_field');
        assert.equal(errorOf(r).field, 'expires_at');
    }
    const both = await api(srv, 'POST', '/api/links', {
        key: alice, body: { url: 'https://example.com/p', ttl: 60, expires_at: isoSeconds(Date.now() + 3600_000) },
    });
    assert.equal(both.status, 400, both.text);
    assert.equal(errorOf(both).field, 'ttl');
});

/* ------------------------------------------------------------------ errors */

it('malformed JSON and non-objects answer 400 invalid_json', async () => {
    for (const raw of ['{"url": ', '{"url": "https://example.com/"', '[1,2]', '"https://example.com/"', 'null', '42',
        'not json', '']) {
        const r = await api(srv, 'POST', '/api/links', { key: alice, raw });
        assert.equal(r.status, 400, `body ${JSON.stringify(raw)}: ${r.text}`);
        assert.match(r.headers.get('content-type') || '', /^application\/json/);
        const e = errorOf(r);
        assert.equal(e.code, 'invalid_json', `body ${JSON.stringify(raw)}`);
        assert.ok(e.message.length > 0);
    }
});

it('a missing url and unknown fields answer 400 invalid_field naming the field', async () => {
    const missing = await api(srv, 'POST', '/api/links', { key: alice, body: { title: 'no url' } });
    assert.equal(missing.status, 400, missing.text);
    assert.equal(errorOf(missing).code, 'invalid_field');
    assert.equal(errorOf(missing).field, 'url');

    const unknown = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://example.com/', colour: 'red' } });
    assert.equal(unknown.status, 400, unknown.text);
    assert.equal(errorOf(unknown).code, 'invalid_field');
    assert.equal(errorOf(unknown).field, 'colour');

    const list = await api(srv, 'GET', '/api/links?limit=1000&state=all', { key: alice });
    assert.ok(!list.json.some((l) => l.title === 'no url'), 'a refused create left a link behind');
});

it('wrong types and out-of-range values answer 400 with the field', async () => {
    const cases = [
        [{ ttl: 0 }, 'ttl'], [{ ttl: -5 }, 'ttl'], [{ ttl: 1.5 }, 'ttl'], [{ ttl: '60' }, 'ttl'],
        [{ expires_at: 'tomorrow' }, 'expires_at'], [{ expires_at: 1893456000 }, 'expires_at'],
        [{ permanent: 'yes' }, 'permanent'], [{ reuse: 1 }, 'reuse'],
        [{ title: 5 }, 'title'], [{ note: ['x'] }, 'note'], [{ tags: 'a,b' }, 'tags'], [{ tags: [1] }, 'tags'],
        [{ alias: 12345 }, 'alias'],
    ];
    for (const [extra, field] of cases) {
        const r = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://example.com/t', ...extra } });
        assert.equal(r.status, 400, `${JSON.stringify(extra)}: ${r.text}`);
        assert.equal(errorOf(r).code, 'invalid_field', JSON.stringify(extra));
        assert.equal(errorOf(r).field, field, JSON.stringify(extra));
    }
});

it('unknown API routes answer 404 and wrong methods 405, as JSON errors', async () => {
    const nf = await api(srv, 'GET', '/api/nothing-here', { key: admin });
    assert.equal(nf.status, 404);
    assert.equal(errorOf(nf).code, 'not_found');
    const gone = await api(srv, 'GET', '/api/links/zzzzzzz', { key: admin });
    assert.equal(gone.status, 404);
    assert.equal(errorOf(gone).code, 'not_found');
    const m = await api(srv, 'PUT', '/api/links', { key: admin, body: { url: 'https://example.com/' } });
    assert.equal(m.status, 405, m.text);
    assert.equal(errorOf(m).code, 'method_not_allowed');
});

/* -------------------------------------------------------------------- auth */

it('no key, an unknown key or another scheme answers 401 unauthorized', async () => {
    const attempts = [
        {},
        { key: 'sk_this_is_not_a_key_0123456789abcdef' },
        { key: alice + 'x' },
        { key: alice.slice(0, -1) },
        { headers: { authorization: `Basic ${Buffer.from('alice:' + alice).toString('base64')}` } },
        { headers: { authorization: `Bearer` } },
        { headers: { authorization: alice } },
    ];
    for (const a of attempts) {
        for (const [method, p, body] of [['GET', '/api/links'], ['POST', '/api/links', { url: 'https://example.com/' }],
            ['GET', '/api/admin/blocklist']]) {
            const r = await api(srv, method, p, { ...a, body });
            assert.equal(r.status, 401, `${method} ${p} with ${JSON.stringify(a)}: ${r.text}`);
            assert.equal(errorOf(r).code, 'unauthorized');
        }
    }
    const ok = await api(srv, 'GET', '/api/links', { key: alice });
    assert.equal(ok.status, 200);
});

/* --------------------------------------------------------------- ownership */

it("another owner's link is a 404, never a 403; an admin sees every link", async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/alice-only' });
    const g = await api(srv, 'GET', `/api/links/${l.code}`, { key: bob });
    assert.equal(g.status, 404, g.text);
    assert.equal(errorOf(g).code, 'not_found');
    const d = await api(srv, 'DELETE', `/api/links/${l.code}`, { key: bob });
    assert.equal(d.status, 404, d.text);
    assert.equal((await visit(srv, l.code)).status, 302, "bob's DELETE removed alice's link");

    const bl = await api(srv, 'GET', '/api/links?limit=1000&state=all', { key: bob });
    assert.equal(bl.status, 200);
    assert.ok(Array.isArray(bl.json));
    assert.ok(!bl.json.some((x) => x.code === l.code), "alice's link is in bob's list");

    const ag = await api(srv, 'GET', `/api/links/${l.code}`, { key: admin });
    assert.equal(ag.status, 200, ag.text);
    assert.equal(ag.json.url, 'https://example.com/alice-only');
    const bobs = await createLink(srv, bob, { url: 'https://example.com/bob' });
    const al = await api(srv, 'GET', '/api/links?limit=1000&state=all', { key: admin });
    assert.ok(al.json.some((x) => x.code === l.code), "the admin list lacks alice's link");
    assert.ok(al.json.some((x) => x.code === bobs.code), "the admin list lacks bob's link");

    const ad = await api(srv, 'DELETE', `/api/links/${bobs.code}`, { key: admin });
    assert.equal(ad.status, 204, ad.text);
    assert.equal((await visit(srv, bobs.code)).status, 410);
});

/* ----------------------------------------------------------------- listing */

it('GET /api/links is a bare array, newest first, paginated with a Link header', async () => {
    const carol = createKey(srv, 'carol');
    const codes = [];
    for (let i = 0; i < 7; i++) codes.push((await createLink(srv, carol, { url: `https://example.com/c/${i}` })).code);
    const newest = [...codes].reverse();

    const all = await api(srv, 'GET', '/api/links', { key: carol });
    assert.equal(all.status, 200);
    assert.ok(Array.isArray(all.json), `not a bare array: ${all.text.slice(0, 200)}`);
    assert.deepEqual(all.json.map((l) => l.code), newest);
    assert.equal(nextLink(all.headers.get('link')), null, 'a Link rel="next" on a complete list');
    for (const l of all.json) {
        assert.equal(typeof l.clicks, 'number');
        assert.ok('days_remaining' in l);
    }

    const seen = [];
    let url = '/api/links?limit=3';
    let pages = 0;
    while (url && pages < 10) {
        const r = await api(srv, 'GET', url.startsWith('http') ? new URL(url).pathname + new URL(url).search : url,
            { key: carol });
        assert.equal(r.status, 200, `${url}: ${r.text}`);
        assert.ok(r.json.length <= 3, `page of ${r.json.length} for limit=3`);
        if (pages === 0) {
            assert.equal(r.json.length, 3);
            assert.ok(nextLink(r.headers.get('link')), `no Link rel="next" after a full first page: ${r.headers.get('link')}`);
        }
        seen.push(...r.json.map((l) => l.code));
        pages++;
        url = nextLink(r.headers.get('link'));
        if (url) assert.match(url, /^(https?:\/\/[^/]+)?\/api\/links\?/);
        if (!r.json.length) break;
    }
    assert.deepEqual(seen, newest, 'following every page must give every link once, newest first');
});

it('?state= filters the list; the default is active and expired', async () => {
    const dave = createKey(srv, 'dave');
    const live = await createLink(srv, dave, { url: 'https://example.com/live' });
    const dead = await createLink(srv, dave, { url: 'https://example.com/dead' });
    const off = await createLink(srv, dave, { url: 'https://example.com/off' });
    assert.equal((await api(srv, 'DELETE', `/api/links/${dead.code}`, { key: dave })).status, 204);
    assert.equal((await api(srv, 'POST', `/api/links/${off.code}/disable`, { key: admin })).status, 200);
    const codes = async (q) => {
        const r = await api(srv, 'GET', `/api/links${q}`, { key: dave });
        assert.equal(r.status, 200, `${q}: ${r.text}`);
        return r.json.map((l) => l.code).sort();
    };
    assert.deepEqual(await codes(''), [live.code]);
    assert.deepEqual(await codes('?state=active'), [live.code]);
    assert.deepEqual(await codes('?state=deleted'), [dead.code]);
    assert.deepEqual(await codes('?state=disabled'), [off.code]);
    assert.deepEqual(await codes('?state=active,deleted'), [live.code, dead.code].sort());
    assert.deepEqual(await codes('?state=all'), [live.code, dead.code, off.code].sort());
    const r = await api(srv, 'GET', '/api/links?state=deleted', { key: dave });
    assert.equal(r.json[0].state, 'deleted');
});

it('?limit must be 1..1000', async () => {
    for (const q of ['0', '1001', 'x', '-1', '10x']) {
        const r = await api(srv, 'GET', `/api/links?limit=${q}`, { key: alice });
        assert.equal(r.status, 400, `limit=${q}: ${r.text}`);
        assert.equal(errorOf(r).code, 'invalid_field');
        assert.equal(errorOf(r).field, 'limit');
    }
    for (const q of ['1', '1000']) {
        const r = await api(srv, 'GET', `/api/links?limit=${q}`, { key: alice });
        assert.equal(r.status, 200, `limit=${q}: ${r.text}`);
        assert.ok(r.json.length <= Number(q));
    }
    const one = await api(srv, 'GET', '/api/links?limit=1', { key: alice });
    assert.equal(one.json.length, 1);
});

/* ------------------------------------------------------------------- admin */

it('admin can disable and enable a link; others get 403', async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/toggle' });
    for (const action of ['disable', 'enable']) {
        const r = await api(srv, 'POST', `/api/links/${l.code}/${action}`, { key: alice });
        assert.equal(r.status, 403, `owner ${action}: ${r.text}`);
        assert.equal(errorOf(r).code, 'forbidden');
    }
    assert.equal((await visit(srv, l.code)).status, 302);
    const d = await api(srv, 'POST', `/api/links/${l.code}/disable`, { key: admin });
    assert.equal(d.status, 200, d.text);
    assert.equal(d.json.state, 'disabled');
    assert.equal(d.json.code, l.code);
    assert.equal((await visit(srv, l.code)).status, 410);
    assert.equal((await api(srv, 'GET', `/api/links/${l.code}`, { key: alice })).json.state, 'disabled');
    const e = await api(srv, 'POST', `/api/links/${l.code}/enable`, { key: admin });
    assert.equal(e.status, 200, e.text);
    assert.equal(e.json.state, 'active');
    const r = await visit(srv, l.code);
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), 'https://example.com/toggle');
    const missing = await api(srv, 'POST', '/api/links/zzzzzzz/disable', { key: admin });
    assert.equal(missing.status, 404);
});

it('the blocklist refuses a host and its subdomains while it is listed', async () => {
    const host = `${unique('evil')}.example`;
    for (const [method, p, body] of [['GET', '/api/admin/blocklist'], ['POST', '/api/admin/blocklist', { host }],
        ['DELETE', `/api/admin/blocklist/${host}`]]) {
        const r = await api(srv, method, p, { key: alice, body });
        assert.equal(r.status, 403, `${method} ${p} as a user: ${r.text}`);
        assert.equal(errorOf(r).code, 'forbidden');
    }
    await createLink(srv, alice, { url: `http://${host}/x` }); // allowed before the block

    const add = await api(srv, 'POST', '/api/admin/blocklist', { key: admin, body: { host } });
    assert.equal(add.status, 201, add.text);
    const list = await api(srv, 'GET', '/api/admin/blocklist', { key: admin });
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.json), list.text);
    const entry = list.json.find((e) => e.host === host);
    assert.ok(entry, `${host} not in ${list.text}`);
    assert.match(entry.created_at, RFC3339);

    for (const url of [`http://${host}/x`, `https://sub.${host}/`, `https://a.b.${host}/p?q=1`,
        `http://${host.toUpperCase()}/x`, `http://${host}:8080/x`]) {
        const r = await api(srv, 'POST', '/api/links', { key: alice, body: { url } });
        assert.equal(r.status, 400, `${url} while blocked: ${r.text}`);
        assert.equal(errorOf(r).field, 'url');
    }
    // Only the host and its subdomains: a longer name that ends the same is fine.
    await createLink(srv, alice, { url: `http://not${host}/x` });

    const del = await api(srv, 'DELETE', `/api/admin/blocklist/${host}`, { key: admin });
    assert.equal(del.status, 204, del.text);
    const after_ = await api(srv, 'GET', '/api/admin/blocklist', { key: admin });
    assert.ok(!after_.json.some((e) => e.host === host));
    await createLink(srv, alice, { url: `http://sub.${host}/again` });
});

it('the blocklist takes host names only: a URL is refused or reduced to its host', async () => {
    const host = `${unique('evilurl')}.example`;
    const asUrl = await api(srv, 'POST', '/api/admin/blocklist', { key: admin, body: { host: `https://url-${host}/path` } });
    if (asUrl.status === 201) {
        assert.equal(asUrl.json.host, `url-${host}`, `a URL given as host was stored as ${JSON.stringify(asUrl.json.host)}`);
    } else {
        assert.equal(asUrl.status, 400, asUrl.text);
        assert.equal(errorOf(asUrl).field, 'host');
    }
    const hosts = (await api(srv, 'GET', '/api/admin/blocklist', { key: admin })).json.map((e) => e.host);
    assert.ok(!hosts.includes('http') && !hosts.includes('https'), `blocklist holds a scheme as a host: ${hosts}`);
    for (const bad of ['', 'a b', 'exa mple.com']) {
        const r = await api(srv, 'POST', '/api/admin/blocklist', { key: admin, body: { host: bad } });
        assert.equal(r.status, 400, `host ${JSON.stringify(bad)}: ${r.text}`);
        assert.equal(errorOf(r).field, 'host');
    }
});
