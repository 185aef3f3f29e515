// sites.test.mjs - site analytics end to end (BEACON wire format): a site is
// registered, beacons are sent with fetch as a page's script would send
// them (a page view, an event, the probe's verdicts, a bot, a foreign host,
// malformed and oversized payloads, two identical beacons), the stats are
// read exactly, across a restart, as CSV, with a read token and through the
// badge; another owner is refused; the CLI lists, sizes and deletes; no
// client address reaches any file. Runs on PostgreSQL too
// (SHORTD_E2E_STORE=pg).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before } from 'node:test';

import { BROWSER_UA, PG_MODE, api, cli, createKey, filesUnder, it, poll, startServer } from './harness.mjs';

const XFF = '203.0.113.91'; // the client, behind the trusted proxy (this test): never to be stored
let srv;
let admin;
let alice;
let bob;

const b64 = (obj) => Buffer.from(JSON.stringify(obj)).toString('base64url');

async function beacon(obj, { origin = 'https://blog.example', ua = BROWSER_UA, post = false, raw } = {}) {
    const v = raw ?? b64(obj);
    const headers = { 'user-agent': ua, 'x-forwarded-for': XFF, 'cf-ipcountry': 'CH' };
    if (origin) headers.origin = origin;
    if (post) {
        const r = await fetch(`${srv.url}/e`, { method: 'POST', headers: { ...headers, 'content-type': 'text/plain;charset=UTF-8' }, body: `v=${v}` });
        assert.equal(r.status, 204);
        assert.equal((await r.arrayBuffer()).byteLength, 0);
        return;
    }
    const r = await fetch(`${srv.url}/e?v=${v}`, { headers });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/gif');
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.equal((await r.arrayBuffer()).byteLength, 43);
}

async function stats(key, q = '') {
    const r = await api(srv, 'GET', `/api/sites/blog/stats${q}`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

before(async () => {
    srv = await startServer({ args: ['--trusted-proxies', '127.0.0.1/32'] });
    admin = srv.adminKey;
    alice = createKey(srv, 'alice');
    bob = createKey(srv, 'bob');
});

after(async () => { if (srv) await srv.stop(); });

it('a site is created, its beacons counted exactly, across a restart', async () => {
    let r = await api(srv, 'POST', '/api/sites', {
        key: alice, body: { id: 'blog', hosts: ['blog.example', 'www.blog.example'], badge: true },
    });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.json.hosts, ['blog.example', 'www.blog.example']);
    r = await api(srv, 'POST', '/api/sites', { key: alice, body: { id: 'Bad Id', hosts: ['x.example'] } });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.field, 'id');

    const pv = { p: '/post', r: 'https://www.google.com/search', l: 'de-DE', tz: 'Europe/Berlin', w: 1280, uv: 1, ss: 1, us: 'nl' };
    await beacon({ ...pv, z: 'aaaaaa' });
    await beacon({ ...pv, z: 'aaaaaa' }); // identical: both count
    await beacon({ p: '/post', ev: 'download', et: '/files/a.pdf', z: 'bbbbbb' }, { post: true });
    await beacon({ ev: 'hi', et: '<150', z: 'cccccc' });
    await beacon({ ev: 'bot', et: 'synthetic', z: 'dddddd' });
    await beacon({ ...pv, z: 'eeeeee' }, { ua: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' });
    await beacon(pv, { origin: 'https://evil.example' });
    await beacon(null, { raw: 'not*base64' });
    await beacon(null, { raw: b64({ p: '/x' }).slice(0, -3) + '!!!' });
    // Oversized: past 4 KiB of payload (by sendBeacon: a GET target that long
    // is past the HTTP layer's max-target-bytes, refused 414 before any route).
    await beacon(null, { raw: 'A'.repeat(5000), post: true });
    await beacon(null, { raw: b64({ p: '/big', z: 'x'.repeat(3100) }), post: true });
    await beacon({ p: '/' + 'x'.repeat(300), h: 'blog.example', bo: 1 }, { origin: null });

    await poll(async () => (await stats(alice)).page_views === 3 || undefined);
    let s = await stats(alice);
    assert.equal(s.page_views, 3);
    assert.equal(s.bots, 1);
    assert.deepEqual(s.paths, { '/post': 2, ['/' + 'x'.repeat(127)]: 1 });
    assert.deepEqual(s.ref_groups, { search: 2, direct: 1 });
    assert.deepEqual(s.referrers, { 'www.google.com': 2 });
    assert.deepEqual(s.languages, { 'de-DE': 2 });
    assert.deepEqual(s.timezones, { 'Europe/Berlin': 2 });
    assert.deepEqual(s.viewports, { xl: 2 });
    assert.deepEqual(s.utm_source, { nl: 2 });
    assert.deepEqual(s.countries, { CH: 3 }); // the trusted CDN header, as for clicks
    assert.equal(s.uv, 2);
    assert.equal(s.sessions, 2);
    assert.equal(s.bounce, 1);
    assert.deepEqual(s.events, { download: 1 });
    assert.deepEqual(s.event_targets, { '/files/a.pdf': 1 });
    assert.deepEqual(s.hi, { '<150': 1 });
    assert.deepEqual(s.bot, { synthetic: 1, ua: 1 });
    assert.deepEqual(s.bot_kinds, { crawler: 1 });
    assert.equal(Object.values(s.dowhour).reduce((a, b) => a + b, 0), 3);
    assert.equal(s.heatmap.length, 7);
    assert.equal(s.heatmap.flat().reduce((a, b) => a + b, 0), 3);
    assert.equal(s.page_views_total, 3);
    assert.equal(s.days.at(-1).page_views, 3);

    await srv.stop();
    await srv.restart();
    await beacon({ p: '/after' });
    await poll(async () => (await stats(alice)).page_views === 4 || undefined);
    s = await stats(alice);
    assert.equal(s.paths['/after'], 1);
    assert.equal(s.paths['/post'], 2);
});

it('CSV, a read token, the badge; another owner sees nothing', async () => {
    const csv = await api(srv, 'GET', '/api/sites/blog/stats?format=csv', { key: alice });
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type'), /^text\/csv/);
    assert.match(csv.text, /^dimension,value,count\r\n/);
    assert.match(csv.text, /\r\nref_groups,search,2\r\n/);
    assert.match(csv.text, /\r\npage_views,,4\r\n/);

    let r = await api(srv, 'POST', '/api/sites/blog/tokens', { key: alice });
    assert.equal(r.status, 201, r.text);
    const token = r.json.token;
    assert.match(token, /^st_[0-9A-Za-z]{40}$/);
    r = await api(srv, 'GET', `/api/sites/blog/stats?token=${token}`);
    assert.equal(r.status, 200);
    assert.equal(r.json.page_views, 4);
    r = await api(srv, 'GET', '/api/sites/blog/stats', { key: token });
    assert.equal(r.status, 200);
    r = await api(srv, 'GET', '/api/sites/blog', { key: token });
    assert.equal(r.status, 401);

    for (const [m, p] of [['GET', '/api/sites/blog'], ['GET', '/api/sites/blog/stats'], ['DELETE', '/api/sites/blog'],
        ['PATCH', '/api/sites/blog']]) {
        r = await api(srv, m, p, { key: bob, body: m === 'PATCH' ? { badge: false } : undefined });
        assert.equal(r.status, 404, `${m} ${p}`);
    }
    r = await api(srv, 'GET', '/api/sites', { key: bob });
    assert.deepEqual(r.json, []);
    r = await api(srv, 'GET', '/api/sites', { key: admin });
    assert.deepEqual(r.json.map((x) => x.id), ['blog']);

    r = await api(srv, 'GET', '/badge/blog.svg');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/svg+xml');
    assert.match(r.headers.get('cache-control'), /max-age=\d+/);
    assert.match(r.text, />4<\/text>/);
    r = await api(srv, 'PATCH', '/api/sites/blog', { key: alice, body: { badge: false } });
    assert.equal(r.status, 200, r.text);
    r = await api(srv, 'GET', '/badge/blog.svg');
    assert.equal(r.status, 404);
});

it('the CLI lists, sizes and deletes a site, and nothing else', async () => {
    const db = ['--db', srv.db]; // the store URL in PostgreSQL mode, as createKey passes it
    let c = cli(['site', 'add', ...db, 'docs', '--hosts', 'docs.example', '--badge']);
    assert.equal(c.code, 0, c.stderr);
    c = cli(['site', 'add', ...db, 'docs2', '--hosts', 'blog.example']);
    assert.notEqual(c.code, 0);
    assert.match(c.stderr, /blog\.example/);
    await poll(async () => {
        await beacon({ p: '/d' }, { origin: 'https://docs.example' });
        const r = await api(srv, 'GET', '/api/sites/docs/stats', { key: admin });
        return r.json && r.json.page_views > 0 || undefined;
    });
    c = cli(['site', 'list', ...db]);
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, /^blog\s/m);
    assert.match(c.stdout, /^docs\s.*docs\.example/m);
    c = cli(['site', 'size', ...db, 'blog']);
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, /1 day rows/);
    c = cli(['site', 'usage', ...db, 'blog']);
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, /\d{4}-\d{2}-\d{2}\s+4\s+1\s+\d+/);

    const link = await api(srv, 'POST', '/api/links', { key: alice, body: { url: 'https://example.org/' } });
    assert.equal(link.status, 201);
    c = cli(['site', 'delete', ...db, 'blog']);
    assert.equal(c.code, 0, c.stderr);
    let r = await api(srv, 'GET', '/api/sites/blog/stats', { key: alice });
    assert.equal(r.status, 404);
    r = await api(srv, 'GET', '/api/sites/docs/stats', { key: admin });
    assert.ok(r.json.page_views > 0);
    r = await api(srv, 'GET', `/api/links/${link.json.code}`, { key: alice });
    assert.equal(r.status, 200);
    c = cli(['site', 'size', ...db, 'blog']);
    assert.notEqual(c.code, 0);
});

it('a crash loses no journaled beacon and a replay counts none twice', async () => {
    // Counters would reach the store after a minute (and not after a lull): the
    // journal alone has them.
    const crash = await startServer({ args: ['--click-flush-ms', '60000', '--click-lull-ms', '0'] });
    try {
        const key = crash.adminKey;
        let r = await api(crash, 'POST', '/api/sites', { key, body: { id: 'crash', hosts: ['crash.example'] } });
        assert.equal(r.status, 201, r.text);
        const v = (i) => b64({ p: `/p${i % 3}`, z: String(i).padStart(6, '0') });
        for (let i = 0; i < 30; i++) {
            const b = await fetch(`${crash.url}/e?v=${v(i)}`, { headers: { origin: 'https://crash.example', 'user-agent': BROWSER_UA } });
            assert.equal(b.status, 200);
        }
        await new Promise((res) => setTimeout(res, 300)); // past journal-sync-ms
        r = await api(crash, 'GET', '/api/sites/crash/stats', { key });
        assert.equal(r.json.page_views, 0); // nothing stored yet
        await crash.kill9();
        await crash.restart(); // replays the journal
        const counted = async () => (await api(crash, 'GET', '/api/sites/crash/stats', { key })).json;
        assert.ok(await poll(async () => (await counted()).page_views === 30 || undefined));
        await crash.stop();
        await crash.restart(); // a clean restart replays nothing again
        const s = await counted();
        assert.equal(s.page_views, 30);
        assert.deepEqual(s.paths, { '/p0': 10, '/p1': 10, '/p2': 10 });
    } finally {
        if (crash.running) await crash.stop();
    }
});

// The database file and the journal (on PostgreSQL, the journal alone).
it('no client address in any file', async () => {
    await srv.stop();
    let checked = 0;
    for (const f of filesUnder(srv.dir)) {
        const bytes = fs.readFileSync(f);
        assert.equal(bytes.indexOf(XFF), -1, `${f} holds the client address`);
        if (/journal|\.clicks|\.db$/.test(f)) checked++;
    }
    assert.ok(checked > 0, 'no database or journal file was scanned');
    await srv.restart();
});
