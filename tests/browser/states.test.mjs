// states.test.mjs - the dashboard in real Chromium shows a link whose click
// limit is used up as "exhausted" (the table's badge, its state filter, the
// link page), not as "active" while it answers 410.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before } from 'node:test';

import { chromium } from 'playwright-core';

import { api, cli, createLink, it, poll, startServer, unique, visit } from '../e2e/harness.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

let srv;
let browser;
let page;
let spent;      // max_clicks 1, used
let fresh;      // max_clicks 3, unused
const problems = [];

before(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run scripts/setup.sh (apt-get install chromium)`);
    srv = await startServer();
    const made = cli(['user', 'create', 'boss', '--role', 'admin', '--db', srv.db], { input: 'boss-password\n' });
    assert.equal(made.code, 0, made.stderr);
    spent = await createLink(srv, srv.adminKey, { url: 'https://example.com/once', alias: unique('once'), max_clicks: 1 });
    fresh = await createLink(srv, srv.adminKey, { url: 'https://example.com/thrice', alias: unique('thrice'), max_clicks: 3 });
    assert.equal((await visit(srv, spent.code)).status, 302);
    assert.equal((await visit(srv, spent.code)).status, 410);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await ctx.newPage();
    page.setDefaultTimeout(10_000);
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.goto(`${srv.url}/dashboard#/signin`);
    await page.getByLabel('Name').fill('boss');
    await page.getByLabel('Password').fill('boss-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/#\/links/);
    await page.locator('#links-table').waitFor();
});

after(async () => {
    if (browser) await browser.close();
    if (srv && srv.running) await srv.stop();
});

async function rowCodes() {
    return page.locator('#links-table tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.code));
}

it('the links table shows the used-up link as exhausted, the other as active', async () => {
    const badge = page.locator(`#links-table tbody tr[data-code="${spent.code}"] .badge`);
    await badge.waitFor();
    assert.equal(await badge.innerText(), 'exhausted');
    assert.equal(await page.locator(`#links-table tbody tr[data-code="${fresh.code}"] .badge`).innerText(), 'active');
});

it('the state filter has Exhausted, and Active leaves the used-up link out', async () => {
    await page.getByLabel('State').selectOption('exhausted');
    assert.ok(await poll(async () => {
        const c = await rowCodes();
        return c.length === 1 && c[0] === spent.code;
    }), `state=exhausted shows ${await rowCodes()}`);
    await page.getByLabel('State').selectOption('active');
    assert.ok(await poll(async () => {
        const c = await rowCodes();
        return c.includes(fresh.code) && !c.includes(spent.code);
    }), `state=active shows ${await rowCodes()}`);
});

it('the link page says exhausted', async () => {
    await page.goto(`${srv.url}/dashboard#/link/${spent.code}`);
    const badge = page.locator('.link-title .badge');
    await badge.waitFor();
    assert.equal(await badge.innerText(), 'exhausted');
    const r = await api(srv, 'GET', `/api/links/${spent.code}`, { key: srv.adminKey });
    assert.equal(r.json.state, 'exhausted');
    assert.deepEqual(problems, []);
});
