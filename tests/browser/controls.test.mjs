// controls.test.mjs - every control of the dashboard in real Chromium, used
// as a person would: create a link with every field of POST /api/links, edit
// it (the history shows the change, the password is set and removed and never
// shown), an A/B link whose chart matches where its visitors were sent, the
// Domains page, export as CSV and JSON, a CSV upload with a bad row, the
// blocklist, a sink. Then each page at 390 × 844 (no sideways scrolling, the links
// table as cards) and axe-core (npm, pinned) on each page: no serious or
// critical violation.
//
// The tests run in order and build on each other (one server, one browser).
// With SHORTD_UPDATE_DOCS=1 the main pages are written to docs/ (the new
// link form, an A/B link's page and the service page; the links, form and
// link page on a phone).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { chromium } from 'playwright-core';

import { BROWSER_UA, ROOT, api, cli, it, poll, startServer, tempDir, unique, visit } from '../e2e/harness.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];
const AXE = fs.readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
// Failed requests the flow causes on purpose: a refused bulk row is in a 200,
// but a bad alias is a 400; the page's first GET /api/session, before
// anyone has signed in, is a 401.
const EXPECTED_FAILURE = /Failed to load resource: the server responded with a status of (400|401) /;

let srv;
let browser;
let page;
let dir;
let made;       // the link made through the form
let ab;         // the A/B link
const domainHost = `${unique('go').toLowerCase()}.example.org`;
const problems = [];

before(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run scripts/setup.sh (apt-get install chromium)`);
    dir = tempDir();
    srv = await startServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    await ctx.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) => {
            console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`);
        });
    });
    page = await ctx.newPage();
    page.setDefaultTimeout(10_000);
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
        if (m.type() === 'error' && !EXPECTED_FAILURE.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    // An admin user, signed in with name and password as a person would
    const user = cli(['user', 'create', 'boss', '--role', 'admin', '--db', srv.db], { input: 'boss-password\n' });
    assert.equal(user.code, 0, user.stderr);
    await page.goto(`${srv.url}/dashboard#/signin`);
    await page.getByLabel('Name').fill('boss');
    await page.getByLabel('Password').fill('boss-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/#\/links/);
});

after(async () => {
    if (browser) await browser.close();
    if (srv && srv.running) await srv.stop();
});

/* Submits the create form; fails with the form's own error if it shows one. */
async function created() {
    await page.getByRole('button', { name: 'Create short link' }).click();
    const errors = page.locator('.link-form .field-error:not(:empty), .link-form .form-error:not(:empty)');
    await poll(async () => (await page.locator('.result .short-url a').count()) > 0 || (await errors.count()) > 0);
    if (await errors.count()) assert.fail(`the form says: ${(await errors.allInnerTexts()).join(' / ')}`);
}

async function go(hash, ready) {
    await page.goto(`${srv.url}/dashboard${hash}`);
    await page.locator(ready).first().waitFor();
}

async function docShot(name, opts = {}) {
    await page.evaluate(() => { document.getElementById('toast').hidden = true; });
    await page.screenshot({ path: path.join(ROOT, `docs/${name}.png`), ...opts });
}

it('the Domains page registers a domain, and refuses a bad one next to the field', async () => {
    await go('#/domains', '#domain-list');
    await page.getByLabel('Custom domain').fill('not a host');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await poll(async () => (await page.locator('#domain-err').innerText()) !== '');
    assert.match(await page.locator('#domain-err').innerText(), /host/i);
    await page.getByLabel('Custom domain').fill(domainHost);
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.locator(`#domain-list li[data-host="${domainHost}"]`).waitFor();
    // The signed-in user's own domains (the admin key is another owner)
    const r = await page.request.get(`${srv.url}/api/domains`);
    assert.deepEqual((await r.json()).map((d) => d.host), [domainHost]);
});

it('create offers every field of POST /api/links, with a live UTM preview', async () => {
    await go('#/new', '#f-url');
    const alias = unique('full');
    await page.getByLabel('Destination URL').fill('https://example.com/landing?x=1#top');
    await page.getByLabel('Custom alias').fill(alias);
    await page.locator('#f-domain option').nth(1).waitFor({ state: 'attached' });
    await page.getByLabel('Short host').selectOption(domainHost);
    await page.getByLabel('Title').fill('Launch page');
    await page.getByLabel('Tags').fill('launch, docs');
    await page.getByLabel('Note').fill('for the newsletter');
    await page.getByLabel('Expires', { exact: true }).selectOption('604800');
    await page.getByLabel('Click limit').fill('50');
    await page.getByLabel('Password').fill('s3cret-word');
    await page.getByLabel('Source').fill('news letter');
    await page.getByLabel('Medium').fill('email');
    // The preview follows the typing, as the server will merge it.
    assert.equal(await page.locator('#utm-preview').innerText(),
        'https://example.com/landing?x=1&utm_source=news%20letter&utm_medium=email#top');
    await created();
    const r = await api(srv, 'GET', `/api/links/${alias}`, { key: srv.adminKey });
    made = r.json;
    assert.equal(made.url, 'https://example.com/landing?x=1#top');
    assert.equal(made.domain, domainHost);
    assert.equal(made.title, 'Launch page');
    assert.deepEqual(made.tags, ['launch', 'docs']);
    assert.equal(made.note, 'for the newsletter');
    assert.equal(made.max_clicks, 50);
    assert.equal(made.permanent, false);
    assert.equal(made.protected, true);
    assert.equal(made.days_remaining, 7);
    assert.deepEqual(made.utm, { source: 'news letter', medium: 'email' });
    assert.equal(made.destination, 'https://example.com/landing?x=1&utm_source=news%20letter&utm_medium=email#top');
});

it('the link page shows the real destination, the badges, the limit; the password never', async () => {
    await go(`#/link/${made.code}`, '#destinations');
    assert.match(await page.locator('#destinations').innerText(), /utm_source=news%20letter&utm_medium=email/);
    const pills = await page.locator('.link-title .pill').allInnerTexts();
    assert.deepEqual(pills, ['protected', 'limited', 'expiring']);
    assert.equal(await page.locator('#click-limit').innerText(), '50 of 50 clicks left');
    assert.ok(!(await page.content()).includes('s3cret-word'));
    assert.match(await page.locator('#history-card').innerText(), /Never changed/);
});

it('edit: a new destination shows in the history; the password is removed; UTM cleared', async () => {
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.locator('#f-url').waitFor();
    assert.equal(await page.locator('#f-password').inputValue(), '', 'the password is never filled in');
    await page.getByLabel('Destination URL').fill('https://example.com/moved');
    await page.getByLabel('Remove the password').check();
    await page.getByLabel('Source').fill('');
    await page.getByLabel('Medium').fill('');
    await page.getByLabel('Title').fill('Moved page');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(new RegExp(`#/link/${made.code}$`));
    await page.locator('#history li').first().waitFor();
    const hist = await page.locator('#history li').first().innerText();
    assert.match(hist, /example\.com\/landing\?x=1#top[\s\S]*example\.com\/moved/);
    const r = await api(srv, 'GET', `/api/links/${made.code}`, { key: srv.adminKey });
    assert.equal(r.json.url, 'https://example.com/moved');
    assert.equal(r.json.protected, false);
    assert.equal(r.json.utm, null);
    assert.equal(r.json.title, 'Moved page');
    assert.deepEqual(await page.locator('.link-title .pill').allInnerTexts(), ['limited', 'expiring']);
    // ...and a password set again through the edit form.
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByLabel('Password').fill('another-one');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(new RegExp(`#/link/${made.code}$`));
    assert.equal((await api(srv, 'GET', `/api/links/${made.code}`, { key: srv.adminKey })).json.protected, true);
});

it('a permanent link: the checkbox, its badge; a click limit is not offered with it', async () => {
    await go('#/new', '#f-url');
    await page.getByLabel('Destination URL').fill('https://example.com/forever');
    await page.getByLabel('Click limit').fill('5');
    assert.ok(await page.getByLabel(/Permanent redirect/).isDisabled(), 'no 301 with a click limit');
    await page.getByLabel('Click limit').fill('');
    await page.getByLabel(/Permanent redirect/).check();
    assert.ok(await page.getByLabel('Click limit').isDisabled(), 'no click limit with a 301');
    await created();
    const code = (await page.locator('.result .short-url a').innerText()).split('/').pop();
    await go(`#/link/${code}`, '.link-title');
    assert.deepEqual(await page.locator('.link-title .pill').allInnerTexts(), ['permanent']);
    assert.equal((await api(srv, 'GET', `/api/links/${code}`, { key: srv.adminKey })).json.permanent, true);
});

it('an untracked link: the box, its badge; a click limit is not offered with it; edit turns it back on', async () => {
    await go('#/new', '#f-url');
    await page.getByLabel('Destination URL').fill('https://example.com/quiet');
    await page.getByLabel('Click limit').fill('5');
    assert.ok(await page.getByLabel(/Record visits/).isDisabled(), 'no tracking off with a click limit');
    await page.getByLabel('Click limit').fill('');
    await page.getByLabel(/Record visits/).uncheck();
    assert.ok(await page.getByLabel('Click limit').isDisabled(), 'no click limit without tracking');
    await created();
    const code = (await page.locator('.result .short-url a').innerText()).split('/').pop();
    await go(`#/link/${code}`, '.link-title');
    assert.deepEqual(await page.locator('.link-title .pill').allInnerTexts(), ['not tracked']);
    assert.equal((await api(srv, 'GET', `/api/links/${code}`, { key: srv.adminKey })).json.track, false);
    await go(`#/link/${code}/edit`, '#f-track');
    assert.equal(await page.getByLabel(/Record visits/).isChecked(), false);
    await page.getByLabel(/Record visits/).check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    // The page goes to the link once saved: wait for it, or that late move
    // can replace the next test's page.
    await page.waitForURL(new RegExp(`#/link/${code}$`));
    assert.equal((await api(srv, 'GET', `/api/links/${code}`, { key: srv.adminKey })).json.track, true);
});

it('the Domains page lists the links made on a domain', async () => {
    await go('#/domains', `[data-links-of="${domainHost}"] a`);
    assert.match(await page.locator(`[data-links-of="${domainHost}"]`).innerText(), new RegExp(made.code));
});

it('an A/B link: variants with weights in the form; the chart counts where visitors were sent', async () => {
    await go('#/new', '#f-url');
    const alias = unique('split');
    await page.getByLabel('Destination URL').fill('https://example.com/a');
    await page.getByRole('button', { name: 'Add a variant' }).click();   // two rows: the least
    assert.equal(await page.locator('.variant').count(), 2);
    await page.getByLabel('Variant 1 URL').fill('https://example.com/a');
    await page.getByLabel('Weight').nth(0).fill('3');
    await page.getByLabel('Variant 2 URL').fill('https://example.com/b');
    assert.equal(await page.locator('.v-share').nth(0).innerText(), '75% of visitors');
    await page.getByLabel('Custom alias').fill(alias);
    await created();
    ab = (await api(srv, 'GET', `/api/links/${alias}`, { key: srv.adminKey })).json;
    assert.deepEqual(ab.variants.map((v) => [v.url, v.weight]), [['https://example.com/a', 3], ['https://example.com/b', 1]]);

    // Twenty visitors (a browser each); count where each was sent.
    const sent = { 1: 0, 2: 0 };
    for (let i = 0; i < 20; i++) {
        const r = await visit(srv, alias, { headers: { 'user-agent': `${BROWSER_UA} visitor/${i}` } });
        assert.equal(r.status, 302);
        sent[r.headers.get('location') === 'https://example.com/a' ? 1 : 2]++;
    }
    assert.ok(sent[1] > 0 && sent[2] > 0, `both variants used: ${JSON.stringify(sent)}`);
    assert.ok(await poll(async () => (await api(srv, 'GET', `/api/links/${alias}/stats`, { key: srv.adminKey })).json.clicks === 20));
    await go(`#/link/${alias}`, '#ab-chart');
    const bars = await page.locator('#ab-chart .bar').evaluateAll((bs) => bs.map((b) => [b.dataset.key, Number(b.dataset.count)]));
    assert.deepEqual(Object.fromEntries(bars), { 1: sent[1], 2: sent[2] });
    assert.match(await page.locator('#ab-chart').innerText(), /Variant 1: https:\/\/example\.com\/a \(weight 75%\)/);
    assert.match(await page.locator('#destinations').innerText(), /example\.com\/b/);
});

it('the links table: a 30-day sparkline per row whose last bar is today\'s clicks', async () => {
    await go('#/links', `#links-table tr[data-code="${ab.code}"] .spark`);
    const spark = page.locator(`#links-table tr[data-code="${ab.code}"] .spark`);
    assert.equal(await spark.locator('.spark-bar').count(), 30);
    assert.equal(await spark.getAttribute('aria-label'), 'Last 30 days: 20 clicks, at most 20 a day');
    const last = await spark.locator('.spark-bar').last().evaluate((b) => b.classList.contains('zero'));
    assert.equal(last, false, 'today has a bar');
});

it('export: CSV and JSON downloads hold the links', async () => {
    await go('#/bulk', '#export-csv');
    for (const format of ['csv', 'json']) {
        const dl = page.waitForEvent('download');
        await page.locator(`#export-${format}`).click();
        const file = path.join(dir, `export.${format}`);
        await (await dl).saveAs(file);
        const body = fs.readFileSync(file, 'utf8');
        assert.ok(body.includes(made.code) && body.includes(ab.code), `${format} export names both links`);
        if (format === 'json') assert.ok(JSON.parse(body));
    }
});

it('bulk upload: a result per row, the bad row refused with the reason, the good ones made', async () => {
    const good1 = unique('bulka');
    const good2 = unique('bulkb');
    const csv = `url,alias,title,tags\r\nhttps://example.com/one,${good1},"One, first",a|b\r\nnot a url,,Bad,\r\nhttps://example.com/two,${good2},Two,\r\n`;
    const file = path.join(dir, 'links.csv');
    fs.writeFileSync(file, csv);
    await page.getByLabel('CSV file').setInputFiles(file);
    await page.getByRole('button', { name: 'Create the links' }).click();
    await page.locator('#bulk-table tbody tr').nth(2).waitFor();
    const rows = await page.locator('#bulk-table tbody tr').evaluateAll((rs) => rs.map((r) => [r.dataset.row, r.dataset.status, r.innerText]));
    assert.deepEqual(rows.map((r) => r[1]), ['201', '400', '201']);
    assert.match(rows[1][2], /url/);
    assert.match(await page.locator('.bulk-summary').innerText(), /2 of 3 rows made a link; 1 refused/);
    const one = await api(srv, 'GET', `/api/links/${good1}`, { key: srv.adminKey });
    assert.equal(one.json.title, 'One, first');
    assert.deepEqual(one.json.tags, ['a', 'b']);
    // A file without a url column is refused before anything is sent.
    fs.writeFileSync(file, 'link,title\nhttps://example.com,x\n');
    await page.getByLabel('CSV file').setInputFiles(file);
    await page.getByRole('button', { name: 'Create the links' }).click();
    await poll(async () => (await page.locator('#bulk-error').innerText()) !== '');
    assert.match(await page.locator('#bulk-error').innerText(), /"url"/);
});

it('admin: block a host, unblock it', async () => {
    await go('#/admin', '#block-list');
    await page.getByLabel('Host to block').fill('bad.example');
    await page.getByRole('button', { name: 'Block host' }).click();
    await page.locator('#block-list li[data-host="bad.example"]').waitFor();
    const refused = await api(srv, 'POST', '/api/links', { key: srv.adminKey, body: { url: 'https://x.bad.example/' } });
    assert.ok([400, 403].includes(refused.status), `a link to a blocked host: ${refused.status}`);
    await page.getByRole('button', { name: 'Unblock bad.example' }).click();
    await page.locator('#confirm-ok').click();
    await page.locator('#block-list li[data-host="bad.example"]').waitFor({ state: 'detached' });
});

it('admin: add a sink, its secret shown once; a new secret; delete it', async () => {
    await go('#/admin', '#sink-list');
    await page.getByLabel('Endpoint').fill('http://127.0.0.1:9/hook');
    await page.getByLabel('link.created').check();
    await page.getByRole('button', { name: 'Add sink' }).click();
    const shown = await page.locator('#sink-secret code').innerText();
    assert.match(shown, /^whsec_/);
    const sinks = (await api(srv, 'GET', '/api/sinks', { key: srv.adminKey })).json;
    assert.equal(sinks.length, 1);
    assert.deepEqual(sinks[0].types, ['link.created']);
    assert.equal(sinks[0].secret, undefined);
    const li = `#sink-list li[data-sink="${sinks[0].id}"]`;
    await page.locator(li).waitFor();
    await page.getByRole('button', { name: `New secret for sink ${sinks[0].id}` }).click();
    await page.locator('#confirm-ok').click();
    await poll(async () => (await page.locator('#sink-secret code').innerText()) !== shown);
    await page.getByRole('button', { name: `Delete sink ${sinks[0].id}` }).click();
    await page.locator('#confirm-ok').click();
    await page.locator(li).waitFor({ state: 'detached' });
    assert.equal((await api(srv, 'GET', '/api/sinks', { key: srv.adminKey })).json.length, 0);
});

it('the service page: a daily chart of the range, unique visitors, bots, top referrers beside top links', async () => {
    assert.equal((await visit(srv, ab.code, { headers: { referer: 'https://news.example.net/item/1' } })).status, 302);
    assert.equal((await visit(srv, ab.code, { headers: { 'user-agent': 'curl/8.5.0' } })).status, 302);
    let stats;
    assert.ok(await poll(async () => {
        stats = (await api(srv, 'GET', '/api/stats', { key: srv.adminKey })).json;
        return stats.range.clicks === 21 && stats.range.bot_clicks === 1;
    }), `the range: ${JSON.stringify(stats?.range).slice(0, 300)}`);
    await go('#/service', '#service-chart canvas');
    assert.equal(await page.locator('#svc-range-clicks .kpi-value').innerText(), '21');
    assert.equal(await page.locator('#svc-range-uniques .kpi-value').innerText(), String(stats.range.unique_visitors));
    assert.equal(await page.locator('#svc-range-bots .kpi-value').innerText(), '1');
    assert.equal(await page.locator('#svc-referrers .bar[data-key="news.example.net"]').getAttribute('data-count'), '1');
    assert.match(await page.locator('#svc-bot-kinds').innerText(), /HTTP libraries and scripts/);
    assert.equal(await page.locator(`#svc-top .bar[data-code="${ab.code}"]`).getAttribute('data-count'), '21');
    // Another range is a link away; 1 year draws lines, not bars.
    await page.getByRole('link', { name: '7 days' }).click();
    await page.waitForURL(/#\/service\?days=7$/);
    await page.locator('#service-chart canvas').waitFor();
    assert.match(await page.locator('.range-head h2').innerText(), new RegExp(`${new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10)} – `));
});

const PAGES = [
    ['links', '#/links', '#links-table'],
    ['new', '#/new', '#f-url'],
    ['link', () => `#/link/${ab.code}`, '#ab-chart'],
    ['edit', () => `#/link/${made.code}/edit`, '#f-url'],
    ['domains', '#/domains', '#domain-list li'],
    ['bulk', '#/bulk', '#export-csv'],
    ['service', '#/service', '#svc-links'],
    ['admin', '#/admin', '#block-list'],
];

it('each page at 390 × 844: nothing scrolls sideways; the links table is cards', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [name, hash, ready] of PAGES) {
        await go(typeof hash === 'function' ? hash() : hash, ready);
        await page.waitForTimeout(150);     // the chart takes the width
        const wide = await page.evaluate(() => {
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
        if (name === 'links') {
            const display = await page.locator('#links-table tbody tr').first().evaluate((r) => getComputedStyle(r).display);
            assert.equal(display, 'block', 'a row is a card');
            const tw = await page.locator('.table-wrap').evaluate((e) => [e.scrollWidth, e.clientWidth]);
            assert.ok(tw[0] <= tw[1], `the cards fit: ${tw}`);
        }
        if (process.env.SHORTD_UPDATE_DOCS && ['links', 'new', 'link'].includes(name)) {
            await docShot(`dashboard-phone-${name}`);
        }
    }
    await page.setViewportSize({ width: 1280, height: 900 });
});

it('keyboard: Tab reaches every control of the edit form and each shows where the focus is', async () => {
    await go(`#/link/${made.code}/edit`, '#f-url');
    const controls = await page.locator('.link-form :is(input, select, textarea, button, a[href]):visible').count();
    await page.locator('body').focus();
    const seen = new Set();
    for (let i = 0; i < controls + 12 && seen.size < controls; i++) {
        await page.keyboard.press('Tab');
        const f = await page.evaluate(() => {
            const el = document.activeElement;
            if (!el || !el.closest('.link-form')) return null;
            const cs = getComputedStyle(el);
            return { id: el.id || el.textContent.trim(), ring: cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2 };
        });
        if (!f) continue;
        assert.ok(f.ring, `${f.id} shows no focus ring`);
        seen.add(f.id);
    }
    assert.equal(seen.size, controls, `Tab reached ${[...seen]}`);
});

it('axe-core finds no serious or critical violation on any page', async () => {
    const found = [];
    for (const [name, hash, ready] of [['signin', null, null], ...PAGES]) {
        if (name === 'signin') {
            const p = await browser.newPage();
            await p.goto(`${srv.url}/dashboard#/signin`);
            await p.getByLabel('Name').waitFor();
            await p.evaluate(AXE);
            const v = await p.evaluate(async () => (await globalThis.axe.run(document)).violations
                .filter((x) => x.impact === 'serious' || x.impact === 'critical').map((x) => `${x.id}: ${x.nodes.map((n) => n.target).join(' ')}`));
            found.push(...v.map((x) => `signin ${x}`));
            await p.close();
            continue;
        }
        await go(typeof hash === 'function' ? hash() : hash, ready);
        await page.evaluate(AXE);
        const v = await page.evaluate(async () => (await globalThis.axe.run(document)).violations
            .filter((x) => x.impact === 'serious' || x.impact === 'critical').map((x) => `${x.id}: ${x.nodes.map((n) => n.target).join(' ')}`));
        found.push(...v.map((x) => `${name} ${x}`));
        if (process.env.SHORTD_UPDATE_DOCS && ['new', 'link', 'service'].includes(name)) {
            await docShot(`dashboard-${name}`, { fullPage: true });
        }
    }
    assert.deepEqual(found, []);
});

it('no page broke the Content-Security-Policy or threw', () => {
    assert.deepEqual(problems, []);
});
