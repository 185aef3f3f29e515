// yourls.test.mjs - YOURLS's API (/yourls-api.php) against the real binary:
// the exact request ShareX sends (a multipart POST with action=shorturl,
// format=simple, signature, url: Node's FormData through fetch), the
// documented GET forms, and the links they make being ordinary shortd links
// (they redirect, their clicks show in GET /api/links/CODE/stats, and
// GET /api/links lists them). The signature token `shortd key yourls-token`
// prints works as YOURLS's docs use it, timestamped (md5(timestamp . token),
// or another `hash`) or not. A wrong signature is rate limited as a wrong
// Bearer key is, and bad input stores nothing.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before } from 'node:test';

import { api, cli, createKey, it, poll, startServer, unique, visit } from './harness.mjs';

const BASE = 'https://sho.example.test';
let srv;
let key;
let otherKey;

before(async () => {
    srv = await startServer({ baseUrl: BASE, args: ['--rate-auth', '5/3600'] });
    key = createKey(srv, 'yourls-user');
    otherKey = createKey(srv, 'yourls-other');
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

/* GET /yourls-api.php?PARAMS: {status, type, text, json}. */
async function yget(params) {
    const res = await fetch(`${srv.url}/yourls-api.php?${new URLSearchParams(params)}`);
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* xml, text */ }
    return { status: res.status, type: res.headers.get('content-type'), text, json };
}

/* What ShareX's YOURLS shortener sends (YourlsURLShortener.cs): a
 * multipart/form-data POST of these fields, reading the body as the URL. */
async function sharex(fields) {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    const res = await fetch(`${srv.url}/yourls-api.php`, { method: 'POST', body: form });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/* The checks that a link made through YOURLS is an ordinary shortd link:
 * it redirects to 'url', its click shows in its stats, GET /api/links of its
 * key lists it. */
async function assertOrdinary(code, url, owner = key) {
    const v = await visit(srv, code);
    assert.equal(v.status, 302, v.text);
    assert.equal(v.headers.get('location'), url);
    const clicks = await poll(async () => {
        const s = await api(srv, 'GET', `/api/links/${code}/stats`, { key: owner });
        assert.equal(s.status, 200, s.text);
        return s.json.total_clicks >= 1 ? s.json.total_clicks : 0;
    });
    assert.equal(clicks, 1, 'the click shows in GET /api/links/CODE/stats');
    const list = await api(srv, 'GET', '/api/links?limit=1000', { key: owner });
    assert.equal(list.status, 200);
    assert.ok(list.json.some((l) => l.code === code && l.url === url), 'listed by GET /api/links');
}

it('ShareX: a multipart POST with format=simple answers the short URL in plain text, and the link is ' +
   'an ordinary one', async () => {
    const url = `https://example.com/sharex/${unique('p')}`;
    const r = await sharex({ action: 'shorturl', format: 'simple', signature: key, url });
    assert.equal(r.status, 200, r.text);
    assert.match(r.type, /^text\/plain/);
    assert.match(r.text, new RegExp(`^${BASE}/[0-9A-Za-z_-]+$`));
    const code = r.text.slice(BASE.length + 1);
    await assertOrdinary(code, url);

    // The quirk ShareX relies on: the same URL again is error:url (400), and
    // simple still prints the existing short URL.
    const again = await sharex({ action: 'shorturl', format: 'simple', signature: key, url });
    assert.equal(again.status, 400);
    assert.equal(again.text, r.text);
    const j = await yget({ action: 'shorturl', format: 'json', signature: key, url });
    assert.equal(j.status, 400);
    assert.equal(j.json.status, 'fail');
    assert.equal(j.json.code, 'error:url');
    assert.equal(j.json.shorturl, r.text);
    assert.match(j.json.message, /already exists in database \(short URL: sho\.example\.test\//);
    assert.equal(j.json.url.keyword, code);
    // Another key has no link to it: it gets a new one.
    const other = await yget({ action: 'shorturl', format: 'simple', signature: otherKey, url });
    assert.equal(other.status, 200);
    assert.notEqual(other.text, r.text);
});

it('GET forms: shorturl with a keyword and a title (json), expand, url-stats, stats, db-stats, version',
   async () => {
    const url = `https://example.com/get/${unique('g')}?a=1&b=2`;
    const keyword = unique('yk');
    const r = await yget({ signature: key, action: 'shorturl', url, keyword, title: 'A title', format: 'json' });
    assert.equal(r.status, 200, r.text);
    assert.match(r.type, /^application\/json/);
    assert.equal(r.json.status, 'success');
    assert.equal(r.json.statusCode, '200');
    assert.equal(r.json.shorturl, `${BASE}/${keyword}`);
    assert.equal(r.json.title, 'A title');
    assert.deepEqual(Object.keys(r.json.url), ['keyword', 'url', 'title', 'date', 'ip']);
    assert.equal(r.json.url.keyword, keyword);
    assert.match(r.json.url.date, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.match(r.text, /"shorturl":"https:\\\/\\\//, 'slashes escaped as PHP does');
    await assertOrdinary(keyword, url);

    const ex = await yget({ signature: key, action: 'expand', shorturl: `${BASE}/${keyword}`, format: 'json' });
    assert.equal(ex.status, 200);
    assert.equal(ex.json.longurl, url);
    assert.equal(ex.json.keyword, keyword);
    const exs = await yget({ signature: key, action: 'expand', shorturl: keyword, format: 'simple' });
    assert.equal(exs.text, url);

    const us = await yget({ signature: key, action: 'url-stats', shorturl: keyword, format: 'json' });
    assert.equal(us.status, 200);
    assert.equal(us.json.link.clicks, 1);
    assert.equal(us.json.link.url, url);

    const st = await yget({ signature: key, action: 'stats', filter: 'top', limit: '5', format: 'json' });
    assert.equal(st.status, 200);
    assert.equal(st.json.links.link_1.shorturl, `${BASE}/${keyword}`, 'the most clicked first');
    assert.ok(st.json.stats.total_links >= 1);

    const db = await yget({ signature: key, action: 'db-stats', format: 'json' });
    assert.equal(db.status, 200);
    assert.ok(db.json['db-stats'].total_clicks >= 2);

    const xml = await yget({ signature: key, action: 'version' });
    assert.match(xml.type, /^application\/xml/);
    assert.equal(xml.text, '<?xml version="1.0" encoding="UTF-8"?>\n<root><version>1.10.4</version></root>\n');
});

it('a title is kept as YOURLS 1.10.4 keeps it: tags stripped, blanks folded, trimmed', async () => {
    // Each as the real YOURLS answered it.
    for (const [title, kept] of [
        ['  Caf\u00e9 <b>bold</b>\n\tnews  ', 'Caf\u00e9 bold news'],
        ['a < b > c', 'a < b > c'],
        ['<a href="x>y">link</a> <!-- c -->end', 'link end'],
    ]) {
        const url = `https://example.com/title/${unique('t')}`;
        const r = await yget({ signature: key, action: 'shorturl', url, title, format: 'json' });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.title, kept, JSON.stringify(title));
        const own = await api(srv, 'GET', `/api/links/${r.json.url.keyword}`, { key });
        assert.equal(own.json.title, kept, 'stored so');
    }
});

it('format=jsonp as YOURLS 1.10.4 answers it: with a callback, without one (a bare "(...)"), and with a ' +
   'bad one', async () => {
    const cb = await yget({ signature: key, action: 'version', format: 'jsonp', callback: 'cb' });
    assert.equal(cb.status, 200);
    assert.match(cb.type, /^application\/javascript/);
    assert.equal(cb.text, 'cb({"version":"1.10.4","callback":"cb"})');
    // Checked against the real YOURLS: no callback is no error.
    const none = await yget({ signature: key, action: 'version', format: 'jsonp' });
    assert.equal(none.status, 200, none.text);
    assert.equal(none.text, '({"version":"1.10.4"})');
    const bad = await yget({ signature: key, action: 'version', format: 'jsonp', callback: 'a(b)' });
    assert.equal(bad.status, 400);
    assert.equal(bad.text, '{"errorCode":"400","error":"Invalid callback parameter"}');
});

it('Idempotency-Key: the same shorturl again replays its answer, another under the key is refused, and ' +
   'a concurrent pair makes one link', async () => {
    /* ShareX's multipart POST with an Idempotency-Key: each sending has a
     * boundary of its own. */
    const post = async (fields, idem) => {
        const form = new FormData();
        for (const [k, v] of Object.entries(fields)) form.append(k, v);
        const res = await fetch(`${srv.url}/yourls-api.php`, {
            method: 'POST', body: form, headers: { 'Idempotency-Key': idem },
        });
        return { status: res.status, text: await res.text(), replayed: res.headers.get('idempotent-replayed'),
            type: res.headers.get('content-type') };
    };
    const urlsOf = async () => (await api(srv, 'GET', '/api/links?limit=1000', { key })).json.map((l) => l.url);
    const url = `https://example.com/idem/${unique('i')}`;
    const idem = unique('idem-key');
    const fields = { action: 'shorturl', format: 'json', signature: key, url };
    const first = await post(fields, idem);
    assert.equal(first.status, 200, first.text);
    assert.equal(JSON.parse(first.text).status, 'success');
    assert.equal(first.replayed, null);
    // Without the key the same URL would be error:url (unique URLs): the
    // replay is the first answer, byte for byte.
    const again = await post(fields, idem);
    assert.deepEqual([again.status, again.text, again.type], [200, first.text, first.type]);
    assert.equal(again.replayed, 'true');
    // The same key with another request: YOURLS's failure shape, nothing stored.
    const other = `${url}/other`;
    const mismatch = await post({ ...fields, url: other }, idem);
    assert.equal(mismatch.status, 422, mismatch.text);
    assert.deepEqual(JSON.parse(mismatch.text), {
        status: 'fail', code: 'error:idempotency',
        message: 'This Idempotency-Key was used with a different request', errorCode: '422', statusCode: '422',
    });
    assert.ok(!(await urlsOf()).includes(other), 'nothing stored');
    const bad = await post(fields, 'two words');
    assert.equal(bad.status, 400);
    assert.equal(JSON.parse(bad.text).code, 'error:idempotency');

    // Two at once under one key: one link, made once, and the same answer.
    const url2 = `https://example.com/idem/${unique('c')}`;
    const idem2 = unique('idem-pair');
    const pair = await Promise.all([1, 2].map(() =>
        post({ action: 'shorturl', format: 'simple', signature: key, url: url2 }, idem2)));
    assert.deepEqual(pair.map((p) => p.status), [200, 200], JSON.stringify(pair));
    assert.equal(pair[0].text, pair[1].text);
    assert.deepEqual(pair.map((p) => p.replayed).sort(), ['true', null].sort());
    assert.equal((await urlsOf()).filter((u) => u === url2).length, 1, 'one link');
});

it('bad input gets YOURLS\'s error and stores nothing', async () => {
    const before = (await api(srv, 'GET', '/api/links?limit=1000', { key })).json.length;
    const nourl = await yget({ signature: key, action: 'shorturl', url: 'not a url', format: 'json' });
    assert.equal(nourl.status, 400);
    assert.equal(nourl.json.code, 'error:nourl');
    const kw = await yget({ signature: key, action: 'shorturl', url: 'https://example.com/kw', keyword: 'api',
        format: 'json' });
    assert.equal(kw.status, 400);
    assert.equal(kw.json.code, 'error:keyword');
    const multi = await sharex({ action: 'shorturl', format: 'simple', signature: key, url: '' });
    assert.equal(multi.status, 400);
    assert.equal(multi.text, '');
    const after_ = (await api(srv, 'GET', '/api/links?limit=1000', { key })).json.length;
    assert.equal(after_, before);
});

it('the signature token `shortd key yourls-token` prints signs timestamped requests as YOURLS\'s docs show; ' +
   'a stale timestamp or a revoked key is refused', async () => {
    const made = cli(['key', 'create', '--db', srv.db, '--name', 'yourls-signed']);
    assert.equal(made.code, 0, made.stderr);
    const id = /created user key (\d+) /.exec(made.stdout)[1];
    const signedKey = made.stdout.trim().split(/\s+/).pop();
    const t = cli(['key', 'yourls-token', '--db', srv.db, id]);
    assert.equal(t.code, 0, t.stderr);
    assert.match(t.stdout, /^[0-9a-f]{32}\n$/);
    const token = t.stdout.trim();
    assert.equal(cli(['key', 'yourls-token', '--db', srv.db, id]).stdout.trim(), token, 'derived: stable');

    // $timestamp = time(); $signature = md5( $timestamp . $token );
    const signed = (ts, hash = 'md5') => ({
        timestamp: String(ts),
        signature: createHash(hash).update(`${ts}${token}`).digest('hex'),
        ...(hash === 'md5' ? {} : { hash }),
    });
    const now = Math.floor(Date.now() / 1000);
    const url = `https://example.com/signed/${unique('s')}`;
    const r = await yget({ action: 'shorturl', url, format: 'json', ...signed(now) });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.status, 'success');
    await assertOrdinary(r.json.url.keyword, url, signedKey);
    const other = await api(srv, 'GET', '/api/links?limit=1000', { key });
    assert.ok(!other.json.some((l) => l.url === url), 'the link is the signing key\'s only');

    for (const hash of ['sha1', 'sha512']) {
        const db = await yget({ action: 'db-stats', format: 'json', ...signed(now, hash) });
        assert.equal(db.status, 200, `${hash}: ${db.text}`);
        assert.equal(db.json['db-stats'].total_links, 1, db.text);
    }
    const plain = await yget({ action: 'version', format: 'simple', signature: token });
    assert.equal(plain.status, 200, plain.text);

    // A timestamp older than yourls-timestamp-window (12 h): "Please log in".
    const stale = await yget({ action: 'version', format: 'json', ...signed(now - 43200 - 60) });
    assert.equal(stale.status, 403);
    assert.equal(stale.json.message, 'Please log in');

    // Revoked: the CLI prints no token, and the signature is refused.
    assert.equal(cli(['key', 'revoke', '--db', srv.db, id]).code, 0);
    const gone = cli(['key', 'yourls-token', '--db', srv.db, id]);
    assert.equal(gone.code, 2, 'as key revoke of an unknown id');
    assert.equal(gone.stdout, '');
    assert.match(gone.stderr, /no valid key with id/);
    const revoked = await yget({ action: 'version', format: 'json', ...signed(now) });
    assert.equal(revoked.status, 403);
});

it('a wrong signature is 403 "Please log in", and counts against the auth limit as a wrong Bearer key does',
   async () => {
    const r = await sharex({ action: 'shorturl', format: 'json', signature: 'sk_wrong', url: 'https://example.com/' });
    assert.equal(r.status, 403);
    assert.deepEqual(JSON.parse(r.text), { message: 'Please log in', errorCode: '403', callback: '' });
    // A failed login always carries a callback, empty when none was sent,
    // which format=jsonp refuses (as the real YOURLS does).
    const jsonp = await yget({ action: 'version', format: 'jsonp', signature: 'sk_wrong' });
    assert.equal(jsonp.status, 400);
    assert.equal(jsonp.text, '{"errorCode":"400","error":"Invalid callback parameter"}');
    let last;   // 5 a run: 2 refused before, 2 just now
    for (let i = 0; i < 2; i++) last = await yget({ action: 'version', format: 'json', signature: 'sk_wrong' });
    assert.equal(last.status, 429);
    assert.equal(last.json.errorCode, '429');
    // The limit is the address's, whatever the API: a Bearer request is refused too.
    const bearer = await api(srv, 'GET', '/api/links', { key });
    assert.equal(bearer.status, 429);
});
