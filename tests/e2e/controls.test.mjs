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
    // Password attempts are limited (5 a minute per client and link by
    // default): these functional tests make more; the limit's own test
    // starts a server with the defaults.
    srv = await startServer({ baseUrl: 'https://sho.rt', args: ['--hosts', 'sho.rt, www.sho.rt, 127.0.0.1',
        '--rate-password', '1000/60', '--rate-password-client', '1000/60'] });
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

/* --------------------------------------------------------------- passwords */

function postPassword(server, code, password, { accept = 'text/html', host } = {}) {
    const headers = { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0' };
    if (accept) headers.accept = accept;
    if (host) headers.host = host;
    return api(server, 'POST', `/${code}`, { headers, raw: `password=${encodeURIComponent(password)}` });
}

it('password: the gate page under a strict CSP, wrong → 401 and no click, right → through and one click', async () => {
    const secret = 'pässwörd & more+';
    const l = await createLink(srv, alice, { url: 'https://secret.example/doc', password: secret });
    assert.equal(l.protected, true);
    assert.ok(!('password' in l) && !JSON.stringify(l).includes(secret));
    const g = await api(srv, 'GET', `/api/links/${l.code}`, { key: alice });
    assert.ok(!JSON.stringify(g.json).includes('argon2') && g.json.protected === true);

    let r = await visit(srv, l.code);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /text\/html/);
    const csp = r.headers.get('content-security-policy');
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /form-action 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.ok(!/unsafe-inline/.test(csp));
    assert.match(r.headers.get('cache-control'), /no-store/);
    assert.match(r.text, /name="password"/);
    assert.ok(!r.text.includes('secret.example'), 'the gate leaks the destination');
    r = await visit(srv, l.code, { method: 'HEAD' });
    assert.equal(r.status, 200);
    assert.ok(r.headers.get('content-security-policy'));

    r = await postPassword(srv, l.code, 'wrong');
    assert.equal(r.status, 401);
    assert.match(r.text, /Wrong password/);
    assert.ok(!r.text.includes('secret.example'));
    r = await postPassword(srv, l.code, secret, { accept: null });
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), 'https://secret.example/doc');
    r = await postPassword(srv, l.code, secret);     // a browser: the continue page
    assert.equal(r.status, 200);
    assert.match(r.text, /https:\/\/secret\.example\/doc/);
    assert.match(r.text, /http-equiv="refresh"/i);
    // Two right answers are two clicks; the gate views and wrong tries none.
    await clicksOf(l.code, 2);
    const logs = srv.stdout() + srv.stderr();
    assert.ok(!logs.includes(secret) && !logs.includes(encodeURIComponent(secret)), 'the password is in the logs');
});

it('password: PATCH sets, changes and removes it', async () => {
    const l = await createLink(srv, alice, { url: 'https://later.example/' });
    assert.equal((await visit(srv, l.code)).status, 302);
    let r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { password: 'one' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.protected, true);
    assert.equal((await visit(srv, l.code)).status, 200, 'the cached plain link still redirects');
    assert.equal((await postPassword(srv, l.code, 'one', { accept: null })).status, 302);
    r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { password: 'two' } });
    assert.equal((await postPassword(srv, l.code, 'one', { accept: null })).status, 401);
    assert.equal((await postPassword(srv, l.code, 'two', { accept: null })).status, 302);
    r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { password: null } });
    assert.equal(r.json.protected, false);
    assert.equal((await visit(srv, l.code)).status, 302);
    for (const bad of ['', 'x'.repeat(129), 5]) {
        r = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://x.example/', password: bad } });
        assert.equal(r.status, 400, r.text);
        assert.equal(errorOf(r).field, 'password');
    }
});

it('password with max_clicks: only right answers use slots', async () => {
    const l = await createLink(srv, alice, { url: 'https://both.example/', password: 'pw', max_clicks: 2 });
    for (let i = 0; i < 5; i++) assert.equal((await postPassword(srv, l.code, 'nope')).status, 401);
    assert.equal((await postPassword(srv, l.code, 'pw', { accept: null })).status, 302);
    assert.equal((await postPassword(srv, l.code, 'pw', { accept: null })).status, 302);
    assert.equal((await postPassword(srv, l.code, 'pw', { accept: null })).status, 410);
    assert.equal((await visit(srv, l.code)).status, 410);
});

it('password: guessing is stopped at the default limit (429 with Retry-After), also with a forged X-Forwarded-For; attempts are not clicks', async () => {
    const own = await startServer();
    try {
        const k = createKey(own, 'k');
        const l = await createLink(own, k, { url: 'https://vault.example/', password: 'right one' });
        const other = await createLink(own, k, { url: 'https://vault.example/2', password: 'other' });
        for (let i = 0; i < 5; i++) {
            const r = await postPassword(own, l.code, `guess ${i}`);
            assert.equal(r.status, 401, r.text);
            assert.equal(r.headers.get('ratelimit-limit'), '5');
            assert.equal(r.headers.get('ratelimit-remaining'), String(4 - i));
        }
        // The sixth attempt is refused before the password is looked at,
        // the right one included, and a forged X-Forwarded-For from an
        // untrusted peer does not make a new client.
        for (const headers of [{}, { 'x-forwarded-for': '203.0.113.9' }]) {
            const r = await api(own, 'POST', `/${l.code}`, {
                headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', ...headers },
                raw: 'password=right%20one',
            });
            assert.equal(r.status, 429, r.text);
            const retry = Number(r.headers.get('retry-after'));
            // two windows at most: the sliding counter weighs the previous one
            assert.ok(retry >= 1 && retry <= 120, `Retry-After ${r.headers.get("retry-after")}`);
            assert.equal(r.headers.get('ratelimit-remaining'), '0');
            assert.match(r.text, /name="password"/);       // the gate again, with a message
        }
        // Another link of the same client has its own count.
        assert.equal((await postPassword(own, other.code, 'other', { accept: null })).status, 302);
        const st = await api(own, 'GET', `/api/links/${l.code}`, { key: k });
        assert.equal(st.json.clicks, 0, 'password attempts are not clicks');
    } finally {
        await own.stop();
    }
});

/* -------------------------------------------------------------------- UTM */

it('utm: merged into the destination, an existing utm_* parameter replaced, never duplicated', async () => {
    const l = await createLink(srv, alice, {
        url: 'https://shop.example/p?utm_source=old&id=7&utm_source=older#top',
        utm: { source: 'news letter', medium: 'email', campaign: 'a&b' },
    });
    assert.deepEqual(l.utm, { source: 'news letter', medium: 'email', campaign: 'a&b' });
    const want = 'https://shop.example/p?utm_source=news%20letter&id=7&utm_medium=email&utm_campaign=a%26b#top';
    assert.equal(l.destination, want);
    assert.equal((await visit(srv, l.code)).headers.get('location'), want);
    const r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { utm: { source: 'x' } } });
    assert.equal(r.status, 200, r.text);
    assert.equal((await visit(srv, l.code)).headers.get('location'), 'https://shop.example/p?utm_source=x&id=7#top');
    await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { utm: null } });
    assert.equal((await visit(srv, l.code)).headers.get('location'), 'https://shop.example/p?utm_source=old&id=7&utm_source=older#top');
    for (const [utm, field] of [[{ sorce: 'x' }, 'utm'], [{ source: '' }, 'utm.source'], [{ source: 'x'.repeat(129) }, 'utm.source'], ['x', 'utm'], [{}, 'utm']]) {
        const e = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://x.example/', utm } });
        assert.equal(e.status, 400, `${JSON.stringify(utm)}: ${e.text}`);
        assert.equal(errorOf(e).field, field, JSON.stringify(utm));
    }
});

/* ---------------------------------------------------------------- variants */

it('variants: a visitor keeps a variant; the split follows the weights over distinct user agents', async () => {
    const l = await createLink(srv, alice, {
        url: 'https://ab.example/',
        variants: [{ url: 'https://ab.example/a', weight: 1 }, { url: 'https://ab.example/b', weight: 3 }],
    });
    assert.deepEqual(l.variants, [{ url: 'https://ab.example/a', weight: 1 }, { url: 'https://ab.example/b', weight: 3 }]);
    const ua = (i) => `Mozilla/5.0 (X11; Linux x86_64) Firefox/${i}.0 test-${i}`;
    const first = (await visit(srv, l.code, { headers: { 'user-agent': ua(1) } })).headers.get('location');
    for (let i = 0; i < 5; i++) {
        assert.equal((await visit(srv, l.code, { headers: { 'user-agent': ua(1) } })).headers.get('location'), first);
    }
    const counts = { 'https://ab.example/a': 0, 'https://ab.example/b': 0 };
    const N = 400;
    const rs = await Promise.all(Array.from({ length: N }, (_, i) => visit(srv, l.code, { headers: { 'user-agent': ua(1000 + i) } })));
    for (const r of rs) counts[r.headers.get('location')]++;
    assert.equal(counts['https://ab.example/a'] + counts['https://ab.example/b'], N);
    const shareB = counts['https://ab.example/b'] / N;
    assert.ok(shareB > 0.65 && shareB < 0.85, `b got ${shareB} of the clicks (want about 0.75)`);
    // The stats split the clicks by variant (numbered in the link's order),
    // and agree with where the visitors were sent.
    await clicksOf(l.code, N + 6);
    const st = await api(srv, 'GET', `/api/links/${l.code}/stats`, { key: alice });
    assert.equal(st.status, 200, st.text);
    const firstIs = first === 'https://ab.example/a' ? '1' : '2';
    assert.deepEqual(st.json.variants, {
        1: counts['https://ab.example/a'] + (firstIs === '1' ? 6 : 0),
        2: counts['https://ab.example/b'] + (firstIs === '2' ? 6 : 0),
    });
    for (const [variants, why] of [
        [[{ url: 'https://a.example/' }], 'one variant'],
        [[{ url: 'ftp://a.example/' }, { url: 'https://b.example/' }], 'bad url'],
        [[{ url: 'https://a.example/', weight: 0 }, { url: 'https://b.example/' }], 'weight 0'],
        ['x', 'not an array'],
    ]) {
        const e = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://x.example/', variants } });
        assert.equal(e.status, 400, `${why}: ${e.text}`);
        assert.equal(errorOf(e).field, 'variants', why);
    }
});

it('the blocklist holds for variants and for a PATCH of the destination', async () => {
    const host = `${unique('blk')}.example`.toLowerCase();
    const b = await api(srv, 'POST', '/api/admin/blocklist', { key: admin, body: { host } });
    assert.equal(b.status, 201, b.text);
    let r = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://ok.example/', variants: [{ url: 'https://ok.example/a' }, { url: `https://x.${host}/b` }] } });
    assert.equal(r.status, 400, r.text);
    assert.equal(errorOf(r).field, 'variants');
    const l = await createLink(srv, alice, { url: 'https://ok.example/' });
    r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { url: `https://${host}/` } });
    assert.equal(r.status, 400, r.text);
    assert.equal(errorOf(r).field, 'url');
    r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key: alice, body: { variants: [{ url: 'https://ok.example/a' }, { url: `https://${host}/b` }] } });
    assert.equal(r.status, 400, r.text);
    assert.equal(errorOf(r).field, 'variants');
    assert.equal((await visit(srv, l.code)).headers.get('location'), 'https://ok.example/');
    await api(srv, 'DELETE', `/api/admin/blocklist/${host}`, { key: admin });
});
