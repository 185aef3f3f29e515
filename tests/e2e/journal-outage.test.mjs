// journal-outage.test.mjs - a click journal on a disk that fills up: /readyz
// and /metrics say so, the clicks answered meanwhile reach the store within
// the sync window (click-flush-ms is a minute here and click-lull-ms 0, so
// only that path can store them in time) and survive kill -9, and once the
// disk has room again the journal writes again by itself, without a restart.
//
// The journal lives on a small tmpfs of its own (root only: skipped with the
// reason elsewhere); the store is on another file system (SQLite's file in
// the test's directory, or PostgreSQL).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';

import { BROWSER_UA, api, createLink, it, poll, startServer, unique } from './harness.mjs';

let mnt = null;       // the tmpfs, when it could be mounted
let why = '';         // why not
let srv;

before(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shortd-jfull-'));
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir], { encoding: 'utf8' });
    if (r.status === 0) {
        mnt = dir;
    } else {
        why = `cannot mount a small tmpfs for the journal (needs root): ${(r.stderr || r.error || '').toString().trim()}`;
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

after(async () => {
    if (srv && srv.running) await srv.stop();
    if (mnt) {
        spawnSync('umount', [mnt]);
        fs.rmSync(mnt, { recursive: true, force: true });
    }
});

/* Fills the file system under 'dir' to the last byte; returns the file. */
function fill(dir) {
    const file = path.join(dir, 'filler');
    const fd = fs.openSync(file, 'w');
    try {
        for (const size of [65536, 4096, 1]) {
            const chunk = Buffer.alloc(size, 0x55);
            for (;;) {
                try { fs.writeSync(fd, chunk); } catch (e) {
                    if (e.code !== 'ENOSPC') throw e;
                    break;
                }
            }
        }
    } finally {
        fs.closeSync(fd);
    }
    return file;
}

async function readyz() {
    const r = await api(srv, 'GET', '/readyz');
    assert.ok(r.json && r.json.journal, `/readyz without the journal's state: ${r.status} ${r.text}`);
    return r;
}

async function metric(name) {
    const r = await api(srv, 'GET', '/metrics');
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(r.text);
    assert.ok(m, `no ${name} in /metrics`);
    return Number(m[1]);
}

/* Every click of the link, human or bot. */
async function counted(code, key) {
    const r = await api(srv, 'GET', `/api/links/${code}/stats`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json.clicks + r.json.bot_clicks;
}

/* One click with a user agent that marks it, so that the journal files can
 * be searched for it. */
async function click(code, mark) {
    const r = await api(srv, 'GET', `/${code}`, { headers: { 'user-agent': `${BROWSER_UA} ${mark}` } });
    assert.equal(r.status, 302, r.text);
}

/* How many records in the journal's segment files carry 'mark'. */
function journaled(dir, mark) {
    let n = 0;
    for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.jnl'))) {
        const data = fs.readFileSync(path.join(dir, f)).toString('latin1');
        n += data.split(mark).length - 1;
    }
    return n;
}

it('a full journal disk: /readyz says so, clicks go to the store in time, and the journal comes back', async (t) => {
    if (!mnt) { t.skip(why); return; }
    const journal = path.join(mnt, 'j');
    srv = await startServer({ args: ['--journal', journal, '--click-flush-ms', '60000', '--click-lull-ms', '0'] });
    const key = srv.adminKey;
    const link = await createLink(srv, key, { url: 'https://example.com/journal-outage' });
    let answered = 0;

    const ok = await readyz();
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.journal.state, 'ok');
    assert.equal(await metric('shortd_journal_up'), 1);

    // The disk fills up; clicks go on until a sync fails (the segment may
    // have room left in a page it already has).
    const filler = fill(mnt);
    const mark1 = unique('outage-');
    let down = null;
    for (let i = 0; i < 2000 && !down; i++) {
        await click(link.code, mark1);
        answered++;
        const r = await readyz();
        if (r.json.journal.state === 'down') down = r;
    }
    assert.ok(down, 'the journal never went down on a full disk');
    assert.equal(down.status, 503, down.text);
    assert.equal(down.json.status, 'journal unavailable');
    assert.equal(down.json.journal.error, 'No space left on device');
    assert.ok(down.json.journal.since, down.text);
    assert.equal(await metric('shortd_journal_up'), 0);
    assert.ok(await metric('shortd_journal_sync_failures_total') >= 1);
    assert.match(srv.stderr(), /cannot write journal segment .*No space left on device/);

    // 300 clicks while it is down: the store has every one well before the
    // next click flush, then kill -9 and a restart, still on a full disk.
    for (let i = 0; i < 300; i++) {
        await click(link.code, mark1);
        answered++;
    }
    const stored = await poll(async () => await metric('shortd_clicks_pending') === 0, { timeoutMs: 10_000 });
    assert.ok(stored, `clicks not in the store while the journal is down: ${await metric('shortd_clicks_pending')} pending`);
    assert.equal((await srv.kill9()).signal, 'SIGKILL');
    const errBefore = srv.stderr().length;
    await srv.restart();
    assert.equal(await counted(link.code, key), answered, 'clicks answered while the journal was down');
    // Either the segment ends where the store is, or a segment begun on the
    // full disk holds no whole header and replay starts from the store's
    // position past it.
    assert.match(srv.stderr().slice(errBefore),
        /nothing to replay, new clicks are journaled from there|is damaged at position \d+ \(short header\): replay skips to position \d+/);

    // Down again on the first sync of the new process; then room again: the
    // next sync writes, in the same process, and /readyz says ready.
    const mark2 = unique('again-');
    assert.ok(await poll(async () => {
        await click(link.code, mark2);
        answered++;
        return (await readyz()).json.journal.state === 'down';
    }, { timeoutMs: 20_000, intervalMs: 1 }), 'the restarted journal did not go down on a full disk');
    fs.rmSync(filler);
    const back = await poll(async () => {
        await click(link.code, mark2);
        answered++;
        const r = await readyz();
        return r.json.journal.state === 'ok' && r;
    }, { timeoutMs: 20_000, intervalMs: 1 });
    assert.ok(back, 'the journal did not come back once the disk had room');
    assert.equal(back.status, 200, back.text);
    assert.equal(back.json.status, 'ready');
    assert.ok(back.json.journal.recoveries >= 1, back.text);
    assert.equal(await metric('shortd_journal_up'), 1);
    assert.match(srv.stderr().slice(errBefore), /journal '.*' writes again, after \d+ failed syncs/);

    // The journal keeps the clicks again: 50 more, on disk in it, survive
    // kill -9 with the store a minute behind.
    const mark3 = unique('after-');
    for (let i = 0; i < 50; i++) {
        await click(link.code, mark3);
        answered++;
    }
    assert.ok(await poll(() => journaled(journal, mark3) === 50, { timeoutMs: 10_000 }),
        `${journaled(journal, mark3)} of 50 clicks in the journal after it came back`);
    await srv.kill9();
    await srv.restart();
    assert.equal(await counted(link.code, key), answered, 'clicks after the journal came back');
});
