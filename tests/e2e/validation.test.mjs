// validation.test.mjs - what a destination URL and an alias may be, and the
// size limits of the other fields. The server runs with --base-url
// http://sho.rt, so links to sho.rt point back at shortd itself.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, createKey, createLink, errorOf, it, startServer, unique, visit } from './harness.mjs';

let srv;
let plain;   // a second server on the default base-url (its own listen address)
let alice;
let bob;

before(async () => {
    srv = await startServer({ baseUrl: 'http://sho.rt' });
    alice = createKey(srv, 'alice');
    bob = createKey(srv, 'bob');
    plain = await startServer();
});

after(async () => {
    if (srv) await srv.stop();
    if (plain) await plain.stop();
});

async function expectFieldError(server, key, body, field, why) {
    const r = await api(server, 'POST', '/api/links', { key, body });
    assert.equal(r.status, 400, `${why || JSON.stringify(body).slice(0, 200)} should be refused: ${r.status} ${r.text.slice(0, 300)}`);
    const e = errorOf(r);
    assert.equal(e.code, 'invalid_field', why || JSON.stringify(body).slice(0, 200));
    assert.equal(e.field, field, why || JSON.stringify(body).slice(0, 200));
}

/* ------------------------------------------------------------------- URLs */

const badUrls = [
    ['', 'empty'],
    ['ftp://example.com/file', 'ftp scheme'],
    ['javascript:alert(1)', 'javascript scheme'],
    ['data:text/html,<b>x</b>', 'data scheme'],
    ['mailto:someone@example.com', 'mailto'],
    ['file:///etc/passwd', 'file scheme'],
    ['http://', 'no host'],
    ['https:///path', 'empty host'],
    ['example.com/no-scheme', 'no scheme'],
    ['//example.com/x', 'scheme-relative'],
    ['http://exa mple.com/', 'space in host'],
    ['http://example.com/a b', 'space in path'],
    ['http://example.com/a\r\nSet-Cookie: x=1', 'CRLF'],
    ['http://example.com/a\rb', 'CR'],
    ['http://example.com/a\nb', 'LF'],
    ['http://example.com/a\u0000b', 'NUL'],
    ['http://example.com/a\tb', 'tab'],
    ['http://example.com/a\u007fb', 'DEL'],
    ['http://example.com/a\u0001b', 'control char'],
    ['http://user:pass@example.com/', 'credentials'],
    ['http://user@example.com/', 'user name'],
    [' https://example.com/', 'leading space'],
    ['https://example.com/ ', 'trailing space'],
];

it('bad destination URLs answer 400 with field "url"', async () => {
    for (const [url, why] of badUrls) await expectFieldError(srv, alice, { url }, 'url', `${why}: ${JSON.stringify(url)}`);
});

it('a url that is not a string answers 400 with field "url"', async () => {
    for (const url of [123, true, ['https://example.com/'], { href: 'https://example.com/' }]) {
        await expectFieldError(srv, alice, { url }, 'url', `url ${JSON.stringify(url)}`);
    }
});

it('good destination URLs are accepted and redirect as stored', async () => {
    const good = [
        'https://example.com',
        'http://example.com/',
        'http://example.com:8080/path/to?q=1&r=2#frag',
        'https://sub.domain.example.org/a/b/c.html',
        'https://example.com/%20encoded%0D%0A',
        'http://192.0.2.7/ip',
        "https://example.com/p;param?a=b&c=d%26e&f=~!$'()*+,;=",
    ];
    for (const url of good) {
        const l = await createLink(srv, alice, { url });
        const r = await visit(srv, l.code);
        assert.equal(r.status, 302, url);
        const loc = r.headers.get('location');
        assert.ok(loc === url || loc === l.url, `Location ${loc} for ${url} (stored ${l.url})`);
        assert.equal(new URL(loc).href, new URL(url).href, `${url} redirected to ${loc}`);
    }
});

it('non-ASCII path bytes are percent-encoded in the stored url and the Location', async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/ünï/€?q=ß' });
    assert.equal(l.url.split('?')[0], 'https://example.com/%C3%BCn%C3%AF/%E2%82%AC');
    assert.ok(/^[\x21-\x7e]+$/.test(l.url), `stored url has non-ASCII bytes: ${l.url}`);
    const r = await visit(srv, l.code);
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), l.url);
});

it('a url of 8192 bytes is accepted, 8193 bytes is refused', async () => {
    const prefix = 'https://example.com/';
    const at = prefix + 'a'.repeat(8192 - prefix.length);
    assert.equal(Buffer.byteLength(at), 8192);
    const l = await createLink(srv, alice, { url: at });
    assert.equal(l.url, at);
    const r = await visit(srv, l.code);
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), at);
    await expectFieldError(srv, alice, { url: at + 'a' }, 'url', 'a url of 8193 bytes');
    await expectFieldError(srv, alice, { url: prefix + 'a'.repeat(20_000) }, 'url', 'a url of 20 KB');
});

it("a url pointing at shortd's own host answers 400 field url", async () => {
    for (const url of ['http://sho.rt/abc', 'https://sho.rt/', 'http://SHO.RT/x', 'http://sho.rt:8080/x',
        'http://sho.rt./x', 'https://Sho.Rt/api/links']) {
        await expectFieldError(srv, alice, { url }, 'url', url);
    }
    // A different host that merely contains the name is fine.
    await createLink(srv, alice, { url: 'http://notsho.rt/x' });
    await createLink(srv, alice, { url: 'http://sho.rt.example.com/x' });
});

it('with the default base-url the listen address is shortd itself', async () => {
    const key = plain.adminKey;
    const l = await createLink(plain, key, { url: 'https://example.com/' });
    assert.equal(l.short_url, `http://127.0.0.1:${plain.port}/${l.code}`);
    for (const url of [`http://127.0.0.1:${plain.port}/x`, `http://127.0.0.1:${plain.port}/${l.code}`,
        'http://127.0.0.1/x']) {
        await expectFieldError(plain, key, { url }, 'url', url);
    }
});

/* ----------------------------------------------------------------- aliases */

it('bad aliases answer 400 with field "alias"', async () => {
    const bad = [
        ['', 'empty'],
        ['abc', '3 characters'],
        ['a'.repeat(31), '31 characters'],
        ['has space', 'space'],
        ['bad!char', '!'],
        ['dot.ted', '.'],
        ['sl/ash', '/'],
        ['pct%41bc', '%'],
        ['ünïcode', 'non-ASCII'],
        ['Abc1234', '7 base62 characters (generated shape)'],
        ['zzzzzzz', '7 base62 characters (generated shape)'],
        ['0000000', '7 base62 characters (generated shape)'],
        ['api', 'reserved (and short)'],
        ['API', 'reserved, upper case'],
        ['dashboard', 'reserved'],
        ['Dashboard', 'reserved, mixed case'],
        ['healthz', 'reserved'],
        ['HEALTHZ', 'reserved, upper case'],
        ['readyz', 'reserved'],
        ['metrics', 'reserved'],
        ['Metrics', 'reserved, mixed case'],
        ['static', 'reserved'],
        ['admin', 'reserved'],
        ['ADMIN', 'reserved, upper case'],
    ];
    for (const [alias, why] of bad) {
        await expectFieldError(srv, alice, { url: 'https://example.com/', alias }, 'alias', `alias ${JSON.stringify(alias)} (${why})`);
    }
});

it('good aliases are accepted and redirect', async () => {
    const s = unique('').slice(0, 8);
    const good = [
        `ab${s}`.slice(0, 4),                   // 4 characters
        ('x' + s + 'y'.repeat(30)).slice(0, 30), // 30 characters
        `my_link-${s}`,
        `${s.slice(0, 3)}-123`,                 // 7 characters, not plain base62
        `${s}${s}`.slice(0, 8),                  // 8 base62 characters
        `ABC${s}`.slice(0, 6),
        `_-_-${s}`,
        `apix${s}`,                             // starts like a reserved word
    ];
    for (const alias of good) {
        const l = await createLink(srv, alice, { url: `https://example.com/alias/${alias}`, alias });
        assert.equal(l.code, alias);
        assert.equal(l.short_url, `http://sho.rt/${alias}`);
        const r = await visit(srv, alias);
        assert.equal(r.status, 302, alias);
        assert.equal(r.headers.get('location'), `https://example.com/alias/${alias}`);
    }
});

it('aliases are case-sensitive: "Abcd1" and "abcd1" are different links', async () => {
    const s = unique('');
    const upper = `Abcd1${s}`;
    const lower = `abcd1${s}`;
    await createLink(srv, alice, { url: 'https://example.com/upper', alias: upper });
    await createLink(srv, alice, { url: 'https://example.com/lower', alias: lower });
    assert.equal((await visit(srv, upper)).headers.get('location'), 'https://example.com/upper');
    assert.equal((await visit(srv, lower)).headers.get('location'), 'https://example.com/lower');
});

it('a taken alias answers 409 alias_taken, for the owner and for anyone else', async () => {
    const alias = unique('taken-');
    await createLink(srv, alice, { url: 'https://example.com/first', alias });
    for (const key of [alice, bob]) {
        const r = await api(srv, 'POST', '/api/links', { key, body: { url: 'https://example.com/second', alias } });
        assert.equal(r.status, 409, r.text);
        const e = errorOf(r);
        assert.equal(e.code, 'alias_taken');
    }
    assert.equal((await visit(srv, alias)).headers.get('location'), 'https://example.com/first');
});

/* ------------------------------------------------------------------ limits */

it('title is at most 256 bytes (counted in bytes, not characters)', async () => {
    await createLink(srv, alice, { url: 'https://example.com/', title: 't'.repeat(256) });
    await createLink(srv, alice, { url: 'https://example.com/', title: 'é'.repeat(128) });   // 256 bytes
    await expectFieldError(srv, alice, { url: 'https://example.com/', title: 't'.repeat(257) }, 'title', '257-byte title');
    await expectFieldError(srv, alice, { url: 'https://example.com/', title: 'é'.repeat(129) }, 'title', '129 × é = 258 bytes');
});

it('note is at most 4096 bytes', async () => {
    const l = await createLink(srv, alice, { url: 'https://example.com/', note: 'n'.repeat(4096) });
    assert.equal(l.note.length, 4096);
    await expectFieldError(srv, alice, { url: 'https://example.com/', note: 'n'.repeat(4097) }, 'note', '4097-byte note');
    await expectFieldError(srv, alice, { url: 'https://example.com/', note: '€'.repeat(1366) }, 'note', '1366 × € = 4098 bytes');
});

it('tags: at most 20, each 1..64 bytes', async () => {
    const twenty = Array.from({ length: 20 }, (_, i) => `tag${i}`);
    const l = await createLink(srv, alice, { url: 'https://example.com/', tags: twenty });
    assert.deepEqual(l.tags, twenty);
    await createLink(srv, alice, { url: 'https://example.com/', tags: ['x'.repeat(64)] });
    await createLink(srv, alice, { url: 'https://example.com/', tags: [] });
    const bad = [
        [[...twenty, 'one-too-many'], '21 tags'],
        [[''], 'an empty tag'],
        [['x'.repeat(65)], 'a 65-byte tag'],
        [['é'.repeat(33)], 'a 66-byte tag of 33 characters'],
        [['ok', null], 'a null tag'],
        [['ok', { t: 1 }], 'an object tag'],
    ];
    for (const [tags, why] of bad) {
        await expectFieldError(srv, alice, { url: 'https://example.com/', tags }, 'tags', why);
    }
});

it('a refused create leaves nothing behind', async () => {
    const carol = createKey(srv, 'carol');
    await expectFieldError(srv, carol, { url: 'ftp://example.com/' }, 'url');
    await expectFieldError(srv, carol, { url: 'https://example.com/', alias: 'abc' }, 'alias');
    await expectFieldError(srv, carol, { url: 'https://example.com/', tags: [''] }, 'tags');
    const r = await api(srv, 'GET', '/api/links?state=all', { key: carol });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, []);
});
