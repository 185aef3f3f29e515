// import-shlink.test.mjs - `shortd import shlink` from the CSV that Shlink's
// web client exports and from Shlink's PostgreSQL database
// (tests/data/make-shlink.mjs makes both), into a store a server is serving:
// every code redirects, visits are re-counted by shortd's classifier (the
// bot visit is a bot click), tags, expiry and visit limits are kept, a
// short URL not valid yet is refused, orphan visits are counted and dropped,
// visitor addresses end up nowhere, and a second run imports nothing.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { PG_MODE, api, cliAsync, filesUnder, it, startServer, tempDir, visit } from './harness.mjs';
import { PG, pgSource, runImport, servers, statsOf } from './import-kit.mjs';
import { CHROME_UA, VISITOR_ADDR, makeShlinkCsv, makeShlinkDb } from '../data/make-shlink.mjs';

const importShlink = (srv, source, extra = []) => runImport('shlink', srv, source, extra);

const days = (st) => Object.fromEntries(st.days.filter((d) => d.clicks || d.bot_clicks)
    .map((d) => [d.day, [d.clicks, d.bot_clicks]]));

async function linkOf(srv, code) {
    const r = await api(srv, 'GET', `/api/links/${encodeURIComponent(code)}`, { key: srv.adminKey });
    assert.equal(r.status, 200, `${code}: ${r.text}`);
    return r.json;
}

it('shlink: its PostgreSQL database, visits re-counted, bots apart, orphans dropped, twice', async (t) => {
    if (!PG) return t.skip('needs SHORTD_TEST_PG (run under tests/pg.sh)');
    const srv = await startServer();
    servers.push(srv);
    const url = pgSource('shlink_src');
    makeShlinkDb(url);
    const r = importShlink(srv, url);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /short_urls row 3: .*'future' is valid only from 2099-01-01/);
    assert.match(r.stderr, /2 orphan visits/);
    assert.match(r.stderr, /short_urls row 6: .*code 'Sh0rt-A' was given before \(short_urls row 1\)/);
    assert.match(r.stderr, /1 visits dropped: their short URLs were refused/);

    const a = statsOf(srv, 'Sh0rt-A');
    assert.deepEqual(days(a), { '2026-11-20': [2, 0], '2026-11-21': [0, 1] });
    assert.equal(a.clicks, 2);
    assert.equal(a.bot_clicks, 1, 'the Googlebot visit is a bot click');
    assert.deepEqual(a.bot_agents, { googlebot: 1 });
    assert.deepEqual(a.browsers, { Chrome: 1, Firefox: 1 });
    assert.deepEqual(a.os, { Windows: 1, Linux: 1 });
    assert.deepEqual(a.countries, { DE: 1 });
    assert.deepEqual(a.referrers, { 'www.google.com': 1 });
    assert.deepEqual(a.utm_source, { news: 1 });
    assert.equal(a.total_clicks, 2);
    assert.equal(a.total_bot_clicks, 1);
    assert.equal(a.imported_clicks, 0, 'every visit is in the history');
    assert.deepEqual(a.hours, { 10: 1, 12: 1 });
    const s = statsOf(srv, 'dom-s');
    assert.deepEqual(days(s), { '2026-11-22': [1, 0] });
    assert.deepEqual(s.browsers, { Safari: 1 });
    assert.deepEqual(s.countries, { US: 1 });
    assert.deepEqual(s.ref_groups, { social: 1 });

    const la = await linkOf(srv, 'Sh0rt-A');
    assert.deepEqual([...la.tags].sort(), ['news', 'promo']);
    assert.equal(la.title, 'Shlink A, titled');
    assert.equal(la.max_clicks, 100);
    assert.match(la.expires_at, /^2030-01-01T00:00:00/);
    assert.equal((await linkOf(srv, 'limited')).max_clicks, 2);
    assert.equal((await linkOf(srv, 'dom-s')).domain, 'go.shlink-import.test');

    for (const [code, to] of [['Sh0rt-A', 'https://example.com/shlink-a'], ['limited', 'https://example.com/limited'],
        ['started', 'https://example.com/started'], ['dom-s', 'https://example.org/dom-s']]) {
        const v = await visit(srv, code);
        assert.equal(v.status, 302, code);
        assert.equal(v.headers.get('location'), to);
    }
    assert.equal((await visit(srv, 'future')).status, 404, 'a short URL not valid yet is not imported');
    const d = await visit(srv, 'dom-s', { headers: { host: 'go.shlink-import.test' } });
    assert.equal(d.status, 302);
    if (!PG_MODE) {
        for (const f of filesUnder(srv.dir)) {
            assert.ok(!fs.readFileSync(f).includes(VISITOR_ADDR), `the visitor address is in ${f}`);
        }
    }

    const again = importShlink(srv, url);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /links imported +0\n/);
    assert.deepEqual(days(statsOf(srv, 'Sh0rt-A')), { '2026-11-20': [2, 0], '2026-11-21': [0, 1] });
}, { timeout: 180_000 });

it('shlink: the web client\'s CSV export, quoted commas and newlines, bad rows by line, twice', async () => {
    const srv = await startServer();
    servers.push(srv);
    const file = path.join(tempDir(), 'short_urls.csv');
    makeShlinkCsv(file);
    const r = importShlink(srv, file);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /line 6.*createdAt 'yesterday'/);

    // The stats before any visit: a visit's click may be counted by the
    // time they are read.
    const st = statsOf(srv, 'csv-A1');
    assert.equal(st.total_clicks, 5, 'the export\'s visits are the total');
    assert.equal(st.imported_clicks, 5, '... marked imported: the export has no history');
    let v = await visit(srv, 'csv-A1');
    assert.equal(v.status, 302);
    assert.equal(v.headers.get('location'), 'https://example.com/a?x=1,2');
    const a = await linkOf(srv, 'csv-A1');
    assert.equal(a.title, 'Hello, "world"');
    assert.deepEqual([...a.tags].sort(), ['news', 'promo, 2026']);
    v = await visit(srv, 'Custom', { headers: { host: 'go.shlink-csv.test' } });
    assert.equal(v.status, 302);
    assert.equal(v.headers.get('location'), 'https://example.org/custom');
    assert.equal((await linkOf(srv, 'two-lines')).title, 'a title\nover two lines');
    assert.equal((await visit(srv, 'bad-date')).status, 404);

    const again = importShlink(srv, file);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /links imported +0\n/);
}, { timeout: 120_000 });

it('shlink: a larger database streams through many transactions, bots apart in every link', async (t) => {
    if (!PG) return t.skip('needs SHORTD_TEST_PG (run under tests/pg.sh)');
    const srv = await startServer();
    servers.push(srv);
    const url = pgSource('shlink_big');
    const N = 3000;
    // N short URLs with ten visits each on 2026-10-01, every fifth by curl.
    makeShlinkDb(url, {
        extraSql: `
INSERT INTO short_urls (id, original_url, long_url_hash, short_code, date_created)
SELECT 1000 + i, 'https://example.com/bulk/' || i, sha256(('bulk' || i)::bytea), 'bulk-' || i, '2026-09-30'
FROM generate_series(1, ${N}) i;
INSERT INTO visits (id, referer, "date", remote_addr, user_agent, visited_url, type, potential_bot, short_url_id)
SELECT 1000 + i, NULL, timestamp '2026-10-01' + (i / ${N}) * interval '1 hour', '${VISITOR_ADDR}',
       CASE WHEN (i / ${N}) % 5 = 0 THEN 'curl/8.5.0' ELSE '${CHROME_UA}' END, NULL, 'valid_short_url',
       (i / ${N}) % 5 = 0, 1001 + i % ${N}
FROM generate_series(0, ${10 * N - 1}) i;
`,
    });
    const r = importShlink(srv, url, ['--batch-rows', '777']);
    assert.equal(r.code, 0, r.stderr);
    const ex = await cliAsync(['export', '--db', srv.db, '--format', 'json'], { timeoutMs: 120_000 });
    assert.equal(ex.code, 0, ex.stderr);
    const bulk = JSON.parse(ex.stdout).filter((l) => l.code.startsWith('bulk-'));
    assert.equal(bulk.length, N);
    for (const l of bulk) {
        assert.deepEqual(l.days.map((d) => [d.day, d.clicks, d.bot_clicks]), [['2026-10-01', 8, 2]], l.code);
    }
}, { timeout: 300_000 });
