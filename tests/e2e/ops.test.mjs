// ops.test.mjs - /healthz, /readyz, /metrics (Prometheus text), and logs that
// never hold a client address or an API key.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';

import { Conn, PG_MODE, api, cli, createKey, createLink, it, poll, sqliteOnlyReason, startServer, tempDir, visit } from './harness.mjs';

let srv;

before(async () => {
    // Debug logging, so the log check below has something to look at.
    srv = await startServer({ env: { SHORTD_LOG_LEVEL: 'debug' } });
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

/* Parses Prometheus text: [{name, labels: {..}, value}] plus the TYPE lines. */
function parseMetrics(text) {
    const samples = [];
    const types = {};
    for (const line of text.split('\n')) {
        if (!line.trim()) continue;
        const t = /^# TYPE (\S+) (\S+)/.exec(line);
        if (t) { types[t[1]] = t[2]; continue; }
        if (line.startsWith('#')) continue;
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$/.exec(line);
        assert.ok(m, `not a Prometheus sample line: ${JSON.stringify(line)}`);
        const labels = {};
        if (m[3]) {
            for (const lm of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]] = lm[2];
        }
        samples.push({ name: m[1], labels, value: Number(m[4]) });
    }
    return { samples, types };
}

async function metrics() {
    const r = await api(srv, 'GET', '/metrics');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') || '', /^text\/plain/);
    return parseMetrics(r.text);
}

const sum = (samples, name, pred = () => true) =>
    samples.filter((s) => s.name === name && pred(s.labels)).reduce((a, s) => a + s.value, 0);

it('/healthz and /readyz answer 200', async () => {
    for (const p of ['/healthz', '/readyz']) {
        const r = await api(srv, 'GET', p);
        assert.equal(r.status, 200, `${p}: ${r.text}`);
    }
});

it('/metrics exposes requests, latency, cache, links and pending clicks', async () => {
    const key = srv.adminKey;
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await createLink(srv, key, { url: `https://example.com/m/${i}` }));
    for (let i = 0; i < 3; i++) assert.equal((await visit(srv, made[0].code)).status, 302);
    assert.equal((await visit(srv, 'zzzzzzz')).status, 404);

    const { samples, types } = await metrics();
    const names = new Set(samples.map((s) => s.name));
    for (const n of ['shortd_requests_total', 'shortd_request_duration_seconds_bucket', 'shortd_cache_hits_total',
        'shortd_cache_misses_total', 'shortd_links', 'shortd_clicks_pending']) {
        assert.ok(names.has(n), `/metrics lacks ${n}`);
    }
    assert.equal(types.shortd_requests_total, 'counter');
    assert.equal(types.shortd_request_duration_seconds, 'histogram');

    const req = samples.filter((s) => s.name === 'shortd_requests_total');
    for (const s of req) {
        assert.ok('route' in s.labels && 'status' in s.labels, `labels ${JSON.stringify(s.labels)}`);
    }
    assert.ok(sum(req, 'shortd_requests_total', (l) => l.status === '302') >= 3, 'the 302s are not counted');
    assert.ok(sum(req, 'shortd_requests_total', (l) => l.status === '404') >= 1, 'the 404 is not counted');
    assert.ok(sum(req, 'shortd_requests_total', (l) => l.status === '201') >= 3, 'the 201s are not counted');

    const inf = samples.filter((s) => s.name === 'shortd_request_duration_seconds_bucket' && s.labels.le === '+Inf');
    assert.ok(inf.length > 0, 'no le="+Inf" bucket');
    const count = sum(samples, 'shortd_request_duration_seconds_count');
    assert.ok(count >= 7, `shortd_request_duration_seconds_count is ${count}`);
    assert.equal(sum(inf, 'shortd_request_duration_seconds_bucket'), count, '+Inf bucket != _count');

    // The second and third visit of one code come from the cache.
    assert.ok(sum(samples, 'shortd_cache_hits_total') >= 1, 'no cache hit after three visits of one code');
    // What the cached entries take: at least the visited link and the
    // remembered miss, each 4 bytes + code + URL (+ 8 for a miss's expiry),
    // carved in multiples of 8.
    const entries = sum(samples, 'shortd_cache_entries');
    const bytes = sum(samples, 'shortd_cache_entry_bytes');
    assert.equal(types.shortd_cache_entry_bytes, 'gauge');
    assert.ok(entries >= 2, `shortd_cache_entries is ${entries}`);
    const least = Math.ceil((4 + made[0].code.length + made[0].url.length) / 8) * 8 + Math.ceil((4 + 8 + 7) / 8) * 8;
    assert.ok(bytes >= least && bytes % 8 === 0, `shortd_cache_entry_bytes is ${bytes} for ${entries} entries`);
    // Links are counted by the main thread every 10 s, never on an event loop.
    assert.ok(sum(samples, 'shortd_links') >= 0);
    let links = 0;
    await poll(async () => (links = sum((await metrics()).samples, 'shortd_links')) >= 3,
        { timeoutMs: 15_000, intervalMs: 250 });
    assert.ok(links >= 3, `shortd_links is ${links} 15 s after 3 creates`);
    assert.ok(sum(samples, 'shortd_clicks_pending') >= 0);
});

it('/metrics counters grow with traffic', async () => {
    const before_ = sum((await metrics()).samples, 'shortd_requests_total', (l) => l.status === '302');
    const l = await createLink(srv, srv.adminKey, { url: 'https://example.com/grow' });
    for (let i = 0; i < 5; i++) await visit(srv, l.code);
    const after_ = sum((await metrics()).samples, 'shortd_requests_total', (l2) => l2.status === '302');
    assert.ok(after_ - before_ >= 5, `302s went from ${before_} to ${after_} after 5 redirects`);
});

it('logs hold no client address and no API key', async () => {
    const user = createKey(srv, 'log-user');
    const bogus = 'sk_bogus_key_that_must_not_be_logged_0123456789';
    const l = await createLink(srv, user, { url: 'https://example.com/logs' });
    await visit(srv, l.code, { headers: { 'x-forwarded-for': '203.0.113.77', 'x-real-ip': '198.51.100.23' } });
    await visit(srv, l.code + '?utm_source=x');
    await visit(srv, 'zzzzzzz');
    await api(srv, 'GET', '/api/links', { key: user });
    await api(srv, 'GET', '/api/links', { key: bogus });
    await api(srv, 'GET', '/api/admin/blocklist', { key: user });
    await api(srv, 'POST', '/api/links', { key: srv.adminKey, raw: '{bad json' });
    await api(srv, 'GET', `/api/links/${l.code}`, { key: srv.adminKey });
    await api(srv, 'DELETE', `/api/links/${l.code}`, { key: user });
    // A malformed request over a raw socket: error paths log too.
    const c = await Conn.open(srv.port);
    await c.request(`GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user}\r\nX-Foo : y\r\n\r\n`).catch(() => null);
    c.destroy();
    // Stop the server so every log line is written out.
    await srv.stop();

    const port = `127.0.0.1:${srv.port}`;
    for (const [what, text] of [['stderr', srv.stderr()], ['stdout', srv.stdout()]]) {
        // The listen address may be logged; a client's address may not.
        const scrubbed = text.split(port).join('<listen>');
        assert.ok(!scrubbed.includes('127.0.0.1'), `${what} holds a client address:\n${grep(scrubbed, '127.0.0.1')}`);
        assert.ok(!text.includes('203.0.113.77'), `${what} holds an X-Forwarded-For address`);
        assert.ok(!text.includes('198.51.100.23'), `${what} holds an X-Real-IP address`);
        assert.ok(!text.includes(user), `${what} holds a user API key`);
        assert.ok(!text.includes(bogus), `${what} holds a presented (invalid) API key`);
        const withoutFirstStart = what === 'stdout' ? text.split('\n').filter((x) => !/admin key/i.test(x)).join('\n') : text;
        assert.ok(!withoutFirstStart.includes(srv.adminKey), `${what} holds the admin key outside the first-start line`);
    }
});

function grep(text, needle) {
    return text.split('\n').filter((l) => l.includes(needle)).slice(0, 5).join('\n');
}

/* read(dir) of each of a process's threads (dir: /proc/PID/task/TID), by
 * thread name; null as soon as one read gives null. */
function perThread(pid, read) {
    const out = {};
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
        const dir = `/proc/${pid}/task/${tid}`;
        const v = read(dir);
        if (v === null) return null;
        (out[fs.readFileSync(`${dir}/comm`, 'utf8').trim()] ||= []).push(v);
    }
    return out;
}

/* read(pid) of a server started with 'opts' for it alone, then stopped. */
async function ofFreshServer(read, opts = {}) {
    const srv = await startServer(opts);
    try {
        return read(srv.proc.pid);
    } finally {
        await srv.stop();
    }
}

/* Field 'n' (numbered from 1, as in proc(5)) of /proc/PID/task/TID/stat of
 * each of a process's threads, by thread name. */
function threadStat(pid, n) {
    return perThread(pid, (dir) => {
        const stat = fs.readFileSync(`${dir}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[n - 3]);
    });
}
const threadNices = (pid) => threadStat(pid, 19);
/* 0: SCHED_OTHER, 5: SCHED_IDLE */
const threadPolicies = (pid) => threadStat(pid, 41);

it('folding and storing clicks run below the event loops; background-idle true makes them SCHED_IDLE; background-nice 0 keeps them level', async () => {
    const both = await ofFreshServer((pid) => ({ nice: threadNices(pid), policy: threadPolicies(pid) }));
    const base = both.nice;
    // Every thread keeps the normal policy (a busy neighbour would stall SCHED_IDLE ones) ...
    for (const [name, policies] of Object.entries(both.policy))
        assert.ok(policies.every((p) => p === 0), `${name}: ${JSON.stringify(both.policy)}`);
    // ... unless asked: then the background ones run only on a core nothing else wants.
    const idle = await ofFreshServer(threadPolicies, { args: ['--background-idle', 'true'] });
    for (const name of ['shortd-fold', 'shortd-store'].concat(PG_MODE ? [] : ['shortd-ckpt']))
        assert.deepEqual(idle[name], [5], `${name}: ${JSON.stringify(idle)}`);
    for (const name of ['shortd-http', 'shortd-journal', 'shortd-writer'])
        assert.ok(idle[name].every((p) => p === 0), `${name}: ${JSON.stringify(idle)}`);
    const loop = base['shortd-http'][0];
    for (const name of ['shortd-http', 'shortd-journal', 'shortd-writer', 'shortd-fold', 'shortd-store'])
        assert.ok(base[name], `no thread named ${name}: ${JSON.stringify(base)}`);
    // The journal (clicks on disk) and the writer's create lane keep the loops' priority.
    assert.deepEqual(base['shortd-journal'], [loop]);
    assert.deepEqual(base['shortd-writer'], [loop]);
    assert.deepEqual(base['shortd-fold'], [Math.min(loop + 19, 19)]);
    assert.deepEqual(base['shortd-store'], [Math.min(loop + 19, 19)]);
    // SQLite's WAL is copied into the database file by a background thread too.
    if (!PG_MODE)
        assert.deepEqual(base['shortd-ckpt'], [Math.min(loop + 19, 19)]);
    else
        assert.equal(base['shortd-ckpt'], undefined);

    const level = await startServer({ args: ['--background-nice', '0'] });
    try {
        const n = threadNices(level.proc.pid);
        const l = n['shortd-http'][0];
        assert.deepEqual(n['shortd-fold'], [l]);
        assert.deepEqual(n['shortd-store'], [l]);
        if (!PG_MODE)
            assert.deepEqual(n['shortd-ckpt'], [l]);
        const p = threadPolicies(level.proc.pid);
        for (const name of ['shortd-fold', 'shortd-store'])
            assert.deepEqual(p[name], [0], `${name}: ${JSON.stringify(p)}`);
        // and clicks still get counted
        const key = createKey(level, 'level');
        const link = await createLink(level, key, { url: 'https://example.com/level' });
        assert.equal((await visit(level, link.code, { headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0' } })).status, 302);
        assert.ok(await poll(async () => {
            const r = await api(level, 'GET', `/api/links/${link.code}`, { key });
            return r.json && r.json.clicks === 1;
        }), 'the click was not counted');
    } finally {
        await level.stop();
    }
});

/* se.slice (ns) of each of a process's threads, by thread name; null when
 * the kernel does not show it or does not take a thread's own slice (before
 * 6.12). */
function threadSlices(pid) {
    const [major, minor] = os.release().split('.').map(Number);
    if (major < 6 || (major === 6 && minor < 12)) return null;
    return perThread(pid, (dir) => {
        const m = /^se\.slice\s*:\s*(\d+)/m.exec(fs.readFileSync(`${dir}/sched`, 'utf8'));
        return m ? Number(m[1]) : null;
    });
}

it('event loops ask for a 100 µs time slice, the other threads keep the kernel\'s; loop-slice-us 0 leaves it', async (t) => {
    // (SCHED_IDLE threads, with --background-idle true, show no slice.)
    const set = await ofFreshServer(threadSlices);
    if (!set) return t.skip(`this kernel (${os.release()}) keeps its own slices`);
    assert.ok(set['shortd-http'].length > 0 && set['shortd-http'].every((ns) => ns === 100000),
        JSON.stringify(set));
    const kernels = set['shortd-journal'][0];
    assert.ok(kernels > 100000, `the journal thread's slice is ${kernels} ns`);
    for (const name of ['shortd-fold', 'shortd-store', 'shortd-writer'])
        assert.deepEqual(set[name], [kernels], name);

    const n = await ofFreshServer(threadSlices, { args: ['--loop-slice-us', '0'] });
    assert.ok(n['shortd-http'].every((ns) => ns === kernels), JSON.stringify(n));
});

it('a store file newer than the binary is refused with a message and exit status 1', () => {
    const dir = tempDir();
    const db = path.join(dir, 'db');
    assert.equal(cli(['migrate', '--db', db]).code, 0);
    const set = spawnSync('sqlite3', [db, 'PRAGMA user_version = 999'], { encoding: 'utf8' });
    assert.equal(set.status, 0, set.stderr);
    const r = cli(['serve', '--db', db, '--listen', '127.0.0.1:0'], { timeoutMs: 10_000 });
    assert.equal(r.signal, null, `killed by ${r.signal}: ${r.stderr}`);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /schema 999, newer than this shortd/);
    assert.doesNotMatch(r.stderr, /Assertion|AddressSanitizer/);
}, { skip: sqliteOnlyReason('a SQLite file of a later version') });
