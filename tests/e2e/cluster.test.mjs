// cluster.test.mjs - several shortd nodes sharing one PostgreSQL store and one
// Redis cache (issue 5): an alias race over 3 nodes has one winner; 4 nodes
// clicking 100 links while every aggregator flushes and compacts count
// every link exactly; codes made on different nodes never collide; an
// Idempotency-Key reused on two nodes makes one link; a cached miss does not
// hide a new link for long;
// a delete, disable or enable on one node reaches every node's cache within
// 1 s; Redis killed (and stalled) under load → no failed redirect, creates go
// on, and the nodes use Redis again once it is back; PostgreSQL stopped →
// cached links still redirect, an uncached code answers 503 with Retry-After,
// a create answers 503, no crash, and clicks made meanwhile are counted
// exactly once PostgreSQL is back.
//
// Needs SHORTD_TEST_PG (tests/pg.sh) and SHORTD_TEST_REDIS (tests/redis.sh),
// and for the fault tests what those scripts export to stop and restart the
// servers: run as
//     tests/pg.sh tests/redis.sh node --test tests/e2e/cluster.test.mjs
// Every test is skipped when either URL is unset. The fault tests stop the
// shared PostgreSQL and kill the shared Redis: do not run this file at the
// same time as other files that use them. The test works in a PostgreSQL
// schema of its own (reached through the URL's search_path) and drops it.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import {
    BROWSER_UA, Conn, api, cli, createLink, it, lastWord, poll, sleep, tempDir, unique, visit,
} from './harness.mjs';
import { migratedSchema, psql, startNode } from './cluster-kit.mjs';

const PG = process.env.SHORTD_TEST_PG || '';
const REDIS = process.env.SHORTD_TEST_REDIS || '';
const skip = PG && REDIS ? false
    : 'SHORTD_TEST_PG and SHORTD_TEST_REDIS must both be set (tests/pg.sh tests/redis.sh node --test ...)';

const SCHEMA = `cluster_${process.pid}`;
const BOUND_MS = 1000;      // the contract's propagation bound
const SLACK_MS = 300;       // the test's own polling and an ASan build's slowness

let url;                    // the store URL of this test's schema
let admin;                  // an admin key made with `shortd key create --admin`
let A, B, C, D;             // four nodes on the same store and cache
let nodes = [];

/* ------------------------------------------------------------ postgres */

/* tests/pg.sh exports how to stop and start its PostgreSQL. */
const PGCTL = {
    ctl: process.env.SHORTD_TEST_PGCTL,
    data: process.env.SHORTD_TEST_PGDATA,
    opts: process.env.SHORTD_TEST_PGOPTS,
    log: process.env.SHORTD_TEST_PGLOG,
    user: process.env.SHORTD_TEST_PGUSER,
};
const pgCtlMissing = !PGCTL.ctl || !PGCTL.data || PGCTL.opts === undefined
    ? 'tests/pg.sh exports no SHORTD_TEST_PGCTL / SHORTD_TEST_PGDATA / SHORTD_TEST_PGOPTS' : false;

function pgCtl(args) {
    const argv = [PGCTL.ctl, '-D', PGCTL.data, ...args];
    const [cmd, ...rest] = PGCTL.user ? ['runuser', '-u', PGCTL.user, '--', ...argv] : argv;
    const r = spawnSync(cmd, rest, { encoding: 'utf8', timeout: 60_000 });
    if (r.error) throw new Error(`cannot run ${argv.join(' ')}: ${r.error.message}`);
    assert.equal(r.status, 0, `${argv.join(' ')} failed (${r.status}): ${r.stdout}${r.stderr}`);
}

let pgDown = false;
function pgStop() {
    pgDown = true;
    pgCtl(['-m', 'fast', '-w', '-t', '30', 'stop']);
}
function pgStart() {
    pgCtl(['-l', PGCTL.log || path.join(tempDir(), 'pg.log'), '-w', '-t', '60', '-o', PGCTL.opts, 'start']);
    pgDown = false;
}

/* --------------------------------------------------------------- redis */

const REDIS_PORT = REDIS ? Number(new URL(REDIS).port || 6379) : 0;

/* tests/redis.sh exports its config (SHORTD_TEST_REDIS_CONF): the pid file
 * is named there, and `redis-server CONF --daemonize yes` starts it again on
 * the same port, writing the same pid file (which redis.sh stops at the end). */
const REDIS_CONF = process.env.SHORTD_TEST_REDIS_CONF || '';
const redisCtlMissing = REDIS_CONF ? false : 'tests/redis.sh exports no SHORTD_TEST_REDIS_CONF';

function redisCli(args, timeoutMs = 10_000) {
    return spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(REDIS_PORT), ...args],
        { encoding: 'utf8', timeout: timeoutMs });
}

const redisPing = () => redisCli(['ping'], 2000).stdout?.trim() === 'PONG';

function redisPid() {
    const conf = fs.readFileSync(REDIS_CONF, 'utf8');
    const m = /^pidfile\s+(\S+)/m.exec(conf);
    assert.ok(m, `${REDIS_CONF} names no pidfile`);
    try {
        return Number(fs.readFileSync(m[1], 'utf8').trim()) || null;
    } catch {
        return null;
    }
}

let redisDown = false;
async function redisKill() {
    const pid = redisPid();
    assert.ok(pid, `no pid in the pid file of ${REDIS_CONF}`);
    redisDown = true;
    process.kill(pid, 'SIGKILL');
    assert.ok(await poll(() => !redisPing(), { timeoutMs: 5000 }), `redis-server ${pid} survived SIGKILL`);
}

async function redisStart() {
    const r = spawnSync('redis-server', [REDIS_CONF, '--daemonize', 'yes'], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.status, 0, `redis-server ${REDIS_CONF} --daemonize yes failed: ${r.stdout}${r.stderr}`);
    assert.ok(await poll(redisPing, { timeoutMs: 10_000 }), 'the restarted Redis does not answer PING');
    redisDown = false;
}

function redisDbsize() {
    const r = redisCli(['dbsize']);
    assert.equal(r.status, 0, `redis-cli dbsize: ${r.stderr}`);
    return Number(r.stdout.trim());
}

/* ---------------------------------------------------------------- nodes */

function keyCreate(name, { isAdmin = false } = {}) {
    const args = ['key', 'create', '--store', url, '--name', name];
    if (isAdmin) args.push('--admin');
    const r = cli(args);
    assert.equal(r.code, 0, `shortd key create --name ${name}: ${r.stdout}${r.stderr}`);
    const key = lastWord(r.stdout);
    assert.ok(key, `shortd key create printed no key: ${r.stdout}`);
    return key;
}

/* Each node compacts the link days it appended every second: the nodes'
 * rounds meet in the shared store while the clicks come. */
const node = (name) => startNode({
    url, redis: REDIS, name, adminKey: admin,
    args: ['--click-flush-ms', '50', '--fold-compact-rows', '100', '--fold-compact-every', '1'],
});

/* One value read from the store with psql. */
function sqlValue(text) {
    const r = spawnSync('psql', ['-X', '-q', '-At', '-d', url, '-c', text], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
}

before(async () => {
    if (skip) return;
    url = migratedSchema(PG, SCHEMA);
    admin = keyCreate('cluster-admin', { isAdmin: true });
    nodes = await Promise.all(['node-a', 'node-b', 'node-c', 'node-d'].map(node));
    [A, B, C, D] = nodes;
});

after(async () => {
    if (skip) return;
    // A failed fault test must not leave the servers down for the others.
    if (pgDown) try { pgStart(); } catch (e) { console.error(e.message); }
    if (redisDown) try { await redisStart(); } catch (e) { console.error(e.message); }
    const errors = [];
    for (const s of nodes) {
        if (!s) continue;
        try {
            await s.stop();
        } catch (e) {
            errors.push(e);
        }
    }
    try { psql(PG, `DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`); } catch (e) { errors.push(e); }
    if (errors.length) throw errors[0];
});

/* ------------------------------------------------------------- helpers */

function reqText(port, p) {
    return `GET ${p} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUser-Agent: ${BROWSER_UA}\r\n\r\n`;
}

/* Pipelines 'codes' (one GET each) on a kept-alive connection to 'node' in
 * batches; returns {ok, other: [{code, status, text}]}. */
async function blast(node, codes, batch = 100) {
    const conn = await Conn.open(node.port);
    let ok = 0;
    const other = [];
    try {
        for (let i = 0; i < codes.length; i += batch) {
            const part = codes.slice(i, i + batch);
            conn.write(part.map((c) => reqText(node.port, `/${c}`)).join(''));
            for (const c of part) {
                const r = await conn.read({ timeoutMs: 30_000 });
                assert.ok(r, `${node.name}: connection closed after ${ok + other.length} of ${codes.length} clicks`);
                if (r.status === 302) ok++;
                else other.push({ code: c, status: r.status, text: r.text.slice(0, 200) });
            }
        }
    } finally {
        conn.destroy();
    }
    return { ok, other };
}

/* Prometheus text → {name: summed value}. */
async function metrics(node) {
    const r = await api(node, 'GET', '/metrics', { timeoutMs: 10_000 });
    assert.equal(r.status, 200, `${node.name} GET /metrics: ${r.status} ${r.text.slice(0, 300)}`);
    const out = {};
    for (const line of r.text.split('\n')) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/.exec(line);
        if (m) out[m[1]] = (out[m[1]] || 0) + Number(m[3]);
    }
    return out;
}

/* Polls GET /CODE on 'node' until it answers 'want'; returns the ms it took
 * (from 't0') or throws with the last answer after timeoutMs. */
async function waitStatus(node, code, want, t0, timeoutMs = 5000) {
    let last;
    for (;;) {
        last = await visit(node, code);
        if (last.status === want) return Date.now() - t0;
        if (Date.now() - t0 > timeoutMs) {
            throw new Error(`${node.name}: GET /${code} still answers ${last.status} (want ${want}) ` +
                `${Date.now() - t0} ms later: ${last.text.slice(0, 200)}`);
        }
        await sleep(20);
    }
}

/* Keeps redirecting through one node, on one kept-alive connection, until
 * stop(): small pipelined batches over 'links' (an array that may grow), each
 * answer checked (302 and the link's URL). */
class Loader {
    constructor(node, links) {
        this.node = node;
        this.links = links;
        this.ok = 0;
        this.failures = [];
        this.maxBatchMs = 0;
        this.stopped = false;
        this.done = this._run();
    }

    async _run() {
        let conn = await Conn.open(this.node.port);
        let i = 0;
        try {
            while (!this.stopped) {
                const part = [];
                for (let k = 0; k < 5; k++) part.push(this.links[i++ % this.links.length]);
                const t0 = Date.now();
                conn.write(part.map((l) => reqText(this.node.port, `/${l.code}`)).join(''));
                for (const l of part) {
                    let r;
                    try {
                        r = await conn.read({ timeoutMs: 10_000 });
                    } catch (e) {
                        r = { status: 'timeout', text: e.message, headers: {} };
                    }
                    if (!r) {
                        this.failures.push({ at: Date.now(), code: l.code, status: 'connection closed' });
                        conn.destroy();
                        conn = await Conn.open(this.node.port);
                        break;
                    }
                    if (r.status === 302 && r.headers.location === l.url) this.ok++;
                    else {
                        this.failures.push({ at: Date.now(), code: l.code, status: r.status,
                            location: r.headers.location, text: String(r.text).slice(0, 200) });
                        if (r.status === 'timeout') {
                            conn.destroy();
                            conn = await Conn.open(this.node.port);
                            break;
                        }
                    }
                }
                this.maxBatchMs = Math.max(this.maxBatchMs, Date.now() - t0);
                await sleep(10);
            }
        } finally {
            conn.destroy();
        }
    }

    async stop() {
        this.stopped = true;
        await this.done;
        return this;
    }
}

const spread = (i) => nodes[i % nodes.length];

/* Waits until every node reports shortd_redis_up 1, sending each one a
 * lookup of an unknown code (which goes to Redis) meanwhile, so that a node
 * that only retries Redis when it needs it gets the chance. Returns the ms
 * each took from t0. */
const REDIS_BACK_MS = 15_000;
async function redisBackOnEveryNode(t0) {
    const ms = {};
    await Promise.all(nodes.map(async (n) => {
        let m;
        const up = await poll(async () => {
            await visit(n, unique('probe-'));
            m = await metrics(n);
            return m.shortd_redis_up === 1;
        }, { timeoutMs: REDIS_BACK_MS, intervalMs: 200 });
        assert.ok(up, `${n.name}: shortd_redis_up ${m.shortd_redis_up} ${REDIS_BACK_MS} ms after Redis was back`);
        ms[n.name] = Date.now() - t0;
    }));
    return ms;
}

/* ========================================================== correctness */

it('3 nodes × 20 concurrent claims of one alias: exactly one 201', async () => {
    const alias = unique('race-');
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => api([A, B, C][i % 3], 'POST', '/api/links',
        { key: admin, body: { url: `https://example.com/race/${i}`, alias } })));
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 201).length, 1, `statuses: ${statuses}\n` +
        results.filter((r) => r.status !== 409).map((r) => r.text.slice(0, 200)).join('\n'));
    assert.equal(statuses.filter((s) => s === 409).length, 19, `statuses: ${statuses}`);
    const winner = results[statuses.indexOf(201)].json.url;
    for (const n of nodes) {
        const r = await visit(n, alias);
        assert.equal(r.status, 302, `${n.name}: ${r.text}`);
        assert.equal(r.headers.get('location'), winner, `${n.name} redirects to another claimant's URL`);
    }
}, { skip });

it('4 nodes × 25 pipelined clicks on each of 100 links while every aggregator flushes: every link exactly 100',
    async (t) => {
        const key = keyCreate('cluster-clicks');
        const links = [];
        for (let i = 0; i < 100; i += 20) {
            links.push(...await Promise.all(Array.from({ length: 20 }, (_, j) =>
                createLink(spread(i + j), key, { url: `https://example.com/clicks/${i + j}` }))));
        }
        const logged = nodes.map((n) => n.stderr().length);
        const t0 = Date.now();
        // Per node: two connections, each 1,250 clicks, every link in an order
        // of its own, so the nodes' batches overlap on every link.
        const jobs = [];
        nodes.forEach((n, ni) => {
            for (let ci = 0; ci < 2; ci++) {
                const codes = [];
                for (let rep = 0; rep < 25; rep++) {
                    if (rep % 2 !== ci) continue;
                    for (let j = 0; j < 100; j++) codes.push(links[(j * 7 + ni * 13 + rep) % 100].code);
                }
                jobs.push(blast(n, codes).then((r) => ({ node: n.name, n: codes.length, ...r })));
            }
        });
        const results = await Promise.all(jobs);
        t.diagnostic(`10,000 clicks over 4 nodes in ${Date.now() - t0} ms`);
        for (const r of results) {
            assert.deepEqual({ ok: r.ok, other: r.other.slice(0, 5) }, { ok: r.n, other: [] }, `${r.node}`);
        }
        assert.equal(results.reduce((a, r) => a + r.n, 0), 10_000);

        let last;
        let round = 0;
        const ok = await poll(async () => {
            const r = await api(spread(round++), 'GET', '/api/links?limit=1000', { key });
            assert.equal(r.status, 200, r.text);
            last = r.json;
            assert.equal(last.length, 100);
            for (const l of last) assert.ok(l.clicks <= 100, `${l.code} went past 100: ${l.clicks}`);
            return last.every((l) => l.clicks === 100);
        }, { timeoutMs: 20_000, intervalMs: 200 });
        assert.ok(ok, `clicks per link after 20 s: ${JSON.stringify(last.map((l) => l.clicks))}`);
        await sleep(300);    // no late double count either
        const failedFlushes = nodes.map((n, i) =>
            (n.stderr().slice(logged[i]).match(/storing \d+ clicks failed/g) || []).length);
        if (failedFlushes.some(Boolean)) t.diagnostic(`failed (retried) click flushes per node: ${failedFlushes}`);
        for (let i = 0; i < 100; i += 10) {
            await Promise.all(links.slice(i, i + 10).map(async (l, j) => {
                const n = spread(i + j + 1);
                const r = await api(n, 'GET', `/api/links/${l.code}/stats`, { key });
                assert.equal(r.status, 200, `${n.name} stats of ${l.code}: ${r.text}`);
                const s = r.json;
                assert.equal(s.clicks, 100, `${l.code} on ${n.name}: clicks ${s.clicks}`);
                assert.equal(s.total_clicks, 100, `${l.code} on ${n.name}: total_clicks ${s.total_clicks}`);
                assert.equal(s.bot_clicks, 0, `${l.code}: bot_clicks`);
                // One client address and one user agent on every node: the
                // daily salt is shared through the store, so one visitor.
                assert.equal(s.unique_visitors, 1, `${l.code}: unique_visitors ${s.unique_visitors}, want 1 ` +
                    '(one client address and user agent on every node)');
            }));
        }
        // The four nodes' rounds of compacting took every appended row once.
        const codes = links.map((l) => `'${l.code}'`).join(',');
        assert.ok(await poll(async () => sqlValue(
            `SELECT count(*) FROM link_days_pending WHERE code IN (${codes})`) === '0', { timeoutMs: 20_000 }));
        assert.equal(sqlValue(`SELECT sum(clicks) FROM link_days WHERE code IN (${codes})`), '10000');
        assert.equal(sqlValue(`SELECT count(*) FROM link_days WHERE code IN (${codes})`), '100');
    }, { skip });

it('300 links created at once across 3 nodes: all codes distinct, each redirects everywhere', async () => {
    const key = keyCreate('cluster-codes');
    const made = [];
    // 3 nodes × 4 clients × 25 sequential creates.
    await Promise.all([A, B, C].flatMap((n, ni) => Array.from({ length: 4 }, async (_, ci) => {
        for (let i = 0; i < 25; i++) {
            const u = `https://example.com/codes/${ni}/${ci}/${i}`;
            made.push({ ...(await createLink(n, key, { url: u })), node: n.name });
        }
    })));
    assert.equal(made.length, 300);
    const codes = made.map((l) => l.code);
    const dup = codes.filter((c, i) => codes.indexOf(c) !== i);
    assert.equal(dup.length, 0, `duplicate codes: ${dup.map((c) => made.filter((l) => l.code === c)
        .map((l) => `${c} on ${l.node} → ${l.url}`).join(', ')).join('; ')}`);
    for (let i = 0; i < 300; i += 30) {
        const l = made[i];
        const r = await visit(D, l.code);
        assert.equal(r.status, 302, `${l.code} (made on ${l.node}) on node-d: ${r.status} ${r.text}`);
        assert.equal(r.headers.get('location'), l.url);
    }
    const list = await api(D, 'GET', '/api/links?limit=1000', { key });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.length, 300);
}, { skip });

it('one Idempotency-Key used on several nodes at once makes one link', async () => {
    const key = keyCreate('cluster-idem');
    const idem = unique('idem-');
    const body = { url: 'https://example.com/idem/cluster' };
    const results = await Promise.all([A, B, C, A, B, C].map((n) =>
        api(n, 'POST', '/api/links', { key, body, headers: { 'idempotency-key': idem } })));
    const statuses = results.map((r) => r.status);
    assert.deepEqual(statuses, Array(6).fill(201),
        `statuses ${statuses}: ${results.map((r) => r.text.slice(0, 200)).join('\n')}`);
    const codes = new Set(results.map((r) => r.json.code));
    assert.equal(codes.size, 1, `one Idempotency-Key, several codes: ${[...codes]}`);
    const fresh = results.filter((r) => r.headers.get('idempotent-replayed') !== 'true');
    assert.equal(fresh.length, 1, 'exactly one answer is the original, the others are replays');
    const again = await api(D, 'POST', '/api/links', { key, body, headers: { 'idempotency-key': idem } });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.json.code, [...codes][0]);
    const list = await api(D, 'GET', '/api/links?state=all&limit=1000', { key });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.length, 1, `links: ${list.json.map((l) => l.code)}`);
}, { skip });

it('a link created on one node redirects on the others at once; a cached miss hides it for at most 1 s',
    async (t) => {
        const l = await createLink(A, admin, { url: 'https://example.com/cross/generated' });
        for (const n of [B, C, D]) {
            const r = await visit(n, l.code);
            assert.equal(r.status, 302, `${n.name}: GET /${l.code} right after the create on node-a: ${r.text}`);
            assert.equal(r.headers.get('location'), l.url);
        }

        const alias = unique('late-');
        for (const n of [B, C]) {
            const r = await visit(n, alias);
            assert.equal(r.status, 404, `${n.name}: unknown alias: ${r.status} ${r.text}`);
        }
        const r = await api(A, 'POST', '/api/links', { key: admin, body: { url: 'https://example.com/cross/late', alias } });
        assert.equal(r.status, 201, r.text);
        const t0 = Date.now();
        const msB = await waitStatus(B, alias, 302, t0);
        const msC = await waitStatus(C, alias, 302, t0);
        t.diagnostic(`the cached miss gave way after ${msB} ms on node-b, ${msC} ms on node-c`);
        assert.ok(msB <= BOUND_MS + SLACK_MS, `node-b kept its cached miss for ${msB} ms`);
        assert.ok(msC <= BOUND_MS + SLACK_MS, `node-c kept its cached miss for ${msC} ms`);
        assert.equal((await visit(D, alias)).status, 302, 'node-d never looked: at once');
    }, { skip });

it('a delete, a disable and an enable on one node reach the cache of every other node within 1 s', async (t) => {
    const del = await createLink(A, admin, { url: 'https://example.com/cross/delete' });
    const dis = await createLink(B, admin, { url: 'https://example.com/cross/disable' });
    // Every node has both cached (in process and in Redis).
    for (const n of nodes) {
        for (const l of [del, dis]) {
            for (let i = 0; i < 2; i++) assert.equal((await visit(n, l.code)).status, 302, `${n.name} ${l.code}`);
        }
    }

    const d = await api(A, 'DELETE', `/api/links/${del.code}`, { key: admin });
    assert.equal(d.status, 204, d.text);
    let t0 = Date.now();
    assert.equal((await visit(A, del.code)).status, 410, 'node-a itself, at once');
    const ms = {};
    await Promise.all([B, C, D].map(async (n) => { ms[n.name] = await waitStatus(n, del.code, 410, t0); }));
    t.diagnostic(`delete on node-a → 410 after ${JSON.stringify(ms)} ms`);
    for (const [n, v] of Object.entries(ms)) assert.ok(v <= BOUND_MS + SLACK_MS, `${n}: 410 only after ${v} ms`);

    const x = await api(B, 'POST', `/api/links/${dis.code}/disable`, { key: admin });
    assert.equal(x.status, 200, x.text);
    t0 = Date.now();
    await Promise.all([A, C, D].map(async (n) => { ms[n.name] = await waitStatus(n, dis.code, 410, t0); }));
    t.diagnostic(`disable on node-b → 410 after ${JSON.stringify(ms)} ms`);
    for (const [n, v] of Object.entries(ms)) assert.ok(v <= BOUND_MS + SLACK_MS, `${n}: 410 only after ${v} ms`);

    const e = await api(C, 'POST', `/api/links/${dis.code}/enable`, { key: admin });
    assert.equal(e.status, 200, e.text);
    t0 = Date.now();
    const back = {};
    await Promise.all([A, B, D].map(async (n) => { back[n.name] = await waitStatus(n, dis.code, 302, t0); }));
    t.diagnostic(`enable on node-c → 302 after ${JSON.stringify(back)} ms`);
    for (const [n, v] of Object.entries(back)) assert.ok(v <= BOUND_MS + SLACK_MS, `${n}: 302 only after ${v} ms`);
}, { skip });

it('max_clicks across nodes: 4 nodes × 30 concurrent clicks of a link limited to 40 → exactly 40 redirects', async () => {
    const l = await createLink(A, admin, { url: 'https://example.com/cross/limited', max_clicks: 40 });
    const rs = await Promise.all(nodes.flatMap((n) => Array.from({ length: 30 }, (_, i) => visit(n, `${l.code}?i=${i}`))));
    const ok = rs.filter((r) => r.status === 302).length;
    assert.equal(ok, 40, `statuses: ${JSON.stringify(rs.map((r) => r.status))}`);
    assert.equal(rs.filter((r) => r.status === 410).length, 120 - 40);
    for (const n of nodes) assert.equal((await visit(n, l.code)).status, 410, n.name);
}, { skip });

it('a PATCH on one node reaches the cache of every other node within 1 s', async (t) => {
    const l = await createLink(A, admin, { url: 'https://example.com/cross/patch-before' });
    for (const n of nodes) {
        for (let i = 0; i < 2; i++) assert.equal((await visit(n, l.code)).headers.get('location'), 'https://example.com/cross/patch-before');
    }
    const p = await api(B, 'PATCH', `/api/links/${l.code}`, { key: admin, body: { url: 'https://example.com/cross/patch-after' } });
    assert.equal(p.status, 200, p.text);
    const t0 = Date.now();
    const ms = {};
    await Promise.all(nodes.map(async (n) => {
        const seen = await poll(async () => (await visit(n, l.code)).headers.get('location') === 'https://example.com/cross/patch-after',
            { timeoutMs: BOUND_MS + SLACK_MS, intervalMs: 10 });
        assert.ok(seen, `${n.name} still sends the old destination`);
        ms[n.name] = Date.now() - t0;
    }));
    t.diagnostic(`PATCH on node-b → new destination after ${JSON.stringify(ms)} ms`);
    const h = await api(C, 'GET', `/api/links/${l.code}/history`, { key: admin });
    assert.equal(h.status, 200, h.text);
    assert.equal(h.json.length, 1);
    assert.equal(h.json[0].new_url, 'https://example.com/cross/patch-after');
}, { skip });

/* =============================================================== faults */

it('Redis killed under load: no failed redirect, creates go on, invalidations go through PostgreSQL, ' +
    'and the nodes use Redis again once it is back', async (t) => {
    const key = keyCreate('cluster-redis');
    const links = [];
    for (let i = 0; i < 20; i++) links.push(await createLink(spread(i), key, { url: `https://example.com/redis/${i}` }));
    const before = {};
    for (const n of nodes) before[n.name] = await metrics(n);
    for (const n of nodes) {
        assert.equal(before[n.name].shortd_redis_up, 1, `${n.name}: shortd_redis_up before the kill`);
        assert.ok('shortd_redis_errors_total' in before[n.name], `${n.name}: /metrics has no shortd_redis_errors_total`);
    }
    const loaders = [new Loader(A, links), new Loader(B, links)];
    let stopped = false;
    try {
        await sleep(500);
        await redisKill();
        const tKill = Date.now();

        // Creates keep working, on every node; the new links (in no cache)
        // join the load on node-a and node-b, whose lookups now go to PostgreSQL.
        for (let i = 0; i < 12; i++) {
            const n = [C, D, A][i % 3];
            const r = await api(n, 'POST', '/api/links',
                { key, body: { url: `https://example.com/redis/down/${i}` }, timeoutMs: 10_000 });
            assert.equal(r.status, 201, `${n.name}: create with Redis down: ${r.status} ${r.text}`);
            links.push(r.json);
        }
        t.diagnostic(`12 creates with Redis down in ${Date.now() - tKill} ms`);

        // The nodes notice and say so.
        for (const n of [A, B]) {
            let m;
            const down = await poll(async () => {
                m = await metrics(n);
                return m.shortd_redis_up === 0 &&
                    m.shortd_redis_errors_total > before[n.name].shortd_redis_errors_total;
            }, { timeoutMs: 5000, intervalMs: 100 });
            assert.ok(down, `${n.name} with Redis down: shortd_redis_up ${m.shortd_redis_up}, ` +
                `shortd_redis_errors_total ${before[n.name].shortd_redis_errors_total} → ${m.shortd_redis_errors_total}`);
        }

        // A delete still reaches every node's cache (PostgreSQL NOTIFY).
        const gone = await createLink(C, key, { url: 'https://example.com/redis/down/delete' });
        for (const n of [B, D]) assert.equal((await visit(n, gone.code)).status, 302, `${n.name}: ${gone.code}`);
        const d = await api(C, 'DELETE', `/api/links/${gone.code}`, { key, timeoutMs: 10_000 });
        assert.equal(d.status, 204, `delete with Redis down: ${d.text}`);
        const t0 = Date.now();
        const ms = {};
        await Promise.all([B, D].map(async (n) => { ms[n.name] = await waitStatus(n, gone.code, 410, t0); }));
        t.diagnostic(`with Redis down, delete on node-c → 410 after ${JSON.stringify(ms)} ms`);
        for (const [n, v] of Object.entries(ms)) assert.ok(v <= BOUND_MS + SLACK_MS, `${n}: 410 only after ${v} ms`);

        await sleep(500);
        await redisStart();
        const tBack = Date.now();
        const backMs = await redisBackOnEveryNode(tBack);
        t.diagnostic(`back on Redis after ${JSON.stringify(backMs)} ms (traffic on every node meanwhile)`);
        await sleep(500);
        stopped = true;
        for (const l of loaders) await l.stop();
    } finally {
        if (!stopped) for (const l of loaders) await l.stop();
        if (redisDown) await redisStart();
    }
    for (const l of loaders) {
        t.diagnostic(`${l.node.name}: ${l.ok} redirects, ${l.failures.length} failed, slowest batch ${l.maxBatchMs} ms`);
        assert.deepEqual(l.failures.slice(0, 10), [], `${l.node.name}: failed redirects while Redis was killed`);
        assert.ok(l.ok > 50, `${l.node.name}: only ${l.ok} redirects`);
    }

    // Used again: links looked up now land in the restarted (empty) Redis, and
    // no more errors are counted.
    const size0 = redisDbsize();
    const errs0 = {};
    for (const n of nodes) errs0[n.name] = (await metrics(n)).shortd_redis_errors_total;
    const fresh = [];
    for (let i = 0; i < 5; i++) fresh.push(await createLink(A, key, { url: `https://example.com/redis/back/${i}` }));
    for (const l of fresh) for (const n of [B, C]) assert.equal((await visit(n, l.code)).status, 302);
    const grew = await poll(() => redisDbsize() > size0, { timeoutMs: 3000 });
    assert.ok(grew, `Redis holds ${redisDbsize()} keys (${size0} before 5 creates and 10 lookups): not used again`);
    for (const n of nodes) {
        const e = (await metrics(n)).shortd_redis_errors_total;
        assert.equal(e, errs0[n.name], `${n.name}: shortd_redis_errors_total still grows with Redis back`);
    }
}, { skip: skip || redisCtlMissing });

it('Redis stalled (DEBUG SLEEP): redirects and creates answer quickly from PostgreSQL', async (t) => {
    const key = keyCreate('cluster-stall');
    const links = [];
    for (let i = 0; i < 10; i++) links.push(await createLink(spread(i), key, { url: `https://example.com/stall/${i}` }));
    const redisErrors = async () => {
        let n = 0;
        for (const x of nodes) n += (await metrics(x)).shortd_redis_errors_total;
        return n;
    };
    const err0 = await redisErrors();
    const loaders = [new Loader(A, links), new Loader(B, links)];
    let stall;
    assert.ok(redisPing(), 'Redis is not up');
    const slow = [];
    try {
        await sleep(200);
        stall = new Promise((resolve) => {
            const p = spawn('redis-cli', ['-h', '127.0.0.1', '-p', String(REDIS_PORT), 'DEBUG', 'SLEEP', '3']);
            p.on('close', resolve);
            p.on('error', resolve);
        });
        await sleep(100);
        // New links (in no node's cache): created on node-c, looked up on
        // node-d, while Redis answers nothing.
        for (let i = 0; i < 5; i++) {
            let t0 = Date.now();
            const r = await api(C, 'POST', '/api/links',
                { key, body: { url: `https://example.com/stall/new/${i}` }, timeoutMs: 10_000 });
            const createMs = Date.now() - t0;
            assert.equal(r.status, 201, `create on a stalled Redis: ${r.status} ${r.text}`);
            t0 = Date.now();
            const v = await visit(D, r.json.code);
            const visitMs = Date.now() - t0;
            assert.equal(v.status, 302, `redirect of a new link on a stalled Redis: ${v.status} ${v.text}`);
            slow.push([createMs, visitMs]);
        }
    } finally {
        await stall;
        for (const l of loaders) await l.stop();
    }
    t.diagnostic(`create / redirect ms during the stall: ${JSON.stringify(slow)}`);
    for (const [c, v] of slow) {
        assert.ok(c < 1500 && v < 1500, `a request waited for the stalled Redis: create ${c} ms, redirect ${v} ms`);
    }
    for (const l of loaders) {
        t.diagnostic(`${l.node.name}: ${l.ok} redirects, slowest batch ${l.maxBatchMs} ms`);
        assert.deepEqual(l.failures.slice(0, 10), [], `${l.node.name}: failed redirects while Redis was stalled`);
    }
    const err1 = await redisErrors();
    assert.ok(err1 > err0, `shortd_redis_errors_total of all nodes ${err0} → ${err1}: the timeouts were not counted`);
    // And it recovers.
    const backMs = await redisBackOnEveryNode(Date.now());
    t.diagnostic(`back on Redis after ${JSON.stringify(backMs)} ms after the stall`);
}, { skip: skip || redisCtlMissing });

it('PostgreSQL stopped: cached links redirect, an uncached code gets 503 + Retry-After, creates get 503, ' +
    'no crash; the clicks made meanwhile are counted exactly once it is back', async (t) => {
    const key = keyCreate('cluster-pg');
    const links = [];
    for (let i = 0; i < 4; i++) links.push(await createLink(A, key, { url: `https://example.com/pgdown/${i}` }));
    // Cached on node-a and node-b: two clicks on each link.
    for (const l of links) for (const n of [A, B]) assert.equal((await visit(n, l.code)).status, 302);
    const [p1] = links;
    // Right after PostgreSQL returns, a node may answer 503 until it has
    // reconnected: retried for up to 5 s (and counted in a diagnostic).
    let retried503 = 0;
    const stats = async (n, code) => {
        const t0 = Date.now();
        for (;;) {
            const r = await api(n, 'GET', `/api/links/${code}/stats`, { key });
            if (r.status === 503 && Date.now() - t0 < 5000) {
                retried503++;
                await sleep(100);
                continue;
            }
            assert.equal(r.status, 200, `${n.name} stats of ${code}: ${r.status} ${r.text}`);
            return r.json;
        }
    };
    assert.ok(await poll(async () => (await stats(C, p1.code)).clicks === 2, { timeoutMs: 10_000 }),
        `${p1.code}: the 2 clicks before the stop were never counted`);

    // A link that no cache holds: made on node-d, never visited, Redis emptied.
    const unc = await createLink(D, key, { url: 'https://example.com/pgdown/uncached' });
    const fl = redisCli(['flushall']);
    assert.equal(fl.status, 0, `redis-cli flushall: ${fl.stderr}`);

    pgStop();
    const tStop = Date.now();
    try {
        // Cached links redirect.
        for (const l of links) {
            for (const n of [A, B]) {
                const r = await visit(n, l.code);
                assert.equal(r.status, 302, `${n.name} cached ${l.code} with PostgreSQL down: ${r.status} ${r.text}`);
                assert.equal(r.headers.get('location'), l.url);
            }
        }
        // A link in no cache, and an unknown code: no node can tell, so 503
        // with Retry-After, quickly.
        const nobody = unique('nopg-');
        for (const [n, code] of [[C, unc.code], [B, unc.code], [C, nobody], [D, nobody]]) {
            const t0 = Date.now();
            const r = await api(n, 'GET', `/${code}`, { headers: { 'user-agent': BROWSER_UA }, timeoutMs: 15_000 });
            const ms = Date.now() - t0;
            assert.equal(r.status, 503, `${n.name}: GET /${code} with PostgreSQL down: ${r.status} ${r.text}`);
            assert.match(r.headers.get('retry-after') || '', /^\d+$/, `${n.name}: 503 without Retry-After`);
            assert.ok(ms < 10_000, `${n.name}: the 503 took ${ms} ms`);
        }
        // Creates answer 503.
        for (const n of [A, D]) {
            const t0 = Date.now();
            const r = await api(n, 'POST', '/api/links',
                { key, body: { url: 'https://example.com/pgdown/new' }, timeoutMs: 15_000 });
            const ms = Date.now() - t0;
            assert.equal(r.status, 503, `${n.name}: create with PostgreSQL down: ${r.status} ${r.text}`);
            t.diagnostic(`${n.name}: create → 503 in ${ms} ms, Retry-After ${r.headers.get('retry-after')}`);
            assert.ok(ms < 10_000, `${n.name}: the 503 took ${ms} ms`);
        }
        // Clicks meanwhile: the 2 above, then 30 on node-a and 20 on node-b, kept-alive.
        const ra = await blast(A, Array(30).fill(p1.code), 10);
        const rb = await blast(B, Array(20).fill(p1.code), 10);
        assert.deepEqual(ra, { ok: 30, other: [] }, 'node-a clicks with PostgreSQL down');
        assert.deepEqual(rb, { ok: 20, other: [] }, 'node-b clicks with PostgreSQL down');
        await sleep(500);     // some flushes fail meanwhile
        for (const n of nodes) assert.ok(n.running, `${n.name} died with PostgreSQL down`);
        t.diagnostic(`PostgreSQL down for ${Date.now() - tStop} ms`);
    } finally {
        if (pgDown) pgStart();
    }

    const tBack = Date.now();
    let r;
    const created = await poll(async () => {
        r = await api(D, 'POST', '/api/links', { key, body: { url: 'https://example.com/pgdown/after' }, timeoutMs: 15_000 });
        return r.status === 201;
    }, { timeoutMs: 15_000, intervalMs: 200 });
    assert.ok(created, `node-d: create 15 s after PostgreSQL came back: ${r.status} ${r.text}`);
    t.diagnostic(`creates work again ${Date.now() - tBack} ms after PostgreSQL came back`);
    const nobody = unique('nopg-');
    assert.ok(await poll(async () => (await visit(C, nobody)).status === 404, { timeoutMs: 10_000 }),
        'an unknown code is 404 again');
    // Every node answers from PostgreSQL again (a 503 on a connection that
    // was not reconnected yet is retried for 5 s, and counted).
    for (const n of nodes) {
        let u;
        let n503 = 0;
        const back = await poll(async () => {
            u = await visit(n, unc.code);
            if (u.status === 503) n503++;
            return u.status === 302;
        }, { timeoutMs: 5000, intervalMs: 50 });
        assert.ok(back, `${n.name}: GET /${unc.code} 5 s after PostgreSQL came back: ${u.status} ${u.text}`);
        if (n503) t.diagnostic(`${n.name}: GET /${unc.code} answered 503 ${n503} times after PostgreSQL came back`);
    }

    // 2 clicks before the stop, 2 + 30 + 20 while PostgreSQL was down.
    const WANT = 54;
    let s;
    const counted = await poll(async () => {
        s = await stats(spread(Date.now()), p1.code);
        assert.ok(s.clicks <= WANT, `${p1.code}: clicks went past ${WANT}: ${s.clicks}`);
        return s.clicks === WANT && s.total_clicks === WANT;
    }, { timeoutMs: 20_000, intervalMs: 200 });
    assert.ok(counted, `${p1.code}: clicks ${s.clicks} / total ${s.total_clicks} 20 s after PostgreSQL came back, ` +
        `want ${WANT}`);
    t.diagnostic(`the outage's clicks were counted ${Date.now() - tBack} ms after PostgreSQL came back`);
    if (retried503) t.diagnostic(`stats answered 503 ${retried503} times after PostgreSQL came back`);
    await sleep(500);
    for (const n of nodes) {
        const x = await stats(n, p1.code);
        assert.equal(x.clicks, WANT, `${n.name}: ${p1.code} clicks later ${x.clicks}`);
    }
}, { skip: skip || pgCtlMissing });
