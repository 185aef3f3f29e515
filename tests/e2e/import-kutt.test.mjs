// import-kutt.test.mjs - `shortd import kutt` from Kutt 3's SQLite file and
// from its PostgreSQL database (tests/data/make-kutt.mjs makes both), into a
// store a server is serving: every code redirects, the password link opens
// with its Kutt password, the hourly tallies become the same per-day counts
// and dimensions, banned and expired links answer 410, bad rows are reported
// by table and id, and a second run imports nothing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { api, cliAsync, it, startServer, tempDir, visit } from './harness.mjs';
import { PG, pgSource, runImport, servers, statsOf } from './import-kit.mjs';
import { KUTT_PASSWORD, makeKutt } from '../data/make-kutt.mjs';

const importKutt = (srv, source, extra = []) => runImport('kutt', srv, source, extra);

const dayClicks = (st) => Object.fromEntries(st.days.filter((d) => d.clicks || d.bot_clicks)
    .map((d) => [d.day, d.clicks]));

function postPassword(srv, code, password) {
    return api(srv, 'POST', `/${code}`, {
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0' },
        raw: `password=${encodeURIComponent(password)}`,
    });
}

/* What the fixture's rows must have become. */
async function checkImported(srv, data) {
    // History first (a redirect below adds today's clicks).
    const promo = statsOf(srv, 'Promo-X');
    assert.deepEqual(dayClicks(promo), { '2026-11-20': 5, '2026-11-21': 2 });
    assert.equal(promo.clicks, 7);
    assert.equal(promo.bot_clicks, 0);
    assert.equal(promo.total_clicks, 9, 'the total is Kutt\'s visit_count');
    assert.equal(promo.imported_clicks, 2, 'what no hourly row accounts for is marked imported');
    // Each row counts one hour (2026-11-20 was a Friday, ISO weekday 5).
    assert.deepEqual(promo.hours, { 10: 4, 11: 1, '08': 2 });
    assert.deepEqual(promo.dowhour, { '5-10': 4, '5-11': 1, '6-08': 2 });
    assert.deepEqual(promo.browsers, { Chrome: 3, Firefox: 1, Safari: 1, Edge: 1, Other: 1 });
    assert.deepEqual(promo.os, { Windows: 3, macOS: 1, Linux: 1, iOS: 1, Other: 1 });
    assert.deepEqual(promo.countries, { US: 3, DE: 1, FR: 2 });
    assert.deepEqual(promo.referrers, { 'google.com': 1, 't.co': 1, 'news.ycombinator.com': 2 });
    assert.deepEqual(promo.ref_groups, { direct: 3, search: 1, social: 3 });
    const dom = statsOf(srv, 'dom1');
    assert.deepEqual(dayClicks(dom), { '2026-11-22': 3 });
    assert.deepEqual(dom.browsers, { 'Internet Explorer': 2, Opera: 1 });
    assert.deepEqual(dom.countries, { GB: 3 });
    assert.equal(dom.total_clicks, 3);

    for (const l of data.links.filter((x) => !x.shadowed)) {
        const r = await visit(srv, l.address);
        if (l.banned || l.address === 'old_one') {
            assert.equal(r.status, 410, `${l.address} (banned or expired) answers 410`);
        } else if (l.password) {
            assert.equal(r.status, 200, 'a password link shows its gate');
            assert.match(r.text, /name="password"/);
        } else {
            assert.equal(r.status, 302, `${l.address} redirects`);
            assert.equal(r.headers.get('location'), l.target);
        }
    }
    // The custom domain's link opens on its own host too.
    const d = await visit(srv, 'dom1', { headers: { host: 'go.kutt-import.test' } });
    assert.equal(d.status, 302);
    assert.equal(d.headers.get('location'), 'https://example.org/d');
    // The password link opens with the password Kutt hashed (bcrypt).
    assert.equal((await postPassword(srv, 'secret', 'not it')).status, 401);
    const ok = await postPassword(srv, 'secret', KUTT_PASSWORD);
    assert.equal(ok.status, 302);
    assert.equal(ok.headers.get('location'), 'https://example.com/secret');
    const g = await api(srv, 'GET', '/api/links/dom1', { key: srv.adminKey });
    assert.equal(g.status, 200);
    assert.equal(g.json.domain, 'go.kutt-import.test');
}

it('kutt: its SQLite file (db/data) into a served store, bad rows reported, a second run imports nothing', async () => {
    const srv = await startServer();
    servers.push(srv);
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'db'));
    const file = path.join(dir, 'db', 'data');
    const data = makeKutt(file, {
        extraSql: "insert into links (id, address, target, expire_in) values (90, 'badexp', 'https://example.com/x', 'next week');\n" +
            "insert into visits (id, link_id, created_at, total, countries) values (90, 1, '2026-11-23 10:00:00', 1, 'not json');\n",
    });
    const before = fs.readFileSync(file);
    const r = importKutt(srv, file);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /links row 90: .*expire_in 'next week' is not a date/);
    assert.match(r.stderr, /visits row 90: .*countries is not a JSON object/);
    assert.match(r.stderr, /links row 6: .*code 'Promo-X' was given before \(links row 1\)/);
    assert.match(r.stderr, /1 visits rows dropped: their links were refused/);
    assert.ok(fs.readFileSync(file).equals(before), 'the source file is not changed');
    await checkImported(srv, data);

    const again = importKutt(srv, file);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /links imported +0\n/);
    const promo = statsOf(srv, 'Promo-X');
    assert.deepEqual(dayClicks(promo), { '2026-11-20': 5, '2026-11-21': 2 });
}, { timeout: 180_000 });

it('kutt: its PostgreSQL database, the same result', async (t) => {
    if (!PG) return t.skip('needs SHORTD_TEST_PG (run under tests/pg.sh)');
    const srv = await startServer();
    servers.push(srv);
    const url = pgSource('kutt_src');
    const data = makeKutt(url);
    const r = importKutt(srv, url);
    assert.equal(r.code, 0, r.stderr);
    await checkImported(srv, data);
    const again = importKutt(srv, url);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /links imported +0\n/);
}, { timeout: 180_000 });

it('kutt: a file that is not a Kutt database is a clear error', async () => {
    const srv = await startServer();
    servers.push(srv);
    const dir = tempDir();
    let r = importKutt(srv, path.join(dir, 'missing'));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /cannot open '.*missing': no such file/);
    const other = path.join(dir, 'other.db');
    spawnSync('sqlite3', [other, 'create table t (x)']);
    r = importKutt(srv, other);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /no such table: links/);
});

it('kutt: a larger source streams through many transactions, every link with its own days', async () => {
    const srv = await startServer();
    servers.push(srv);
    const file = path.join(tempDir(), 'data');
    const N = 3000;
    // N links, each with ten hourly rows on 2026-10-01 of (id % 3) + 1 clicks.
    makeKutt(file, {
        extraSql: `
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${N})
INSERT INTO links (id, address, target, created_at, updated_at, visit_count)
SELECT 1000 + i, 'bulk-' || i, 'https://example.com/bulk/' || i, '2026-09-30 00:00:00', '2026-09-30 00:00:00',
       10 * ((1000 + i) % 3 + 1) FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${10 * N - 1})
INSERT INTO visits (link_id, created_at, updated_at, total, br_firefox, os_linux, countries, referrers)
SELECT 1001 + i % ${N}, datetime('2026-10-01', '+' || (i / ${N}) || ' hours'), '2026-10-01',
       (1001 + i % ${N}) % 3 + 1, (1001 + i % ${N}) % 3 + 1, (1001 + i % ${N}) % 3 + 1, '{}', '{}' FROM n;
`,
    });
    const r = importKutt(srv, file, ['--batch-rows', '777']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`tallies +${10 * N + 4} rows`));
    const ex = await cliAsync(['export', '--db', srv.db, '--format', 'json'], { timeoutMs: 120_000 });
    assert.equal(ex.code, 0, ex.stderr);
    const bulk = JSON.parse(ex.stdout).filter((l) => l.code.startsWith('bulk-'));
    assert.equal(bulk.length, N);
    for (const l of bulk) {
        const per = (1000 + Number(l.code.slice(5))) % 3 + 1;
        assert.deepEqual(l.days.map((d) => [d.day, d.clicks]), [['2026-10-01', 10 * per]], l.code);
        assert.equal(l.clicks, 10 * per, l.code);
    }
    assert.equal((await visit(srv, `bulk-${N}`)).headers.get('location'), `https://example.com/bulk/${N}`);
}, { timeout: 300_000 });
