// dashboard.test.mjs - the dashboard in real Chromium (Debian's chromium,
// driven by playwright-core) against a real shortd, used as a new user would:
// a wrong key, sign in, create (a bad alias first), find the link in the
// table, click its short URL from a browser with a normal user agent (and once
// from headless Chromium, which is rightly a bot), watch the counts, chart and
// heatmap, download the QR code as PNG and SVG and decode both with zbarimg,
// delete with confirmation, sign out; another key sees none of it.
//
// Every page is watched: a Content-Security-Policy violation, an uncaught
// error or an unexpected failed request fails the run. Screenshots go to
// tests/browser/screenshots/ (not in git); with SHORTD_UPDATE_DOCS=1 the link
// page is also written to docs/dashboard.png for the README.
//
// The tests run in order and build on each other (one server, one browser).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { chromium } from 'playwright-core';

import { BROWSER_UA, ROOT, api, cli, createLink, it, poll, startServer, tempDir, unique, visit } from '../e2e/harness.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = path.join(ROOT, 'tests/browser/screenshots');
const DOCS_SHOT = path.join(ROOT, 'docs/dashboard.png');
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];
// Failed requests the flow causes on purpose: the wrong key (401), the bad
// alias (400), another owner's link (404).
const EXPECTED_FAILURE = /Failed to load resource: the server responded with a status of (400|401|404) /;
const UA = {
    iphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
        'Version/17.4 Mobile/15E148 Safari/604.1',
    firefoxWin: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0',
    curl: 'curl/8.5.0',
};
// Shown as text, never as markup, wherever it appears.
const HOSTILE = '<img src=x onerror=alert(1)><script>alert(2)</script>';

let srv;
let browser;
let context;
let page;
let dir;
let theirs;           // a link of another user
let link;             // the link created through the form
let hostile;          // a link whose title, note and tags are markup
const problems = [];  // CSP violations, page errors, unexpected console errors

before(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run scripts/setup.sh (apt-get install chromium)`);
    const z = spawnSync('zbarimg', ['--version'], { encoding: 'utf8' });
    if (z.error) throw new Error('no zbarimg: run scripts/setup.sh (apt-get install zbar-tools)');
    fs.mkdirSync(SHOTS, { recursive: true });
    dir = tempDir();
    srv = await startServer({ args: ['--trusted-proxies', '127.0.0.1/32'] });   // believes cf-ipcountry
    // The people who sign in: an admin, and a member with a link of their own
    // (made through the API with the member's session, as the page would).
    for (const [name, role] of [['boss', 'admin'], ['someone', 'member']]) {
        const r = cli(['user', 'create', name, '--role', role, '--db', srv.db], { input: `${name}-password\n` });
        if (r.code !== 0) throw new Error(`shortd user create ${name} failed: ${r.stderr}`);
    }
    const s = await api(srv, 'POST', '/api/session', { body: { name: 'someone', password: 'someone-password' } });
    const cookie = (s.headers.get('set-cookie') || '').split(';')[0];
    const made = await api(srv, 'POST', '/api/links', {
        body: { url: 'https://example.com/theirs', title: 'Not yours' },
        headers: { cookie, 'sec-fetch-site': 'same-origin', 'x-csrf-token': s.json.csrf_token },
    });
    if (made.status !== 201) throw new Error(`the member's link: ${made.status} ${made.text}`);
    theirs = made.json;
    // Enough links for two pages of the table (50 a page); the one tagged
    // "rare" is on the second.
    for (let i = 0; i < 51; i++) {
        await createLink(srv, srv.adminKey, {
            url: `https://example.com/filler/${i}`, title: `Filler ${i}`, tags: i === 0 ? ['rare'] : ['filler'],
        });
    }
    hostile = await createLink(srv, srv.adminKey, {
        url: 'https://example.com/"><script>alert(3)</script>', title: HOSTILE, note: HOSTILE, tags: ['<b>x</b>'],
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
    context = await newContext();
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
});

after(async () => {
    if (browser) await browser.close();
    if (srv && srv.running) await srv.stop();
});

/* A context whose pages report CSP violations, script errors and console
 * errors into 'problems'. */
async function newContext(opts = {}) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true, ...opts });
    // Runs before the page's own scripts; CSP does not apply to it.
    await ctx.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) => {
            console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI} (${e.sourceFile}:${e.lineNumber})`);
        });
    });
    ctx.on('page', watch);
    return ctx;
}

function watch(p) {
    p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    p.on('console', (m) => {
        if (m.type() !== 'error') return;
        const t = m.text();
        if (!EXPECTED_FAILURE.test(t) || /Content.Security.Policy|CSP/.test(t)) problems.push(`console: ${t}`);
    });
    p.on('dialog', (d) => { problems.push(`unexpected ${d.type()} dialog: ${d.message()}`); d.dismiss(); });
}

async function shot(name, { p = page, fullPage = true } = {}) {
    await p.evaluate(() => { document.getElementById('toast').hidden = true; });
    await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
}

const text = (sel) => page.locator(sel).first().innerText();

/* Opens a short URL in page 'p' as a click would; resolves with shortd's
 * answer (the redirect), whatever becomes of the destination. */
async function follow(p, url) {
    const answer = p.waitForResponse((r) => r.url() === url);
    await p.goto(url, { timeout: 10_000 }).catch(() => { /* the destination is offline */ });
    return answer;
}

/* Waits until the links table shows exactly these codes, in this order. */
async function tableShows(codes) {
    const rows = page.locator('#links-table tbody tr');
    const ok = await poll(async () => {
        const have = await rows.evaluateAll((rs) => rs.map((r) => r.dataset.code));
        return have.length === codes.length && have.every((c, i) => c === codes[i]);
    }, { timeoutMs: 10_000 });
    if (!ok) {
        const have = await rows.evaluateAll((rs) => rs.map((r) => r.dataset.code));
        assert.deepEqual(have, codes, 'the rows of the links table');
    }
}

/* ------------------------------------------------------------------ tests */

/* Signs in through the form. */
async function signIn(name, password) {
    await page.getByLabel('Name').fill(name);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
}

it('the sign-in page, and a clear message for a wrong password', async () => {
    await page.goto(`${srv.url}/dashboard`);
    await page.waitForURL(/#\/signin$/);
    await signIn('boss', 'not-the-password');
    const err = page.locator('#signin-error');
    await err.waitFor({ state: 'visible' });
    assert.match(await err.innerText(), /Wrong name or password/);
    assert.equal(await page.getByLabel('Password').inputValue(), '');
    assert.ok(await page.locator('#nav').isHidden());
    await shot('01-wrong-key');
});

it('signs in with a name and password; the browser keeps no key, the cookie is out of scripts\' reach', async () => {
    await signIn('boss', 'boss-password');
    await page.waitForURL(/#\/links/);
    await page.locator('#links-table').waitFor();
    assert.ok(await page.locator('#nav').isVisible());
    assert.equal(await page.evaluate(() => localStorage.length + sessionStorage.length), 0);
    assert.equal(await page.evaluate(() => document.cookie), '');
    const cookies = await context.cookies(srv.url);
    const c = cookies.find((x) => x.name === 'shortd_session');
    assert.ok(c, JSON.stringify(cookies));
    assert.equal(c.httpOnly, true);
    assert.equal(c.sameSite, 'Strict');
});

it('create: the API\'s error is shown next to the alias; then the short URL, a copy button and its QR code', async () => {
    await page.getByRole('link', { name: 'New link' }).first().click();
    await page.waitForURL(/#\/new$/);
    const title = 'Launch day: the "new" plans & more';
    await page.getByLabel('Destination URL').fill('https://example.com/launch?from=dashboard');
    await page.getByLabel('Custom alias').fill('dashboard');
    await page.getByLabel('Title').fill(title);
    await page.getByLabel('Tags').fill('launch, docs');
    await page.getByRole('button', { name: 'Create short link' }).click();
    const aliasErr = page.locator('#err-alias');
    await aliasErr.waitFor({ state: 'visible' });
    assert.match(await aliasErr.innerText(), /reserved/);
    assert.equal(await page.locator('#f-alias').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.locator('#err-url').innerText(), '', 'only the named field shows the error');
    await shot('02-create-error');

    const alias = unique('launch-');
    await page.getByLabel('Custom alias').fill(alias);
    await page.getByLabel('Expires', { exact: true }).selectOption({ label: 'In 30 days' });
    await page.getByRole('button', { name: 'Create short link' }).click();
    const result = page.locator('.result .short-url a');
    await result.waitFor();
    const shortUrl = await result.innerText();
    assert.equal(shortUrl, `${srv.url}/${alias}`);
    assert.equal(await aliasErr.innerText(), '', 'the error is gone');
    // The QR code is an image that loaded (a blob: URL, fetched with the key).
    const qr = page.locator('.result img.qr');
    await poll(() => qr.evaluate((img) => img.complete && img.naturalWidth > 0), { timeoutMs: 5000 });
    assert.match(await qr.getAttribute('src'), /^blob:/);
    // Copy puts the short URL on the clipboard.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: srv.url });
    await page.locator('.result').getByRole('button', { name: 'Copy' }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shortUrl);
    await shot('03-created');

    const r = await api(srv, 'GET', `/api/links/${alias}`, { key: srv.adminKey });
    assert.equal(r.status, 200);
    link = r.json;
    assert.equal(link.title, title);
    assert.deepEqual(link.tags, ['launch', 'docs']);
    assert.equal(link.days_remaining, 30);
});

it('the table: newest first, escaped, days remaining, search and tag filter, paging by the Link header', async () => {
    await page.getByRole('link', { name: 'Links', exact: true }).click();
    await page.waitForURL(/#\/links$/);
    const rows = page.locator('#links-table tbody tr');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 50, 'one page of 50');
    const first = rows.first();
    assert.equal(await first.getAttribute('data-code'), link.code, 'newest first');
    assert.equal(await first.locator('.title').innerText(), link.title);
    // Markup in a title, URL or tag is shown as the text it is.
    const bad = page.locator(`#links-table tbody tr[data-code="${hostile.code}"]`);
    assert.equal(await bad.locator('.title').innerText(), HOSTILE);
    assert.equal(await bad.locator('.url').innerText(), hostile.url);
    assert.equal(await bad.locator('.tag').innerText(), '<b>x</b>');
    assert.equal(await page.locator('img[src="x"], #links-table script, #links-table b').count(), 0);
    assert.equal(await first.locator('td.remaining').innerText(), '30 days');
    assert.equal(await first.locator('.badge').innerText(), 'active');
    assert.equal(await first.locator('td.clicks').innerText(), '0');

    // Paging: 52 fillers + 2 links (the admin sees every owner's) = 54.
    const older = page.getByRole('button', { name: 'Older →' });
    assert.ok(await older.isEnabled());
    await older.click();
    await poll(async () => (await rows.count()) === 4);
    assert.equal(await page.locator('.pager').innerText().then((t) => /Page 2/.test(t)), true);
    assert.ok(await older.isDisabled());
    await page.getByRole('button', { name: '← Newer' }).click();
    await poll(async () => (await rows.count()) === 50);

    // Search runs in the browser over every page, and says so.
    await page.getByLabel('Search').fill('launch "new" plans');
    await tableShows([link.code]);
    assert.match(await text('.filter-note'), /1 of 54 links match\. Searched in this browser: the server does not filter/);
    assert.match(page.url(), /#\/links\?q=launch/);
    await page.getByLabel('Search').fill('');
    // A tag on the second page is found too.
    const rare = (await api(srv, 'GET', '/api/links?limit=1000', { key: srv.adminKey })).json.find((l) => l.title === 'Filler 0');
    await page.getByLabel('Tag', { exact: true }).fill('rare');
    await tableShows([rare.code]);
    // Clicking a tag filters by it.
    await page.getByLabel('Tag', { exact: true }).fill('');
    await poll(async () => (await rows.count()) === 50);
    await rows.first().getByRole('button', { name: 'launch', exact: true }).click();
    await tableShows([link.code]);
    assert.equal(await page.getByLabel('Tag', { exact: true }).inputValue(), 'launch');
    await shot('04-links-filtered');
    await page.getByLabel('Tag', { exact: true }).fill('');
    await poll(async () => (await rows.count()) === 50);

    // The hostile link's own page shows its markup as text too.
    await page.goto(`${srv.url}/dashboard#/link/${hostile.code}`);
    await page.locator('#kpi-clicks').waitFor();
    assert.equal(await text('.link-head h1'), HOSTILE);
    assert.equal(await text('.meta .note'), HOSTILE);
    assert.equal(await text('.meta .tags'), '<b>x</b>');
    assert.equal(await page.locator('img[src="x"], main script, main b').count(), 0);
    await page.goto(`${srv.url}/dashboard#/links`);
    await poll(async () => (await rows.count()) === 50);
});

it('clicks from a browser with a normal user agent count; headless Chromium\'s own is a bot', async () => {
    // A second browser, as a visitor would click: a normal Chrome user agent.
    // Its click is the request to shortd; the destination (example.com) is
    // out of reach without a network, which does not matter here.
    const visitor = await newContext({ userAgent: BROWSER_UA, locale: 'fr-FR' });
    const vp = await visitor.newPage();
    for (let i = 0; i < 2; i++) {
        const res = await follow(vp, `${link.short_url}?utm_source=newsletter&utm_medium=email&utm_campaign=launch`);
        assert.equal(res.status(), 302);
        assert.match(res.headers().location, /^https:\/\/example\.com\/launch\?from=dashboard&utm_source=newsletter/);
        assert.equal(await res.request().headerValue('user-agent'), BROWSER_UA);
    }
    await visitor.close();
    // More people (fetch with their browsers' user agents): three from a
    // search in Germany (the same browser as above), two on iPhones from
    // t.co in the US, one from Hacker News in Britain; and curl, a bot.
    const clicks = [
        ...Array(3).fill({ referer: 'https://www.google.com/search?q=x', 'cf-ipcountry': 'DE', 'accept-language': 'de-DE,de;q=0.9' }),
        ...Array(2).fill({ 'user-agent': UA.iphone, referer: 'https://t.co/x1', 'cf-ipcountry': 'US', 'accept-language': 'en-US' }),
        { 'user-agent': UA.firefoxWin, referer: 'https://news.ycombinator.com/item?id=1', 'cf-ipcountry': 'GB', 'accept-language': 'en-GB' },
        { 'user-agent': UA.curl },
    ];
    for (const headers of clicks) {
        const query = /ycombinator/.test(headers.referer) ? '?utm_source=hn' : '';
        assert.equal((await visit(srv, link.code + query, { headers })).status, 302);
    }
    // Headless Chromium, as it is, says HeadlessChrome: a bot, counted apart.
    const headless = await newContext();
    const hp = await headless.newPage();
    const res = await follow(hp, link.short_url);
    assert.equal(res.status(), 302);
    assert.match(await res.request().headerValue('user-agent'), /HeadlessChrome/);
    await headless.close();
    const counted = await poll(async () => {
        const r = await api(srv, 'GET', `/api/links/${link.code}`, { key: srv.adminKey });
        return r.json.clicks === 8 && r.json.bot_clicks === 2 ? r.json : null;
    });
    assert.ok(counted, 'eight human clicks and two bot clicks reach the counters');
});

it('the link page: counts, the chart, the heatmap, ranked bars, the last clicks; bots apart and optional', async () => {
    await page.locator(`#links-table tbody tr[data-code="${link.code}"] a.code-link`).click();
    await page.waitForURL(new RegExp(`#/link/${link.code}$`));
    await page.locator('#kpi-clicks').waitFor();
    // The counts (the page was open before the last clicks were stored: refresh).
    await poll(async () => {
        if ((await text('#kpi-clicks .kpi-value')) === '8') return true;
        await page.locator('#refresh').click();
        await page.locator('#kpi-clicks').waitFor();
        return false;
    }, { timeoutMs: 10_000, intervalMs: 300 });
    assert.equal(await text('#kpi-clicks .kpi-value'), '8');
    assert.equal(await text('#kpi-uniques .kpi-value'), '3');
    assert.equal(await text('#kpi-bots .kpi-value'), '2');
    assert.equal(await text('#total-clicks'), '8');

    // The chart: a uPlot canvas with 30 days, today's point at 8.
    const canvas = page.locator('#daily-chart canvas');
    await canvas.waitFor();
    const size = await canvas.evaluate((c) => [c.width, c.height]);
    assert.ok(size[0] > 300 && size[1] > 100, `canvas ${size}`);
    const over = page.locator('#daily-chart .u-over');
    await over.scrollIntoViewIfNeeded();
    await page.waitForTimeout(100);     // uPlot takes its position on scroll
    const box = await over.boundingBox();
    await page.mouse.move(box.x + box.width - 4, box.y + box.height / 2, { steps: 3 });
    const legend = page.locator('#daily-chart .u-legend .u-series');
    await poll(async () => (await legend.nth(1).locator('.u-value').innerText()) === '8');
    assert.equal(await legend.nth(2).locator('.u-value').innerText(), '3', 'unique visitors today');
    // The day under the cursor is named with its weekday, in UTC.
    const today = new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' }).format(new Date());
    assert.equal(await legend.nth(0).locator('.u-value').innerText(), today);

    // The heatmap: 7 × 24 cells; this hour of this weekday (UTC) has the 8.
    const now = new Date();
    const dow = ((now.getUTCDay() + 6) % 7) + 1;
    const hour = String(now.getUTCHours()).padStart(2, '0');
    assert.equal(await page.locator('.heatmap [role="cell"]').count(), 168);
    const cell = page.locator(`.heatmap .hm-cell[data-dow="${dow}"][data-hour="${hour}"]`);
    // (If the clicks straddled an hour, the 8 are split over two cells.)
    const total = await page.locator('.heatmap .hm-cell[data-count]').evaluateAll((cs) => cs.reduce((s, c) => s + Number(c.dataset.count), 0));
    assert.equal(total, 8);
    assert.ok(Number(await cell.getAttribute('data-count')) >= 1);
    assert.match(await cell.getAttribute('class'), /\bl[1-5]\b/);

    // Ranked bars.
    const bar = (dim, key) => page.locator(`[data-dim="${dim}"] .bar[data-key="${key}"]`);
    assert.equal(await bar('referrers', 'www.google.com').getAttribute('data-count'), '3');
    assert.equal(await bar('referrers', 't.co').getAttribute('data-count'), '2');
    assert.equal(await bar('ref_groups', 'search').getAttribute('data-count'), '3');
    assert.equal(await bar('ref_groups', 'social').getAttribute('data-count'), '3');
    assert.equal(await bar('ref_groups', 'direct').getAttribute('data-count'), '2');
    // Shares are of all clicks: the two without a country count in none.
    assert.match(await bar('countries', 'DE').innerText(), /Germany \(DE\)\s+3\s+38%/);
    assert.match(await bar('countries', 'US').innerText(), /United States \(US\)\s+2\s+25%/);
    assert.equal(await bar('browsers', 'Chrome').getAttribute('data-count'), '5');
    assert.equal(await bar('browsers', 'Safari').getAttribute('data-count'), '2');
    assert.equal(await bar('os', 'iOS').getAttribute('data-count'), '2');
    assert.equal(await bar('devices', 'mobile').getAttribute('data-count'), '2');
    assert.equal(await bar('languages', 'de').getAttribute('data-count'), '3');
    assert.equal(await bar('languages', 'fr').getAttribute('data-count'), '2');
    assert.equal(await bar('utm_source', 'newsletter').getAttribute('data-count'), '2');
    assert.equal(await bar('utm_source', 'hn').getAttribute('data-count'), '1');
    assert.equal(await bar('utm_campaign', 'launch').getAttribute('data-count'), '2');
    // The first bar is the longest.
    const widths = await page.locator('[data-dim="referrers"] .bar-fill').evaluateAll((els) => els.map((e) => e.style.width));
    assert.equal(widths[0], '100%');

    // The last clicks, newest first.
    const recent = page.locator('#recent-card tbody tr');
    assert.equal(await recent.count(), 8);
    const times = await recent.evaluateAll((rs) => rs.map((r) => r.cells[0].title));
    assert.deepEqual(times, [...times].sort().reverse());
    const rowsText = await recent.evaluateAll((rs) => rs.map((r) => r.innerText));
    assert.equal(rowsText.filter((t) => /news\.ycombinator\.com\s+United Kingdom \(GB\)\s+desktop\s+Firefox/.test(t)).length, 1);
    assert.equal(rowsText.filter((t) => /t\.co\s+United States \(US\)\s+mobile\s+Safari/.test(t)).length, 2);
    assert.equal(rowsText.filter((t) => /^\S.*\tdirect\tUnknown\tdesktop\tChrome$/.test(t)).length, 2);

    // Bots: hidden until asked for, then their own card and series.
    assert.ok(await page.locator('#bots-card').isHidden());
    assert.ok(await legend.nth(3).evaluate((e) => e.classList.contains('u-off')), 'bot series off');
    await page.getByLabel('Show bot clicks').check();
    assert.ok(await page.locator('#bots-card').isVisible());
    assert.equal(await page.locator('#bots-card .bar[data-key="headless"]').getAttribute('data-count'), '1');
    assert.equal(await page.locator('#bots-card .bar[data-key="http_library"]').getAttribute('data-count'), '1');
    // And by agent: HeadlessChrome and curl by their names.
    assert.equal(await page.locator('#bot-agents .bar[data-key="headlesschrome"]').getAttribute('data-count'), '1');
    assert.equal(await page.locator('#bot-agents .bar[data-key="curl"]').getAttribute('data-count'), '1');
    assert.ok(!(await legend.nth(3).evaluate((e) => e.classList.contains('u-off'))), 'bot series on');
    assert.match(page.url(), /bots=1/);

    await page.mouse.move(0, 0);
    await shot('05-link-page');
});

it('the range: 7 days, a custom day, and a wrong range told inline', async () => {
    await page.getByLabel('Show bot clicks').check();
    await page.getByRole('button', { name: '7 days' }).click();
    await page.waitForURL(/days=7/);
    await page.locator('#kpi-clicks').waitFor();
    assert.equal(await page.getByRole('button', { name: '7 days' }).getAttribute('aria-pressed'), 'true');
    const today = new Date().toISOString().slice(0, 10);
    const weekAgo = new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10);
    assert.equal(await text('#kpi-clicks .kpi-sub'), `${weekAgo} – ${today}`);
    assert.equal(await text('#kpi-clicks .kpi-value'), '8');
    assert.ok(await page.locator('#bots-card').isVisible(), 'the bot choice is kept');
    if (process.env.SHORTD_UPDATE_DOCS) {
        await page.getByLabel('Show bot clicks').uncheck();
        await page.evaluate(() => { document.getElementById('toast').hidden = true; window.scrollTo(0, 0); });
        // From the top to the end of the ranked bars.
        const end = await page.locator('.grid-bars').evaluate((e) => e.getBoundingClientRect().bottom + window.scrollY + 16);
        await page.screenshot({ path: DOCS_SHOT, fullPage: true, clip: { x: 0, y: 0, width: 1280, height: Math.ceil(end) } });
        const kb = fs.statSync(DOCS_SHOT).size / 1024;
        assert.ok(kb < 300, `docs/dashboard.png is ${kb.toFixed(0)} KB, over 300`);
        await page.getByLabel('Show bot clicks').check();
    }

    await page.locator('#range-from').fill(today);
    await page.locator('#range-to').fill(today);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(new RegExp(`from=${today}&to=${today}`));
    await page.locator('#kpi-clicks').waitFor();
    assert.equal(await text('#kpi-clicks .kpi-sub'), `${today} – ${today}`);
    assert.equal(await text('#kpi-clicks .kpi-value'), '8');

    await page.locator('#range-from').fill(today);
    await page.locator('#range-to').fill(weekAgo);
    await page.getByRole('button', { name: 'Apply' }).click();
    assert.match(await text('#range-error'), /must not be after/);
});

it('the QR code: PNG and SVG downloads decode to the short URL', async () => {
    const img = page.locator('#qr-card img.qr');
    await poll(() => img.evaluate((i) => i.complete && i.naturalWidth > 0), { timeoutMs: 5000 });

    const [png] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download PNG' }).click()]);
    assert.equal(png.suggestedFilename(), `${link.code}-qr.png`);
    const pngFile = path.join(dir, 'qr.png');
    await png.saveAs(pngFile);
    assert.equal(fs.readFileSync(pngFile).subarray(1, 4).toString(), 'PNG');
    const zp = spawnSync('zbarimg', ['--raw', '-q', pngFile], { encoding: 'utf8' });
    assert.equal(zp.stdout.trim(), link.short_url, `zbarimg: ${zp.stderr}`);

    const [svg] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download SVG' }).click()]);
    assert.equal(svg.suggestedFilename(), `${link.code}-qr.svg`);
    const svgFile = path.join(dir, 'qr.svg');
    await svg.saveAs(svgFile);
    assert.match(fs.readFileSync(svgFile, 'utf8'), /<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    // Chromium draws the SVG; zbarimg reads the picture.
    const view = await context.newPage();
    await view.goto(`file://${svgFile}`);
    const rendered = path.join(dir, 'qr-svg-rendered.png');
    await view.locator('svg').screenshot({ path: rendered });
    await view.close();
    const zs = spawnSync('zbarimg', ['--raw', '-q', rendered], { encoding: 'utf8' });
    assert.equal(zs.stdout.trim(), link.short_url, `zbarimg: ${zs.stderr}`);
});

it('the service page: totals and today\'s top links', async () => {
    await page.getByRole('link', { name: 'Service' }).click();
    await page.waitForURL(/#\/service$/);
    await page.locator('#svc-clicks').waitFor();
    assert.equal(await text('#svc-links .kpi-value'), '54');
    assert.equal(await text('#svc-clicks .kpi-value'), '8');
    assert.equal(await text('#svc-bots .kpi-value'), '2');
    const top = page.locator(`.top-today .bar[data-code="${link.code}"]`);
    assert.equal(await top.getAttribute('data-count'), '8');
    await shot('06-service');
});

it('delete asks first; cancel keeps the link, confirm deletes it', async () => {
    await page.goto(`${srv.url}/dashboard#/links`);
    const row = page.locator(`#links-table tbody tr[data-code="${link.code}"]`);
    await row.waitFor();
    assert.equal(await row.locator('td.clicks').innerText(), '8');
    await row.getByRole('button', { name: `Delete ${link.code}` }).click();
    const dialog = page.locator('dialog#confirm');
    await dialog.waitFor({ state: 'visible' });
    assert.match(await dialog.innerText(), new RegExp(`Delete ${link.code}\\?`));
    await shot('07-confirm-delete', { fullPage: false });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal((await api(srv, 'GET', `/api/links/${link.code}`, { key: srv.adminKey })).json.state, 'active');

    await row.getByRole('button', { name: `Delete ${link.code}` }).click();
    await dialog.getByRole('button', { name: 'Delete link' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await api(srv, 'GET', `/api/links/${link.code}`, { key: srv.adminKey })).json.state, 'deleted');
    assert.equal((await visit(srv, link.code)).status, 410);
    // Still listed under "Deleted", without a delete button.
    await page.getByLabel('State').selectOption('deleted');
    await row.waitFor();
    assert.equal(await row.locator('.badge').innerText(), 'deleted');
    assert.equal(await row.getByRole('button', { name: /Delete/ }).count(), 0);
});

it('sign out ends the session; another user sees only their own links', async () => {
    const before1 = (await context.cookies(srv.url)).find((x) => x.name === 'shortd_session');
    const reloaded = page.waitForEvent('load'); // sign-out reloads the page
    await page.getByRole('button', { name: 'Sign out' }).click();
    await reloaded;
    await page.waitForURL(/#\/signin$/);
    await page.getByLabel('Name').waitFor();
    assert.equal((await context.cookies(srv.url)).find((x) => x.name === 'shortd_session'), undefined);
    // The session is over on the server too, not only forgotten here.
    const old = await api(srv, 'GET', '/api/session', { headers: { cookie: `shortd_session=${before1.value}` } });
    assert.equal(old.status, 401);

    await signIn('someone', 'someone-password');
    const rows = page.locator('#links-table tbody tr');
    await rows.first().waitFor();
    assert.deepEqual(await rows.evaluateAll((rs) => rs.map((r) => r.dataset.code)), [theirs.code]);
    await page.goto(`${srv.url}/dashboard#/link/${link.code}`);
    await page.locator('.error').waitFor();
    assert.match(await text('.error'), /No link .* among yours/);
    assert.equal(await page.locator('#kpi-clicks').count(), 0);
    await shot('08-other-owner');
    // A user disabled meanwhile is sent back to sign in at their next step.
    assert.equal(cli(['user', 'disable', 'someone', '--db', srv.db]).code, 0);
    await page.evaluate(() => { location.hash = '#/service'; });
    await page.waitForURL(/#\/signin$/);
    assert.match(await text('.notice'), /signed out: the session has ended/);
});

it('no page broke the Content-Security-Policy or threw', () => {
    assert.deepEqual(problems, []);
});
