// journal-release.test.mjs - clicks leave the journal's files once their
// counters and checkpoint are stored, without waiting for a 64 MiB segment
// to fill, and a kill -9 after that neither loses nor doubles them.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { BROWSER_UA, api, createLink, it, poll, startServer, unique } from './harness.mjs';

let srv;
let journal;

before(async () => {
    srv = await startServer({ args: ['--click-flush-ms', '200'] });
    journal = srv.journal || `${srv.db}.clicks`;
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

/* How many records in the journal's segment files carry 'mark'. */
function journaled(mark) {
    let n = 0;
    for (const f of fs.readdirSync(journal).filter((x) => x.endsWith('.jnl'))) {
        n += fs.readFileSync(path.join(journal, f)).toString('latin1').split(mark).length - 1;
    }
    return n;
}

async function counted(code) {
    const r = await api(srv, 'GET', `/api/links/${code}/stats`, { key: srv.adminKey });
    assert.equal(r.status, 200, r.text);
    return r.json.clicks + r.json.bot_clicks;
}

it('stored clicks are deleted from the journal, and kill -9 then changes nothing', async () => {
    const link = await createLink(srv, srv.adminKey, { url: 'https://example.com/journal-release' });
    const mark = unique('release-');
    for (let i = 0; i < 30; i++) {
        const r = await api(srv, 'GET', `/${link.code}`, { headers: { 'user-agent': `${BROWSER_UA} ${mark}` } });
        assert.equal(r.status, 302, r.text);
    }
    assert.ok(await poll(async () => await counted(link.code) === 30, { timeoutMs: 10_000 }),
        `stored: ${await counted(link.code)} of 30`);
    assert.ok(await poll(() => journaled(mark) === 0, { timeoutMs: 10_000 }),
        `${journaled(mark)} stored clicks still in ${journal}: ${fs.readdirSync(journal)}`);
    await srv.kill9();
    await srv.restart();
    assert.equal(await counted(link.code), 30);
});
