// filters.test.mjs - GET /api/links?tag=&q=: one tag matched exactly against
// the tags array, a case-insensitive substring of code, url, title or note,
// both together, with the state filter and across pages of the cursor
// pagination; LIKE wildcards are plain characters; owners see only their
// own links (an admin all); bad filters are 400 naming the field.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, createKey, createLink, errorOf, it, nextLink, startServer, unique } from './harness.mjs';

let srv;
let admin;
let alice;
let bob;
const made = {};    // name -> code

before(async () => {
    srv = await startServer();
    admin = srv.adminKey;
    alice = createKey(srv, 'alice');
    bob = createKey(srv, 'bob');
    const p = unique('f').replace(/[^0-9A-Za-z]/g, '').slice(-8);
    const links = [
        ['red1', alice, { url: 'https://shop.example/Shoes', tags: ['red', 'sale'], title: 'Summer Shoes' }],
        ['red2', alice, { url: 'https://blog.example/post', tags: ['red'], note: 'Written by ZOË' }],
        ['reddish', alice, { url: 'https://c.example/', tags: ['reddish', 'Red', 'RED '] }],
        ['ny', alice, { url: 'https://d.example/', tags: ['new york', 'caf\u00e9'], title: '100% sure' }],
        ['under', alice, { url: 'https://e.example/a_b', title: 'a_b' }],
        ['plain', alice, { url: 'https://f.example/plainly', alias: `${p}Alias` }],
        ['bobred', bob, { url: 'https://shop.example/bob', tags: ['red'], title: 'Bob Shoes' }],
        ['gone', alice, { url: 'https://g.example/shoes', tags: ['red'] }],
    ];
    for (const [name, key, body] of links) made[name] = (await createLink(srv, key, body)).code;
    const d = await api(srv, 'DELETE', `/api/links/${made.gone}`, { key: alice });
    assert.equal(d.status, 204, d.text);
});

after(async () => {
    if (srv) await srv.stop();
});

/* The codes a list answers, as names, sorted. */
async function listNames(key, query) {
    const r = await api(srv, 'GET', `/api/links?${query}`, { key });
    assert.equal(r.status, 200, `${query}: ${r.text}`);
    const byCode = Object.fromEntries(Object.entries(made).map(([n, c]) => [c, n]));
    return r.json.map((l) => byCode[l.code] || `?${l.code}`).sort();
}

it('tag matches one tag exactly: not another case, a prefix, or trailing space', async () => {
    assert.deepEqual(await listNames(alice, 'tag=red'), ['red1', 'red2']);
    assert.deepEqual(await listNames(alice, 'tag=Red'), ['reddish']);
    assert.deepEqual(await listNames(alice, 'tag=RED%20'), ['reddish']);
    assert.deepEqual(await listNames(alice, 'tag=re'), []);
    assert.deepEqual(await listNames(alice, 'tag=sale'), ['red1']);
    assert.deepEqual(await listNames(alice, 'tag=nothing'), []);
});

it('tag values are percent-decoded, + is a space, UTF-8 works', async () => {
    assert.deepEqual(await listNames(alice, 'tag=new+york'), ['ny']);
    assert.deepEqual(await listNames(alice, 'tag=new%20york'), ['ny']);
    assert.deepEqual(await listNames(alice, `tag=${encodeURIComponent('caf\u00e9')}`), ['ny']);
    assert.deepEqual(await listNames(alice, 'tag=caf'), []);
});

it('an owner sees only their own matches; an admin sees every owner\'s', async () => {
    assert.deepEqual(await listNames(bob, 'tag=red'), ['bobred']);
    assert.deepEqual(await listNames(admin, 'tag=red'), ['bobred', 'red1', 'red2']);
    assert.deepEqual(await listNames(bob, 'q=summer'), []);
});

it('q is a case-insensitive substring of the code, url, title or note', async () => {
    assert.deepEqual(await listNames(alice, 'q=SHOES'), ['red1']);           // url and title
    assert.deepEqual(await listNames(alice, 'q=summer+sh'), ['red1']);       // title, + is a space
    assert.deepEqual(await listNames(alice, 'q=written%20BY'), ['red2']);    // note
    assert.deepEqual(await listNames(alice, 'q=blog.EXAMPLE'), ['red2']);    // url
    assert.deepEqual(await listNames(alice, 'q=plainly'), ['plain']);
    const code = made.plain;
    assert.deepEqual(await listNames(alice, `q=${code.slice(2, 8).toUpperCase()}`), ['plain']); // code
    assert.deepEqual(await listNames(alice, `q=${made.red2}`), ['red2']);
    assert.deepEqual(await listNames(alice, 'q=nowhere-to-be-found'), []);
    assert.deepEqual(await listNames(admin, 'q=shoes'), ['bobred', 'red1']);
    // Non-ASCII matches as written (case folding is ASCII only, the same in both stores)
    assert.deepEqual(await listNames(alice, `q=${encodeURIComponent('ZO\u00cb')}`), ['red2']);
});

it('LIKE wildcards in q are plain characters', async () => {
    assert.deepEqual(await listNames(alice, 'q=%25'), ['ny']);              // "%"
    assert.deepEqual(await listNames(alice, 'q=100%25'), ['ny']);
    assert.deepEqual(await listNames(alice, 'q=_'), ['under']);            // "_"
    assert.deepEqual(await listNames(alice, 'q=a_b'), ['under']);
    assert.deepEqual(await listNames(alice, 'q=%5C'), []);                 // "\"
    assert.deepEqual(await listNames(alice, 'q=%25%25'), []);
    assert.deepEqual(await listNames(alice, 'q=\'%20OR%201=1'), []);
});

it('tag and q combine, and with the state filter', async () => {
    assert.deepEqual(await listNames(alice, 'tag=red&q=shoes'), ['red1']);
    assert.deepEqual(await listNames(alice, 'tag=red&q=blog'), ['red2']);
    assert.deepEqual(await listNames(alice, 'tag=sale&q=blog'), []);
    // The deleted link keeps its code (its url and tags are gone with its data)
    assert.deepEqual(await listNames(alice, 'tag=red&state=all'), ['red1', 'red2']);
    assert.deepEqual(await listNames(alice, `q=${made.gone}&state=deleted`), ['gone']);
    assert.deepEqual(await listNames(alice, `q=${made.gone}`), []);
    assert.deepEqual(await listNames(alice, 'tag=red&state=deleted'), []);
});

it('empty filters are no filters', async () => {
    const all = await listNames(alice, 'limit=100');
    assert.equal(all.length, 6);
    assert.deepEqual(await listNames(alice, 'limit=100&tag=&q='), all);
});

it('filters carry over to the next page of the cursor pagination', async () => {
    const key = createKey(srv, 'pager');
    const tag = 'page me';
    const want = [];
    for (let i = 0; i < 7; i++) {
        const l = await createLink(srv, key, { url: `https://p.example/${i}`, tags: [tag], title: `Item ${i}` });
        want.push(l.code);
        await createLink(srv, key, { url: `https://p.example/other${i}`, tags: ['other'], title: `Item ${i}` });
    }
    let url = `/api/links?limit=3&tag=${encodeURIComponent(tag)}&q=ITEM`;
    const got = [];
    let pages = 0;
    while (url) {
        const r = await api(srv, 'GET', url, { key });
        assert.equal(r.status, 200, r.text);
        assert.ok(r.json.length <= 3);
        got.push(...r.json.map((l) => l.code));
        url = nextLink(r.headers.get('link'));
        if (url) {
            assert.match(url, /[?&]tag=page%20me(&|$)/, url);
            assert.match(url, /[?&]q=ITEM(&|$)/, url);
        }
        assert.ok(++pages <= 4, 'too many pages');
    }
    assert.equal(pages, 3);
    assert.deepEqual(got.sort(), want.sort());
});

it('a tag or q over 128 bytes, a bad escape, NUL or bad UTF-8 is 400 naming the field', async () => {
    const ok = await api(srv, 'GET', `/api/links?tag=${'t'.repeat(128)}&q=${'q'.repeat(128)}`, { key: alice });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.json, []);
    // 128 bytes of UTF-8 is 64 two-byte characters; 65 are too many
    const u = await api(srv, 'GET', `/api/links?q=${encodeURIComponent('\u00e9'.repeat(64))}`, { key: alice });
    assert.equal(u.status, 200, u.text);
    const cases = [
        ['tag', `tag=${'t'.repeat(129)}`],
        ['q', `q=${'q'.repeat(129)}`],
        ['q', `q=${encodeURIComponent('\u00e9'.repeat(65))}`],
        ['tag', 'tag=%zz'],
        ['q', 'q=abc%'],
        ['q', 'q=%4'],
        ['tag', 'tag=a%00b'],
        ['q', 'q=%ff'],
        ['q', 'q=%C3'],
    ];
    for (const [field, query] of cases) {
        const r = await api(srv, 'GET', `/api/links?${query}`, { key: alice });
        assert.equal(r.status, 400, `${query}: ${r.text}`);
        const e = errorOf(r);
        assert.equal(e.field, field, query);
        assert.equal(e.code, 'invalid_field');
        assert.match(e.message, new RegExp(`^${field} must be at most 128 bytes`));
    }
});
