// import-yourls.test.mjs - `shortd import yourls` on a YOURLS 1.10.4
// installation's data as its administrators export it: a mysqldump (plain,
// gzip, another table prefix) and the tables' CSV, made by
// tests/data/make-yourls.mjs with its awkward rows. After an import into a
// running server's store: every code redirects to its destination, each
// link's all-time total is the source's, the log's visits are its per-day
// history with the bots apart, the bad row is reported with its line, and a
// second run imports nothing. On PostgreSQL too (SHORTD_E2E_STORE=pg).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

import { ROOT, api, cli, it, poll, startServer, tempDir } from './harness.mjs';

const GEN = path.join(ROOT, 'tests/data/make-yourls.mjs');

/* Writes a YOURLS export with the generator; returns [path, what it holds]. */
function makeYourls(dir, name, args = []) {
    const out = path.join(dir, name);
    const expect = path.join(dir, name + '.expect.json');
    const r = spawnSync('node', [GEN, '--links', '40', '--visits', '600', '--line-bytes', '3000',
        '--out', out, '--expect', expect, ...args], { encoding: 'utf8' });
    assert.equal(r.status, 0, `make-yourls failed: ${r.stderr}`);
    return [out, JSON.parse(fs.readFileSync(expect, 'utf8'))];
}

function storeArgs(server) {
    return server.store ? ['--store', server.store] : ['--db', server.db];
}

/* `shortd import yourls SOURCE --json` on the server's store: {code, summary, stderr}. */
function importYourls(server, source, extra = []) {
    const r = cli(['import', 'yourls', source, ...storeArgs(server), '--json', ...extra],
        { timeoutMs: 120_000 });
    let summary = null;
    try { summary = JSON.parse(r.stdout.trim().split('\n').pop()); } catch { /* below */ }
    assert.ok(summary, `no JSON summary (exit ${r.code})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return { code: r.code, summary, stderr: r.stderr };
}

/* Every link of the source redirects to its destination through the server. */
async function followAll(server, expect) {
    for (const [code, l] of Object.entries(expect.byCode)) {
        const r = await api(server, 'GET', '/' + code);
        assert.ok([301, 302, 307, 308].includes(r.status), `${code}: status ${r.status} ${r.text.slice(0, 200)}`);
        assert.equal(r.headers.get('location'), l.url, `${code} redirects to its destination`);
    }
}

const day = (s) => s.slice(0, 10);

/* Each link's totals and days as the source has them (checked before any
 * click of ours lands on it). */
async function checkHistory(server, expect) {
    const codes = Object.keys(expect.byCode);
    const firstDay = codes.map((c) => day(expect.byCode[c].created)).sort()[0];
    const to = new Date(Date.parse(firstDay) + 70 * 86400e3).toISOString().slice(0, 10);
    let bots = 0;
    for (const code of codes) {
        const l = expect.byCode[code];
        const r = await api(server, 'GET', `/api/links/${encodeURIComponent(code)}/stats?from=${firstDay}&to=${to}`,
            { key: server.adminKey });
        assert.equal(r.status, 200, `${code}: stats answered ${r.status} ${r.text.slice(0, 300)}`);
        const s = r.json;
        assert.equal(s.total_clicks + s.total_bot_clicks, l.clicks, `${code}: the all-time total is the source's`);
        const days = {};
        for (const d of s.days) {
            if (d.clicks || d.bot_clicks) days[d.day] = { clicks: d.clicks + d.bot_clicks, bots: d.bot_clicks };
        }
        assert.deepEqual(days, l.days, `${code}: one day a day of the log, the bots apart`);
        assert.equal(s.bot_clicks, l.bots, `${code}: the log's bots are bot clicks`);
        bots += s.bot_clicks;
    }
    assert.equal(bots, expect.bots);
}

it('a YOURLS mysqldump: codes, totals, days and bots as the source has them; a rerun imports nothing', async () => {
    const dir = tempDir();
    const [dump, expect] = makeYourls(dir, 'yourls.sql');
    const text = fs.readFileSync(dump, 'utf8');
    assert.match(text, /^\/\*M!999999\\- enable the sandbox mode \*\/ \n-- MariaDB dump 10\.19 /);
    assert.ok(text.indexOf('INSERT INTO `yourls_log`') < text.indexOf('INSERT INTO `yourls_url`'),
        'the log comes first, as mysqldump orders tables by name');
    assert.ok((text.match(/^INSERT INTO `yourls_url`/gm) || []).length > 1, 'several extended INSERTs');

    const server = await startServer();
    const first = importYourls(server, dump);
    assert.equal(first.code, 0, first.stderr);
    const s = first.summary;
    assert.equal(s.links_imported, expect.links);
    assert.equal(s.visits, expect.visits, 'every log row of a link is a visit');
    assert.equal(s.visit_bots, expect.bots);
    assert.equal(s.refused, expect.bad.length + expect.orphanVisits, first.stderr);
    // the bad row: reported with its line and reason; its neighbours imported
    const bad = expect.bad[0];
    assert.match(first.stderr, new RegExp(`line ${bad.line}: refused: code '${bad.code}': destination`));
    assert.match(first.stderr, /refused: code 'gone-link' is not a link of the source/);
    // no visitor address went anywhere
    assert.doesNotMatch(first.stderr, /10\.\d+\.\d+\.\d+/);

    await checkHistory(server, expect);
    await followAll(server, expect);

    const again = importYourls(server, dump);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.summary.links_imported, 0);
    assert.equal(again.summary.visits, 0);
    assert.equal(again.summary.already_there, expect.links);
    await server.stop();
});

it('a gzip dump in MySQL\'s one-line shape, another table prefix, --complete-insert column lists', async () => {
    const dir = tempDir();
    const [dump, expect] = makeYourls(dir, 'y.sql', ['--prefix', 'short_', '--seed', '7', '--flavor', 'mysql']);
    // --complete-insert: every INSERT names its columns
    const cols = {
        short_url: '(`keyword`, `url`, `title`, `timestamp`, `ip`, `clicks`)',
        short_log: '(`click_id`, `click_time`, `shorturl`, `referrer`, `user_agent`, `ip_address`, `country_code`)',
    };
    const complete = fs.readFileSync(dump, 'utf8')
        .replace(/^INSERT INTO `(short_url|short_log)` VALUES /gm, (m, t) => `INSERT INTO \`${t}\` ${cols[t]} VALUES `);
    assert.ok(!complete.includes('yourls_'));
    fs.writeFileSync(dump + '.gz', zlib.gzipSync(complete));

    const server = await startServer();
    const r = importYourls(server, dump + '.gz');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.summary.links_imported, expect.links);
    assert.equal(r.summary.visits, expect.visits);
    assert.equal(r.summary.visit_bots, expect.bots);
    await checkHistory(server, expect);
    await followAll(server, expect);
    await server.stop();
});

it('the tables as phpMyAdmin CSV: a folder, or the two paths', async () => {
    const dir = tempDir();
    const [folder, expect] = makeYourls(dir, 'csv', ['--format', 'csv']);
    const server = await startServer();
    const r = importYourls(server, folder);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.summary.links_imported, expect.links);
    assert.equal(r.summary.visits, expect.visits);
    assert.equal(r.summary.visit_bots, expect.bots);
    assert.match(r.stderr, new RegExp(`line ${expect.bad[0].line}: refused: code 'badrow'`));
    await checkHistory(server, expect);
    await followAll(server, expect);
    const pair = `${path.join(folder, 'yourls_url.csv')},${path.join(folder, 'yourls_log.csv')}`;
    const again = importYourls(server, pair);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.summary.already_there, expect.links);
    assert.equal(again.summary.visits_dropped, expect.visits + expect.badVisits, 'the visits of links that are there');
    await server.stop();
});

it('a damaged statement is reported with its line and the rest is imported', async () => {
    const dir = tempDir();
    const [dump, expect] = makeYourls(dir, 'd.sql');
    const lines = fs.readFileSync(dump, 'utf8').split('\n');
    const at = lines.findIndex((l) => l.startsWith('INSERT INTO `yourls_url`'));
    // a row cut in the middle of a string's escape, on a line of its own before the links
    lines.splice(at, 0, "INSERT INTO `yourls_url` VALUES ('cut','https://example.com/x' 'oops',NULL,'2024-01-01 00:00:00','',0);");
    // another application's table named *url, dumped before YOURLS's: passed over
    const log = lines.findIndex((l) => l.startsWith('INSERT INTO `yourls_log`'));
    lines.splice(log, 0, "INSERT INTO `app_shorturl` VALUES (1,'x'),(2,'y');");
    fs.writeFileSync(dump, lines.join('\n'));
    const server = await startServer();
    const r = importYourls(server, dump);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /app_shorturl/);
    assert.match(r.stderr, new RegExp(`line ${at + 2}: refused: cannot read this INSERT statement \\(expected ',' or '\\)' after a value, found a string\\)`));
    assert.equal(r.summary.links_imported, expect.links);
    await followAll(server, expect);
    await server.stop();

    // not a dump at all: a clear error and a non-zero exit
    const other = path.join(dir, 'other.sql');
    fs.writeFileSync(other, '-- nothing of YOURLS\nCREATE TABLE t (a int);\n');
    const server2 = await startServer();
    const bad = cli(['import', 'yourls', other, ...storeArgs(server2)]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /holds no INSERT INTO a YOURLS url table/);
    await server2.stop();
});

/* A throwaway MariaDB server on a socket in 'dir' (no network); null when
 * MariaDB is not installed. */
async function startMariadb(dir) {
    if (spawnSync('mariadbd', ['--version']).status !== 0) return null;
    const data = path.join(dir, 'mariadb');
    const user = process.getuid() === 0 ? ['--user=root'] : [];
    const init = spawnSync('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, ...user,
        '--auth-root-authentication-method=normal'], { encoding: 'utf8' });
    assert.equal(init.status, 0, `mariadb-install-db: ${init.stderr}`);
    const sock = path.join(dir, 'mariadb.sock');
    const proc = spawn('mariadbd', ['--no-defaults', `--datadir=${data}`, `--socket=${sock}`, '--skip-networking',
        ...user, `--pid-file=${path.join(dir, 'mariadb.pid')}`, `--log-error=${path.join(dir, 'mariadb.err')}`,
        '--innodb-buffer-pool-size=32M', '--innodb-flush-log-at-trx-commit=0'], { stdio: 'ignore' });
    const up = await poll(() => fs.existsSync(sock), { timeoutMs: 30_000 });
    assert.ok(up, 'mariadbd made no socket within 30 s');
    const sql = (args, input) => {
        const r = spawnSync('mariadb', ['--no-defaults', '-S', sock, '-u', 'root', ...args],
            { encoding: 'utf8', input, maxBuffer: 1 << 28 });
        assert.equal(r.status, 0, `mariadb ${args.join(' ')}: ${r.stderr}`);
        return r.stdout;
    };
    return {
        sql,
        dump: (args) => {
            const r = spawnSync('mariadb-dump', ['--no-defaults', '-S', sock, '-u', 'root', ...args],
                { encoding: 'utf8', maxBuffer: 1 << 28 });
            assert.equal(r.status, 0, `mariadb-dump: ${r.stderr}`);
            return r.stdout;
        },
        stop: () => new Promise((resolve) => { proc.on('close', resolve); proc.kill('SIGTERM'); }),
    };
}

it('the dump of a real MariaDB holding the YOURLS tables (mariadb-dump, both of its shapes)', async (t) => {
    const dir = tempDir();
    const db = await startMariadb(dir);
    if (!db) return t.skip('MariaDB is not installed (scripts/setup.sh installs mariadb-server)');
    try {
        const [dump, expect] = makeYourls(dir, 'gen.sql');
        db.sql(['-e', 'CREATE DATABASE yourls']);
        db.sql(['yourls'], fs.readFileSync(dump, 'utf8'));
        const shapes = { 'real.sql': [], 'real-complete.sql': ['--complete-insert', '--skip-extended-insert'] };
        for (const [name, args] of Object.entries(shapes)) {
            const text = db.dump([...args, 'yourls']);
            fs.writeFileSync(path.join(dir, name), text);
            const badLine = text.split('\n').findIndex((l) => l.includes("'badrow','not a url at all'")) + 1;
            assert.ok(badLine > 0);
            const server = await startServer();
            const r = importYourls(server, path.join(dir, name));
            assert.equal(r.code, 0, r.stderr);
            assert.equal(r.summary.links_imported, expect.links, `${name}: ${r.stderr}`);
            assert.equal(r.summary.visits, expect.visits);
            assert.equal(r.summary.visit_bots, expect.bots);
            assert.match(r.stderr, new RegExp(`line ${badLine}: refused: code 'badrow'`));
            await checkHistory(server, expect);
            await followAll(server, expect);
            await server.stop();
        }
    } finally {
        await db.stop();
    }
});
