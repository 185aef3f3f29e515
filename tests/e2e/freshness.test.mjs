// freshness.test.mjs - when counters reach the store (clicks.h,
// clicks_set_lull): every click-flush-ms while clicks keep coming, and at
// once after click-lull-ms without one. click-flush-ms is a minute here, so
// only a lull can store a click within the test; the setting is live.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { api, createLink, it, metricsOf, poll, sleep, startServer, tempDir, visit } from './harness.mjs';

function config(file, lullMs) {
    fs.writeFileSync(file, `click-flush-ms = 60000\nclick-lull-ms = ${lullMs}\n`);
}

async function clicksOf(srv, code) {
    const r = await api(srv, 'GET', `/api/links/${code}`, { key: srv.adminKey });
    assert.equal(r.status, 200, r.text);
    return r.json.clicks;
}

async function pending(srv) {
    return (await metricsOf(srv, 'shortd_clicks_pending')).shortd_clicks_pending;
}

it('a pause in the clicks stores them without waiting for click-flush-ms; click-lull-ms 0 waits', async () => {
    const conf = path.join(tempDir(), 'shortd.conf');
    config(conf, 100);
    const srv = await startServer({ args: ['--config', conf] });
    try {
        const link = await createLink(srv, srv.adminKey, { url: 'https://example.com/lull' });
        for (let i = 0; i < 3; i++) assert.equal((await visit(srv, link.code)).status, 302);
        assert.ok(await poll(async () => (await clicksOf(srv, link.code)) === 3, { timeoutMs: 20_000 }),
            'the clicks were not stored after a lull');
        assert.equal(await pending(srv), 0);

        // Off: the next clicks wait for click-flush-ms (a minute), in the journal.
        config(conf, 0);
        srv.proc.kill('SIGHUP');
        assert.ok(await poll(() => srv.stderr().includes('reloaded the configuration'), { timeoutMs: 10_000 }));
        for (let i = 0; i < 2; i++) assert.equal((await visit(srv, link.code)).status, 302);
        await sleep(1500); // fifteen times the lull this test started with
        assert.equal(await pending(srv), 2);
        assert.equal(await clicksOf(srv, link.code), 3);

        // On again: stored at the next lull.
        config(conf, 100);
        srv.proc.kill('SIGHUP');
        assert.ok(await poll(async () => (await clicksOf(srv, link.code)) === 5, { timeoutMs: 20_000 }));
    } finally {
        await srv.stop();
    }
}, { timeout: 60_000 });
