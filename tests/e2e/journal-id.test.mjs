// journal-id.test.mjs - the journal's id names its checkpoint in the store:
// whatever happens to the id files (one lost, one damaged, both gone), a
// restart counts no click twice and says in its log what it did.
//
// click-flush-ms is a minute and click-lull-ms 0, so between a clean stop
// (which stores every click) and a kill -9 the clicks are only in the journal.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { BROWSER_UA, api, createLink, it, poll, startServer, unique } from './harness.mjs';

let srv;
let journal;
let link;
let answered = 0;

before(async () => {
    srv = await startServer({ args: ['--click-flush-ms', '60000', '--click-lull-ms', '0'] });
    journal = srv.journal || `${srv.db}.clicks`;
    link = await createLink(srv, srv.adminKey, { url: 'https://example.com/journal-id' });
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

async function counted() {
    const r = await api(srv, 'GET', `/api/links/${link.code}/stats`, { key: srv.adminKey });
    assert.equal(r.status, 200, r.text);
    return r.json.clicks + r.json.bot_clicks;
}

/* How many records in the journal's segment files carry 'mark'. */
function journaled(mark) {
    let n = 0;
    for (const f of fs.readdirSync(journal).filter((x) => x.endsWith('.jnl'))) {
        n += fs.readFileSync(path.join(journal, f)).toString('latin1').split(mark).length - 1;
    }
    return n;
}

/* n clicks marked in their user agent, then waits until the journal has them on disk. */
async function clicks(n) {
    const mark = unique('idtest-');
    for (let i = 0; i < n; i++) {
        const r = await api(srv, 'GET', `/${link.code}`, { headers: { 'user-agent': `${BROWSER_UA} ${mark}` } });
        assert.equal(r.status, 302, r.text);
        answered++;
    }
    assert.ok(await poll(() => journaled(mark) === n, { timeoutMs: 10_000 }),
        `${journaled(mark)} of ${n} clicks in the journal`);
}

/* Restarts and returns what this start logged. */
async function restart() {
    const from = srv.stderr().length;
    await srv.restart();
    return srv.stderr().slice(from);
}

const idFile = () => path.join(journal, 'id');
const bakFile = () => path.join(journal, 'id.bak');

it('a lost id file is restored from its copy: the replay starts where the store stopped', async () => {
    await clicks(20);
    await srv.stop();                       // stores all 20
    await restart();
    assert.equal(await counted(), 20);
    assert.ok(fs.existsSync(bakFile()), `no ${bakFile()}`);
    await clicks(10);                       // only in the journal
    await srv.kill9();
    fs.rmSync(idFile());
    const log = await restart();
    assert.match(log, /journal id file '.*\/id' is missing: restored from '.*\/id\.bak'/);
    assert.equal(await counted(), 30, 'the 20 stored clicks counted again, or the 10 journaled lost');
    assert.ok(fs.existsSync(idFile()));
});

it('a damaged id file is restored from its copy, and shortd starts', async () => {
    await clicks(10);
    await srv.kill9();
    fs.writeFileSync(idFile(), 'not an id\n');
    const log = await restart();
    assert.match(log, /journal id file '.*\/id' is damaged: restored from '.*\/id\.bak'/);
    assert.equal(await counted(), 40);

    // A flipped digit is damage too: the copy carries a checksum.
    await srv.kill9();
    const text = fs.readFileSync(bakFile(), 'utf8');
    fs.writeFileSync(bakFile(), (text[0] === 'a' ? 'b' : 'a') + text.slice(1));
    const log2 = await restart();
    assert.match(log2, /journal id file '.*\/id\.bak' is damaged: restored from '.*\/id'/);
    assert.equal(await counted(), 40);
});

it('both id files gone: nothing is replayed, nothing counted twice, and the log says so', async () => {
    await srv.stop();
    fs.rmSync(idFile());
    fs.rmSync(bakFile());
    const log = await restart();
    assert.match(log, /are missing or damaged, so the store's position in the journal is unknown: nothing is replayed/);
    assert.equal(await counted(), 40, 'the journal replayed from its start');

    // After kill -9 the clicks only journaled cannot be told from the stored
    // ones: they are not counted, rather than the stored ones twice.
    await clicks(10);
    await srv.kill9();
    fs.rmSync(idFile());
    fs.writeFileSync(bakFile(), 'garbage');
    const log2 = await restart();
    assert.match(log2, /nothing is replayed/);
    const n = await counted();
    assert.ok(n <= answered, `counted ${n}, answered ${answered}`);
    assert.equal(n, 40);

    // The new id works like the old one.
    await clicks(5);
    await srv.kill9();
    const log3 = await restart();
    assert.doesNotMatch(log3, /journal id/);
    assert.equal(await counted(), 45);
});
