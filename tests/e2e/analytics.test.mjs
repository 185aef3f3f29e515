// analytics.test.mjs - click analytics end to end: exact counts under
// concurrency, HEAD / bot / prefetch separation, every stats dimension from
// crafted requests, unique visitors, the stats shape (zero days, range
// validation, ownership), value clamping, top links and service stats, the click journal's
// crash and replay behaviour (kill -9 under load, clean restart, double
// replay, torn tail, a second server on the same journal), and a scan of
// every file and log for client addresses.
//
// Clicks are driven over raw keep-alive connections (pipelined where the
// numbers are large) with explicit user agents: Node's fetch says "node",
// which is a bot. Counters are folded asynchronously, so the tests poll the
// stats; a "sentinel" click sent last on the same connection tells when
// everything before it has been folded (one connection is served by one
// thread, whose events are journaled in order).

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import {
    BIN, BROWSER_UA, Conn, ROOT, api, createKey, createLink, errorOf, filesUnder, freePort, it, poll, rawExchange, sleep,
    sqliteOnly, startServer, statusOf, tempDir,
} from './harness.mjs';

/* ------------------------------------------------------------ user agents */

const UA = {
    chromeWin: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) ' +
        'Chrome/124.0.0.0 Safari/537.36',
    firefoxMac: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:125.0) Gecko/20100101 Firefox/125.0',
    safariIphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
        'Version/17.4 Mobile/15E148 Safari/604.1',
    edgeWin: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) ' +
        'Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.80',
    chromeAndroid: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) ' +
        'Chrome/124.0.6367.82 Mobile Safari/537.36',
    chromeAndroidTablet: 'Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) ' +
        'Chrome/124.0.6367.82 Safari/537.36',
    firefoxLinux: 'Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
    instagram: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
        'Mobile/15E148 Instagram 329.0.0.41.93 (iPhone14,5; iOS 17_4; en_US; en; scale=3.00; 1170x2532; 601420827)',
    facebook: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
        'Mobile/15E148 [FBAN/FBIOS;FBAV/458.0.0.38.108;FBBV/583340013;FBDV/iPhone14,5;FBMD/iPhone;FBSN/iOS;' +
        'FBSV/17.4;FBSS/3;FBID/phone;FBLC/en_US;FBOP/5]',
    linkedin: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
        'Mobile/15E148 [LinkedInApp]/9.29.8543',
    tiktok: 'Mozilla/5.0 (Linux; Android 13; SM-S918B Build/TP1A.220624.014; wv) AppleWebKit/537.36 ' +
        '(KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36 trill_330403 JsSdk/1.0 ' +
        'NetType/WIFI Channel/googleplay AppName/musical_ly app_version/33.4.3 ByteLocale/en Region/US ' +
        'AppId/1233 BytedanceWebview/d8a21c6',
    googlebot: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
    bingbot: 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
    gptbot: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
    curl: 'curl/8.5.0',
    pyrequests: 'python-requests/2.31.0',
    facebookexternalhit: 'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
    slackbot: 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
    outlook: 'Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17328; Pro)',
    headless: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 ' +
        'Safari/537.36',
    uptimerobot: 'Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)',
};

const XFF = '203.0.113.77';     // a forwarded-for address that must never be stored or logged
const BASE_HOST = 'sho.example'; // the main server's --base-url host: referrers from it are "internal"

const DIMS = ['referrers', 'ref_groups', 'countries', 'browsers', 'os', 'devices', 'languages', 'utm_source',
    'utm_medium', 'utm_campaign', 'bot_kinds', 'hours', 'dowhour'];

/* ---------------------------------------------------------------- servers */

let srv;      // main server, base URL https://sho.example, trusts no proxy
let admin;
let cdn;      // like srv, behind a trusted proxy (the test): country from CF-IPCountry
let geo;      // --geoip-db (127.0.0.0/8 → NL); also used for top and /api/stats
let geoAdmin;
let dur;      // explicit --journal, --retention-days, --country-header (trusted): crash and replay
let durAdmin;
let durJournal;
let mmdb = null;

before(async () => {
    const gdir = tempDir();
    const p = path.join(gdir, 'geo.mmdb');
    const r = spawnSync('perl', [path.join(ROOT, 'tests/data/make-geo-mmdb.pl'), p], { encoding: 'utf8' });
    if (r.status === 0 && fs.existsSync(p)) mmdb = p;
    durJournal = path.join(tempDir(), 'journal');   // not there yet: the server makes it
    [srv, geo, dur, cdn] = await Promise.all([
        startServer({ baseUrl: `https://${BASE_HOST}` }),
        startServer({ args: [...(mmdb ? ['--geoip-db', mmdb] : []), '--click-flush-ms', '100', '--journal-sync-ms', '10'] }),
        startServer({ args: ['--journal', durJournal, '--retention-days', '30', '--country-header', 'X-Geo-Country',
            '--trusted-proxies', '127.0.0.1/32'] }),
        startServer({ baseUrl: `https://${BASE_HOST}`, args: ['--trusted-proxies', '127.0.0.1/32'] }),
    ]);
    admin = srv.adminKey;
    geoAdmin = geo.adminKey;
    durAdmin = dur.adminKey;
});

after(async () => {
    for (const s of [srv, geo, dur, cdn]) if (s && s.running) await s.stop();
});

/* ------------------------------------------------------------------ dates */

const DAY_MS = 86_400_000;
const dayOf = (ms) => new Date(ms).toISOString().slice(0, 10);
const today = () => dayOf(Date.now());
const addDays = (day, n) => dayOf(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS);
const hourOf = (ms) => new Date(ms).toISOString().slice(11, 13);
const dowHourOf = (ms) => `${new Date(ms).getUTCDay() || 7}-${hourOf(ms)}`;

/* ------------------------------------------------------------ raw clicks */

/* One request as text. headers: name → value; a null value leaves the header
 * out (User-Agent: null sends none). The User-Agent defaults to a browser. */
function reqText(port, method, p, headers = {}) {
    const h = { 'User-Agent': BROWSER_UA, ...headers };
    let s = `${method} ${p} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`;
    for (const [k, v] of Object.entries(h)) if (v !== null && v !== undefined) s += `${k}: ${v}\r\n`;
    return `${s}\r\n`;
}

/* Sends one request on a kept-alive connection and reads its answer. */
async function send(conn, method, p, headers = {}) {
    conn.write(reqText(conn.port, method, p, headers));
    const r = await conn.read({ head: method === 'HEAD', timeoutMs: 20_000 });
    assert.ok(r, `connection closed before the answer to ${method} ${p}`);
    return r;
}

/* A click that must be answered 302. */
async function click(conn, p, headers = {}, method = 'GET') {
    const r = await send(conn, method, p, headers);
    assert.equal(r.status, 302, `${method} ${p} ${JSON.stringify(headers)} answered ${r.status}: ${r.text}`);
    return r;
}

/* Pipelines 'texts' (request strings, all GET) on conn in batches; returns
 * the number of 302 answers and the other statuses seen. */
async function blast(conn, texts, batch = 100) {
    let ok = 0;
    const other = [];
    for (let i = 0; i < texts.length; i += batch) {
        const part = texts.slice(i, i + batch);
        conn.write(part.join(''));
        for (let j = 0; j < part.length; j++) {
            const r = await conn.read({ timeoutMs: 30_000 });
            assert.ok(r, `connection closed after ${i + j} of ${texts.length} pipelined requests`);
            if (r.status === 302) ok++;
            else other.push(r.status);
        }
    }
    return { ok, other };
}

async function withConn(server, fn) {
    const c = await Conn.open(server.port);
    try {
        return await fn(c);
    } finally {
        c.destroy();
    }
}

/* ------------------------------------------------------------------ stats */

async function stats(server, code, key, qs = '') {
    const r = await api(server, 'GET', `/api/links/${code}/stats${qs}`, { key });
    assert.equal(r.status, 200, `GET /api/links/${code}/stats${qs}: ${r.status} ${r.text.slice(0, 500)}`);
    assert.ok(r.json && typeof r.json === 'object', r.text.slice(0, 500));
    return r.json;
}

async function linkOf(server, code, key) {
    const r = await api(server, 'GET', `/api/links/${code}`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

const pick = (o, keys) => Object.fromEntries(keys.map((k) => [k, o && o[k]]));
const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);

/* Polls the stats until every field of 'want' is reached exactly; fails at
 * once when one goes past. Returns the stats. */
async function waitStats(server, code, key, want, { qs = '', timeoutMs = 10_000 } = {}) {
    let last;
    const keys = Object.keys(want);
    const ok = await poll(async () => {
        last = await stats(server, code, key, qs);
        for (const k of keys) {
            assert.ok(last[k] <= want[k], `${code}: ${k} went past ${want[k]}: ${JSON.stringify(pick(last, keys))}`);
        }
        return keys.every((k) => last[k] === want[k]);
    }, { timeoutMs, intervalMs: 100 });
    assert.ok(ok, `${code}: stats ${JSON.stringify(pick(last, keys))} after ${timeoutMs} ms, want ${JSON.stringify(want)}`);
    return last;
}

/* The shape every stats answer has, and the sums that must agree when every
 * click of the link lies inside the range asked for. */
function checkShape(s, { from, to, code } = {}) {
    if (code) assert.equal(s.code, code);
    if (from) assert.equal(s.from, from);
    if (to) assert.equal(s.to, to);
    for (const k of ['clicks', 'bot_clicks', 'unique_visitors', 'total_clicks', 'total_bot_clicks']) {
        assert.ok(Number.isInteger(s[k]) && s[k] >= 0, `${k}: ${JSON.stringify(s[k])}`);
    }
    assert.ok(Array.isArray(s.days), 'days is an array');
    let d = s.from;
    for (const day of s.days) {
        assert.deepEqual(Object.keys(day).sort(), ['bot_clicks', 'clicks', 'day', 'unique_visitors']);
        assert.equal(day.day, d, 'days are every day of the range, in order');
        d = addDays(d, 1);
    }
    assert.equal(s.days.length ? s.days[s.days.length - 1].day : addDays(s.from, -1), s.to, 'days end at "to"');
    assert.equal(s.clicks, s.days.reduce((a, x) => a + x.clicks, 0), 'clicks is the sum of the days');
    assert.equal(s.bot_clicks, s.days.reduce((a, x) => a + x.bot_clicks, 0), 'bot_clicks is the sum of the days');
    assert.equal(s.unique_visitors, s.days.reduce((a, x) => a + x.unique_visitors, 0),
        'unique_visitors is the sum of the days');
    for (const k of DIMS) {
        const o = s[k];
        assert.ok(o && typeof o === 'object' && !Array.isArray(o), `${k} is an object: ${JSON.stringify(o)}`);
        for (const [name, n] of Object.entries(o)) {
            assert.ok(Number.isInteger(n) && n > 0, `${k}[${JSON.stringify(name)}] = ${JSON.stringify(n)}`);
        }
    }
    for (const h of Object.keys(s.hours)) assert.match(h, /^([01]\d|2[0-3])$/);
    for (const h of Object.keys(s.dowhour)) assert.match(h, /^[1-7]-([01]\d|2[0-3])$/);
    assert.ok(Array.isArray(s.recent) && s.recent.length <= 20, 'recent: at most 20');
}

/* When every click of the link is in the range: the human dimensions that
 * every click has add up to the clicks, bot kinds to the bot clicks. */
function checkSums(s) {
    for (const k of ['ref_groups', 'browsers', 'os', 'devices', 'hours', 'dowhour']) {
        assert.equal(sum(s[k]), s.clicks, `${k} adds up to the human clicks: ${JSON.stringify(s[k])}`);
    }
    for (const k of ['referrers', 'countries', 'languages', 'utm_source', 'utm_medium', 'utm_campaign']) {
        assert.ok(sum(s[k]) <= s.clicks, `${k} holds more than the human clicks: ${JSON.stringify(s[k])}`);
    }
    assert.equal(sum(s.bot_kinds), s.bot_clicks, `bot_kinds adds up to the bot clicks: ${JSON.stringify(s.bot_kinds)}`);
    assert.equal(s.total_clicks, s.clicks, 'all clicks are in the range: total_clicks == clicks');
    assert.equal(s.total_bot_clicks, s.bot_clicks, 'all clicks are in the range: total_bot_clicks == bot_clicks');
    assert.equal(s.recent.length, Math.min(20, s.clicks), 'recent holds the last 20 human clicks');
}

/* ===================================================== exact concurrency */

it('8 clients × 10,000 pipelined clicks over 100 links: every link exactly 800', async (t) => {
    const key = createKey(srv, 'storm');
    const links = [];
    for (let i = 0; i < 100; i += 20) {
        links.push(...await Promise.all(Array.from({ length: 20 }, (_, j) =>
            createLink(srv, key, { url: `https://example.com/storm/${i + j}` }))));
    }
    const texts = links.map((l) => reqText(srv.port, 'GET', `/${l.code}`));
    const conns = await Promise.all(Array.from({ length: 8 }, () => Conn.open(srv.port)));
    const t0 = Date.now();
    let results;
    try {
        results = await Promise.all(conns.map((c, ci) =>
            blast(c, Array.from({ length: 10_000 }, (_, i) => texts[(i + ci) % 100]))));
    } finally {
        for (const c of conns) c.destroy();
    }
    t.diagnostic(`80,000 pipelined clicks in ${Date.now() - t0} ms`);
    for (const r of results) assert.deepEqual(r, { ok: 10_000, other: [] });

    // Link objects: every one exactly 800, never more.
    let last;
    const ok = await poll(async () => {
        const r = await api(srv, 'GET', '/api/links?limit=1000', { key });
        assert.equal(r.status, 200, r.text);
        last = r.json;
        assert.equal(last.length, 100);
        for (const l of last) assert.ok(l.clicks <= 800, `${l.code} went past 800: ${l.clicks}`);
        return last.every((l) => l.clicks === 800);
    }, { timeoutMs: 15_000, intervalMs: 200 });
    assert.ok(ok, `clicks per link after 15 s: ${JSON.stringify(last.map((l) => l.clicks))}`);
    for (const l of last) assert.equal(l.bot_clicks, 0, `${l.code}: bot_clicks`);

    // The stats of every link agree.
    for (let i = 0; i < 100; i += 10) {
        await Promise.all(links.slice(i, i + 10).map(async (l) => {
            const s = await waitStats(srv, l.code, key, { clicks: 800 });
            checkShape(s, { code: l.code, to: today() });
            assert.equal(s.total_clicks, 800, `${l.code}: total_clicks`);
            assert.equal(s.bot_clicks, 0, `${l.code}: bot_clicks`);
            assert.equal(s.days[s.days.length - 1].clicks, 800, `${l.code}: today's clicks`);
            // One client address and one user agent: one visitor.
            assert.equal(s.unique_visitors, 1, `${l.code}: unique_visitors`);
            checkSums(s);
        }));
    }
});

/* ============================================= HEAD / bots / prefetch */

const BOTS = [
    [UA.googlebot, 'crawler'],
    [UA.bingbot, 'crawler'],
    [UA.gptbot, 'ai_crawler'],
    [UA.curl, 'http_library'],
    [UA.pyrequests, 'http_library'],
    [UA.facebookexternalhit, 'previewer'],
    [UA.slackbot, 'previewer'],
    [UA.outlook, 'mail_scanner'],
    [UA.headless, 'headless'],
    [UA.uptimerobot, 'monitor'],
    ['', 'empty_ua'],       // an empty one (none at all: its own test below)
];

const PREFETCH = [
    { 'Sec-Purpose': 'prefetch' },
    { 'Sec-Purpose': 'prefetch;prerender' },
    { Purpose: 'prefetch' },
    { 'X-Purpose': 'preview' },
    { 'X-Moz': 'prefetch' },
];

const IN_APP = [UA.instagram, UA.facebook, UA.linkedin, UA.tiktok];

it('HEAD is never counted; bots and prefetches are bot clicks of their kind; in-app browsers are people', async () => {
    const key = createKey(srv, 'separation');
    const l = await createLink(srv, key, { url: 'https://example.com/separation' });
    const p = `/${l.code}`;
    // Node's fetch says "node": a bot (an HTTP library), never a person.
    const nodeFetch = await api(srv, 'GET', p);
    assert.equal(nodeFetch.status, 302, nodeFetch.text);
    await withConn(srv, async (c) => {
        await click(c, p, {}, 'HEAD');
        await click(c, p, {}, 'HEAD');
        await click(c, p, { 'User-Agent': UA.googlebot }, 'HEAD');
        await click(c, p, { 'Sec-Purpose': 'prefetch' }, 'HEAD');
        for (let i = 0; i < 3; i++) await click(c, p);
        for (const [ua] of BOTS) await click(c, p, { 'User-Agent': ua });
        for (const h of PREFETCH) await click(c, p, h);
        for (const ua of IN_APP) await click(c, p, { 'User-Agent': ua });
        await click(c, p, {}, 'HEAD');
        await click(c, p, { 'User-Agent': UA.curl }, 'HEAD');
        await click(c, p);  // sentinel
    });
    const wantBots = BOTS.length + PREFETCH.length + 1;
    const s = await waitStats(srv, l.code, key, { clicks: 3 + IN_APP.length + 1, bot_clicks: wantBots });
    checkShape(s, { code: l.code });
    checkSums(s);
    const kinds = {};
    for (const [, k] of BOTS) kinds[k] = (kinds[k] || 0) + 1;
    kinds.prefetch = PREFETCH.length;
    // node's fetch is one more bot click, of whatever kind ("node" is not in the contract's list).
    const extra = Object.keys(s.bot_kinds).filter((k) => s.bot_kinds[k] !== (kinds[k] || 0));
    assert.equal(extra.length, 1, `bot_kinds ${JSON.stringify(s.bot_kinds)}, want ${JSON.stringify(kinds)} + 1`);
    assert.equal(s.bot_kinds[extra[0]], (kinds[extra[0]] || 0) + 1, JSON.stringify(s.bot_kinds));
    assert.equal(s.browsers.Chrome, 4, `browsers: ${JSON.stringify(s.browsers)}`);
    assert.equal(s.browsers.Instagram, 1, `browsers: ${JSON.stringify(s.browsers)}`);
    assert.deepEqual(s.devices, { desktop: 4, mobile: 4 });
    assert.deepEqual(s.ref_groups, { direct: 8 });
    const d = s.days[s.days.length - 1];
    assert.deepEqual(d, { day: today(), clicks: 8, unique_visitors: d.unique_visitors, bot_clicks: wantBots });

    const obj = await linkOf(srv, l.code, key);
    assert.equal(obj.clicks, 8, 'link clicks: people only');
    assert.equal(obj.bot_clicks, wantBots, 'link bot_clicks');
    const list = await api(srv, 'GET', '/api/links', { key });
    assert.equal(list.status, 200);
    assert.deepEqual(pick(list.json.find((x) => x.code === l.code), ['clicks', 'bot_clicks']),
        { clicks: 8, bot_clicks: wantBots });
});

/* A request with no User-Agent header at all, on a server of its own (a crash
 * here must not take the other tests' server down with it). */
it('a click without a User-Agent header is an empty_ua bot click', async () => {
    const own = await startServer();
    let failed = true;
    try {
        const l = await createLink(own, own.adminKey, { url: 'https://example.com/no-ua' });
        await withConn(own, async (c) => {
            await click(c, `/${l.code}`, { 'User-Agent': null });
            await click(c, `/${l.code}`, { 'User-Agent': null, Referer: 'https://example.org/' });
            await click(c, `/${l.code}`, { 'User-Agent': '' });
            await click(c, `/${l.code}`);   // sentinel
        });
        const s = await waitStats(own, l.code, own.adminKey, { clicks: 1, bot_clicks: 3 });
        checkShape(s);
        checkSums(s);
        assert.deepEqual(s.bot_kinds, { empty_ua: 3 });
        assert.equal(s.unique_visitors, 1);
        failed = false;
    } finally {
        // A failure above is the news; stop()'s own complaint would hide it.
        if (failed) { if (own.running) await own.kill9(); } else await own.stop();
    }
});

/* ============================================================ dimensions */

it('every dimension comes out of crafted requests; bots never reach the human ones', async () => {
    const key = createKey(cdn, 'dimensions');
    const l = await createLink(cdn, key, { url: 'https://example.com/dims' });
    const c0 = `/${l.code}`;
    // [user agent, headers, query, expected {referrer, group, country, browser, os, device, language}]
    const rows = [
        [UA.chromeWin, { Referer: 'https://WWW.Google.com/search?q=shortd', 'CF-IPCountry': 'DE',
            'Accept-Language': 'en-GB,en;q=0.8' }, '?utm_source=news&utm_medium=email&utm_campaign=launch',
        ['www.google.com', 'search', 'DE', 'Chrome', 'Windows', 'desktop', 'en']],
        [UA.firefoxMac, { Referer: 'https://t.co/AbCdEf', 'CF-IPCountry': 'US', 'Accept-Language': 'de-DE,de;q=0.9' },
            '?utm_source=twitter&utm_campaign=launch', ['t.co', 'social', 'US', 'Firefox', 'macOS', 'desktop', 'de']],
        [UA.safariIphone, { Referer: 'https://mail.google.com/mail/u/0/', 'CF-IPCountry': 'XX',
            'Accept-Language': 'fr' }, '', ['mail.google.com', 'email', null, 'Safari', 'iOS', 'mobile', 'fr']],
        [UA.edgeWin, { Referer: `https://${BASE_HOST}/dashboard`, 'CF-IPCountry': 'T1',
            'Accept-Language': 'en-US,en;q=0.9' }, '', [BASE_HOST, 'internal', null, 'Edge', 'Windows', 'desktop', 'en']],
        [UA.chromeAndroid, { Referer: 'https://blog.example.org/2024/post', 'CF-IPCountry': 'JP' }, '',
            ['blog.example.org', 'referral', 'JP', 'Chrome', 'Android', 'mobile', null]],
        [UA.chromeAndroidTablet, { 'CF-IPCountry': 'DE', 'Accept-Language': 'nl-NL' }, '',
            [null, 'direct', 'DE', 'Chrome', 'Android', 'tablet', 'nl']],
        [UA.instagram, { Referer: 'https://www.reddit.com/r/programming/' }, '?utm_source=instagram&utm_medium=social',
            ['www.reddit.com', 'social', null, 'Instagram', 'iOS', 'mobile', null]],
        [UA.firefoxLinux, { Referer: 'https://duckduckgo.com/', 'CF-IPCountry': 'GB', 'Accept-Language': 'en' }, '',
            ['duckduckgo.com', 'search', 'GB', 'Firefox', 'Linux', 'desktop', 'en']],
    ];
    const tStart = Date.now();
    await withConn(cdn, async (c) => {
        for (const [ua, h, q] of rows) await click(c, c0 + q, { 'User-Agent': ua, 'X-Forwarded-For': XFF, ...h });
        // Bots with every dimension set: none of it may show in the human dimensions.
        await click(c, `${c0}?utm_source=botsrc&utm_medium=botmed&utm_campaign=botcamp`, {
            'User-Agent': UA.googlebot, Referer: 'https://evil.example/', 'CF-IPCountry': 'RU',
            'Accept-Language': 'ru', 'X-Forwarded-For': XFF,
        });
        await click(c, `${c0}?utm_source=prefetch`, {
            'User-Agent': UA.chromeWin, 'Sec-Purpose': 'prefetch', Referer: 'https://prefetch.example/',
            'CF-IPCountry': 'CN', 'Accept-Language': 'zh-CN',
        });
    });
    const tEnd = Date.now();
    const s = await waitStats(cdn, l.code, key, { clicks: rows.length, bot_clicks: 2 });
    checkShape(s, { code: l.code });
    checkSums(s);

    const tally = (i) => {
        const o = {};
        for (const r of rows) if (r[3][i] !== null) o[r[3][i]] = (o[r[3][i]] || 0) + 1;
        return o;
    };
    assert.deepEqual(s.referrers, tally(0), 'referrers: lowercase hosts, humans only');
    assert.deepEqual(s.ref_groups, tally(1), 'ref_groups');
    assert.deepEqual(s.countries, tally(2), 'countries: XX and T1 are none');
    assert.deepEqual(s.browsers, tally(3), 'browsers');
    assert.deepEqual(s.os, tally(4), 'os');
    assert.deepEqual(s.devices, tally(5), 'devices');
    assert.deepEqual(s.languages, tally(6), 'languages: the primary tag');
    assert.deepEqual(s.utm_source, { news: 1, twitter: 1, instagram: 1 });
    assert.deepEqual(s.utm_medium, { email: 1, social: 1 });
    assert.deepEqual(s.utm_campaign, { launch: 2 });
    assert.deepEqual(s.bot_kinds, { crawler: 1, prefetch: 1 });

    // Hour and weekday × hour (UTC) of the moment of the requests.
    const hours = new Set([hourOf(tStart), hourOf(tEnd)]);
    const dh = new Set([dowHourOf(tStart), dowHourOf(tEnd)]);
    if (hours.size === 1) {
        assert.deepEqual(s.hours, { [hourOf(tStart)]: rows.length });
        assert.deepEqual(s.dowhour, { [dowHourOf(tStart)]: rows.length });
    } else {
        for (const h of Object.keys(s.hours)) assert.ok(hours.has(h), `hour ${h} not in ${[...hours]}`);
        for (const h of Object.keys(s.dowhour)) assert.ok(dh.has(h), `dowhour ${h} not in ${[...dh]}`);
    }
    const d = s.days[s.days.length - 1];
    assert.equal(d.day, dayOf(tEnd));
    assert.equal(s.unique_visitors, rows.length, 'eight user agents from one address: eight visitors');

    // recent: newest first, the human clicks only.
    assert.equal(s.recent.length, rows.length);
    const want = rows.slice().reverse().map((r) => r[3]);
    s.recent.forEach((rc, i) => {
        const [ref, , country, browser, , device] = want[i];
        assert.deepEqual(Object.keys(rc).sort(), ['browser', 'country', 'device', 'referrer', 'time'],
            JSON.stringify(rc));
        assert.equal(rc.browser, browser, `recent[${i}]: ${JSON.stringify(rc)}`);
        assert.equal(rc.device, device, `recent[${i}]: ${JSON.stringify(rc)}`);
        assert.equal(rc.referrer || null, ref, `recent[${i}]: ${JSON.stringify(rc)}`);
        assert.equal(rc.country || null, country, `recent[${i}]: ${JSON.stringify(rc)}`);
        const tm = typeof rc.time === 'number' ? (rc.time < 1e12 ? rc.time * 1000 : rc.time) : Date.parse(rc.time);
        assert.ok(tm >= tStart - 1500 && tm <= tEnd + 1500, `recent[${i}].time ${rc.time} outside the test`);
        if (i) {
            const prev = s.recent[i - 1].time;
            const tp = typeof prev === 'number' ? prev : Date.parse(prev);
            const tc = typeof rc.time === 'number' ? rc.time : Date.parse(rc.time);
            assert.ok(tc <= tp, 'recent is newest first');
        }
    });
});

it('stored values are clamped to 128 bytes on a UTF-8 boundary and made valid UTF-8', async () => {
    const key = createKey(srv, 'clamp');
    const l = await createLink(srv, key, { url: 'https://example.com/clamp' });
    const long = '\u00e9'.repeat(70);     // 140 bytes of two-byte characters (420 in the query)
    const host = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.example`;
    await withConn(srv, async (c) => {
        await click(c, `/${l.code}?utm_source=${encodeURIComponent(long)}`,
            { Referer: `https://${host}/page`, 'Accept-Language': 'y'.repeat(300) });
        await click(c, `/${l.code}?utm_campaign=${'x'.repeat(300)}&utm_medium=%FF%FEab%C3`);
        await click(c, `/${l.code}`);   // sentinel
    });
    await waitStats(srv, l.code, key, { clicks: 3 });
    const r = await fetch(`${srv.url}/api/links/${l.code}/stats`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(r.status, 200);
    const bytes = Buffer.from(await r.arrayBuffer());
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);   // throws on invalid UTF-8
    const st = JSON.parse(text);
    const only = (o, what) => {
        const k = Object.keys(o);
        assert.equal(k.length, 1, `${what}: ${JSON.stringify(o)}`);
        assert.ok(Buffer.byteLength(k[0]) <= 128, `${what} longer than 128 bytes: ${Buffer.byteLength(k[0])}`);
        return k[0];
    };
    const src = only(st.utm_source, 'utm_source');
    assert.ok(long.startsWith(src) && src.length === 64, `utm_source clamped on a character boundary: ${src}`);
    assert.equal(only(st.utm_campaign, 'utm_campaign'), 'x'.repeat(128));
    assert.ok(only(st.utm_medium, 'utm_medium').includes('ab'), JSON.stringify(st.utm_medium));
    assert.ok(host.startsWith(only(st.referrers, 'referrers')), JSON.stringify(st.referrers));
    for (const k of Object.keys(st.languages)) assert.ok(Buffer.byteLength(k) <= 128, `language ${k}`);
    assert.ok(Buffer.byteLength(st.recent[2].referrer) <= 128, 'recent referrer clamped');
});

it('UTM parameters count wherever they are in a long query (after long click ids)', async () => {
    const key = createKey(srv, 'utm-long');
    const l = await createLink(srv, key, { url: 'https://example.com/utm-long' });
    const q = `?utm_source=newsletter&utm_medium=email&utm_content=${'c'.repeat(300)}` +
        `&fbclid=IwAR${'F'.repeat(200)}&utm_campaign=spring`;
    await withConn(srv, async (c) => {
        await click(c, `/${l.code}${q}`);
    });
    const s = await waitStats(srv, l.code, key, { clicks: 1 });
    assert.deepEqual(pick(s, ['utm_source', 'utm_medium', 'utm_campaign']),
        { utm_source: { newsletter: 1 }, utm_medium: { email: 1 }, utm_campaign: { spring: 1 } },
        `GET /CODE${q.slice(0, 80)}… (${q.length} bytes of query)`);
});

it('recent holds the last 20 human clicks, newest first', async () => {
    const key = createKey(srv, 'recent');
    const l = await createLink(srv, key, { url: 'https://example.com/recent' });
    await withConn(srv, async (c) => {
        for (let i = 0; i < 22; i++) await click(c, `/${l.code}`, { Referer: `https://r${i}.example/page` });
        await click(c, `/${l.code}`, { 'User-Agent': UA.curl, Referer: 'https://bot.example/' });
    });
    const s = await waitStats(srv, l.code, key, { clicks: 22, bot_clicks: 1 });
    checkShape(s);
    assert.equal(s.recent.length, 20);
    assert.deepEqual(s.recent.map((r) => r.referrer), Array.from({ length: 20 }, (_, i) => `r${21 - i}.example`));
});

it('with --geoip-db the country comes from the client address (127.0.0.1 → NL), not the header', async (t) => {
    if (!mmdb) { t.skip('perl MaxMind::DB::Writer is not installed'); return; }
    const l = await createLink(geo, geoAdmin, { url: 'https://example.com/geo' });
    await withConn(geo, async (c) => {
        await click(c, `/${l.code}`, { 'CF-IPCountry': 'US', 'X-Forwarded-For': XFF });
        await click(c, `/${l.code}`, { 'User-Agent': UA.firefoxMac });
        await click(c, `/${l.code}`, { 'User-Agent': UA.googlebot, 'CF-IPCountry': 'US' });
    });
    const s = await waitStats(geo, l.code, geoAdmin, { clicks: 2, bot_clicks: 1 });
    checkShape(s);
    checkSums(s);
    assert.deepEqual(s.countries, { NL: 2 });
    assert.deepEqual(s.recent.map((r) => r.country), ['NL', 'NL']);
});

it('--country-header NAME reads the country from that header only', async () => {
    const l = await createLink(dur, durAdmin, { url: 'https://example.com/country-header' });
    await withConn(dur, async (c) => {
        await click(c, `/${l.code}`, { 'X-Geo-Country': 'SE', 'CF-IPCountry': 'FR' });
        await click(c, `/${l.code}`, { 'CF-IPCountry': 'FR', 'User-Agent': UA.firefoxLinux });
    });
    const s = await waitStats(dur, l.code, durAdmin, { clicks: 2 });
    checkShape(s);
    checkSums(s);
    assert.deepEqual(s.countries, { SE: 1 });
});

/* =============================================================== uniques */

it('unique visitors: one per (address, user agent) per day; bots are not visitors; a range sums its days', async () => {
    const key = createKey(srv, 'uniques');
    const u = await createLink(srv, key, { url: 'https://example.com/uniques' });
    const v = await createLink(srv, key, { url: 'https://example.com/uniques-2' });
    await withConn(srv, async (c) => {
        // A forwarded-for header is not the client address: still one visitor per user agent.
        await click(c, `/${u.code}`, { 'User-Agent': UA.chromeWin });
        await click(c, `/${u.code}`, { 'User-Agent': UA.chromeWin, 'X-Forwarded-For': XFF });
        await click(c, `/${u.code}?utm_source=x`, { 'User-Agent': UA.chromeWin, 'X-Forwarded-For': '198.51.100.1' });
        await click(c, `/${u.code}`, { 'User-Agent': UA.firefoxMac });
        await click(c, `/${u.code}`, { 'User-Agent': UA.firefoxMac, Referer: 'https://example.org/' });
        await click(c, `/${u.code}`, { 'User-Agent': UA.safariIphone });
        await click(c, `/${u.code}`, { 'User-Agent': UA.googlebot });
        await click(c, `/${u.code}`, { 'User-Agent': UA.googlebot });
        await click(c, `/${u.code}`, { 'User-Agent': UA.curl });
        await click(c, `/${u.code}`, { 'User-Agent': UA.chromeWin, 'Sec-Purpose': 'prefetch' });
        await click(c, `/${v.code}`, { 'User-Agent': UA.chromeWin });
        await click(c, `/${u.code}`, { 'User-Agent': UA.chromeWin });   // sentinel
    });
    const s = await waitStats(srv, u.code, key, { clicks: 7, bot_clicks: 4 });
    checkShape(s);
    checkSums(s);
    assert.equal(s.unique_visitors, 3, 'three user agents from one address, bots aside');
    assert.equal(s.days[s.days.length - 1].unique_visitors, 3);
    const week = await stats(srv, u.code, key, `?from=${addDays(today(), -6)}&to=${today()}`);
    checkShape(week, { from: addDays(today(), -6), to: today() });
    assert.equal(week.days.length, 7);
    assert.equal(week.unique_visitors, 3);
    const one = await stats(srv, u.code, key, `?from=${today()}&to=${today()}`);
    assert.equal(one.days.length, 1);
    assert.equal(one.unique_visitors, 3);
    assert.equal(one.clicks, 7);
    // Per link: the same person on another link is a visitor there too.
    const sv = await waitStats(srv, v.code, key, { clicks: 1 });
    assert.equal(sv.unique_visitors, 1);
});

/* ============================================ shape, validation, owners */

it('stats of a link without clicks: every day of the range with zeros, empty objects', async () => {
    const k1 = createKey(srv, 'owner-1');
    const k2 = createKey(srv, 'owner-2');
    const l = await createLink(srv, k1, { url: 'https://example.com/zero' });
    const empty = Object.fromEntries(DIMS.map((k) => [k, {}]));

    const s = await stats(srv, l.code, k1);
    const to = today();
    const from = addDays(to, -29);
    checkShape(s, { code: l.code, from, to });
    assert.equal(s.days.length, 30, 'default range: the 30 days ending today');
    for (const d of s.days) assert.deepEqual(pick(d, ['clicks', 'unique_visitors', 'bot_clicks']),
        { clicks: 0, unique_visitors: 0, bot_clicks: 0 });
    assert.deepEqual(pick(s, DIMS), empty);
    assert.deepEqual(pick(s, ['clicks', 'bot_clicks', 'unique_visitors', 'total_clicks', 'total_bot_clicks', 'recent']),
        { clicks: 0, bot_clicks: 0, unique_visitors: 0, total_clicks: 0, total_bot_clicks: 0, recent: [] });

    // An explicit range across a leap day.
    const leap = await stats(srv, l.code, k1, '?from=2024-02-27&to=2024-03-02');
    checkShape(leap, { from: '2024-02-27', to: '2024-03-02' });
    assert.deepEqual(leap.days.map((d) => d.day), ['2024-02-27', '2024-02-28', '2024-02-29', '2024-03-01', '2024-03-02']);
    const single = await stats(srv, l.code, k1, `?from=${to}&to=${to}`);
    assert.equal(single.days.length, 1);
    // 1,000 days is allowed.
    const long = await stats(srv, l.code, k1, `?from=${addDays(to, -999)}&to=${to}`);
    assert.equal(long.days.length, 1000);

    const obj = await linkOf(srv, l.code, k1);
    assert.deepEqual(pick(obj, ['clicks', 'bot_clicks']), { clicks: 0, bot_clicks: 0 });

    // Range validation.
    const bad = [
        ['?from=2024-03-02&to=2024-02-27', ['from', 'to']],
        ['?from=2024-13-01&to=2024-12-31', ['from']],
        ['?from=2024-02-01&to=2024-02-30', ['to']],
        ['?from=2023-02-29&to=2023-03-01', ['from']],
        ['?from=yesterday', ['from']],
        [`?from=${addDays(to, -3)}&to=20240105`, ['to']],
        [`?from=${addDays(to, -1001)}&to=${to}`, ['from', 'to']],
        ['?from=2020-01-01&to=2024-01-01', ['from', 'to']],
    ];
    for (const [qs, fields] of bad) {
        const r = await api(srv, 'GET', `/api/links/${l.code}/stats${qs}`, { key: k1 });
        assert.equal(r.status, 400, `${qs}: ${r.status} ${r.text.slice(0, 300)}`);
        const e = errorOf(r);
        assert.equal(e.code, 'invalid_field', `${qs}: ${r.text}`);
        assert.ok(fields.includes(e.field), `${qs}: field ${JSON.stringify(e.field)}, want one of ${fields}`);
    }

    // Owners: another key sees a 404, the admin sees the stats, nobody without a key.
    const other = await api(srv, 'GET', `/api/links/${l.code}/stats`, { key: k2 });
    assert.equal(other.status, 404, other.text);
    assert.ok(!other.text.includes('https://example.com/zero'), 'a 404 must not leak the link');
    const unknown = await api(srv, 'GET', '/api/links/nosuchcode1/stats', { key: k1 });
    assert.equal(unknown.status, 404, unknown.text);
    assert.equal((await api(srv, 'GET', `/api/links/${l.code}/stats`, {})).status, 401);
    const adm = await stats(srv, l.code, admin);
    assert.equal(adm.code, l.code);
    assert.equal(adm.days.length, 30);
});

/* ====================================================== top, /api/stats */

it('top links of the day and /api/stats: per caller, admin sees all, bots never count', async () => {
    const kt = createKey(geo, 'top-1');
    const kt2 = createKey(geo, 'top-2');
    const links = [];
    for (let i = 0; i < 13; i++) links.push(await createLink(geo, kt, { url: `https://example.com/top/${i}` }));
    const big = await createLink(geo, kt2, { url: 'https://example.com/top-big' });
    const texts = [];
    for (let i = 0; i < 12; i++) {
        for (let n = 0; n <= i; n++) texts.push(reqText(geo.port, 'GET', `/${links[i].code}`));
    }
    // link 0 gets many bot clicks (not in the top), link 12 only bots.
    for (let n = 0; n < 40; n++) {
        texts.push(reqText(geo.port, 'GET', `/${links[0].code}`, { 'User-Agent': UA.curl }));
        texts.push(reqText(geo.port, 'GET', `/${links[12].code}`, { 'User-Agent': UA.googlebot }));
    }
    for (let n = 0; n < 20; n++) texts.push(reqText(geo.port, 'GET', `/${big.code}`));
    texts.push(reqText(geo.port, 'GET', `/${big.code}`, { Purpose: 'prefetch' }));
    const sentinel = await createLink(geo, kt2, { url: 'https://example.com/top-sentinel' });
    texts.push(reqText(geo.port, 'GET', `/${sentinel.code}`, { 'User-Agent': UA.curl }));
    await withConn(geo, async (c) => {
        const r = await blast(c, texts, 50);
        assert.deepEqual(r, { ok: texts.length, other: [] });
    });
    await waitStats(geo, sentinel.code, kt2, { bot_clicks: 1 });
    await waitStats(geo, big.code, kt2, { clicks: 20, bot_clicks: 1 });

    const entry = (l, n) => ({ code: l.code, short_url: l.short_url, clicks: n });
    const want = Array.from({ length: 10 }, (_, i) => entry(links[11 - i], 12 - i));
    const top = await api(geo, 'GET', '/api/links/top', { key: kt });
    assert.equal(top.status, 200, top.text);
    assert.deepEqual(top.json, want, 'the caller\'s ten most clicked links of today, people only');
    const topDay = await api(geo, 'GET', `/api/links/top?day=${today()}`, { key: kt });
    assert.deepEqual(topDay.json, want);
    const yesterday = await api(geo, 'GET', `/api/links/top?day=${addDays(today(), -1)}`, { key: kt });
    assert.equal(yesterday.status, 200, yesterday.text);
    assert.deepEqual(yesterday.json, []);
    const top2 = await api(geo, 'GET', '/api/links/top', { key: kt2 });
    assert.deepEqual(top2.json, [entry(big, 20)]);
    const topAdmin = await api(geo, 'GET', '/api/links/top', { key: geoAdmin });
    assert.deepEqual(topAdmin.json, [entry(big, 20), ...want.slice(0, 9)], 'admin: everyone\'s links');

    // /api/stats: service-wide totals for any key; top_today per caller.
    const all = await api(geo, 'GET', '/api/links?limit=1000&state=all', { key: geoAdmin });
    assert.equal(all.status, 200, all.text);
    const totals = {
        links: all.json.length,
        clicks: all.json.reduce((a, l) => a + l.clicks, 0),
        bot_clicks: all.json.reduce((a, l) => a + l.bot_clicks, 0),
    };
    assert.ok(totals.clicks >= 78 + 20 && totals.bot_clicks >= 82, JSON.stringify(totals));
    // range: the caller's links together over the last 30 days (all made today).
    for (const [k, t, clicks] of [[kt, want, 78], [kt2, [entry(big, 20)], 20], [geoAdmin, topAdmin.json, null]]) {
        const r = await api(geo, 'GET', '/api/stats', { key: k });
        assert.equal(r.status, 200, r.text);
        const { range, ...rest } = r.json;
        assert.deepEqual(rest, { ...totals, day: today(), top_today: t });
        assert.equal(range.to, today());
        assert.equal(range.days.length, 30);
        assert.equal(range.days.at(-1).clicks, range.clicks);
        if (clicks !== null) assert.equal(range.clicks, clicks);
        else assert.ok(range.clicks >= 98 && range.clicks <= totals.clicks, `admin's range: ${range.clicks}`);
    }
});

/* ============================================= journal: crash and replay */

function jnlFiles(dir) {
    return fs.readdirSync(dir).filter((f) => f.endsWith('.jnl')).sort()
        .map((f) => ({ path: path.join(dir, f), size: fs.statSync(path.join(dir, f)).size }));
}

/* Stats minus nothing: the whole answer, for before/after comparisons. */
const snapshot = async (server, code, key) => ({ stats: await stats(server, code, key), link: await linkOf(server, code, key) });

let crashLink;   // the link of the journal tests, shared in order

it('kill -9 under click load: no answered click older than ~100 ms is lost, none is counted twice', async (t) => {
    assert.ok(fs.statSync(durJournal).isDirectory(), '--journal DIR is made by the server');
    assert.ok(jnlFiles(durJournal).length >= 1, `no *.jnl file in ${durJournal}: ${fs.readdirSync(durJournal)}`);
    crashLink = await createLink(dur, durAdmin, { url: 'https://example.com/crash' });
    const text = reqText(dur.port, 'GET', `/${crashLink.code}`, { 'X-Forwarded-For': XFF, 'X-Geo-Country': 'DE' });
    const batch = text.repeat(20);
    const times = [];
    let otherStatus = 0;
    const conns = await Promise.all(Array.from({ length: 4 }, () => Conn.open(dur.port)));
    const load = conns.map(async (c) => {
        try {
            while (!c.closed) {
                c.write(batch);
                for (let i = 0; i < 20; i++) {
                    const r = await c.read({ timeoutMs: 10_000 });
                    if (!r) return;
                    if (r.status === 302) times.push(Date.now());
                    else otherStatus++;
                }
            }
        } catch { /* the server is gone */ }
    });
    await poll(() => times.length >= 2000, { timeoutMs: 8000, intervalMs: 10 });
    await sleep(300);
    const killAt = Date.now();
    const gone = await dur.kill9();
    assert.equal(gone.signal, 'SIGKILL');
    await Promise.all(load);
    for (const c of conns) c.destroy();
    assert.equal(otherStatus, 0, 'every click was answered 302');
    const answered = times.length;
    const lower = times.filter((x) => x < killAt - 100).length;
    t.diagnostic(`answered ${answered}, of which ${lower} more than 100 ms before the kill`);
    assert.ok(lower >= 1000, `too little load to mean anything: ${lower}`);

    await dur.restart();
    let s;
    await poll(async () => { s = await stats(dur, crashLink.code, durAdmin); return s.clicks >= lower; },
        { timeoutMs: 10_000, intervalMs: 100 });
    await sleep(700);   // let anything still replaying be folded
    s = await stats(dur, crashLink.code, durAdmin);
    checkShape(s);
    checkSums(s);
    t.diagnostic(`counted after the restart: ${s.clicks}`);
    assert.ok(s.clicks >= lower, `lost clicks: ${s.clicks} counted, ${lower} were answered > 100 ms before kill -9`);
    assert.ok(s.clicks <= answered, `counted twice: ${s.clicks} counted, only ${answered} answered`);
    assert.equal(s.bot_clicks, 0);
    assert.equal((await linkOf(dur, crashLink.code, durAdmin)).clicks, s.clicks, 'link clicks agree with the stats');
    assert.deepEqual(s.countries, { DE: s.clicks });
});

it('replaying twice (kill -9 again, then a clean restart) changes nothing', async () => {
    assert.ok(crashLink, 'needs the kill -9 test');
    const before1 = await snapshot(dur, crashLink.code, durAdmin);
    await dur.kill9();
    await dur.restart();
    await sleep(700);
    assert.deepEqual(await snapshot(dur, crashLink.code, durAdmin), before1, 'a second replay after kill -9');
    await dur.stop();
    await dur.restart();
    await sleep(700);
    assert.deepEqual(await snapshot(dur, crashLink.code, durAdmin), before1, 'a third start after SIGTERM');
});

it('SIGTERM right after a burst, then restart: exact counts', async () => {
    assert.ok(crashLink, 'needs the kill -9 test');
    const s0 = await stats(dur, crashLink.code, durAdmin);
    const human = reqText(dur.port, 'GET', `/${crashLink.code}`, { 'User-Agent': UA.firefoxLinux });
    const bot = reqText(dur.port, 'GET', `/${crashLink.code}`, { 'User-Agent': UA.curl });
    const texts = [];
    for (let i = 0; i < 500; i++) texts.push(human, ...(i % 10 === 0 ? [bot] : []));
    const conns = await Promise.all([Conn.open(dur.port), Conn.open(dur.port)]);
    const res = await Promise.all([blast(conns[0], texts.slice(0, 275)), blast(conns[1], texts.slice(275))]);
    for (const c of conns) c.destroy();
    assert.equal(res[0].ok + res[1].ok, 550);
    await dur.stop();   // no waiting for a flush: a clean stop folds everything
    await dur.restart();
    const s = await waitStats(dur, crashLink.code, durAdmin,
        { clicks: s0.clicks + 500, bot_clicks: s0.bot_clicks + 50, total_clicks: s0.total_clicks + 500 });
    checkShape(s);
    checkSums(s);
    assert.equal(s.unique_visitors, s0.unique_visitors + 1, 'one new visitor (one new user agent)');
});

it('a torn journal tail (garbage appended after a clean stop) is skipped with a warning', async () => {
    assert.ok(crashLink, 'needs the kill -9 test');
    const before1 = await snapshot(dur, crashLink.code, durAdmin);
    await dur.stop();
    const files = jnlFiles(durJournal);
    assert.ok(files.length >= 1, `no *.jnl file in ${durJournal}`);
    const newest = files[files.length - 1].path;
    // A record header promising 19 bytes, a wrong CRC, 11 bytes: a torn write; then plain garbage.
    const hdr = Buffer.alloc(8);
    hdr.writeUInt32LE(19, 0);
    hdr.writeUInt32LE(0xdeadbeef, 4);
    fs.appendFileSync(newest, Buffer.concat([hdr, Buffer.from('torn-record')]));
    const errBefore = dur.stderr().length;
    await dur.restart();
    const log = dur.stderr().slice(errBefore);
    assert.match(log, /\bwarn/i, `no warning about the torn tail of ${newest} in stderr:\n${log}`);
    await sleep(500);
    assert.deepEqual(await snapshot(dur, crashLink.code, durAdmin), before1, 'counts after skipping a torn tail');
    await withConn(dur, async (c) => {
        for (let i = 0; i < 3; i++) await click(c, `/${crashLink.code}`);
        await click(c, `/${crashLink.code}`, { 'User-Agent': UA.pyrequests });
    });
    await waitStats(dur, crashLink.code, durAdmin,
        { clicks: before1.stats.clicks + 3, bot_clicks: before1.stats.bot_clicks + 1 });

    // Plain garbage, no header shape at all.
    await dur.stop();
    const files2 = jnlFiles(durJournal);
    fs.appendFileSync(files2[files2.length - 1].path, Buffer.from('\xff\xff\xff\xffgarbage garbage garbage', 'latin1'));
    await dur.restart();
    await sleep(500);
    const before2 = await snapshot(dur, crashLink.code, durAdmin);
    assert.equal(before2.stats.clicks, before1.stats.clicks + 3);
    assert.equal(before2.stats.bot_clicks, before1.stats.bot_clicks + 1);
});

it('a journal truncated by a few bytes after kill -9: the server starts, counts hold, new clicks count', async () => {
    assert.ok(crashLink, 'needs the kill -9 test');
    const s0 = await stats(dur, crashLink.code, durAdmin);
    let lastAt;
    await withConn(dur, async (c) => {
        const r = await blast(c, Array(40).fill(reqText(dur.port, 'GET', `/${crashLink.code}`)), 40);
        assert.equal(r.ok, 40);
        await sleep(200);
        await click(c, `/${crashLink.code}`);
        lastAt = Date.now();
    });
    await sleep(60);   // past the sync window (~20 ms), before most folds
    await dur.kill9();
    const files = jnlFiles(durJournal).filter((f) => f.size > 0);
    assert.ok(files.length >= 1, `every *.jnl in ${durJournal} is empty ${Date.now() - lastAt} ms after a click`);
    const f = files[files.length - 1];
    fs.truncateSync(f.path, Math.max(0, f.size - 3));
    await dur.restart();
    let s;
    await poll(async () => { s = await stats(dur, crashLink.code, durAdmin); return s.clicks >= s0.clicks + 40; },
        { timeoutMs: 10_000, intervalMs: 100 });
    await sleep(500);
    s = await stats(dur, crashLink.code, durAdmin);
    assert.ok(s.clicks >= s0.clicks + 40 && s.clicks <= s0.clicks + 41,
        `clicks ${s.clicks}, want ${s0.clicks + 40} or ${s0.clicks + 41} (only the torn last record may go)`);
    await withConn(dur, async (c) => {
        await click(c, `/${crashLink.code}`);
        await click(c, `/${crashLink.code}`);
    });
    await waitStats(dur, crashLink.code, durAdmin, { clicks: s.clicks + 2 });
});

/* Starts a second shortd; resolves with {code, stdout, stderr, started}. */
async function secondServer(args) {
    const port = await freePort();
    const p = spawn(BIN, ['serve', '--listen', `127.0.0.1:${port}`, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8');
    p.stderr.setEncoding('utf8');
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const exit = new Promise((resolve) => p.on('close', (code, signal) => resolve({ code, signal })));
    let exited = null;
    exit.then((e) => { exited = e; });
    let started = false;
    const deadline = performance.now() + 15_000;
    while (!exited && performance.now() < deadline) {
        const r = await rawExchange(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
            { timeoutMs: 500, stopAfter: 1 });
        if (statusOf(r.text) === 200) { started = true; break; }
        await sleep(100);
    }
    if (!exited) p.kill(started ? 'SIGTERM' : 'SIGKILL');
    const e = await exit;
    return { ...e, stdout, stderr, started };
}

it('a second server on the same journal refuses to start', async (t) => {
    assert.ok(dur.running);
    const r = await secondServer(['--db', dur.db, '--journal', durJournal]);
    assert.ok(!r.started, `a second shortd served on the journal in use:\n${r.stderr}`);
    assert.ok(r.code !== 0 && r.code !== null, `exit code ${r.code} signal ${r.signal}\n${r.stderr}`);
    const out = r.stdout + r.stderr;
    assert.ok(/journal/i.test(out) || out.includes(durJournal), `no message naming the journal:\n${out}`);
    if (sqliteOnly(t, 'the rest is about the default journal <db>.clicks next to the SQLite file')) return;
    // The default journal (<db>.clicks) is locked the same way.
    const r2 = await secondServer(['--db', srv.db]);
    assert.ok(!r2.started, `a second shortd served on the default journal in use:\n${r2.stderr}`);
    assert.ok(r2.code !== 0 && r2.code !== null, `exit code ${r2.code}\n${r2.stderr}`);
    assert.ok(/journal/i.test(r2.stdout + r2.stderr), `no message naming the journal:\n${r2.stdout + r2.stderr}`);
    assert.ok(fs.existsSync(`${srv.db}.clicks`), 'the default journal is <db>.clicks');

    // The first servers still count.
    const l = await createLink(dur, durAdmin, { url: 'https://example.com/after-second' });
    await withConn(dur, (c) => click(c, `/${l.code}`));
    await waitStats(dur, l.code, durAdmin, { clicks: 1 });
});

it('--retention-days is accepted; all-time totals equal the sum of the days for fresh data', async () => {
    assert.ok(crashLink, 'needs the kill -9 test');
    const s = await stats(dur, crashLink.code, durAdmin);
    checkShape(s);
    assert.equal(s.total_clicks, s.days.reduce((a, d) => a + d.clicks, 0));
    assert.equal(s.total_bot_clicks, s.days.reduce((a, d) => a + d.bot_clicks, 0));
    const wide = await stats(dur, crashLink.code, durAdmin, `?from=${addDays(today(), -400)}&to=${today()}`);
    assert.equal(wide.clicks, s.total_clicks);
});

/* ================================================================ privacy */

function scanFiles(dirs, needles) {
    const hits = [];
    for (const d of dirs) {
        for (const f of filesUnder(d)) {
            const b = fs.readFileSync(f);
            for (const n of needles) if (b.includes(Buffer.from(n, 'latin1'))) hits.push(`${f}: ${n}`);
        }
    }
    return hits;
}

function scanLogs(server) {
    const out = server.stdout() + server.stderr();
    const bad = out.split('\n').filter((line) => line.includes(XFF) ||
        (line.includes('127.0.0.1') && !line.includes(`127.0.0.1:${server.port}`)));
    return bad;
}

it('no client address on disk or in the logs (db, -wal, journal files), running and after a stop', async (t) => {
    if (sqliteOnly(t, 'scans the SQLite file and its -wal on disk')) return;
    // More traffic with forwarded addresses, humans and bots, API calls too.
    const l = await createLink(srv, admin, { url: 'https://example.com/privacy' }, { 'X-Forwarded-For': XFF });
    await withConn(srv, async (c) => {
        for (const h of [{}, { 'User-Agent': UA.curl }, { 'Sec-Purpose': 'prefetch' }, { Referer: 'https://example.org/' }]) {
            await click(c, `/${l.code}?utm_source=privacymarker7`, {
                'X-Forwarded-For': XFF, 'X-Real-IP': XFF, Forwarded: `for=${XFF}`, ...h,
            });
        }
        const nf = await send(c, 'GET', '/nosuchcode9', { 'X-Forwarded-For': XFF });
        assert.equal(nf.status, 404);
        await click(c, `/${l.code}`);   // sentinel
    });
    await waitStats(srv, l.code, admin, { clicks: 3, bot_clicks: 2 });
    await api(srv, 'GET', '/api/links', { key: admin, headers: { 'X-Forwarded-For': XFF } });

    const servers = [srv, geo, dur];
    const dirs = () => [...servers.map((s) => s.dir), durJournal];
    const needles = ['127.0.0.1', XFF];
    for (const s of servers) assert.ok(fs.existsSync(s.db), s.db);
    // The scan reads what is stored: a value that is meant to be stored is found.
    assert.notDeepEqual(scanFiles([srv.dir], ['privacymarker7']), [], 'the scan finds a stored utm_source');
    let hits = scanFiles(dirs(), needles);
    assert.deepEqual(hits, [], 'client addresses on disk while running');
    for (const s of servers) assert.deepEqual(scanLogs(s), [], `client addresses in the logs of ${s.describe()}`);

    for (const s of servers) await s.stop();
    hits = scanFiles(dirs(), needles);
    assert.deepEqual(hits, [], 'client addresses on disk after a clean stop');
    for (const s of servers) assert.deepEqual(scanLogs(s), [], `client addresses in the logs of ${s.describe()}`);
});
