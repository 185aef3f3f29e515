// store-threads.test.mjs - what the store threads promise beside the
// freeze test (storage-freeze.test.mjs): a key's searches and exports are
// limited to its share (heavy-reads-per-key: 429 past it, other keys and
// the redirect untouched, the share back when the read ends), and requests
// for one uncached code that arrive together are one store read (a flight);
// on PostgreSQL, a statement past the request's deadline is cancelled.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { after } from 'node:test';

import { PG_MODE, api, createKey, createLink, it, poll, startServer, unique } from './harness.mjs';

const servers = [];
after(async () => {
    for (const s of servers) await s.stop();
});

async function metric(server, name) {
    const r = await api(server, 'GET', '/metrics');
    const m = r.text.match(new RegExp(`^${name} (\\d+)$`, 'm'));
    return m ? Number(m[1]) : null;
}

it('a key runs at most heavy-reads-per-key searches and exports; then 429, others go on', async () => {
    // A search reads 100 rows a page: of these long URLs, enough to be quick
    // on PostgreSQL on a slow machine too.
    const s = await startServer({ args: ['--heavy-reads-per-key', '1', '--search-page-rows', '100'] });
    servers.push(s);
    // An export far larger than the socket buffers, so that a client that
    // stops reading holds it (and its share) open.
    for (let i = 0; i < 4; i++) {
        const links = Array.from({ length: 100 }, (_, k) => ({ url: `https://example.com/${i}/${k}/${'p'.repeat(7900)}` }));
        const r = await api(s, 'POST', '/api/links/bulk', { key: s.adminKey, body: { links } });
        assert.equal(r.status, 200, r.text.slice(0, 300));
    }
    const other = createKey(s, unique('other'));
    const link = await createLink(s, other, { url: 'https://example.com/other' });

    const sock = await new Promise((resolve, reject) => {
        const c = net.connect({ port: s.port, host: '127.0.0.1' }, () => c.write(
            `GET /api/export?format=json HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.adminKey}\r\n\r\n`));
        c.once('data', (d) => {
            c.pause();
            assert.match(d.toString('latin1'), /^HTTP\/1\.1 200 /);
            resolve(c);
        });
        c.on('error', reject);
    });
    try {
        // The admin key's one share is the stalled export's.
        const refused = await api(s, 'GET', '/api/links?q=nomatch&state=all', { key: s.adminKey });
        assert.equal(refused.status, 429, refused.text);
        assert.equal(refused.json.error.code, 'too_many_heavy_reads');
        assert.equal(refused.headers.get('retry-after'), '1');
        const exp = await api(s, 'GET', '/api/export', { key: s.adminKey });
        assert.equal(exp.status, 429, exp.text.slice(0, 200));
        // A listing without q= is no heavy read; another key has its own share.
        assert.equal((await api(s, 'GET', '/api/links?limit=1', { key: s.adminKey })).status, 200);
        const theirs = await api(s, 'GET', '/api/links?q=other', { key: other });
        assert.equal(theirs.status, 200, theirs.text);
        assert.equal(theirs.json.length, 1);
        assert.equal((await api(s, 'GET', `/${link.code}`)).status, 302);
        assert.ok((await metric(s, 'shortd_heavy_reads_refused_total')) >= 2);
    } finally {
        sock.destroy();
    }
    // The export ends when the server finds the client gone: the share is back.
    assert.ok(await poll(async () => (await api(s, 'GET', '/api/links?q=nomatch&state=all',
        { key: s.adminKey })).status === 200, { timeoutMs: 10_000 }),
    'the share did not come back after the export ended');
});

it('requests for one uncached code that arrive together are one store read', async () => {
    // One event loop, and no memory of unknown codes: every request for an
    // unknown code needs the store, and only a flight can share a read.
    const s = await startServer({ args: ['--threads', '1', '--miss-ttl', '0'] });
    servers.push(s);
    const N = 40;
    const socks = await Promise.all(Array.from({ length: N }, () => new Promise((resolve, reject) => {
        const c = net.connect({ port: s.port, host: '127.0.0.1' }, () => resolve(c));
        c.on('error', reject);
    })));
    try {
        let best = N;
        for (let round = 0; round < 3 && best === N; round++) {
            const code = `zz${String(round)}${unique('f').replace(/[^A-Za-z0-9]/g, '').slice(-5)}`;
            const jobs0 = await metric(s, 'shortd_store_jobs_total');
            const answers = socks.map((c) => new Promise((resolve) => {
                const chunks = [];
                const onData = (d) => {
                    chunks.push(d);
                    const text = Buffer.concat(chunks).toString('latin1');
                    if (/\r\n\r\n/.test(text) && text.endsWith('\n')) {
                        c.off('data', onData);
                        resolve(text);
                    }
                };
                c.on('data', onData);
            }));
            // All written before any answer can come: one poll of the loop reads them.
            for (const c of socks) c.cork();
            for (const c of socks) c.write(`GET /${code} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
            for (const c of socks) c.uncork();
            const texts = await Promise.all(answers);
            for (const t of texts) assert.match(t, /^HTTP\/1\.1 404 /, t.slice(0, 200));
            const jobs = (await metric(s, 'shortd_store_jobs_total')) - jobs0;
            best = Math.min(best, jobs);
        }
        // Without flights each request is one read: exactly N.
        assert.ok(best < N, `${N} requests for one unknown code took ${best} store reads`);
    } finally {
        for (const c of socks) c.destroy();
    }
});

/* One value from psql on the server's store (a postgres:// URL). */
function psql(db, text) {
    const r = spawnSync('psql', ['-X', '-q', '-At', '-d', db, '-c', text], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
}

it("a statement past the request's deadline is cancelled on PostgreSQL, not left running", async (t) => {
    if (!PG_MODE) return t.skip('PostgreSQL only: SQLite has no server to leave a statement on');
    const s = await startServer();
    servers.push(s);
    await createLink(s, s.adminKey, { url: 'https://example.com/locked' });
    // Another session holds the links table: shortd's search waits for it.
    const holder = spawn('psql', ['-X', '-q', '-d', s.db, '-c',
        'BEGIN; LOCK TABLE links IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60);'], { stdio: 'ignore' });
    // The search's first statement: the floor of its page (sqlgen.c).
    const SEARCH = "state = 'active' AND query LIKE 'SELECT created_at, code FROM links%OFFSET%' " +
        'AND pid <> pg_backend_pid()';
    try {
        assert.ok(await poll(() => psql(s.db, "SELECT count(*) FROM pg_locks l JOIN pg_class c " +
            "ON c.oid = l.relation WHERE c.relname = 'links' AND l.mode = 'AccessExclusiveLock' " +
            'AND l.granted') === '1', { timeoutMs: 10_000 }));
        const r = await api(s, 'GET', '/api/links?q=zzz', { key: s.adminKey });
        assert.equal(r.status, 503, r.text);
        // Cancelled, the search no longer waits there (uncancelled, it would
        // wait until the lock goes, a minute from now).
        assert.ok(await poll(() => psql(s.db, `SELECT count(*) FROM pg_stat_activity WHERE ${SEARCH}`) === '0',
            { timeoutMs: 5_000 }), 'the search still runs on the server');
    } finally {
        psql(s.db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' " +
            'AND pid <> pg_backend_pid()');
        holder.kill();
    }
    // The lock gone, the same search answers.
    assert.ok(await poll(async () => (await api(s, 'GET', '/api/links?q=zzz', { key: s.adminKey })).status === 200,
        { timeoutMs: 10_000 }));
});
