// durability.test.mjs - a link acknowledged with 201 survives kill -9, and
// `shortd backup` taken while the server serves is a database a second server
// can serve from.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import {
    api, cli, cliAsync, createKey, createLink, it, sqliteOnly, startServer, tempDir, unique, visit,
} from './harness.mjs';

let srv;
let admin;
let copy;   // the server started on the backup

before(async () => {
    srv = await startServer();
    admin = srv.adminKey;
});

after(async () => {
    if (copy && copy.running) await copy.stop();
    if (srv && srv.running) await srv.stop();
});

it('links acknowledged with 201 survive kill -9', async () => {
    const key = createKey(srv, 'durable');
    const alias = unique('durable-');
    // Concurrent creates (they may share one commit), then one more, then kill.
    const made = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        createLink(srv, key, { url: `https://example.com/durable/${i}` })));
    made.push(await createLink(srv, key, { url: 'https://example.com/durable/alias', alias }));
    const last = await createLink(srv, key, { url: 'https://example.com/durable/last' });
    made.push(last);
    const gone = await srv.kill9();
    assert.equal(gone.signal, 'SIGKILL');

    await srv.restart();
    for (const l of made) {
        const r = await visit(srv, l.code);
        assert.equal(r.status, 302, `${l.code} (${l.url}) lost by kill -9`);
        assert.equal(r.headers.get('location'), l.url);
    }
    const list = await api(srv, 'GET', '/api/links?limit=1000', { key });
    assert.equal(list.status, 200);
    assert.equal(list.json.length, made.length);
    // The admin key and the user key still work; the alias is still taken.
    assert.equal((await api(srv, 'GET', '/api/links', { key: admin })).status, 200);
    const again = await api(srv, 'POST', '/api/links', { key, body: { url: 'https://example.com/x', alias } });
    assert.equal(again.status, 409, again.text);
    // New codes after the crash do not collide with the old ones.
    const fresh = await Promise.all(Array.from({ length: 10 }, (_, i) =>
        createLink(srv, key, { url: `https://example.com/after-crash/${i}` })));
    const all = new Set([...made, ...fresh].map((l) => l.code));
    assert.equal(all.size, made.length + fresh.length, 'a code was handed out twice across kill -9');
});

it('a link created right before kill -9 redirects after the restart (repeated)', async () => {
    for (let round = 0; round < 3; round++) {
        const l = await createLink(srv, admin, { url: `https://example.com/round/${round}` });
        await srv.kill9();
        await srv.restart();
        const r = await visit(srv, l.code);
        assert.equal(r.status, 302, `round ${round}: ${l.code} lost`);
        assert.equal(r.headers.get('location'), l.url);
    }
});

it('shortd backup while serving gives a database a second server serves from', async (t) => {
    if (sqliteOnly(t, '`shortd backup` copies the SQLite file; PostgreSQL is backed up with pg_dump')) return;
    const key = createKey(srv, 'backup-user');
    const before_ = [];
    for (let i = 0; i < 30; i++) before_.push(await createLink(srv, key, { url: `https://example.com/bk/${i}` }));
    const alias = unique('bk-');
    before_.push(await createLink(srv, key, { url: 'https://example.com/bk/alias', alias }));
    const deleted = await createLink(srv, key, { url: 'https://example.com/bk/deleted' });
    assert.equal((await api(srv, 'DELETE', `/api/links/${deleted.code}`, { key })).status, 204);

    // Keep writing while the backup runs.
    let writing = true;
    const during = [];
    const writer = (async () => {
        let i = 0;
        while (writing) {
            during.push(await createLink(srv, key, { url: `https://example.com/bk/during/${i++}` }));
        }
    })();
    const file = path.join(tempDir(), 'backup.db');
    const b = await cliAsync(['backup', '--db', srv.db, '--to', file]);
    writing = false;
    await writer;
    assert.equal(b.code, 0, `backup failed: ${b.stderr}`);
    assert.ok(fs.existsSync(file), 'no backup file');
    const head = Buffer.alloc(16);
    const fd = fs.openSync(file, 'r');
    fs.readSync(fd, head, 0, 16, 0);
    fs.closeSync(fd);
    assert.equal(head.toString('latin1'), 'SQLite format 3\u0000', 'the backup is not a SQLite database');

    // The original keeps serving.
    assert.equal((await visit(srv, before_[0].code)).status, 302);

    copy = await startServer({ db: file });
    assert.equal(copy.adminKey, null);
    for (const l of before_) {
        const r = await visit(copy, l.code);
        assert.equal(r.status, 302, `${l.code} missing from the backup`);
        assert.equal(r.headers.get('location'), l.url);
    }
    assert.equal((await visit(copy, deleted.code)).status, 410, 'the tombstone is part of the backup');
    // Keys are part of the state: the same keys work on the copy.
    const mine = await api(copy, 'GET', '/api/links?limit=1000', { key });
    assert.equal(mine.status, 200, mine.text);
    const codes = new Set(mine.json.map((l) => l.code));
    for (const l of before_) assert.ok(codes.has(l.code), `${l.code} not listed on the copy`);
    assert.equal((await api(copy, 'GET', '/api/admin/blocklist', { key: admin })).status, 200);
    // The alias is taken on the copy too; new links on the copy get fresh codes.
    const again = await api(copy, 'POST', '/api/links', { key, body: { url: 'https://example.com/x', alias } });
    assert.equal(again.status, 409, again.text);
    const n = await createLink(copy, key, { url: 'https://example.com/on-copy' });
    assert.ok(!before_.some((l) => l.code === n.code));
    await copy.stop();
});

it('the sweeper keeps the tombstone of an expired link, across a restart', async () => {
    const sw = await startServer({ args: ['--sweep-interval', '1', '--sweep-grace', '0'] });
    try {
        const alias = unique('swept-');
        const l = await createLink(sw, sw.adminKey, { url: 'https://example.com/swept', alias, ttl: 1, title: 'bulky' });
        const keep = await createLink(sw, sw.adminKey, { url: 'https://example.com/kept', ttl: 3600 });
        // Expiry after 1 s, then at least two sweeps.
        await new Promise((r) => setTimeout(r, 3500));
        assert.equal((await visit(sw, alias)).status, 410);
        assert.equal((await visit(sw, keep.code)).status, 302, 'the sweeper removed a live link');
        await sw.stop();
        await sw.restart();
        assert.equal((await visit(sw, alias)).status, 410, 'after a sweep and a restart the expired code is not 410');
        assert.equal((await visit(sw, alias, { method: 'HEAD' })).status, 410);
        const again = await api(sw, 'POST', '/api/links', { key: sw.adminKey, body: { url: 'https://example.com/x', alias } });
        assert.equal(again.status, 409, `a swept alias was handed out again: ${again.text}`);
        const k = await visit(sw, keep.code);
        assert.equal(k.status, 302);
        assert.equal(k.headers.get('location'), 'https://example.com/kept');
        assert.equal(l.code, alias);
    } finally {
        if (sw.running) await sw.stop();
    }
});

it('a generated code already taken is skipped, never overwritten or refused; shortd_links stays exact', async (t) => {
    if (sqliteOnly(t, 'winds the code counter back in the SQLite file with sqlite3')) return;
    const own = await startServer();
    try {
        const key = createKey(own, 'counter');
        const first = await createLink(own, key, { url: 'https://example.com/first' });
        await own.stop();
        // As if another version (or an import) had made the counter's next
        // code: wind the counter back, so the next block starts at 'first'.
        const wind = spawnSync('sqlite3', [own.db, "UPDATE meta SET v = 0 WHERE k = 'counter'"],
            { encoding: 'utf8' });
        assert.equal(wind.status, 0, wind.stderr);
        await own.restart();
        const made = await Promise.all(Array.from({ length: 5 }, (_, i) =>
            createLink(own, key, { url: `https://example.com/next/${i}` })));
        const codes = new Set(made.map((l) => l.code));
        assert.equal(codes.size, 5);
        assert.ok(!codes.has(first.code), `${first.code} was handed out again`);
        const r = await visit(own, first.code);
        assert.equal(r.status, 302);
        assert.equal(r.headers.get('location'), 'https://example.com/first');
        for (const l of made)
            assert.equal((await visit(own, l.code)).headers.get('location'), l.url);

        // shortd_links is read from the largest link id: exact only while no
        // row is ever deleted and a refused insert hands its id on. The
        // skipped code above was one refused insert; add a taken alias, a
        // refused URL and deletes, then compare with a count of the rows.
        const alias = unique('count-');
        await createLink(own, key, { url: 'https://example.com/alias', alias });
        const taken = await api(own, 'POST', '/api/links', { key, body: { url: 'https://example.com/y', alias } });
        assert.equal(taken.status, 409, taken.text);
        const bad = await api(own, 'POST', '/api/links', { key, body: { url: 'ftp://example.com/' } });
        assert.equal(bad.status, 400, bad.text);
        for (const l of made.slice(0, 2))
            assert.equal((await api(own, 'DELETE', `/api/links/${l.code}`, { key })).status, 204);
        await own.stop();
        await own.restart();    // counted as it starts, then every 10 s
        const rows = spawnSync('sqlite3', [own.db, 'SELECT count(*) FROM links'], { encoding: 'utf8' });
        assert.equal(rows.status, 0, rows.stderr);
        const m = await api(own, 'GET', '/metrics');
        const gauge = /^shortd_links (\d+)$/m.exec(m.text);
        assert.ok(gauge, 'no shortd_links in /metrics');
        assert.equal(Number(gauge[1]), Number(rows.stdout.trim()));
        assert.equal(Number(gauge[1]), 1 + made.length + 1, 'links in the store');
    } finally {
        if (own.running) await own.stop();
    }
});

it('backup with wrong usage fails with a message', async () => {
    const r = cli(['backup', '--db', srv.db]);
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.trim().length > 0, 'no message on stderr');
    const r2 = cli(['backup', '--db', path.join(tempDir(), 'missing', 'nothing.db'), '--to', path.join(tempDir(), 'x.db')]);
    assert.notEqual(r2.code, 0, 'a backup of a database that does not exist succeeded');
    assert.ok(r2.stderr.trim().length > 0);
});
