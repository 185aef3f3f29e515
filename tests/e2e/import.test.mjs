// import.test.mjs - `shortd import` against the real binary and a running
// server on the same store (SQLite, or PostgreSQL with SHORTD_E2E_STORE=pg):
// the generic CSV with awkward rows, a second run that changes nothing, a
// dry run that writes nothing, the three conflict modes, shortd's own export
// imported into an empty store (links and per-day counts equal), a run killed
// half way and run again (no click counted twice), and the progress line.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before } from 'node:test';

import {
    BIN, PG_MODE, api, cli, createLink, it, poll, startServer, tempDir, unique, visit,
} from './harness.mjs';

let srv;
let dir;

before(async () => {
    srv = await startServer();
    dir = tempDir();
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

function write(name, text) {
    const p = path.join(dir, name);
    fs.writeFileSync(p, text);
    return p;
}

function runImport(server, format, file, ...extra) {
    return cli(['import', format, file, '--db', server.db, '--json', '--progress', 'never', ...extra],
        { timeoutMs: 120_000 });
}

function summaryOf(r) {
    const line = r.stdout.trim().split('\n').pop();
    assert.ok(line, `no JSON summary; stderr: ${r.stderr}`);
    return JSON.parse(line);
}

// HEAD: a redirect that counts no click, so the totals stay the source's
async function redirectsTo(server, code, url) {
    const head = { method: 'HEAD' };
    await poll(async () => (await visit(server, code, head)).status === 302, { timeoutMs: 5000 });
    const r = await visit(server, code, head);
    assert.equal(r.status, 302, `code ${code}`);
    assert.equal(r.headers.get('location'), url, `code ${code}`);
}

async function statsOf(server, code) {
    const r = await api(server, 'GET', `/api/links/${encodeURIComponent(code)}/stats`,
        { key: server.adminKey });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

it('imports a generic CSV with awkward rows while the server runs', async () => {
    const p = unique('c').slice(0, 8);
    const one = 'z'; // a 1-character legacy code, which the alias rules would refuse
    const rows = [
        'title,url,code,clicks,tags,created_at,expires_at',
        `"Quoted, with comma","https://example.com/q?a=1,2",${p}AB,12,a|b,2024-03-01T10:00:00Z,`,
        `"multi\nline ""title""",https://example.com/multi,${p}-x_y,0,"[""t1"",""t2""]",1700000000,4102444800`,
        `,https://example.com/one,${one}${p.slice(1, 3)},3,,,`,
        'reserved,https://example.com/r,api,,,,',
        `bad url,not a url,${p}bad,,,,`,
        `too few fields,https://example.com/f`,
        `bad clicks,https://example.com/c,${p}cl,many,,,`,
        `,https://example.com/last,${p}Up,7,,,`,
    ];
    const file = write(`${p}.csv`, rows.join('\r\n') + '\r\n');
    // Asked before the import: the server must not keep answering 404 after it
    assert.equal((await visit(srv, `${p}Up`)).status, 404);
    const r = runImport(srv, 'csv', file);
    assert.equal(r.code, 0, r.stderr);
    const s = summaryOf(r);
    assert.equal(s.links_imported, 4);
    assert.equal(s.refused, 4);
    assert.equal(s.imported_clicks, 12 + 3 + 7);
    // Each bad row with its line (the title of row 3 spans two lines)
    assert.match(r.stderr, /line 6: refused: code 'api' is a reserved path/);
    assert.match(r.stderr, /line 7: refused: code '\w+bad': destination/);
    assert.match(r.stderr, /line 8: refused: 2 fields where the header has 7/);
    assert.match(r.stderr, /line 9: refused: code '\w+cl': clicks 'many' is not a whole number/);

    await redirectsTo(srv, `${p}AB`, 'https://example.com/q?a=1,2');
    await redirectsTo(srv, `${p}-x_y`, 'https://example.com/multi');
    await redirectsTo(srv, `${one}${p.slice(1, 3)}`, 'https://example.com/one');
    await redirectsTo(srv, `${p}Up`, 'https://example.com/last');
    assert.equal((await visit(srv, `${p}ab`)).status, 404, 'codes are case-sensitive');

    const link = (await api(srv, 'GET', `/api/links/${p}-x_y`, { key: srv.adminKey })).json;
    assert.equal(link.title, 'multi\nline "title"');
    assert.deepEqual(link.tags, ['t1', 't2']);
    assert.equal(link.created_at, '2023-11-14T22:13:20Z');
    const first = (await api(srv, 'GET', `/api/links/${p}AB`, { key: srv.adminKey })).json;
    assert.deepEqual(first.tags, ['a', 'b']);
    const st = await statsOf(srv, `${p}AB`);
    assert.equal(st.total_clicks, 12);
    assert.equal(st.imported_clicks, 12);

    // A second run changes nothing
    const again = runImport(srv, 'csv', file);
    assert.equal(again.code, 0, again.stderr);
    const s2 = summaryOf(again);
    assert.equal(s2.links_imported, 0);
    assert.equal(s2.already_there, 4);
    assert.equal(s2.imported_clicks, 0);
    assert.equal((await statsOf(srv, `${p}AB`)).total_clicks, 12);
});

it('--dry-run reports the same and writes nothing', async () => {
    const p = unique('d').slice(0, 8);
    const file = write(`${p}.csv`, `code,url,clicks\n${p}1,https://example.com/d1,5\n${p}2,https://example.com/d2,\n`);
    const r = runImport(srv, 'csv', file, '--dry-run');
    assert.equal(r.code, 0, r.stderr);
    const s = summaryOf(r);
    assert.equal(s.dry_run, true);
    assert.equal(s.links_imported, 2);
    assert.equal(s.imported_clicks, 5);
    assert.equal((await visit(srv, `${p}1`)).status, 404);
    assert.equal((await api(srv, 'GET', `/api/links/${p}1`, { key: srv.adminKey })).status, 404);
});

it('a code taken with another destination: skip, fail or keep', async () => {
    const p = unique('k').slice(0, 8);
    await createLink(srv, srv.adminKey, { url: 'https://example.com/mine', alias: `${p}cf` });
    const file = write(`${p}.csv`,
        `code,url\n${p}new,https://example.com/fresh\n${p}cf,https://example.com/theirs\n`);

    const fail = runImport(srv, 'csv', file, '--on-conflict', 'fail');
    assert.equal(fail.code, 1);
    assert.match(fail.stderr, new RegExp(`line 3: conflict: code '${p}cf' is taken`));
    assert.match(fail.stderr, /nothing was written/);
    assert.equal(summaryOf(fail).ok, false);
    assert.equal((await visit(srv, `${p}new`)).status, 404, 'fail writes nothing at all');

    const skip = runImport(srv, 'csv', file);
    assert.equal(skip.code, 0, skip.stderr);
    assert.equal(summaryOf(skip).conflicts, 1);
    assert.equal(summaryOf(skip).links_imported, 1);
    await redirectsTo(srv, `${p}cf`, 'https://example.com/mine');
    await redirectsTo(srv, `${p}new`, 'https://example.com/fresh');

    const keep = runImport(srv, 'csv', file, '--on-conflict', 'keep');
    assert.equal(keep.code, 0, keep.stderr);
    assert.equal(summaryOf(keep).replaced, 1);
    await poll(async () => (await visit(srv, `${p}cf`)).headers.get('location') === 'https://example.com/theirs',
        { timeoutMs: 5000 });
    const h = await api(srv, 'GET', `/api/links/${p}cf/history`, { key: srv.adminKey });
    assert.equal(h.status, 200);
    assert.match(h.text, /https:\/\/example.com\/mine/);
    assert.match(h.text, /https:\/\/example.com\/theirs/);
    // and now the store has the source's: a rerun finds it there
    assert.equal(summaryOf(runImport(srv, 'csv', file, '--on-conflict', 'fail')).already_there, 2);
});

it('shortd export → import into an empty store keeps every link and its per-day counts', async () => {
    const p = unique('r').slice(0, 8);
    const made = [];
    for (let i = 0; i < 3; i++) {
        made.push(await createLink(srv, srv.adminKey, {
            url: `https://example.com/rt/${i}`, alias: `${p}r${i}`, title: `t${i}`, tags: ['x', `n${i}`],
            track: i !== 2,
        }));
    }
    for (let i = 0; i < 3; i++) await visit(srv, made[0].code);
    await visit(srv, made[1].code, { headers: { 'user-agent': 'curl/8.0' } });
    await poll(async () => {
        const a = await statsOf(srv, made[0].code);
        const b = await statsOf(srv, made[1].code);
        return a.total_clicks === 3 && b.total_bot_clicks === 1;
    });
    const exp = cli(['export', '--db', srv.db, '--format', 'json'], { timeoutMs: 60_000 });
    assert.equal(exp.code, 0, exp.stderr);
    const file = write(`${p}.json`, exp.stdout);

    const other = await startServer();
    try {
        const r = runImport(other, 'shortd', file);
        assert.equal(r.code, 0, r.stderr);
        const before = JSON.parse(exp.stdout);
        const s = summaryOf(r);
        assert.equal(s.links_imported, before.filter((l) => l.state !== 'deleted').length);
        const back = cli(['export', '--db', other.db, '--format', 'json'], { timeoutMs: 60_000 });
        assert.equal(back.code, 0, back.stderr);
        const byCode = new Map(JSON.parse(back.stdout).map((l) => [l.code, l]));
        for (const l of before) {
            const m = byCode.get(l.code);
            assert.ok(m, `${l.code} was not imported`);
            for (const k of ['url', 'title', 'expires_at', 'state', 'clicks', 'bot_clicks', 'tags', 'permanent',
                'track', 'domain', 'max_clicks']) {
                assert.deepEqual(m[k], l[k], `${l.code}.${k}`);
            }
            assert.equal(m.created_at.slice(0, 19), l.created_at.slice(0, 19), `${l.code}.created_at`);
            assert.deepEqual(m.days, l.days, `${l.code}.days`);
        }
        for (const l of made) await redirectsTo(other, l.code, l.url ?? l.long_url ?? `https://example.com/rt/${made.indexOf(l)}`);
        const st = await statsOf(other, made[0].code);
        assert.equal(st.total_clicks, 3);
        assert.equal(st.imported_clicks, 0, 'every click has its day');
    } finally {
        await other.stop();
    }
});

it('a run killed half way and run again counts no click twice', async () => {
    // A shortd export of many links with days: their clicks are tallies
    const p = unique('m').slice(0, 6);
    const day = (ago) => new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10);
    const links = [];
    // PostgreSQL takes a round trip a statement: fewer links there
    for (let i = 0; i < (PG_MODE ? 10000 : 30000); i++) {
        links.push({
            code: `${p}${i}`, url: `https://example.com/m/${i}`, state: 'active',
            created_at: '2024-01-01T00:00:00Z', expires_at: null, title: null,
            clicks: 10 + (i % 7), bot_clicks: i % 3,
            days: [
                { day: day(5), clicks: 2, unique_visitors: 1, bot_clicks: i % 3 },
                { day: day(2), clicks: 3, unique_visitors: 2, bot_clicks: 0 },
            ],
        });
    }
    const file = write(`${p}.json`, '[\n' + links.map((l) => JSON.stringify(l)).join(',\n') + '\n]\n');
    const other = await startServer();
    try {
        // Killed once its progress line says a third of the source is read
        const killed = await new Promise((resolve) => {
            const c = spawn(BIN, ['import', 'shortd', file, '--db', other.db, '--batch-rows', '500',
                '--progress', 'always'], { stdio: ['ignore', 'ignore', 'pipe'] });
            let err = '';
            c.stderr.setEncoding('utf8');
            c.stderr.on('data', (d) => {
                err += d;
                const m = /\rimport: ([\d,]+) of ([\d,]+) bytes[^\r]*$/.exec(err);
                if (m && Number(m[1].replace(/,/g, '')) * 3 > Number(m[2].replace(/,/g, ''))) c.kill('SIGKILL');
            });
            c.on('close', (code, signal) => resolve({ code, signal, err }));
        });
        assert.equal(killed.signal, 'SIGKILL', `the import finished before it could be killed: ${killed.err}`);
        const r = runImport(other, 'shortd', file, '--batch-rows', '500');
        assert.equal(r.code, 0, r.stderr);
        const s = summaryOf(r);
        assert.ok(s.already_there > 0 && s.links_imported > 0, JSON.stringify(s));
        const back = spawnSync(BIN, ['export', '--db', other.db, '--format', 'json'],
            { encoding: 'utf8', maxBuffer: 1 << 30, timeout: 120_000 });
        assert.equal(back.status, 0, back.stderr);
        const got = new Map(JSON.parse(back.stdout).map((l) => [l.code, l]));
        for (const l of links) {
            const m = got.get(l.code);
            assert.ok(m, l.code);
            assert.equal(m.clicks + m.bot_clicks, l.clicks + l.bot_clicks, l.code);
        }
        // and a third run changes nothing
        const third = summaryOf(runImport(other, 'shortd', file));
        assert.equal(third.links_imported, 0);
        assert.equal(third.already_there, links.length);
    } finally {
        await other.stop();
    }
}, { timeout: 180_000 });

it('--progress always draws the line into a pipe; auto and never do not', async () => {
    const p = unique('g').slice(0, 8);
    const rows = ['code,url'];
    for (let i = 0; i < 3000; i++) rows.push(`${p}${i},https://example.com/g/${i}`);
    const file = write(`${p}.csv`, rows.join('\n') + '\n');
    const always = cli(['import', 'csv', file, '--db', srv.db, '--progress', 'always', '--dry-run']);
    assert.equal(always.code, 0, always.stderr);
    assert.match(always.stderr, /\rimport: [\d,]+ of [\d,]+ bytes/);
    const auto = cli(['import', 'csv', file, '--db', srv.db, '--dry-run']);
    assert.equal(auto.code, 0);
    assert.doesNotMatch(auto.stderr, /\r/);
    const exp = cli(['export', '--db', srv.db, '--progress', 'always']);
    assert.equal(exp.code, 0);
    assert.match(exp.stderr, /\rexport: [\d,]+ (of [\d,]+ )?links/);
    const bad = cli(['import', 'csv', file, '--db', srv.db, '--progress', 'sometimes']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--progress must be auto, always or never/);
});

it('names the formats, and refuses an unknown one', () => {
    const help = cli(['import', '--help']);
    assert.equal(help.code, 0);
    for (const f of ['yourls', 'kutt', 'shlink', 'bitly', 'csv', 'shortd']) assert.match(help.stdout, new RegExp(`\\n    ${f} `));
    assert.match(help.stdout, /\n +skip +the store.s link stays.*\n +keep +the source.s destination replaces it(.*\n)+ +fail +nothing at all is written/);
    const r = cli(['import', 'nosuch', 'x', '--db', srv.db]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown import format 'nosuch'/);
    const missing = cli(['import', 'csv', path.join(dir, 'absent.csv'), '--db', srv.db]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot open '.*absent.csv'/);
});

/* GET of one Redis key over RESP: its text, or null. */
function redisGet(url, key) {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
        const c = net.connect(Number(u.port), u.hostname, () => {
            c.write(`*2\r\n$3\r\nGET\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n`);
        });
        let got = '';
        c.setEncoding('utf8');
        c.on('data', (d) => {
            got += d;
            if (got.startsWith('$-1\r\n')) { c.end(); resolve(null); return; }
            const m = /^\$(\d+)\r\n/.exec(got);
            if (m && got.length >= m[0].length + Number(m[1]) + 2) {
                c.end();
                resolve(got.slice(m[0].length, m[0].length + Number(m[1])));
            }
        });
        c.on('error', reject);
    });
}

it('--on-conflict keep with --cache updates a shared Redis cache', async (t) => {
    const redis = process.env.SHORTD_TEST_REDIS;
    if (!redis) {
        t.skip('needs SHORTD_TEST_REDIS (tests/redis.sh)');
        return;
    }
    const cached = await startServer({ args: ['--cache', redis] });
    try {
        const p = unique('x').slice(0, 8);
        await createLink(cached, cached.adminKey, { url: 'https://example.com/before', alias: `${p}rc` });
        await redirectsTo(cached, `${p}rc`, 'https://example.com/before');
        // The click's store read filled Redis
        await poll(async () => /example\.com\/before/.test(await redisGet(redis, `shortd:l:${p}rc`) || ''));
        const file = write(`${p}.csv`, `code,url\n${p}rc,https://example.com/after\n`);
        const r = runImport(cached, 'csv', file, '--on-conflict', 'keep', '--cache', redis);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(summaryOf(r).replaced, 1);
        assert.match(await redisGet(redis, `shortd:l:${p}rc`) || '', /example\.com\/after$/);
        await poll(async () => (await visit(cached, `${p}rc`)).headers.get('location') === 'https://example.com/after',
            { timeoutMs: 5000 });
    } finally {
        await cached.stop();
    }
});
