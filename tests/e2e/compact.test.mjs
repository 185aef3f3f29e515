// compact.test.mjs - a store job appends its link days under a batch
// number instead of rewriting each link's day row, every read adds those
// rows to the day rows, and compacting merges them in later (store_stats.h,
// "Appending"). Through the real binary, on SQLite or PostgreSQL as the run
// is (harness.mjs): the stats, the link totals and the service-wide figures
// are the same before and after compacting, and after a restart; a kill -9
// while compacting counts every click once.
//
// fold-compact-rows and fold-compact-every hold compacting off, then start
// it on a SIGHUP; /metrics shows the rows waiting (shortd_clicks_uncompacted),
// after a restart too.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { api, createLink, it, metricsOf, PG_MODE, pipelined, poll, sleep, startServer, tempDir } from './harness.mjs';

const UAS = [
    'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
    'curl/8.4.0',
];

function config(file, { rows, every }) {
    fs.writeFileSync(file, `fold-compact-rows = ${rows}\nfold-compact-every = ${every}\n`);
}

/* One value read from the server's store (srv.db: a file, or a URL). */
function sql(db, text) {
    const r = PG_MODE
        ? spawnSync('psql', ['-X', '-q', '-At', '-d', db, '-c', text], { encoding: 'utf8' })
        : spawnSync('sqlite3', [db, text], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
}

/* 'links' links; link i gets per(i) clicks over a few connections, with
 * referrers, user agents and languages that vary. */
async function clicks(srv, links, per) {
    const texts = [];
    links.forEach((l, i) => {
        for (let k = 0; k < per(i); k++) {
            texts.push(`GET /${l.code} HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\n` +
                `User-Agent: ${UAS[(i + k) % UAS.length]}\r\nAccept-Language: ${k % 2 ? 'de' : 'nl'}\r\n` +
                `Referer: https://ref${k % 3}.example/\r\n\r\n`);
        }
    });
    await pipelined(srv.port, texts);
    return texts.length;
}

async function stored(srv) {
    assert.ok(await poll(async () => (await metricsOf(srv, 'shortd_clicks_pending')).shortd_clicks_pending === 0,
        { timeoutMs: 60_000 }));
}

async function uncompacted(srv) {
    return (await metricsOf(srv, 'shortd_clicks_uncompacted')).shortd_clicks_uncompacted;
}

/* Everything the API reads from the day rows, as one JSON text. */
async function reads(srv, links) {
    const out = {};
    for (const l of links) {
        const s = await api(srv, 'GET', `/api/links/${l.code}/stats`, { key: srv.adminKey });
        assert.equal(s.status, 200, s.text);
        const one = await api(srv, 'GET', `/api/links/${l.code}`, { key: srv.adminKey });
        out[l.code] = { stats: s.json, clicks: one.json.clicks, bots: one.json.bot_clicks };
    }
    const all = await api(srv, 'GET', '/api/stats', { key: srv.adminKey });
    assert.equal(all.status, 200, all.text);
    out.all = all.json;
    const list = await api(srv, 'GET', `/api/links?limit=1000`, { key: srv.adminKey });
    out.list = list.json.map((l) => [l.code, l.clicks, l.bot_clicks]).sort();
    return JSON.stringify(out);
}

it('the stats read appended link days, and are the same once compacted and after a restart', async () => {
    const conf = path.join(tempDir(), 'shortd.conf');
    config(conf, { rows: 1_000_000, every: 86_400 }); // no compacting yet
    const srv = await startServer({ args: ['--config', conf] });
    const links = [];
    for (let i = 0; i < 30; i++)
        links.push(await createLink(srv, srv.adminKey, { url: `https://example.com/compact/${i}` }));
    // Two rounds of clicks, so that link days are in several batches.
    const per = (i) => 1 + (i % 5);
    let n = await clicks(srv, links, per);
    await stored(srv);
    n += await clicks(srv, links, per);
    await stored(srv);
    const batches = Number(sql(srv.db, 'SELECT count(DISTINCT batch) FROM link_days_pending'));
    assert.ok(batches >= 2, `batches: ${batches}`);
    assert.ok(await uncompacted(srv) > 0);
    const before = await reads(srv, links);
    const parsed = JSON.parse(before);
    for (const [i, l] of links.entries()) assert.equal(parsed[l.code].clicks + parsed[l.code].bots, 2 * per(i));
    assert.equal(parsed.all.clicks + parsed.all.bot_clicks, n);

    // A restart with no click to store counts the rows waiting: /metrics
    // shows them (not a 0 that says none wait), and the reads are the same.
    const waiting = Number(sql(srv.db, 'SELECT count(*) FROM link_days_pending'));
    await srv.stop();
    await srv.restart();
    assert.ok(await poll(async () => (await uncompacted(srv)) === waiting, { timeoutMs: 30_000 }));
    assert.equal(await reads(srv, links), before);

    // Compacting starts on a SIGHUP, still with no click to wake it.
    config(conf, { rows: 1_000_000, every: 1 });
    srv.proc.kill('SIGHUP');
    assert.ok(await poll(async () => (await uncompacted(srv)) === 0, { timeoutMs: 30_000 }));
    assert.equal(sql(srv.db, 'SELECT count(*) FROM link_days_pending'), '0');
    if (!PG_MODE) assert.equal(sql(srv.db, 'SELECT count(*) FROM day_batches'), '0');
    assert.equal(sql(srv.db, 'SELECT coalesce(sum(clicks) + sum(bots), 0) FROM link_days'), String(n));
    assert.equal(await reads(srv, links), before);
    await srv.stop();
    await srv.restart();
    assert.equal(await reads(srv, links), before);
    await srv.stop();
}, { timeout: 120_000 });

it('a kill -9 with clicks appended and compacting under way counts every click once', async () => {
    const conf = path.join(tempDir(), 'shortd.conf');
    config(conf, { rows: 200, every: 1 }); // a round at each few batches
    const srv = await startServer({ args: ['--config', conf] });
    const links = [];
    for (let i = 0; i < 400; i += 50) {
        links.push(...await Promise.all(Array.from({ length: 50 }, (_, j) =>
            createLink(srv, srv.adminKey, { url: `https://example.com/kill/${i + j}` }))));
    }
    const PER = 15;
    await clicks(srv, links, () => PER);
    // The promise covers clicks older than the journal's sync window (20 ms):
    // the last ones answered may be in an event loop's buffer still.
    await sleep(200);
    // Killed once a round has merged some rows: wherever the store is then
    // (appending, compacting or between the two), nothing is lost or doubled.
    assert.ok(await poll(async () => Number(sql(srv.db, 'SELECT count(*) FROM link_days')) > 0,
        { timeoutMs: 30_000, intervalMs: 20 }));
    await srv.kill9();
    await srv.restart();
    await stored(srv);
    let last;
    const ok = await poll(async () => {
        const r = await api(srv, 'GET', '/api/links?limit=1000', { key: srv.adminKey });
        last = r.json.map((l) => l.clicks + l.bot_clicks);
        for (const c of last) assert.ok(c <= PER, `a link went past ${PER}: ${c}`);
        return last.length === links.length && last.every((c) => c === PER);
    }, { timeoutMs: 60_000, intervalMs: 500 });
    assert.ok(ok, JSON.stringify(last));
    // And once everything is compacted, the day rows alone hold every click.
    assert.ok(await poll(async () => (await uncompacted(srv)) === 0, { timeoutMs: 30_000 }));
    assert.equal(sql(srv.db, 'SELECT coalesce(sum(clicks) + sum(bots), 0) FROM link_days'),
        String(PER * links.length));
    await srv.stop();
}, { timeout: 120_000 });
