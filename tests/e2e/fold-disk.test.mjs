// fold-disk.test.mjs - clicks waiting to be counted past fold-memory-mb wait
// in the journal on disk only, and are read back: every one counted once,
// whether the fold resumes in the same process (SIGHUP) or after a kill -9.
//
// fold-paused holds the fold while the clicks arrive, so the backlog is sure
// to pass the 1 MiB bound given; /metrics shows what waits on disk. With
// fold-held-mb = 1 as well, a thousand link days pass the bound of clicks
// folded and held: the fold reads a hollow batch back, and a restart
// replays the journal, in several parts, each stored before the next.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { api, createLink, it, metricsOf, pipelined, poll, startServer, tempDir } from './harness.mjs';

const UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0';
const LINKS = 1000;
const PER_LINK = 20;

function config(file, paused) {
    fs.writeFileSync(file, `fold-paused = ${paused}\nfold-memory-mb = 1\nfold-held-mb = 1\n`);
}

/* LINKS links, PER_LINK pipelined clicks each over 4 connections; each
 * click's request carries a long referrer so that the backlog passes 1 MiB. */
async function flood(srv) {
    const links = [];
    for (let i = 0; i < LINKS; i += 50) {
        links.push(...await Promise.all(Array.from({ length: 50 }, (_, j) =>
            createLink(srv, srv.adminKey, { url: `https://example.com/disk/${i + j}` }))));
    }
    const texts = [];
    for (let i = 0; i < LINKS * PER_LINK; i++) {
        const ref = `https://news.example.org/${'a'.repeat(120)}/${i}`;
        texts.push(`GET /${links[i % LINKS].code} HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\n` +
                   `User-Agent: ${UA}\r\nReferer: ${ref}\r\n\r\n`);
    }
    await pipelined(srv.port, texts);
    return links;
}

async function onDisk(srv) {
    const m = await metricsOf(srv, 'shortd_clicks_unfolded');
    return { unfolded: m.shortd_clicks_unfolded, disk: m.shortd_clicks_unfolded_disk_bytes };
}

/* Every link at exactly PER_LINK, never more. */
async function exact(srv) {
    let last;
    const ok = await poll(async () => {
        const r = await api(srv, 'GET', `/api/links?limit=${LINKS}`, { key: srv.adminKey });
        assert.equal(r.status, 200, r.text);
        last = r.json;
        for (const l of last) assert.ok(l.clicks <= PER_LINK, `${l.code} went past ${PER_LINK}: ${l.clicks}`);
        return last.length === LINKS && last.every((l) => l.clicks === PER_LINK);
    }, { timeoutMs: 60_000, intervalMs: 500 });
    assert.ok(ok, `clicks per link: ${JSON.stringify(last.map((l) => l.clicks))}`);
    const m = await onDisk(srv);
    assert.equal(m.unfolded, 0);
    assert.equal(m.disk, 0);
}

/* Waits until the journal has handed every click over (the backlog counts them all). */
async function allWaiting(srv) {
    let m;
    const ok = await poll(async () => (m = await onDisk(srv)).unfolded === LINKS * PER_LINK);
    assert.ok(ok, `clicks waiting: ${JSON.stringify(m)}`);
    // Most of them on disk only: 20,000 clicks of about 200 bytes against 1 MiB.
    assert.ok(m.disk > 2 * 1024 * 1024, `bytes on disk only: ${m.disk}`);
    return m;
}

/* A server whose fold is paused, flooded: its clicks wait, most on disk. */
async function floodedWhilePaused() {
    const conf = path.join(tempDir(), 'shortd.conf');
    config(conf, true);
    const srv = await startServer({ args: ['--config', conf] });
    await flood(srv);
    await allWaiting(srv);
    return { conf, srv };
}

it('past fold-memory-mb the clicks wait on disk, and a SIGHUP that resumes the fold counts each once', async () => {
    const { conf, srv } = await floodedWhilePaused();
    config(conf, false);
    srv.proc.kill('SIGHUP');
    await exact(srv);
    await srv.stop();
}, { timeout: 120_000 });

it('clicks on disk only survive a kill -9 and are counted once after the restart', async () => {
    const { conf, srv } = await floodedWhilePaused();
    await srv.kill9();
    config(conf, false);
    await srv.restart();
    // fold-held-mb = 1: the replay stored what it folded several times.
    const m = /replayed (\d+) clicks from the journal, stored in (\d+) parts/.exec(srv._runStderr);
    assert.ok(m, srv._runStderr);
    assert.equal(Number(m[1]), LINKS * PER_LINK);
    assert.ok(Number(m[2]) > 1, m[0]);
    await exact(srv);
    await srv.stop();
}, { timeout: 120_000 });

it('a clean stop leaves the clicks on disk to the next start, which counts each once', async () => {
    const { conf, srv } = await floodedWhilePaused();
    await srv.stop(); // SIGTERM, and a clean exit (no leak)
    // What the fold had in memory is stored; what waits on disk stays there.
    const left = /stopping with (\d+) clicks still to count in the journal/.exec(srv._runStderr);
    assert.ok(left, srv._runStderr);
    assert.doesNotMatch(srv._runStderr, /not saved/);
    config(conf, false);
    await srv.restart();
    assert.match(srv._runStderr, new RegExp(`replayed ${left[1]} clicks from the journal`));
    await exact(srv);
    await srv.stop();
}, { timeout: 120_000 });

it('a fold that falls behind reads clicks back from disk while more arrive', async () => {
    // Not paused: the fold runs while the flood goes on, so batches go to
    // disk and come back between batches still in memory.
    const conf = path.join(tempDir(), 'shortd.conf');
    config(conf, false);
    const srv = await startServer({ args: ['--config', conf] });
    await flood(srv);
    await exact(srv);
    await srv.stop();
}, { timeout: 120_000 });
