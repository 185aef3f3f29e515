// export.test.mjs - GET /api/export (streamed, csv and json), and the CLI's
// stats, export and prune commands, against a real server and database.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before } from 'node:test';

import { api, cli, createKey, createLink, it, poll, sqliteOnly, startServer, unique, visit } from './harness.mjs';

let srv;
let userKey;
const mine = [];

before(async () => {
    // A long retention: the server's own sweeper must not prune the old rows
    // the prune test plants before `shortd prune` runs.
    srv = await startServer({ args: ['--retention-days', '1000'] });
    userKey = createKey(srv, 'exporter');
    for (let i = 0; i < 3; i++) {
        mine.push(await createLink(srv, userKey, { url: `https://example.com/export/${i},"q"` }));
    }
    // Someone else's link must never appear in the user's export.
    await createLink(srv, srv.adminKey, { url: 'https://example.com/admins-own', alias: unique('adm') });
    for (let i = 0; i < 4; i++) assert.equal((await visit(srv, mine[0].code)).status, 302);
    await visit(srv, mine[1].code);
    await poll(async () => (await api(srv, 'GET', `/api/links/${mine[0].code}`, { key: userKey })).json.clicks === 4);
    await poll(async () => (await api(srv, 'GET', `/api/links/${mine[1].code}`, { key: userKey })).json.clicks === 1);
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

/* Splits RFC 4180 CSV text into rows of fields. */
function parseCsv(text) {
    const rows = [];
    let row = [], field = '', quoted = false;
    for (let i = 0; i < text.length; i++) {
        const ch = text[i];
        if (quoted) {
            if (ch === '"' && text[i + 1] === '"') { field += '"'; i++; }
            else if (ch === '"') quoted = false;
            else field += ch;
        } else if (ch === '"') quoted = true;
        else if (ch === ',') { row.push(field); field = ''; }
        else if (ch === '\r') { /* part of CRLF */ }
        else if (ch === '\n') { row.push(field); rows.push(row); row = []; field = ''; }
        else field += ch;
    }
    if (field || row.length) { row.push(field); rows.push(row); }
    return rows;
}

it('GET /api/export?format=json streams the caller\'s links with their daily counts', async () => {
    const r = await api(srv, 'GET', '/api/export?format=json', { key: userKey });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('transfer-encoding'), 'chunked');
    assert.match(r.headers.get('content-type'), /application\/json/);
    const links = r.json;
    assert.ok(Array.isArray(links));
    assert.deepEqual(links.map((l) => l.code).sort(), mine.map((l) => l.code).sort());
    const first = links.find((l) => l.code === mine[0].code);
    assert.equal(first.clicks, 4);
    assert.equal(first.url, mine[0].url);
    const today = new Date().toISOString().slice(0, 10);
    assert.deepEqual(first.days, [{ day: today, clicks: 4, unique_visitors: 1, bot_clicks: 0 }]);
    assert.deepEqual(links.find((l) => l.code === mine[2].code).days, []);
    // Each link's all-time dimensions, as its stats count them; none without clicks.
    const stats = await api(srv, 'GET', `/api/links/${mine[0].code}/stats`, { key: userKey });
    assert.deepEqual(first.dimensions.browsers, stats.json.browsers);
    assert.deepEqual(first.dimensions.devices, stats.json.devices);
    assert.equal(first.dimensions.browsers[Object.keys(stats.json.browsers)[0]], 4);
    assert.ok(!('countries' in first.dimensions) || Object.keys(first.dimensions.countries).length > 0);
    assert.deepEqual(links.find((l) => l.code === mine[2].code).dimensions, {});
});

it('GET /api/export?format=csv has a header row and one row per link and day, quoted', async () => {
    const r = await api(srv, 'GET', '/api/export?format=csv', { key: userKey });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /text\/csv/);
    const rows = parseCsv(r.text);
    assert.deepEqual(rows[0], ['code', 'short_url', 'url', 'created_at', 'state', 'day', 'clicks',
        'unique_visitors', 'bot_clicks']);
    const body = rows.slice(1);
    assert.equal(body.length, 3);
    const row0 = body.find((f) => f[0] === mine[0].code);
    assert.equal(row0[2], mine[0].url);             // the comma and quotes survive
    assert.equal(row0[6], '4');
    const row2 = body.find((f) => f[0] === mine[2].code);
    assert.equal(row2[5], '');                      // no clicks: one row without a day
});

it('an admin exports every link; a bad format is 400; no key is 401', async () => {
    const all = await api(srv, 'GET', '/api/export', { key: srv.adminKey });
    assert.equal(all.status, 200);
    assert.equal(all.json.length, 4);
    const bad = await api(srv, 'GET', '/api/export?format=xml', { key: userKey });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.field, 'format');
    assert.equal((await api(srv, 'GET', '/api/export')).status, 401);
});

it('a large export arrives whole', async () => {
    const key = createKey(srv, 'bulk');
    const n = 450;   // more than two of the export's internal batches
    for (let i = 0; i < n; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, k) =>
            createLink(srv, key, { url: `https://example.com/bulk/${i + k}` })));
    }
    const r = await api(srv, 'GET', '/api/export?format=json', { key });
    assert.equal(r.status, 200);
    assert.equal(r.json.length, n);
    assert.equal(new Set(r.json.map((l) => l.code)).size, n);
    const csv = parseCsv((await api(srv, 'GET', '/api/export?format=csv', { key })).text);
    assert.equal(csv.length, n + 1);
});

it('shortd stats, export and prune work on the database', async () => {
    const stats = cli(['stats', '--db', srv.db, mine[0].code]);
    assert.equal(stats.code, 0, stats.stderr);
    const doc = JSON.parse(stats.stdout);
    assert.equal(doc.code, mine[0].code);
    assert.equal(doc.clicks, 4);
    assert.equal(doc.days.length, 30);
    const ranged = JSON.parse(cli(['stats', '--db', srv.db, mine[0].code, '--from', '2020-01-01',
        '--to', '2020-01-03']).stdout);
    assert.equal(ranged.days.length, 3);
    assert.equal(ranged.clicks, 0);
    assert.equal(ranged.total_clicks, 4);
    assert.notEqual(cli(['stats', '--db', srv.db, 'nope-nope']).code, 0);
    assert.notEqual(cli(['stats', '--db', srv.db, mine[0].code, '--from', 'yesterday']).code, 0);

    const ex = cli(['export', '--db', srv.db, '--format', 'csv']);
    assert.equal(ex.code, 0, ex.stderr);
    assert.ok(parseCsv(ex.stdout).length >= 5);
    const exj = JSON.parse(cli(['export', '--db', srv.db]).stdout);
    assert.ok(exj.some((l) => l.code === mine[0].code && l.clicks === 4));

    const pr = cli(['prune', '--db', srv.db, '--retention-days', '30']);
    assert.equal(pr.code, 0, pr.stderr);
    assert.match(pr.stdout, /pruned 0 /);           // today's rows are within the retention
    assert.notEqual(cli(['prune', '--db', srv.db, '--retention-days', '0']).code, 0);
    const after = JSON.parse(cli(['stats', '--db', srv.db, mine[0].code]).stdout);
    assert.equal(after.clicks, 4);
});

it('prune removes per-day rows past the retention and keeps the all-time total', async (t) => {
    if (sqliteOnly(t, 'plants old rows in the SQLite file with sqlite3')) return;
    const code = mine[1].code;
    const old = Math.floor(Date.now() / 86_400_000) - 500;      // 500 days ago
    // A day row as src/clicks/dayrow.h packs it: dims 'D', then dim 2 (country),
    // length 2, "FR", count 7.
    const sql = `INSERT INTO link_days(code, day, clicks, bots, uniques, dims) ` +
        `VALUES ('${code}', ${old}, 7, 0, 7, X'440202465207');`;
    const ins = spawnSync('sqlite3', [srv.db, sql], { encoding: 'utf8' });
    assert.equal(ins.status, 0, ins.stderr);
    const day = new Date(old * 86_400_000).toISOString().slice(0, 10);
    const before = JSON.parse(cli(['stats', '--db', srv.db, code, '--from', day, '--to', day]).stdout);
    assert.equal(before.clicks, 7);
    assert.equal(before.countries.FR, 7);
    const total = before.total_clicks;
    assert.equal(total, 8);                             // the link's one click and the old day's

    const pr = cli(['prune', '--db', srv.db]);          // default retention: 400 days
    assert.equal(pr.code, 0, pr.stderr);
    assert.match(pr.stdout, /pruned 1 /);
    const afterPrune = JSON.parse(cli(['stats', '--db', srv.db, code, '--from', day, '--to', day]).stdout);
    assert.equal(afterPrune.clicks, 0);
    assert.deepEqual(afterPrune.countries, {});
    assert.equal(afterPrune.total_clicks, total);       // never shrinks
    const link = await api(srv, 'GET', `/api/links/${code}`, { key: userKey });
    assert.equal(link.json.clicks, total);
});
