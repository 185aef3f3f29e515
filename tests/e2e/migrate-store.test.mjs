// migrate-store.test.mjs - moving up from SQLite to PostgreSQL with
// `shortd migrate-store` (issue 5, point 7): a SQLite-backed server is filled
// with links in every state (generated, aliased, permanent, deleted,
// disabled, expired, expiring), keys (one revoked), human and bot clicks, a
// blocklist entry and an idempotent create, then stopped and copied into a
// PostgreSQL schema that `shortd migrate` prepared. The copy verifies itself;
// a rerun writes nothing; clicks added to the SQLite file afterwards come over
// exactly once; and a node serving the copy answers as the SQLite server did:
// the same redirects, keys, stats and totals, new codes that collide with
// none of the old ones, and the blocklist and idempotency records honoured.
// A target that was never migrated, or that a node has served, is refused.
//
// Needs SHORTD_TEST_PG (tests/pg.sh sets it) and psql; every test is skipped
// without it. The test works in PostgreSQL schemas of its own, reached
// through the URL's search_path, and drops them.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before } from 'node:test';

import {
    BROWSER_UA, api, cli, createKey, createLink, it, poll, sleep, sqliteOnlyReason, startServer, tempDir, visit,
} from './harness.mjs';

const BASE = process.env.SHORTD_TEST_PG || '';
// Its source is a SQLite-backed server: the run without SHORTD_E2E_STORE=pg covers it.
const skip = !BASE ? 'SHORTD_TEST_PG is unset (tests/pg.sh sets it)'
    : sqliteOnlyReason('copies a SQLite-backed server into PostgreSQL');

const SCHEMA = `mstore_${process.pid}`;
const BASE_URL = 'https://sho.rt';
const BOT_UA = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const PASSWORD = 'pw-n0t-pr1nted';

let url;            // the target: this test's schema
let src;            // the SQLite-backed server (stopped between phases)
let admin, user, revoked;
const links = {};   // name → link as created
let before1;        // what the SQLite server answered, per code: {link, stats}
let totals;         // GET /api/stats on the SQLite server

function withSchema(base, schema) {
    return `${base}${base.includes('?') ? '&' : '?'}options=-csearch_path%3D${schema}`;
}

/* The same URL with a password in it (the test server trusts every login). */
function withPassword(u) {
    return u.replace('://postgres@', `://postgres:${PASSWORD}@`);
}

/* One value from the target schema. */
function targetValue(sql) {
    const r = spawnSync('psql', ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql], { encoding: 'utf8' });
    if (r.error) throw new Error(`cannot run psql: ${r.error.message}`);
    assert.equal(r.status, 0, `psql -c "${sql}" failed: ${r.stderr}`);
    return r.stdout.trim();
}

function psql(sql) {
    const r = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', BASE, '-c', sql],
        { encoding: 'utf8', env: { ...process.env, PGOPTIONS: '-c client_min_messages=warning' } });
    if (r.error) throw new Error(`cannot run psql: ${r.error.message}`);
    assert.equal(r.status, 0, `psql -c "${sql}" failed: ${r.stderr}`);
}

/* Runs migrate-store; returns {code, stdout, stderr, rows: {table: {source, target, written}},
 * sums: {name: [source, target]}}. */
function migrateStore(to = url, args = []) {
    const r = cli(['migrate-store', '--from', `sqlite:${src.db}`, '--to', to, ...args], { timeoutMs: 120_000 });
    const rows = {};
    const sums = {};
    for (const line of r.stdout.split('\n')) {
        let m = /^(\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(ok|DIFFERS)$/.exec(line);
        if (m) rows[m[1]] = { source: +m[2], target: +m[3], written: +m[4], ok: m[5] === 'ok' };
        m = /^sum (\w+\.\w+)\s+(\d+)\s+(\d+)\s+(ok|DIFFERS)$/.exec(line);
        if (m) sums[m[1]] = [+m[2], +m[3]];
    }
    return { ...r, rows, sums };
}

function assertVerified(r) {
    assert.equal(r.code, 0, `migrate-store failed\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.match(r.stdout, /^verified: /m);
    const tables = ['meta', 'api_keys', 'links', 'blocklist', 'idempotency', 'link_days', 'domains', 'link_history',
        'users', 'sessions', 'sites', 'site_hosts', 'site_tokens', 'site_days', 'sinks', 'sink_positions',
        'event_outbox', 'event_failed'];
    assert.deepEqual(Object.keys(r.rows).sort(), [...tables].sort(), r.stdout);
    for (const t of tables) {
        assert.ok(r.rows[t].ok && r.rows[t].source === r.rows[t].target, `${t}: ${JSON.stringify(r.rows[t])}`);
    }
    for (const t of ['sites', 'site_hosts', 'site_tokens', 'site_days', 'sinks']) assert.equal(r.rows[t].source, 1, t);
    // The sink's positions and the link events it has yet to take travel too.
    assert.ok(r.rows.sink_positions.source >= 1 && r.rows.event_outbox.source >= 1, r.stdout);
    for (const s of ['links.clicks', 'links.bot_clicks', 'link_days.clicks', 'link_days.bots', 'site_days.pv',
        'sites.pv_total']) {
        assert.ok(r.sums[s], `no sum ${s} in\n${r.stdout}`);
        assert.equal(r.sums[s][0], r.sums[s][1], s);
    }
}

async function statsOf(srv, code) {
    const r = await api(srv, 'GET', `/api/links/${code}/stats`, { key: admin });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

/* Everything the API says about every link, and the service totals. */
async function snapshot(srv) {
    const out = {};
    for (const [name, l] of Object.entries(links)) {
        const g = await api(srv, 'GET', `/api/links/${l.code}`, { key: admin });
        assert.equal(g.status, 200, `${name}: ${g.text}`);
        out[name] = { link: g.json, stats: await statsOf(srv, l.code) };
    }
    const t = await api(srv, 'GET', '/api/stats', { key: admin });
    assert.equal(t.status, 200, t.text);
    return { links: out, totals: t.json };
}

/* Waits until the aggregator has stored 'n' human clicks of 'code'. */
async function flushed(srv, code, n) {
    const s = await poll(async () => {
        const x = await statsOf(srv, code);
        return x.total_clicks === n && x.days.reduce((a, d) => a + d.clicks, 0) === n && x;
    });
    assert.ok(s, `${code}: clicks never reached ${n}: ${JSON.stringify(await statsOf(srv, code))}`);
}

function nodeArgs() {
    return ['--store', url, '--journal', path.join(tempDir(), 'journal'), '--click-flush-ms', '50'];
}

before(async () => {
    if (skip) return;
    psql(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE; CREATE SCHEMA ${SCHEMA}`);
    url = withSchema(BASE, SCHEMA);
    const m = cli(['migrate', '--store', url]);
    assert.equal(m.code, 0, `shortd migrate failed\nstdout: ${m.stdout}\nstderr: ${m.stderr}`);

    src = await startServer({ baseUrl: BASE_URL, args: ['--click-flush-ms', '50'] });
    admin = src.adminKey;
    user = createKey(src, 'user');
    revoked = createKey(src, 'old-key');
    const made = cli(['user', 'create', 'mia', '--role', 'member', '--db', src.db], { input: 'mia-password\n' });
    assert.equal(made.code, 0, made.stderr);
    const list = cli(['key', 'list', '--db', src.db]);
    const line = list.stdout.split('\n').find((l) => l.split(/\s+/)[1] === 'old-key');
    assert.ok(line, list.stdout);
    const rv = cli(['key', 'revoke', '--db', src.db, line.trim().split(/\s+/)[0]]);
    assert.equal(rv.code, 0, rv.stderr);

    for (let i = 0; i < 5; i++) links[`gen${i}`] = await createLink(src, admin, { url: `https://example.com/gen/${i}` });
    links.byUser = await createLink(src, user, { url: 'https://example.com/user', title: 'T', note: 'n', tags: ['a', 'b'] });
    links.alias = await createLink(src, admin, { url: 'https://example.com/alias?x=1', alias: `ms-alias-${process.pid}` });
    links.perm = await createLink(src, admin, { url: 'https://example.com/perm', permanent: true });
    links.deleted = await createLink(src, admin, { url: 'https://example.com/deleted', alias: `ms-gone-${process.pid}` });
    links.disabled = await createLink(src, admin, { url: 'https://example.com/disabled' });
    links.expired = await createLink(src, admin, { url: 'https://example.com/expired', ttl: 1 });
    links.expiring = await createLink(src, admin, { url: 'https://example.com/expiring', ttl: 86400 });
    links.idem = await createLink(src, admin, { url: 'https://example.com/idem' }, { 'idempotency-key': 'ms-idem-1' });
    // Link controls (schema 2): a custom domain, a click limit, UTM, an edit in the history.
    const dom = await api(src, 'POST', '/api/domains', { key: user, body: { host: 'go-ms.example' } });
    assert.equal(dom.status, 201, dom.text);
    links.controls = await createLink(src, user, { url: 'https://example.com/ctl', domain: 'go-ms.example', max_clicks: 10, utm: { source: 'ms' } });
    const edit = await api(src, 'PATCH', `/api/links/${links.controls.code}`, { key: user, body: { url: 'https://example.com/ctl2' } });
    assert.equal(edit.status, 200, edit.text);
    for (let i = 0; i < 2; i++) assert.equal((await visit(src, links.controls.code)).status, 302);

    // Clicks: human and bot, on a few links, before they change state.
    for (let i = 0; i < 7; i++) assert.equal((await visit(src, links.gen0.code)).status, 302);
    for (let i = 0; i < 3; i++) assert.equal((await visit(src, links.alias.code)).status, 302);
    for (let i = 0; i < 2; i++) assert.equal((await visit(src, links.perm.code)).status, 301);
    for (let i = 0; i < 4; i++) {
        assert.equal((await visit(src, links.deleted.code, { headers: { 'user-agent': BOT_UA } })).status, 302);
    }
    assert.equal((await visit(src, links.deleted.code)).status, 302);
    await flushed(src, links.gen0.code, 7);
    await flushed(src, links.deleted.code, 1);
    await flushed(src, links.controls.code, 2);

    assert.equal((await api(src, 'DELETE', `/api/links/${links.deleted.code}`, { key: admin })).status, 204);
    assert.equal((await api(src, 'POST', `/api/links/${links.disabled.code}/disable`, { key: admin })).status, 200);
    for (const host of ['blocked.example', 'unblocked.example']) {
        const block = await api(src, 'POST', '/api/admin/blocklist', { key: admin, body: { host } });
        assert.equal(block.status, 201, block.text);
    }
    // An event sink whose receiver is down: its position and the link event
    // it has yet to take stay in the store.
    const sink = await api(src, 'POST', '/api/sinks', { key: admin, body: { kind: 'webhook', endpoint: 'http://127.0.0.1:9/hook' } });
    assert.equal(sink.status, 201, sink.text);
    const evented = await api(src, 'POST', '/api/links', { key: admin, body: { url: 'https://example.com/after-sink' } });
    assert.equal(evented.status, 201, evented.text);
    links.evented = evented.json;
    // A site with a host, a read token and a day of page views (site analytics).
    const site = await api(src, 'POST', '/api/sites', { key: user, body: { id: 'ms-site', hosts: ['ms-site.example'], badge: true } });
    assert.equal(site.status, 201, site.text);
    assert.equal((await api(src, 'POST', '/api/sites/ms-site/tokens', { key: user })).status, 201);
    const v = Buffer.from(JSON.stringify({ p: '/ms' })).toString('base64url');
    for (let i = 0; i < 3; i++) {
        const b = await fetch(`${src.url}/e?v=${v}`, { headers: { origin: 'https://ms-site.example', 'user-agent': BROWSER_UA } });
        assert.equal(b.status, 200);
    }
    assert.ok(await poll(async () => (await api(src, 'GET', '/api/sites/ms-site/stats', { key: user })).json.page_views === 3 || undefined));
    await sleep(1100);      // the 1 s link has expired
    await flushed(src, links.perm.code, 2);
    await flushed(src, links.alias.code, 3);
    before1 = await snapshot(src);
    totals = before1.totals;
    await src.stop();
});

after(async () => {
    if (src && src.running) await src.stop();
    if (!skip) psql(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE; DROP SCHEMA IF EXISTS ${SCHEMA}_bare CASCADE`);
});

it('refuses a target that shortd migrate has not prepared', () => {
    psql(`DROP SCHEMA IF EXISTS ${SCHEMA}_bare CASCADE; CREATE SCHEMA ${SCHEMA}_bare`);
    const r = migrateStore(withPassword(withSchema(BASE, `${SCHEMA}_bare`)));
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /shortd migrate/);
    assert.ok(!r.stdout.includes(PASSWORD) && !r.stderr.includes(PASSWORD), `the password leaked: ${r.stderr}`);
    const none = cli(['migrate-store', '--from', 'sqlite:/nonexistent/x.db', '--to', url]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no database at/);
}, { skip });

it('copies every table, verifies the counts and never prints the password', () => {
    const counter = "SELECT convert_from(v, 'UTF8') FROM meta WHERE k = 'counter'";
    const secrets = "SELECT string_agg(encode(v, 'hex'), ',' ORDER BY k) FROM meta WHERE k IN ('code_key', 'key_secret')";
    assert.equal(targetValue(counter), '0');
    const made = targetValue(secrets);     // by shortd migrate, for a store of its own
    const r = migrateStore(withPassword(url));
    assertVerified(r);
    assert.ok(!r.stdout.includes(PASSWORD) && !r.stderr.includes(PASSWORD), `the password leaked: ${r.stderr}`);
    assert.match(r.stderr, /postgres:\*\*\*@/);
    assert.equal(r.rows.links.source, Object.keys(links).length);
    assert.equal(r.rows.api_keys.source, 4); // three keys, and the one of user mia
    assert.equal(r.rows.users.source, 1);
    assert.match(targetValue("SELECT name || ',' || role || ',' || (pwhash LIKE '$argon2id$%') FROM users"), /^mia,member,true$/);
    assert.equal(r.rows.blocklist.source, 2);
    // The code counter and the secrets are the source's: keys hash and codes
    // scramble as before, and no code is handed out twice.
    assert.ok(Number(targetValue(counter)) > 0, 'the code counter was not copied');
    assert.notEqual(targetValue(secrets), made, 'the secrets were not copied');
    assert.equal(r.rows.idempotency.source, 1);
    // Links keep the totals of pruned days (none here); link_days the rest.
    assert.equal(r.sums['links.clicks'][0], 0);
    assert.equal(r.sums['link_days.clicks'][0], 7 + 3 + 2 + 1 + 2);
    assert.equal(r.sums['link_days.bots'][0], 4);
    assert.equal(r.rows.domains.source, 1);
    assert.equal(r.rows.link_history.source, 1);
    assert.equal(targetValue(`SELECT used || ',' || max_clicks || ',' || domain || ',' || dest FROM links WHERE code = '${links.controls.code}'`),
        '2,10,go-ms.example,https://example.com/ctl2?utm_source=ms');
    for (const t of ['meta', 'api_keys', 'links', 'link_days', 'domains', 'link_history', 'users']) {
        assert.ok(r.rows[t].source > 0, `${t} is empty: the test copies nothing there`);
        assert.equal(r.rows[t].written, r.rows[t].source, `${t}: a first copy writes every row`);
    }
}, { skip });

it('a rerun writes nothing', () => {
    const r = migrateStore();
    assertVerified(r);
    for (const [t, x] of Object.entries(r.rows)) assert.equal(x.written, 0, `${t} was written again: ${r.stdout}`);
}, { skip });

// Batches of 3 rows: every table spans several, so rows are removed between
// and across batch boundaries as well as after the last one.
it('clicks added to the SQLite store after a copy come over exactly once', async () => {
    await src.restart();
    for (let i = 0; i < 5; i++) assert.equal((await visit(src, links.gen1.code)).status, 302);
    await visit(src, links.gen1.code, { headers: { 'user-agent': BOT_UA } });
    // 20 more on gen0: its day row keeps only the newest 20 recent clicks,
    // and the target's row must become the source's.
    for (let i = 0; i < 20; i++) assert.equal((await visit(src, links.gen0.code)).status, 302);
    await flushed(src, links.gen1.code, 5);
    await flushed(src, links.gen0.code, 27);
    const unblock = await api(src, 'DELETE', '/api/admin/blocklist/unblocked.example', { key: admin });
    assert.equal(unblock.status, 204, unblock.text);
    before1 = await snapshot(src);
    totals = before1.totals;
    await src.stop();

    const r = migrateStore(url, ['--batch-rows', '3']);
    assertVerified(r);
    assert.equal(r.sums['link_days.clicks'][1], 15 + 5 + 20);
    assert.equal(r.sums['link_days.bots'][1], 4 + 1);
    // gen0's and gen1's rows of today, each rewritten (two more should the
    // clicks have crossed midnight).
    assert.ok(r.rows.link_days.written >= 2 && r.rows.link_days.written <= 4, r.stdout);
    // A row the source no longer has goes from the target too.
    assert.equal(r.rows.blocklist.written, 1);
    assert.equal(r.rows.blocklist.target, 1);
    const again = migrateStore(url, ['--batch-rows', '3']);
    assertVerified(again);
    assert.equal(again.sums['link_days.clicks'][1], 40);
    for (const [t, x] of Object.entries(again.rows)) assert.equal(x.written, 0, `${t} was written again`);
}, { skip });

it('a node on the copy answers as the SQLite server did', async () => {
    const node = await startServer({ db: path.join(tempDir(), 'unused.db'), baseUrl: BASE_URL, args: nodeArgs() });
    try {
        // Before any redirect here adds a click: the same links, stats and totals.
        const now = await snapshot(node);
        for (const name of Object.keys(links)) {
            assert.deepEqual(now.links[name].link, before1.links[name].link, `${name}: the link differs`);
            assert.deepEqual(now.links[name].stats, before1.links[name].stats, `${name}: the stats differ`);
        }
        assert.deepEqual(now.totals, totals);

        // The same keys: the old admin and user keys work, the revoked one does not.
        assert.equal((await api(node, 'GET', '/api/links', { key: admin })).status, 200);
        assert.equal((await api(node, 'GET', `/api/links/${links.byUser.code}`, { key: user })).status, 200);
        assert.equal((await api(node, 'GET', '/api/links', { key: revoked })).status, 401);

        // The same redirects.
        const status = async (l) => (await visit(node, l.code)).status;
        for (let i = 0; i < 5; i++) {
            const r = await visit(node, links[`gen${i}`].code);
            assert.equal(r.status, 302);
            assert.equal(r.headers.get('location'), `https://example.com/gen/${i}`);
        }
        assert.equal((await visit(node, links.alias.code)).headers.get('location'), 'https://example.com/alias?x=1');
        assert.equal(await status(links.perm), 301);
        assert.equal(await status(links.expiring), 302);
        assert.equal(await status(links.byUser), 302);
        assert.equal(await status(links.deleted), 410);
        assert.equal(await status(links.disabled), 410);
        assert.equal(await status(links.expired), 410);

        // New codes collide with none of the old ones; a tombstone's alias stays taken.
        const old = new Set(Object.values(links).map((l) => l.code));
        for (let i = 0; i < 30; i++) {
            const l = await createLink(node, admin, { url: `https://example.com/new/${i}` });
            assert.ok(!old.has(l.code), `new code ${l.code} was already handed out`);
            old.add(l.code);
        }
        const taken = await api(node, 'POST', '/api/links', { key: admin,
            body: { url: 'https://example.com/again', alias: links.deleted.code } });
        assert.equal(taken.status, 409, taken.text);

        // The blocklist and the idempotency records came along.
        const blocked = await api(node, 'POST', '/api/links', { key: admin, body: { url: 'https://blocked.example/x' } });
        assert.equal(blocked.status, 400, blocked.text);
        await createLink(node, admin, { url: 'https://unblocked.example/x' });
        const replay = await api(node, 'POST', '/api/links', { key: admin, body: { url: 'https://example.com/idem' },
            headers: { 'idempotency-key': 'ms-idem-1' } });
        assert.ok(replay.status === 200 || replay.status === 201, replay.text);
        assert.equal(replay.json.code, links.idem.code);

        // Clicks on the copy are counted on top of the copied ones.
        await flushed(node, links.gen0.code, 28);
    } finally {
        await node.stop();
    }

    // The node counted clicks into the target: a copy now would overwrite them.
    const r = migrateStore();
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /refusing to copy .*click checkpoint/);
}, { skip });
