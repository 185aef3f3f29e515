// search-pages.test.mjs - a filtered list (q= or tag=) reads at most
// search-page-rows of the owner's links for one page: a page may hold fewer
// matches than 'limit', or none, while its Link header goes on below the
// rows it read; following the Links finds every match exactly once, and the
// last page has no Link. Without a filter, pages are as before.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, createKey, it, nextLink, startServer } from './harness.mjs';

const ROWS = 100;       // --search-page-rows
const LINKS = 300;
const NEEDLES = [5, 50, 150];   // creation order: the list, newest first, meets 150 first

let srv;
let key;
const codes = [];       // creation order

before(async () => {
    srv = await startServer({ args: ['--search-page-rows', String(ROWS)] });
    key = createKey(srv, 'searcher');
    for (let from = 0; from < LINKS; from += 100) {
        const links = [];
        for (let i = from; i < from + 100; i++) {
            links.push({ url: `https://pages.example/${i}`, title: NEEDLES.includes(i) ? `needle ${i}` : `hay ${i}`,
                         tags: NEEDLES.includes(i) ? ['sharp'] : ['blunt'] });
        }
        const r = await api(srv, 'POST', '/api/links/bulk', { key, body: { links } });
        assert.equal(r.status, 200, r.text);
        for (const x of r.json.results) {
            assert.equal(x.status, 201, JSON.stringify(x));
            codes.push(x.link.code);
        }
    }
});

after(async () => {
    if (srv) await srv.stop();
});

/* Follows the Links from 'url': the pages' lengths and every code. */
async function follow(url) {
    const lengths = [];
    const got = [];
    let guard = 0;
    while (url) {
        const r = await api(srv, 'GET', url, { key });
        assert.equal(r.status, 200, r.text);
        lengths.push(r.json.length);
        got.push(...r.json.map((l) => l.code));
        url = nextLink(r.headers.get('link'));
        assert.ok(++guard <= 20, 'too many pages');
    }
    return { lengths, got };
}

it('a search reads a bounded page of rows; its Links find every match once', async () => {
    for (const filter of ['q=NEEDLE', 'tag=sharp']) {
        const { lengths, got } = await follow(`/api/links?limit=50&${filter}`);
        // 300 rows at 100 a page: three pages that read rows, and a last one
        // below the third floor that finds the end. The newest 100 hold no
        // needle: the first page is empty, yet it has a Link.
        assert.deepEqual(lengths, [0, 1, 2, 0], `${filter}: ${lengths}`);
        assert.deepEqual(got.sort(), NEEDLES.map((i) => codes[i]).sort(), filter);
    }
});

it('a page that fills its limit before its floor goes on from its last match', async () => {
    const { lengths, got } = await follow('/api/links?limit=1&q=needle');
    assert.deepEqual(got.sort(), NEEDLES.map((i) => codes[i]).sort());
    assert.ok(lengths.every((n) => n <= 1), `${lengths}`);
    assert.equal(new Set(got).size, NEEDLES.length, 'a match twice');
});

it('a list without a filter is not bounded by the rows: pages of limit', async () => {
    const { lengths, got } = await follow('/api/links?limit=200');
    assert.deepEqual(lengths, [200, 100]);
    assert.equal(new Set(got).size, LINKS);
});
