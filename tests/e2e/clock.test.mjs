// clock.test.mjs - a real step of a running server's wall clock. libfaketime
// (Debian's faketime, LD_PRELOADed) moves CLOCK_REALTIME by what a file says,
// read at every call, and leaves CLOCK_MONOTONIC alone: forty days ahead,
// the sweeper must neither erase a live link's URL nor forget an
// Idempotency-Key; it logs the step and /metrics counts it; and it sweeps by
// the wall clock again once that is back.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { api, createLink, it, poll, startServer, tempDir, unique, visit } from './harness.mjs';

const FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

let srv;
let clockFile;

function setClock(offset) {
    // Written whole, then renamed: the server never reads half a line.
    const tmp = `${clockFile}.tmp`;
    fs.writeFileSync(tmp, `${offset}\n`);
    fs.renameSync(tmp, clockFile);
}

async function metric(name) {
    const r = await api(srv, 'GET', '/metrics');
    assert.equal(r.status, 200);
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(r.text);
    return m ? Number(m[1]) : null;
}

before(async () => {
    if (!fs.existsSync(FAKETIME_LIB)) throw new Error(`no ${FAKETIME_LIB}: run scripts/setup.sh (apt-get install faketime)`);
    clockFile = path.join(tempDir(), 'faketime');
    setClock('+0');
    srv = await startServer({
        args: ['--sweep-interval', '1', '--sweep-grace', '0'],
        env: {
            LD_PRELOAD: FAKETIME_LIB,
            FAKETIME_TIMESTAMP_FILE: clockFile,
            FAKETIME_NO_CACHE: '1',
            DONT_FAKE_MONOTONIC: '1',
            // libfaketime comes before the ASan runtime in the link order.
            ASAN_OPTIONS: `${process.env.ASAN_OPTIONS || ''}:verify_asan_link_order=0`,
        },
    });
});

after(async () => {
    if (srv) await srv.stop();
});

it('forty days ahead, the sweeper keeps a live link and an idempotency key; the step is logged and counted', async () => {
    const idem = unique('clock-');
    const body = { url: 'https://example.com/thirty-days', alias: unique('month'), ttl: 30 * 86400 };
    const first = await api(srv, 'POST', '/api/links', { key: srv.adminKey, body, headers: { 'idempotency-key': idem } });
    assert.equal(first.status, 201, first.text);
    const code = first.json.code;

    setClock('+40d');
    // Until the sweeper has looked at the new time: it counts the step, or
    // (the bug) erases the link's data.
    const looked = await poll(async () => {
        const l = await api(srv, 'GET', `/api/links/${code}`, { key: srv.adminKey });
        return (await metric('shortd_clock_steps_total')) >= 1 || l.json.url === null;
    }, { timeoutMs: 15_000 });
    assert.ok(looked, 'the sweeper never looked at the stepped clock');
    const behind = await metric('shortd_sweep_clock_behind_seconds');
    setClock('+0');

    const l = await api(srv, 'GET', `/api/links/${code}`, { key: srv.adminKey });
    assert.equal(l.json.url, body.url, 'the clock step erased a live link\'s URL');
    assert.equal(l.json.state, 'active');
    assert.equal(await metric('shortd_clock_steps_total'), 1);
    assert.ok(behind > 39 * 86400, `the sweeper's clock ran ${behind} s behind`);
    assert.match(srv.stderr(), /wall clock stepped \d+ s ahead of the monotonic clock/);
    assert.equal((await visit(srv, code)).status, 302);
    const again = await api(srv, 'POST', '/api/links', { key: srv.adminKey, body, headers: { 'idempotency-key': idem } });
    assert.equal(again.headers.get('idempotent-replayed'), 'true', `the idempotency key was forgotten: ${again.status} ${again.text}`);
    assert.equal(again.json.code, code);
});

it('once the wall clock is back, the sweeper follows it and sweeps what has expired', async () => {
    assert.ok(await poll(async () => (await metric('shortd_sweep_clock_behind_seconds')) === 0, { timeoutMs: 15_000 }),
        'the sweeper still runs behind a wall clock that came back');
    const short = await createLink(srv, srv.adminKey, { url: 'https://example.com/one-second', ttl: 1 });
    const swept = await poll(async () => {
        const r = await api(srv, 'GET', `/api/links/${short.code}`, { key: srv.adminKey });
        return r.json.url === null;
    }, { timeoutMs: 15_000 });
    assert.ok(swept, 'an expired link past its grace was not swept');
});
