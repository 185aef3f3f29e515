// pg.test.mjs - the real server on PostgreSQL: `shortd migrate`, a node that
// refuses an unmigrated schema, create → redirect → clicks counted → stats,
// and two nodes (two servers, each with its own journal) sharing one
// database: links made on one redirect on the other, clicks on both add up
// exactly, generated codes never collide, an alias race has one winner, and
// a restart keeps everything.
//
// Needs SHORTD_TEST_PG (a postgres:// URL of a database this test may add a
// schema to; tests/pg.sh starts a throwaway server and sets it) and psql;
// every test is skipped when SHORTD_TEST_PG is unset. The test works in a
// schema of its own, reached through the URL's search_path, and drops it.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before } from 'node:test';

import { api, cli, createLink, freePort, it, poll, startServer, tempDir, visit } from './harness.mjs';

const BASE = process.env.SHORTD_TEST_PG || '';
const skip = BASE ? false : 'SHORTD_TEST_PG is unset (tests/pg.sh sets it)';

const SCHEMA = `e2e_${process.pid}`;
let url;        // the store URL of this test's schema
let a;          // node A: the first start, holds the admin key
let b;          // node B: same database, its own journal
let admin;

function withSchema(base, schema) {
    return `${base}${base.includes('?') ? '&' : '?'}options=-csearch_path%3D${schema}`;
}

function psql(sql) {
    const r = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', BASE, '-c', sql],
        { encoding: 'utf8', env: { ...process.env, PGOPTIONS: '-c client_min_messages=warning' } });
    if (r.error) throw new Error(`cannot run psql: ${r.error.message}`);
    assert.equal(r.status, 0, `psql -c "${sql}" failed: ${r.stderr}`);
}

function node(args = []) {
    const dir = tempDir();
    return ['--store', url, '--journal', path.join(dir, 'journal'), '--click-flush-ms', '50', ...args];
}

async function clicksOf(srv, code) {
    const r = await api(srv, 'GET', `/api/links/${code}/stats`, { key: admin });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

before(async () => {
    if (!BASE) return;
    psql(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE; CREATE SCHEMA ${SCHEMA}`);
    url = withSchema(BASE, SCHEMA);
    const m = cli(['migrate', '--store', url]);
    assert.equal(m.code, 0, `shortd migrate failed\nstdout: ${m.stdout}\nstderr: ${m.stderr}`);
    assert.match(m.stdout, /migrated schema 0 to \d+/);
    a = await startServer({ args: node() });
    admin = a.adminKey;
    const dir = tempDir();
    b = await startServer({ db: path.join(dir, 'unused.db'), args: node() });
});

after(async () => {
    if (a) await a.stop();
    if (b) await b.stop();
    if (BASE) psql(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
});

it('shortd migrate is safe to rerun and never prints the URL', () => {
    const r = cli(['migrate', '--store', url]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /schema \d+ is current/);
    const bad = cli(['migrate', '--store', 'postgres://someone:pw-s3cret@127.0.0.1:1/none'], { timeoutMs: 15_000 });
    assert.notEqual(bad.code, 0);
    assert.ok(!bad.stdout.includes('pw-s3cret') && !bad.stderr.includes('pw-s3cret'),
        `the password leaked: ${bad.stdout}${bad.stderr}`);
}, { skip });

it('a node refuses to serve a schema that was not migrated', async () => {
    const schema = `${SCHEMA}_bare`;
    psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    try {
        const dir = tempDir();
        const r = cli(['serve', '--listen', `127.0.0.1:${await freePort()}`, '--store', withSchema(BASE, schema),
            '--journal', path.join(dir, 'journal')], { timeoutMs: 20_000 });
        assert.notEqual(r.code, 0, `serve on an empty schema should fail\n${r.stdout}${r.stderr}`);
        assert.match(r.stderr, /database schema 0 is not the one this shortd knows \(\d+\): run shortd migrate/);
    } finally {
        psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
}, { skip });

it('create → redirect → clicks counted → stats', async () => {
    const link = await createLink(a, admin, { url: 'https://example.com/pg/one', alias: 'pg-one' });
    assert.equal(link.code, 'pg-one');
    for (let i = 0; i < 12; i++) {
        const r = await visit(a, 'pg-one');
        assert.equal(r.status, 302);
        assert.equal(r.headers.get('location'), 'https://example.com/pg/one');
    }
    // The link's total and its days are read one after the other, so a flush
    // may land between them: wait until both have it.
    const s = await poll(async () => {
        const x = await clicksOf(a, 'pg-one');
        return x.clicks === 12 && x.total_clicks === 12 && x;
    });
    assert.ok(s, `clicks never reached 12: ${JSON.stringify(await clicksOf(a, 'pg-one'))}`);
    assert.equal(s.total_clicks, 12);
    assert.equal(s.unique_visitors, 1);
    assert.equal(s.browsers.Chrome, 12);
    assert.equal(s.days.reduce((n, d) => n + d.clicks, 0), 12);
    const l = await api(a, 'GET', '/api/links/pg-one', { key: admin });
    assert.equal(l.status, 200);
    assert.equal(l.json.clicks, 12);

    const d = await api(a, 'DELETE', '/api/links/pg-one', { key: admin });
    assert.equal(d.status, 204, d.text);
    assert.equal((await visit(a, 'pg-one')).status, 410);
    const again = await api(a, 'POST', '/api/links', { key: admin, body: { url: 'https://example.com/x', alias: 'pg-one' } });
    assert.equal(again.status, 409, again.text);
}, { skip });

it('a link made on one node redirects on the other, and clicks on both add up exactly', async () => {
    const link = await createLink(a, admin, { url: 'https://example.com/pg/two' });
    const r = await visit(b, link.code);
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), 'https://example.com/pg/two');
    const sends = [];
    for (let i = 0; i < 20; i++) sends.push(visit(a, link.code), visit(b, link.code));
    for (const x of await Promise.all(sends)) assert.equal(x.status, 302);
    const want = 41;
    const s = await poll(async () => {
        const x = await clicksOf(b, link.code);
        return x.clicks >= want && x.total_clicks >= want && x;
    }, { timeoutMs: 15_000 });
    assert.ok(s, `clicks never reached ${want}: ${JSON.stringify(await clicksOf(b, link.code))}`);
    await new Promise((res) => setTimeout(res, 300));    // no late double count either
    const fin = await clicksOf(a, link.code);
    assert.equal(fin.clicks, want);
    assert.equal(fin.total_clicks, want);
}, { skip });

it('codes made on two nodes at once never collide, and an alias race has one winner', async () => {
    const made = [];
    for (let i = 0; i < 15; i++) {
        made.push(createLink(a, admin, { url: `https://example.com/pg/a/${i}` }),
            createLink(b, admin, { url: `https://example.com/pg/b/${i}` }));
    }
    const codes = (await Promise.all(made)).map((l) => l.code);
    assert.equal(new Set(codes).size, codes.length, `duplicate codes: ${codes.join(' ')}`);

    const race = await Promise.all([a, b, a, b].map((srv, i) => api(srv, 'POST', '/api/links', {
        key: admin, body: { url: `https://example.com/pg/race/${i}`, alias: 'pg-race' },
    })));
    const statuses = race.map((x) => x.status).sort();
    assert.deepEqual(statuses, [201, 409, 409, 409], race.map((x) => x.text).join('\n'));
    const winner = race.find((x) => x.status === 201).json.url;
    for (const srv of [a, b]) {
        const r = await visit(srv, 'pg-race');
        assert.equal(r.headers.get('location'), winner);
    }
}, { skip });

it('a restarted node finds everything and prints no new admin key', async () => {
    const link = await createLink(b, admin, { url: 'https://example.com/pg/three' });
    await a.stop();
    await a.restart();
    const r = await visit(a, link.code);
    assert.equal(r.status, 302);
    const k = await api(a, 'GET', `/api/links/${link.code}`, { key: admin });
    assert.equal(k.status, 200, k.text);
}, { skip });
