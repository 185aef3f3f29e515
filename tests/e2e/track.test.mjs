// track.test.mjs - per-link tracking off (track: false) and client hints,
// against the real binary on either store (SHORTD_E2E_STORE=pg runs it on
// PostgreSQL).
//
// An untracked link redirects exactly as a tracked one and records nothing:
// its stats stay at zero, across a restart that replays the journal too;
// turned on and off by PATCH, it counts only the visits made while on. A
// tracked "sentinel" link clicked after the others on the same connection
// tells when everything before it has been folded (one connection is served
// by one thread, whose events are journaled in order).
//
// Every redirect asks for the user-agent client hints (Accept-CH, never
// Critical-CH), and a click that sends them is counted under the hinted
// browser, OS and device.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { BROWSER_UA, Conn, api, createKey, createLink, it, poll, startServer } from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer({ args: ['--click-flush-ms', '50', '--journal-sync-ms', '10'] });
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

const ACCEPT_CH = 'Sec-CH-UA, Sec-CH-UA-Mobile, Sec-CH-UA-Platform';

/* One GET on a kept-alive connection: its answer, which must be 'status'. */
async function click(conn, code, headers = {}, status = 302) {
    let s = `GET /${code} HTTP/1.1\r\nHost: 127.0.0.1:${conn.port}\r\n`;
    for (const [k, v] of Object.entries({ 'User-Agent': BROWSER_UA, ...headers })) s += `${k}: ${v}\r\n`;
    conn.write(`${s}\r\n`);
    const r = await conn.read({ timeoutMs: 20_000 });
    assert.ok(r, `connection closed before the answer to GET /${code}`);
    assert.equal(r.status, status, `GET /${code} answered ${r.status}: ${r.text}`);
    return r;
}

async function withConn(fn) {
    const c = await Conn.open(srv.port);
    try {
        return await fn(c);
    } finally {
        c.destroy();
    }
}

async function linkOf(key, code) {
    const r = await api(srv, 'GET', `/api/links/${code}`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

async function statsOf(key, code) {
    const r = await api(srv, 'GET', `/api/links/${code}/stats`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

/* Waits until the sentinel's clicks are folded: everything sent before it on
 * the same connection is too. */
async function settled(key, sentinel, clicks) {
    const ok = await poll(async () => (await linkOf(key, sentinel)).clicks === clicks);
    assert.ok(ok, `the sentinel ${sentinel} never reached ${clicks} clicks`);
}

function assertNothing(s, what) {
    assert.equal(s.clicks, 0, `${what}: ${JSON.stringify(s)}`);
    assert.equal(s.bot_clicks, 0, `${what}: ${JSON.stringify(s)}`);
    assert.equal(s.unique_visitors, 0, `${what}: ${JSON.stringify(s)}`);
    assert.equal(s.total_clicks, 0, `${what}: ${JSON.stringify(s)}`);
    assert.deepEqual(s.recent, [], `${what}: ${JSON.stringify(s.recent)}`);
    assert.deepEqual(s.browsers, {}, `${what}: ${JSON.stringify(s.browsers)}`);
    assert.ok(s.days.every((d) => d.clicks === 0 && d.bot_clicks === 0), JSON.stringify(s.days));
}

it('an untracked link redirects and records nothing, across a restart', async () => {
    const key = createKey(srv, 'untracked');
    const quiet = await createLink(srv, key, { url: 'https://quiet.example/a', track: false });
    assert.equal(quiet.track, false);
    const plain = await createLink(srv, key, { url: 'https://quiet.example/b' });
    assert.equal(plain.track, true);
    const gated = await createLink(srv, key, { url: 'https://quiet.example/c', track: false, password: 'pw' });
    const sentinel = await createLink(srv, key, { url: 'https://quiet.example/s' });

    await withConn(async (c) => {
        for (let i = 0; i < 5; i++) {
            const r = await click(c, quiet.code);
            assert.equal(r.headers.location, 'https://quiet.example/a');
        }
        await click(c, quiet.code, { 'User-Agent': 'curl/8.5.0' });
        await click(c, plain.code);
        await click(c, sentinel.code);
    });
    const form = await api(srv, 'POST', `/${gated.code}`, {
        raw: 'password=pw', headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': BROWSER_UA },
    });
    assert.equal(form.status, 302, form.text);
    await settled(key, sentinel.code, 1);
    assert.equal((await linkOf(key, plain.code)).clicks, 1);
    assertNothing(await statsOf(key, quiet.code), 'untracked');
    assertNothing(await statsOf(key, gated.code), 'untracked, gated');

    // The journal replays at start: still nothing, and nothing counted twice.
    await srv.stop();
    await srv.restart();
    await withConn(async (c) => {
        await click(c, quiet.code);
        await click(c, sentinel.code);
    });
    await settled(key, sentinel.code, 2);
    assertNothing(await statsOf(key, quiet.code), 'untracked after a restart');
    assert.equal((await linkOf(key, plain.code)).clicks, 1);
    assert.equal((await linkOf(key, quiet.code)).track, false);
});

it('PATCH true → false → true counts only the visits made while tracked', async () => {
    const key = createKey(srv, 'toggle');
    const l = await createLink(srv, key, { url: 'https://toggle.example/' });
    const sentinel = await createLink(srv, key, { url: 'https://toggle.example/s' });
    const patch = async (track) => {
        const r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key, body: { track } });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.track, track);
    };
    let sent = 0;
    const round = async (n) => {
        await withConn(async (c) => {
            for (let i = 0; i < n; i++) await click(c, l.code);
            await click(c, sentinel.code);
        });
        await settled(key, sentinel.code, ++sent);
    };
    await round(2);             // tracked
    await patch(false);
    await round(3);             // not
    await patch(true);
    await round(4);             // tracked again
    const s = await statsOf(key, l.code);
    assert.equal(s.clicks, 6, JSON.stringify(s));
    assert.equal(s.recent.length, 6);
    assert.equal((await linkOf(key, l.code)).clicks, 6);
});

it('track: false with max_clicks is refused, naming the field', async () => {
    const key = createKey(srv, 'limits');
    let r = await api(srv, 'POST', '/api/links', {
        key, body: { url: 'https://limit.example/', track: false, max_clicks: 5 },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.field, 'track');
    r = await api(srv, 'POST', '/api/links', { key, body: { url: 'https://limit.example/', track: 0 } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.field, 'track');
    const l = await createLink(srv, key, { url: 'https://limit.example/', max_clicks: 5 });
    r = await api(srv, 'PATCH', `/api/links/${l.code}`, { key, body: { track: false } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.field, 'track');
    assert.match(r.json.error.message, /max_clicks/);
    assert.equal((await linkOf(key, l.code)).track, true);
});

it('bulk create and the JSON export carry track', async () => {
    const key = createKey(srv, 'bulk');
    const r = await api(srv, 'POST', '/api/links/bulk', {
        key, body: { links: [{ url: 'https://bulk.example/a', track: false }, { url: 'https://bulk.example/b' }] },
    });
    assert.equal(r.status, 200, r.text);
    const made = r.json.results.map((x) => x.link);
    assert.deepEqual(made.map((x) => x.track), [false, true]);
    const e = await api(srv, 'GET', '/api/export?format=json', { key });
    assert.equal(e.status, 200, e.text);
    const byCode = Object.fromEntries(e.json.map((x) => [x.code, x]));
    assert.deepEqual(made.map((x) => byCode[x.code].track), [false, true]);
});

it('redirects send Accept-CH and never Critical-CH', async () => {
    const key = createKey(srv, 'accept-ch');
    const l = await createLink(srv, key, { url: 'https://hints.example/' });
    const p = await createLink(srv, key, { url: 'https://hints.example/p', permanent: true });
    for (const [code, status] of [[l.code, 302], [l.code, 302], [p.code, 301]]) {
        const r = await api(srv, 'GET', `/${code}`, { headers: { 'user-agent': BROWSER_UA } });
        assert.equal(r.status, status, r.text);
        assert.equal(r.headers.get('accept-ch'), ACCEPT_CH);
        assert.equal(r.headers.get('critical-ch'), null);
    }
});

it('a click with client hints is counted under the hinted browser, OS and device', async () => {
    const key = createKey(srv, 'hints');
    const l = await createLink(srv, key, { url: 'https://hints.example/c' });
    // Chrome's reduced user agent names Windows and a desktop whatever it runs on.
    const reduced = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) ' +
        'Chrome/124.0.0.0 Safari/537.36';
    await withConn(async (c) => {
        await click(c, l.code, {
            'User-Agent': reduced,
            'Sec-CH-UA': '"Not A(Brand";v="99", "Microsoft Edge";v="124", "Chromium";v="124"',
            'Sec-CH-UA-Mobile': '?1',
            'Sec-CH-UA-Platform': '"Android"',
        });
        await click(c, l.code, { 'User-Agent': reduced });
        // A bot stays a bot whatever it hints.
        await click(c, l.code, { 'User-Agent': 'curl/8.5.0', 'Sec-CH-UA': '"Google Chrome";v="124"' });
    });
    const s = await poll(async () => {
        const x = await statsOf(key, l.code);
        return x.clicks === 2 && x.bot_clicks === 1 ? x : null;
    });
    assert.ok(s, 'the three clicks were never counted');
    assert.deepEqual(s.browsers, { Edge: 1, Chrome: 1 });
    assert.deepEqual(s.os, { Android: 1, Windows: 1 });
    assert.deepEqual(s.devices, { mobile: 1, desktop: 1 });
});
