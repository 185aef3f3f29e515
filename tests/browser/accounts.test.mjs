// accounts.test.mjs - accounts in real Chromium, as a new install is used:
// the first admin made on the setup page from a fresh store's setup URL (a
// used, a wrong and an expired link refused with a message); sign-out and
// sign-in; the Users page (users added, a role changed, a password reset, a
// user disabled, whose open page is signed out at its next request); each
// role's limits (a viewer sees no New link, edit, delete or admin page, and
// the API refuses it when it tries; a member sees no admin page and no
// disable); a session ended by session-idle. The new pages at 390 × 844
// scroll no way sideways, and axe-core (npm, pinned) finds no serious or
// critical violation on them. With SHORTD_UPDATE_DOCS=1 the setup and Users
// pages go to docs/.
//
// The tests run in order and build on each other (one server, one browser).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { chromium } from 'playwright-core';

import { PG_MODE, ROOT, cli, it, poll, sleep, startServer } from '../e2e/harness.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];
const AXE = fs.readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
// Failed requests the flow causes on purpose: who is signed in before anyone
// is (401), a spent or wrong setup link (401, 409), a refused write (403),
// a bad user name and a short password on the Users page (400).
const EXPECTED_FAILURE = /Failed to load resource: the server responded with a status of (400|401|403|409) /;

let srv;
let browser;
let admin;      // the first admin's page
let theirCode;  // a link of the user who becomes a viewer
const problems = [];

before(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run scripts/setup.sh (apt-get install chromium)`);
    srv = await startServer({ firstStart: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
    admin = await newPage();
});

after(async () => {
    if (browser) await browser.close();
    if (srv && srv.running) await srv.stop();
});

/* A page of a context of its own (its own cookies), watched for CSP
 * violations, script errors and unexpected failed requests. */
async function newPage(viewport = { width: 1280, height: 900 }) {
    const ctx = await browser.newContext({ viewport });
    await ctx.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) => {
            console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`);
        });
    });
    const p = await ctx.newPage();
    p.setDefaultTimeout(10_000);
    p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    p.on('console', (m) => {
        if (m.type() === 'error' && !EXPECTED_FAILURE.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    p.on('dialog', (d) => { problems.push(`unexpected ${d.type()} dialog: ${d.message()}`); d.dismiss(); });
    return p;
}

/* One value from a server's store, by SQL. */
function storeValue(server, sql) {
    const r = PG_MODE
        ? spawnSync('psql', ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', server.db, '-c', sql], { encoding: 'utf8' })
        : spawnSync('sqlite3', [server.db, sql], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${sql}: ${r.stderr}`);
    return r.stdout.trim();
}

async function signIn(p, name, password, server = srv) {
    await p.goto(`${server.url}/dashboard#/signin`);
    await p.getByLabel('Name').fill(name);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForURL(/#\/links/);
}

/* A write as the page's session would make it (cookie, CSRF token, same
 * site), bypassing what the page offers: {status, json}. */
async function pageWrite(p, method, url, body) {
    return p.evaluate(async ([m, u, b]) => {
        const me = await (await fetch('/api/session')).json();
        const r = await fetch(u, { method: m, headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': me.csrf_token }, body: JSON.stringify(b) });
        let json = null;
        try { json = await r.json(); } catch { /* no body */ }
        return { status: r.status, json };
    }, [method, url, body]);
}

async function navLinks(p) {
    return p.locator('#nav a:visible').allInnerTexts();
}

async function docShot(p, name) {
    if (!process.env.SHORTD_UPDATE_DOCS) return;
    await p.evaluate(() => { const t = document.getElementById('toast'); if (t) t.hidden = true; });
    await p.screenshot({ path: path.join(ROOT, `docs/${name}.png`), fullPage: true });
}

/* Nothing on the page wider than the screen: [] or what sticks out. */
async function overflow(p) {
    return p.evaluate(() => {
        const w = document.documentElement.clientWidth;
        const out = [];
        for (const el of document.querySelectorAll('body *')) {
            const r = el.getBoundingClientRect();
            if (r.right > w + 1 && getComputedStyle(el).position !== 'fixed') out.push(`${el.tagName}.${el.className}#${el.id}`);
        }
        if (document.documentElement.scrollWidth > w) out.push(`page ${document.documentElement.scrollWidth} px at ${w}`);
        return out.slice(0, 5);
    });
}

async function axe(p) {
    await p.evaluate(AXE);
    return p.evaluate(async () => (await globalThis.axe.run(document)).violations
        .filter((x) => x.impact === 'serious' || x.impact === 'critical')
        .map((x) => `${x.id}: ${x.nodes.map((n) => n.target).join(' ')}`));
}

it('the setup URL opens the setup page, which makes the first admin and signs them in', async () => {
    await admin.goto(srv.setupUrl);
    await admin.getByRole('heading', { name: 'Set up shortd' }).waitFor();
    // The token left the address bar (and so the history and any Referer).
    assert.equal(admin.url(), `${srv.url}/setup`);
    assert.ok(await admin.locator('#nav').isHidden());
    await admin.getByLabel('Admin name').fill('root');
    await admin.getByLabel('Password', { exact: true }).fill('root-password');
    await admin.getByLabel('Password again').fill('root-password');
    assert.deepEqual(await overflow(admin), []);
    await docShot(admin, 'dashboard-setup');
    // Two passwords that differ are caught before anything is sent.
    await admin.getByLabel('Password again').fill('root-passw0rd');
    await admin.getByRole('button', { name: 'Create admin account' }).click();
    await poll(async () => (await admin.locator('#setup-error').innerText()) !== '');
    assert.match(await admin.locator('#setup-error').innerText(), /differ/);
    assert.equal(storeValue(srv, 'SELECT count(*) FROM users'), '0');
    await admin.getByLabel('Password', { exact: true }).fill('root-password');
    await admin.getByLabel('Password again').fill('root-password');
    await admin.getByRole('button', { name: 'Create admin account' }).click();
    await admin.waitForURL(/\/dashboard#\/links/);
    await admin.locator('#links-table, .links-page').first().waitFor();
    assert.deepEqual(await navLinks(admin), ['Links', 'New link', 'Domains', 'Sites', 'Import & export', 'Service', 'Keys', 'Users', 'Admin']);
    assert.equal(storeValue(srv, "SELECT role FROM users WHERE name = 'root'"), 'admin');
});

it('a used setup link, a wrong one and one past its hour each say why they do not work', async () => {
    const p = await newPage();
    await p.goto(srv.setupUrl);
    await p.getByRole('heading', { name: 'shortd is set up' }).waitFor();
    assert.match(await p.locator('#setup-refused').innerText(), /exists already/);
    assert.equal(await p.getByLabel('Admin name').count(), 0);
    assert.deepEqual(await axe(p), []);
    await p.context().close();

    const fresh = await startServer({ firstStart: true });
    try {
        const q = await newPage({ width: 390, height: 844 });
        await q.goto(`${fresh.url}/setup?token=${'x'.repeat(43)}`);
        await q.getByRole('heading', { name: 'This setup link does not work' }).waitFor();
        assert.match(await q.locator('#setup-refused').innerText(), /unknown, used or expired/);
        assert.deepEqual(await axe(q), []);
        storeValue(fresh, `UPDATE setup_token SET expires_at = ${Date.now() - 1000}`);
        await q.goto(fresh.setupUrl);
        await q.getByRole('heading', { name: 'This setup link does not work' }).waitFor();
        assert.match(await q.locator('#setup-refused').innerText(), /within an hour/);
        assert.deepEqual(await overflow(q), []);
        assert.equal(storeValue(fresh, 'SELECT count(*) FROM users'), '0');
        await q.context().close();
    } finally {
        await fresh.stop();
    }
});

it('sign-out ends the session; the sign-in page brings it back', async () => {
    // Sign-out reloads the page after the hash changes: wait for the new
    // document, or what follows races with the reload.
    const reloaded = admin.waitForEvent('load');
    await admin.getByRole('button', { name: 'Sign out' }).click();
    await reloaded;
    await admin.waitForURL(/#\/signin$/);
    assert.ok(await admin.locator('#nav').isHidden());
    const r = await admin.evaluate(async () => (await fetch('/api/session')).status);
    assert.equal(r, 401);
    await signIn(admin, 'root', 'root-password');
});

it('the Users page adds users, lists their role and last sign-in, and changes a role', async () => {
    await admin.getByRole('link', { name: 'Users' }).click();
    await admin.waitForURL(/#\/users$/);
    await admin.locator('#user-list li[data-user="root"]').waitFor();
    assert.match(await admin.locator('li[data-user="root"]').innerText(), /\(you\)[\s\S]*last signed in/);
    // The signed-in admin cannot demote or disable themselves here.
    assert.ok(await admin.getByLabel('Role of root').isDisabled());
    assert.equal(await admin.getByRole('button', { name: 'Disable root' }).count(), 0);
    // A refused name says why, next to the form.
    await admin.getByLabel('Name', { exact: true }).fill('Mia Lee');
    await admin.getByLabel('Password', { exact: true }).fill('mia-password');
    await admin.getByRole('button', { name: 'Add user' }).click();
    await poll(async () => (await admin.locator('#new-user-err').innerText()) !== '');
    assert.match(await admin.locator('#new-user-err').innerText(), /name/);
    for (const [name, role] of [['mia', 'member'], ['vic', 'member']]) {
        await admin.getByLabel('Name', { exact: true }).fill(name);
        await admin.getByLabel('Password', { exact: true }).fill(`${name}-password`);
        await admin.getByLabel('Role', { exact: true }).selectOption(role);
        await admin.getByRole('button', { name: 'Add user' }).click();
        await admin.locator(`li[data-user="${name}"]`).waitFor();
        assert.match(await admin.locator(`li[data-user="${name}"]`).innerText(), /never signed in/);
    }
    // vic, a member still, makes a link of their own.
    const vic = await newPage();
    await signIn(vic, 'vic', 'vic-password');
    const made = await pageWrite(vic, 'POST', '/api/links', { url: 'https://example.com/vic' });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    theirCode = made.json.code;
    await vic.context().close();
    // ... and becomes a viewer.
    await admin.getByLabel('Role of vic').selectOption('viewer');
    await poll(async () => storeValue(srv, "SELECT role FROM users WHERE name = 'vic'") === 'viewer');
    await admin.reload();
    await admin.locator('li[data-user="vic"]').waitFor();
    assert.equal(await admin.getByLabel('Role of vic').inputValue(), 'viewer');
    assert.match(await admin.locator('li[data-user="vic"]').innerText(), /last signed in/);
    assert.deepEqual(await axe(admin), []);
    await docShot(admin, 'dashboard-users');
});

it('the Keys page makes a scoped key, shown once, that does what its scopes say; revoked, it stops', async () => {
    await admin.getByRole('link', { name: 'Keys' }).click();
    await admin.waitForURL(/#\/keys$/);
    await admin.getByLabel('Key name').fill('read-only-bot');
    await admin.getByLabel(/^links:write/).uncheck();
    await admin.getByLabel(/^stats:read/).uncheck();
    await admin.getByRole('button', { name: 'Create key' }).click();
    const token = (await admin.locator('#key-token').innerText()).trim();
    assert.match(token, /^sk_[0-9A-Za-z]{20,}$/);
    const row = admin.locator('#key-list li', { hasText: 'read-only-bot' });
    await row.waitFor();
    assert.match(await row.innerText(), /never used[\s\S]*links:read ·/);
    assert.ok(!(await row.innerText()).includes(token), 'the list shows the key');
    const call = (method, p) => fetch(`${srv.url}${p}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: method === 'POST' ? JSON.stringify({ url: 'https://example.com/bot' }) : undefined }).then((r) => r.status);
    assert.equal(await call('GET', '/api/links'), 200);
    assert.equal(await call('POST', '/api/links'), 403);
    // Gone from the page once it is left: shown this once.
    await admin.reload();
    await row.waitFor();
    assert.equal(await admin.locator('#key-token').count(), 0);
    assert.deepEqual(await axe(admin), []);
    await docShot(admin, 'dashboard-keys');
    await admin.getByRole('button', { name: 'Revoke read-only-bot' }).click();
    await admin.locator('#confirm-ok').click();
    await poll(async () => /revoked/.test(await row.innerText()));
    assert.equal(await call('GET', '/api/links'), 401);
});

it('a viewer sees no New link, edit, delete or admin page, and the API refuses what it tries', async () => {
    const vic = await newPage();
    await signIn(vic, 'vic', 'vic-password');
    assert.deepEqual(await navLinks(vic), ['Links', 'Domains', 'Sites', 'Import & export', 'Service', 'Keys']);
    await vic.locator(`#links-table tr[data-code="${theirCode}"]`).waitFor();
    assert.equal(await vic.getByRole('link', { name: 'New link' }).count(), 0);
    assert.equal(await vic.getByRole('button', { name: `Delete ${theirCode}` }).count(), 0);
    await vic.goto(`${srv.url}/dashboard#/link/${theirCode}`);
    await vic.locator('.link-head').waitFor();
    for (const name of ['Edit', 'Delete', 'Disable']) {
        assert.equal(await vic.locator('.link-head').getByRole(name === 'Edit' ? 'link' : 'button', { name, exact: true }).count(), 0, name);
    }
    // Their addresses lead back to the links.
    for (const hash of ['#/new', `#/link/${theirCode}/edit`, '#/users', '#/admin']) {
        await vic.goto(`${srv.url}/dashboard${hash}`);
        await vic.waitForURL(/#\/links$/);
    }
    await vic.goto(`${srv.url}/dashboard#/bulk`);
    await vic.locator('#export-csv').waitFor();
    assert.equal(await vic.locator('#bulk-file').count(), 0, 'a viewer is offered the upload');
    await vic.goto(`${srv.url}/dashboard#/domains`);
    await vic.locator('#domain-list').waitFor();
    assert.equal(await vic.locator('#domain-host').count(), 0, 'a viewer is offered a domain to add');
    // Sites: read, but no site to add and no settings.
    await vic.goto(`${srv.url}/dashboard#/sites`);
    await vic.locator('#site-list').waitFor();
    assert.equal(await vic.locator('#site-form').count(), 0, 'a viewer is offered a site to add');
    assert.equal((await pageWrite(vic, 'POST', '/api/sites', { id: 'vics', hosts: ['vic.example'] })).status, 403);
    await vic.goto(`${srv.url}/dashboard#/site/anything/settings`);
    await vic.waitForURL(/#\/links$/);
    // Keys: the list, but no key to make or revoke.
    await vic.goto(`${srv.url}/dashboard#/keys`);
    await vic.locator('#key-list').waitFor();
    assert.equal(await vic.getByRole('button', { name: 'Create key' }).count(), 0);
    assert.equal(await vic.getByRole('button', { name: /^Revoke/ }).count(), 0);
    assert.equal((await pageWrite(vic, 'POST', '/api/keys', { name: 'sneaky' })).status, 403);
    // The API refuses it all the same.
    const edit = await pageWrite(vic, 'PATCH', `/api/links/${theirCode}`, { title: 'mine now' });
    assert.equal(edit.status, 403, JSON.stringify(edit.json));
    assert.equal((await pageWrite(vic, 'DELETE', `/api/links/${theirCode}`)).status, 403);
    assert.equal((await pageWrite(vic, 'POST', '/api/links', { url: 'https://example.com/v' })).status, 403);
    assert.equal(await vic.evaluate(async () => (await fetch('/api/users')).status), 403);
    await vic.context().close();
});

it('a member sees no admin page and no disable, and the API refuses the admin routes', async () => {
    const mia = await newPage();
    await signIn(mia, 'mia', 'mia-password');
    assert.deepEqual(await navLinks(mia), ['Links', 'New link', 'Domains', 'Sites', 'Import & export', 'Service', 'Keys']);
    const made = await pageWrite(mia, 'POST', '/api/links', { url: 'https://example.com/mia' });
    assert.equal(made.status, 201);
    await mia.goto(`${srv.url}/dashboard#/link/${made.json.code}`);
    await mia.locator('.link-head #edit').waitFor();
    assert.equal(await mia.locator('.link-head').getByRole('button', { name: 'Delete', exact: true }).count(), 1);
    assert.equal(await mia.locator('#disable').count(), 0);
    for (const hash of ['#/users', '#/admin']) {
        await mia.goto(`${srv.url}/dashboard${hash}`);
        await mia.waitForURL(/#\/links$/);
    }
    assert.equal(await mia.evaluate(async () => (await fetch('/api/users')).status), 403);
    assert.equal((await pageWrite(mia, 'POST', `/api/links/${made.json.code}/disable`)).status, 403);
    assert.equal((await pageWrite(mia, 'PATCH', '/api/users/1', { role: 'viewer' })).status, 403);
    await mia.context().close();
});

it('disabling a user signs their open page out at its next request; a reset password works', async () => {
    const mia = await newPage();
    await signIn(mia, 'mia', 'mia-password');
    await admin.goto(`${srv.url}/dashboard#/users`);
    await admin.getByRole('button', { name: 'Disable mia' }).click();
    await admin.locator('#confirm-ok').click();
    await admin.getByRole('button', { name: 'Enable mia' }).waitFor();
    assert.match(await admin.locator('li[data-user="mia"] .badge').innerText(), /disabled/);
    await mia.getByRole('link', { name: 'Service' }).click();
    await mia.waitForURL(/#\/signin$/);
    assert.match(await mia.locator('.notice').innerText(), /signed out/);
    await mia.getByLabel('Name').fill('mia');
    await mia.getByLabel('Password').fill('mia-password');
    await mia.getByRole('button', { name: 'Sign in' }).click();
    await poll(async () => (await mia.locator('#signin-error').innerText()) !== '');
    // Enabled, with a password an admin set.
    await admin.getByRole('button', { name: 'Enable mia' }).click();
    await admin.getByRole('button', { name: 'Disable mia' }).waitFor();
    await admin.getByRole('button', { name: 'Reset password for mia' }).click();
    await admin.getByLabel('New password for mia').fill('short');
    await admin.getByRole('button', { name: 'Set password', exact: true }).click();
    await poll(async () => (await admin.locator('#reset-2-err, .reset-form .field-error').first().innerText()) !== '');
    await admin.getByLabel('New password for mia').fill('mia-new-password');
    await admin.getByRole('button', { name: 'Set password', exact: true }).click();
    await admin.getByLabel('New password for mia').waitFor({ state: 'detached' });
    await signIn(mia, 'mia', 'mia-new-password');
    await mia.context().close();
});

it('a session unused for session-idle ends: the next click lands on sign-in, saying so', async () => {
    const s = await startServer({ args: ['--session-idle', '2'] });
    try {
        assert.equal(cli(['user', 'create', 'ida', '--db', s.db], { input: 'ida-password\n' }).code, 0);
        const p = await newPage();
        await signIn(p, 'ida', 'ida-password', s);
        await sleep(2500);
        await p.getByRole('link', { name: 'Service' }).click();
        await p.waitForURL(/#\/signin$/);
        assert.match(await p.locator('.notice').innerText(), /signed out: the session has ended/);
        await p.context().close();
    } finally {
        await s.stop();
    }
});

it('the sign-in, setup and Users pages at 390 × 844: nothing scrolls sideways; axe-core is clean', async () => {
    const p = await newPage({ width: 390, height: 844 });
    await p.goto(`${srv.url}/dashboard#/signin`);
    await p.getByLabel('Name').waitFor();
    assert.deepEqual(await overflow(p), [], 'sign-in');
    assert.deepEqual(await axe(p), [], 'sign-in');
    await p.goto(`${srv.url}/setup`);
    await p.locator('#setup-refused').waitFor();
    assert.deepEqual(await overflow(p), [], 'setup');
    assert.deepEqual(await axe(p), [], 'setup');
    await signIn(p, 'root', 'root-password');
    await p.goto(`${srv.url}/dashboard#/users`);
    await p.locator('li[data-user="mia"]').waitFor();
    assert.deepEqual(await overflow(p), [], 'users');
    assert.deepEqual(await axe(p), [], 'users');
    await docShot(p, 'dashboard-phone-users');
    await p.context().close();

    // The setup form itself, on a fresh store, at phone size.
    const fresh = await startServer({ firstStart: true });
    try {
        const q = await newPage({ width: 390, height: 844 });
        await q.goto(fresh.setupUrl);
        await q.getByLabel('Admin name').waitFor();
        assert.deepEqual(await overflow(q), [], 'setup form');
        assert.deepEqual(await axe(q), [], 'setup form');
        await q.context().close();
    } finally {
        await fresh.stop();
    }
});

it('no page broke the Content-Security-Policy or threw', () => {
    assert.deepEqual(problems, []);
});
