// sites.test.mjs - shortd's page script (/s.js) in real Chromium on a site
// served from a second local origin (a small static server started here,
// on "localhost" while shortd is on 127.0.0.1), then the dashboard's Sites
// pages.
//
// The script: page views, a reload, single-page route changes (pushState,
// replaceState, popstate; the fragment alone does not count), custom events
// (one queued before the script loaded, two identical ones in a row), a
// synthetic dispatchEvent (bot[synthetic]), real clicks through playwright's
// mouse (a probe bucket, a download, an outbound link), a crawler's visit;
// every beacon the browser sends is read off the wire and decoded (only the
// documented fields leave the browser), and the site's stats must show
// exactly what happened. Then the dashboard: the list, a site added through
// the form, its page (the same numbers), the additive "show bots" toggle,
// settings and read tokens, the setup page seeing a first page view arrive
// live, each at 390 × 844 without sideways scrolling and clean for axe-core.
//
// The tests run in order and build on each other (one server, one browser).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before } from 'node:test';

import { chromium } from 'playwright-core';

import { BROWSER_UA, ROOT, api, cli, freePort, it, poll, startServer } from '../e2e/harness.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];
const AXE = fs.readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
// Failed requests the flow causes on purpose: the first GET /api/session
// before signing in (401), a host that another site has (409, or 400).
const EXPECTED_FAILURE = /Failed to load resource: the server responded with a status of (400|401|409) /;
// What a beacon may carry (the wire format): nothing else leaves the browser.
const FIELDS = new Set(['p', 'h', 'r', 'l', 'tz', 'w', 'us', 'um', 'uc', 'uv', 'ss', 'bo', 'ev', 'et', 'z']);

let srv;
let site;        // the static server of the test site: {url, close}
let browser;
let ctx;         // a visitor's browser (a normal user agent)
let page;
const beacons = [];   // every beacon the visitor's pages sent, decoded
const problems = [];

/* ------------------------------------------------------------ test site */

/* The pages of the test site, each with the snippet the setup page gives. */
function pages(shortd, away) {
    const head = (title) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<script defer src="${shortd}/s.js"></script>
<script>window.shortd = window.shortd || function () { (shortd.q = shortd.q || []).push(arguments); };</script>
<script src="/page.js" defer></script></head>`;
    return {
        '/index.html': `${head('Home')}<body><h1>Home</h1>
<script>shortd('event', 'early', 'queued');</script>
<p><a id="out" href="${away}/away.html">Elsewhere</a></p>
<p><a id="dl" href="/files/report.pdf" download>The report</a></p>
<p><button id="signup" type="button">Sign up</button></p>
<p><a id="inside" href="/about.html">About</a></p></body></html>`,
        '/app/': `${head('App')}<body><h1>App</h1><p id="route">/app/</p></body></html>`,
        '/about.html': `${head('About')}<body><h1>About</h1></body></html>`,
        '/page.js': `document.getElementById('signup')?.addEventListener('click', () => shortd('event', 'signup', 'newsletter'));`,
        '/files/report.pdf': '%PDF-1.4 not really\n',
        '/away.html': '<!doctype html><title>Away</title><p>Another site, without the script.</p>',
    };
}

function startSite(shortd) {
    return new Promise((resolve, reject) => {
        let files = {};
        const s = http.createServer((req, res) => {
            const p = new URL(req.url, 'http://x').pathname;
            if (p === '/favicon.ico') {
                res.writeHead(204);
                res.end();
                return;
            }
            const body = files[p];
            if (body === undefined) {
                res.writeHead(404, { 'content-type': 'text/plain' });
                res.end('no such page');
                return;
            }
            const type = p.endsWith('.js') ? 'text/javascript' : p.endsWith('.pdf') ? 'application/pdf' : 'text/html; charset=utf-8';
            res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
            res.end(body);
        });
        freePort().then((port) => {
            s.listen(port, '127.0.0.1', () => {
                // The site is "localhost"; the page it links to is on
                // 127.0.0.1 (another host, of no site: counted nowhere).
                files = pages(shortd, `http://127.0.0.1:${port}`);
                resolve({ url: `http://localhost:${port}`, away: `http://127.0.0.1:${port}`, close: () => new Promise((r) => s.close(r)) });
            });
        }, reject);
    });
}

/* ------------------------------------------------------------- helpers */

function watch(p) {
    p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    p.on('console', (m) => {
        if (m.type() === 'error' && !EXPECTED_FAILURE.test(m.text())) problems.push(`console: ${m.text()}`);
    });
}

/* Records every beacon a page sends to shortd, decoded. */
function listen(p) {
    p.on('request', (req) => {
        const u = new URL(req.url());
        if (`${u.origin}` !== srv.url || u.pathname !== '/e') return;
        const v = req.method() === 'GET' ? u.searchParams.get('v') : (req.postData() || '').replace(/^v=/, '');
        beacons.push({ method: req.method(), data: JSON.parse(Buffer.from(v, 'base64url').toString('utf8')) });
    });
}

async function stats(id = 'blog') {
    const r = await api(srv, 'GET', `/api/sites/${id}/stats`, { key: srv.adminKey });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

// A count: a number, or the sum of a dimension's {value: count}.
const total = (o) => (typeof o === 'number' ? o : Object.values(o || {}).reduce((s, v) => s + v, 0));
const pvOf = (s) => s.page_views;

/* Waits until the stats satisfy ok(stats); fails showing the last ones. */
async function statsUntil(ok, what, id = 'blog') {
    let last = null;
    const done = await poll(async () => ok((last = await stats(id))), { timeoutMs: 15_000, intervalMs: 200 });
    assert.ok(done, `${what}: ${JSON.stringify(last)}`);
    return last;
}

/* Waits for 'n' beacons in all. */
async function beaconsUntil(n) {
    const ok = await poll(() => beacons.length >= n, { timeoutMs: 10_000 });
    assert.ok(ok, `expected ${n} beacons, saw ${beacons.length}: ${JSON.stringify(beacons.map((b) => b.data))}`);
}

/* ---------------------------------------------------------------- setup */

before(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run scripts/setup.sh (apt-get install chromium)`);
    srv = await startServer();
    site = await startSite(srv.url);
    const r = await api(srv, 'POST', '/api/sites', { key: srv.adminKey, body: { id: 'blog', hosts: ['localhost'], badge: true } });
    assert.equal(r.status, 201, r.text);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
    ctx = await browser.newContext({
        userAgent: BROWSER_UA, viewport: { width: 1280, height: 900 }, locale: 'de-DE', timezoneId: 'Europe/Berlin', acceptDownloads: true,
    });
    page = await ctx.newPage();
    page.setDefaultTimeout(10_000);
    watch(page);
    listen(page);
});

after(async () => {
    if (browser) await browser.close();
    if (site) await site.close();
    if (srv && srv.running) await srv.stop();
});

/* ---------------------------------------------------------- the script */

it('GET /s.js: the built script, small, cached by ETag, loadable from any origin', async () => {
    const r = await fetch(`${srv.url}/s.js`);
    const body = Buffer.from(await r.arrayBuffer());
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    assert.equal(r.headers.get('cross-origin-resource-policy'), 'cross-origin');
    assert.ok(body.length > 500 && body.length < 8000, `${body.length} bytes`);
    const etag = r.headers.get('etag');
    assert.match(etag, /^"[0-9a-f]{24}"$/);
    const again = await fetch(`${srv.url}/s.js`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
});

it('page views: at load with the visit flags, again on reload; a queued custom event; nothing else leaves the page', async () => {
    await page.goto(`${site.url}/index.html?utm_source=news&utm_medium=mail&utm_campaign=launch`);
    await beaconsUntil(2);
    const [view, early] = beacons.map((b) => b.data);
    assert.equal(view.p, '/index.html');
    assert.equal(view.h, 'localhost');
    assert.equal(view.r, '');
    assert.equal(view.l, 'de-DE');
    assert.equal(view.tz, 'Europe/Berlin');
    assert.equal(view.w, 1280);
    assert.deepEqual([view.us, view.um, view.uc, view.uv, view.ss, view.bo], ['news', 'mail', 'launch', 1, 1, undefined]);
    assert.deepEqual([early.ev, early.et], ['early', 'queued']);
    // The random id the flags come from stays in the browser.
    const kept = JSON.parse(await page.evaluate(() => localStorage.getItem('shortd')));
    assert.ok(kept.id && !JSON.stringify(beacons).includes(kept.id));
    await page.reload();
    await beaconsUntil(4);
    assert.equal(beacons[2].data.p, '/index.html');
    assert.ok(!('uv' in beacons[2].data) && !('ss' in beacons[2].data), 'same day, same session');
});

it('single-page routes: pushState and popstate count, the fragment alone and an unchanged replaceState do not', async () => {
    await page.goto(`${site.url}/app/`);
    await beaconsUntil(5);
    await page.evaluate(() => history.pushState({}, '', '/app/two'));
    await page.evaluate(() => history.pushState({}, '', '/app/two#part'));
    await page.evaluate(() => history.replaceState({}, '', '/app/two#part'));
    await page.evaluate(() => { location.hash = 'other'; });
    await page.evaluate(() => new Promise((r) => { addEventListener('popstate', r, { once: true }); history.back(); }));
    await page.evaluate(() => new Promise((r) => { addEventListener('popstate', r, { once: true }); history.back(); }));
    await page.evaluate(() => new Promise((r) => { addEventListener('popstate', r, { once: true }); history.back(); }));
    assert.equal(await page.evaluate(() => location.pathname + location.hash), '/app/');
    await beaconsUntil(7);
    await page.waitForTimeout(300);
    const views = beacons.slice(4).map((b) => [b.data.p, b.data.r]);
    assert.deepEqual(views, [['/app/', ''], ['/app/two', `${site.url}/app/`], ['/app/', `${site.url}/app/two`]]);
});

it('custom events: two identical ones in a row are two beacons; a synthetic input is bot[synthetic]', async () => {
    await page.evaluate(() => { shortd('event', 'same', 'x'); shortd('event', 'same', 'x'); });
    await page.evaluate(() => document.body.dispatchEvent(new PointerEvent('pointerdown', { bubbles: true })));
    await beaconsUntil(10);
    const sent = beacons.slice(7).map((b) => [b.data.ev, b.data.et]);
    assert.deepEqual(sent, [['same', 'x'], ['same', 'x'], ['bot', 'synthetic']]);
    assert.notEqual(beacons[7].data.z, beacons[8].data.z);
});

it('real clicks: the probe\'s bucket, a custom event from a button, a download, an outbound link by sendBeacon', async () => {
    // A page of its own: the mouse never moved over the pages above.
    page = await ctx.newPage();
    watch(page);
    listen(page);
    await page.goto(`${site.url}/index.html`);
    await beaconsUntil(12);       // the view and the queued event
    await page.waitForTimeout(200);
    await page.click('#signup');
    const dl = page.waitForEvent('download');
    await page.click('#dl');
    await dl;
    await Promise.all([page.waitForURL(`${site.away}/away.html`), page.click('#out')]);
    await beaconsUntil(16);
    await page.waitForTimeout(300);
    const sent = beacons.slice(12).map((b) => [b.method, b.data.ev, b.data.ev === 'hi' ? 'bucket' : b.data.et]);
    assert.deepEqual(sent, [
        ['GET', 'hi', 'bucket'],
        ['GET', 'signup', 'newsletter'],
        ['POST', 'download', '/files/report.pdf'],
        ['POST', 'outbound', `${site.away}/away.html`],
    ]);
    assert.ok(['<150', '150-2000', '>2000'].includes(beacons[12].data.et), beacons[12].data.et);
});

it('every beacon carries only the documented fields', () => {
    assert.equal(beacons.length, 16);
    for (const b of beacons) {
        for (const k of Object.keys(b.data)) assert.ok(FIELDS.has(k), `field ${k} in ${JSON.stringify(b.data)}`);
        assert.match(b.data.z, /^[0-9a-z]{6}$/);
    }
});

it('a crawler\'s page view is a bot hit, never a page view', async () => {
    const bot = await browser.newContext();      // HeadlessChrome's own user agent
    const p = await bot.newPage();
    await p.goto(`${site.url}/about.html`);
    await p.waitForTimeout(500);
    await bot.close();
});

it('the stats show exactly what happened', async () => {
    const s = await statsUntil((x) => pvOf(x) === 6 && total(x.events) === 8 && (x.bot || {}).ua === 1 && total(x.hi) === 1
        && (x.bot || {}).synthetic === 1, 'six page views, eight events, one of each bot');
    assert.deepEqual(s.paths, { '/index.html': 3, '/app/': 2, '/app/two': 1 });
    assert.deepEqual(s.hosts, { localhost: 6 });
    assert.deepEqual(s.events, { early: 3, same: 2, signup: 1, download: 1, outbound: 1 });
    assert.deepEqual(s.event_targets, { queued: 3, x: 2, newsletter: 1, '/files/report.pdf': 1, [`${site.away}/away.html`]: 1 });
    assert.equal(total(s.uv), 1);
    assert.equal(total(s.sessions), 1);
    assert.equal(total(s.bounce), 0);
    assert.deepEqual(s.utm_source, { news: 2 });
    assert.deepEqual(s.viewports, { xl: 6 });
    assert.deepEqual(s.timezones, { 'Europe/Berlin': 6 });
    assert.deepEqual(s.bot, { ua: 1, synthetic: 1 });
    assert.equal(total(s.ref_groups), 6);
    assert.equal(s.ref_groups.internal, 2, JSON.stringify(s.ref_groups));
});

/* ---------------------------------------------------------- dashboard */

let admin;   // the dashboard's page

/* Opens a hash of the dashboard and waits for 'ready'. */
async function go(hash, ready) {
    await admin.goto(`${srv.url}/dashboard${hash}`);
    await admin.locator(ready).first().waitFor();
}

it('the Sites list, and a site added through the form with a clear error first', async () => {
    const user = cli(['user', 'create', 'boss', '--role', 'admin', '--db', srv.db], { input: 'boss-password\n' });
    assert.equal(user.code, 0, user.stderr);
    const dctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    await dctx.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) => {
            console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`);
        });
    });
    await dctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: srv.url });
    admin = await dctx.newPage();
    admin.setDefaultTimeout(10_000);
    watch(admin);
    await admin.goto(`${srv.url}/dashboard#/signin`);
    await admin.getByLabel('Name').fill('boss');
    await admin.getByLabel('Password').fill('boss-password');
    await admin.getByRole('button', { name: 'Sign in' }).click();
    await admin.waitForURL(/#\/links/);
    await admin.getByRole('link', { name: 'Sites' }).click();
    await admin.locator('#site-list li[data-site="blog"]').waitFor();
    assert.match(await admin.locator('#site-list li[data-site="blog"]').innerText(), /localhost/);
    // A bad id is refused here, naming the field.
    await admin.getByLabel('Site id').fill('Not OK');
    await admin.getByLabel('Hosts').fill('127.0.0.1');
    await admin.getByRole('button', { name: 'Add site' }).click();
    assert.match(await admin.locator('#site-id-err').innerText(), /lower-case/);
    // A host that belongs to another site: the server's message.
    await admin.getByLabel('Site id').fill('docs');
    await admin.getByLabel('Hosts').fill('localhost');
    await admin.getByRole('button', { name: 'Add site' }).click();
    await admin.locator('.sites-page [role="alert"]:not(:empty)').first().waitFor();
    await admin.getByLabel('Hosts').fill('127.0.0.1');
    await admin.getByRole('button', { name: 'Add site' }).click();
    await admin.waitForURL(/#\/site\/docs\/setup$/);
});

it('the setup page: the snippet, the script checked, then the first page view seen live with its host', async () => {
    await admin.locator('#setup-waiting').waitFor();
    assert.match(await admin.locator('#setup-script').innerText(), /s\.js answers/);
    const code = await admin.locator('#setup-snippet').innerText();
    assert.ok(code.includes(`<script defer src="${srv.url}/s.js"></script>`), code);
    await admin.getByRole('button', { name: 'Copy the snippet' }).click();
    assert.equal(await admin.evaluate(() => navigator.clipboard.readText()), code);
    // A visitor opens a page of the site (its host is 127.0.0.1).
    const visitor = await ctx.newPage();
    await visitor.goto(`${site.away}/about.html`);
    await admin.locator('#setup-arrived').waitFor({ timeout: 20_000 });
    assert.match(await admin.locator('#setup-arrived').innerText(), /from 127\.0\.0\.1/);
    assert.equal(await admin.locator('.step[data-step="3"]').getAttribute('data-state'), 'done');
    await visitor.close();
});

it('a site\'s page: the same figures as the API, bots only when asked, and added to, never subtracted', async () => {
    await go('#/site/blog', '#kpi-pv');
    assert.equal(await admin.locator('#kpi-pv .kpi-value').innerText(), '6');
    assert.equal(await admin.locator('#kpi-uv .kpi-value').innerText(), '1');
    assert.equal(await admin.locator('#kpi-sessions .kpi-value').innerText(), '1');
    assert.equal(await admin.locator('[data-dim="paths"] .bar[data-key="/index.html"]').getAttribute('data-count'), '3');
    assert.equal(await admin.locator('#site-events .bar[data-key="same"]').getAttribute('data-count'), '2');
    assert.equal(await admin.locator('#site-hi .bar').count(), 1);
    const cells = await admin.locator('#heatmap-card .hm-cell[data-count]').evaluateAll((cs) => cs.reduce((s, c) => s + Number(c.dataset.count), 0));
    assert.equal(cells, 6, 'the heatmap holds every page view');
    assert.ok(await admin.locator('#bots-card').isHidden());
    await admin.locator('#show-bots').check();
    assert.ok(await admin.locator('#bots-card').isVisible());
    assert.equal(await admin.locator('#kpi-bot-ua .kpi-value').innerText(), '1');
    assert.equal(await admin.locator('#kpi-bot-synthetic .kpi-value').innerText(), '1');
    assert.equal(await admin.locator('#kpi-pv .kpi-value').innerText(), '6', 'bots never change the page views');
    assert.match(admin.url(), /bots=1/);
    // The range as CSV, with the referrer groups.
    const [file] = await Promise.all([admin.waitForEvent('download'), admin.locator('#csv').click()]);
    const csv = fs.readFileSync(await file.path(), 'utf8');
    assert.match(file.suggestedFilename(), /^blog-\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}\.csv$/);
    assert.match(csv, /^page_views,,6\r?$/m);
    assert.match(csv, /^ref_groups,internal,2\r?$/m);
});

it('settings: hosts and badge saved, a read token shown once and working, revoked, the site deleted', async () => {
    await go('#/site/docs/settings', '#edit-hosts');
    await admin.locator('#edit-hosts').fill('127.0.0.1, docs.example.org');
    await admin.getByRole('button', { name: 'Save' }).click();
    await admin.locator('#toast', { hasText: 'Saved docs' }).waitFor();
    const got = await api(srv, 'GET', '/api/sites/docs', { key: srv.adminKey });
    assert.deepEqual([...got.json.hosts].sort(), ['127.0.0.1', 'docs.example.org']);
    await admin.getByRole('button', { name: 'New read token' }).click();
    const token = await admin.locator('#token-value').innerText();
    const read = await api(srv, 'GET', `/api/sites/docs/stats?token=${encodeURIComponent(token)}`);
    assert.equal(read.status, 200, read.text);
    assert.equal(pvOf(read.json), 1);
    await admin.locator('#token-list li').first().waitFor();
    await admin.locator('#token-list li').first().getByRole('button', { name: /Revoke/ }).click();
    await admin.locator('#confirm-ok').click();
    await admin.locator('#token-list .empty').waitFor();
    assert.equal((await api(srv, 'GET', `/api/sites/docs/stats?token=${encodeURIComponent(token)}`)).status, 401);
});

const PAGES = [
    ['sites', '#/sites', '#site-list li'],
    ['site', '#/site/blog', '#kpi-pv'],
    ['settings', '#/site/blog/settings', '#token-list'],
    ['setup', '#/site/blog/setup', '#setup-waiting'],
];

it('each Sites page at 390 × 844: nothing scrolls sideways', async () => {
    await admin.setViewportSize({ width: 390, height: 844 });
    for (const [name, hash, ready] of PAGES) {
        await go(hash, ready);
        await admin.waitForTimeout(150);
        const wide = await admin.evaluate(() => {
            const w = document.documentElement.clientWidth;
            const out = [];
            for (const el of document.querySelectorAll('body *')) {
                const r = el.getBoundingClientRect();
                if (r.right > w + 1 && !el.closest('.table-wrap, .heatmap-wrap') && getComputedStyle(el).position !== 'fixed'
                    && ![...el.children].some((c) => c.getBoundingClientRect().right > w + 1)) out.push(`${el.tagName}.${el.className}#${el.id} ${Math.round(r.width)}`);
            }
            return { scroll: document.documentElement.scrollWidth, w, out: out.slice(0, 5) };
        });
        assert.ok(wide.scroll <= wide.w, `${name}: the page is ${wide.scroll} px wide at ${wide.w} (${wide.out})`);
    }
    await admin.setViewportSize({ width: 1280, height: 900 });
});

it('axe-core finds no serious or critical violation on any Sites page', async () => {
    const found = [];
    for (const [name, hash, ready] of PAGES) {
        await go(hash, ready);
        await admin.evaluate(AXE);
        const v = await admin.evaluate(async () => (await globalThis.axe.run(document)).violations
            .filter((x) => x.impact === 'serious' || x.impact === 'critical').map((x) => `${x.id}: ${x.nodes.map((n) => n.target).join(' ')}`));
        found.push(...v.map((x) => `${name} ${x}`));
    }
    assert.deepEqual(found, []);
});

it('deleting a site: confirmed, gone from the list, its beacons counted nowhere', async () => {
    await go('#/site/docs/settings', '#site-delete');
    await admin.locator('#site-delete').click();
    await admin.locator('#confirm-ok').click();
    await admin.waitForURL(/#\/sites$/);
    await admin.locator('#site-list li[data-site="blog"]').waitFor();
    assert.equal(await admin.locator('#site-list li[data-site="docs"]').count(), 0);
    assert.equal((await api(srv, 'GET', '/api/sites/docs', { key: srv.adminKey })).status, 404);
});

it('back and forward between pages: each page shown is one page view, from the back-forward cache or not', async () => {
    const before = pvOf(await stats());
    const p = await ctx.newPage();
    watch(p);
    await p.goto(`${site.url}/about.html`);
    await p.goto(`${site.url}/app/`);
    await p.goBack();
    await p.goForward();
    const restored = await p.evaluate(() => performance.getEntriesByType('navigation')[0]?.type);
    await statsUntil((x) => pvOf(x) >= before + 4, `four more page views than ${before} (last navigation: ${restored})`);
    await p.waitForTimeout(500);
    assert.equal(pvOf(await stats()), before + 4);
    await p.close();
});

it('no page broke the Content-Security-Policy or threw', () => {
    assert.deepEqual(problems, []);
});
