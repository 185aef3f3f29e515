// exhausted.test.mjs - a link whose click limit is used up answers 410 and
// says so everywhere: state "exhausted" in the link object, its own ?state=
// filter (in the default listing, out of "active"), the CLI's list and the
// export (API and CLI, JSON and CSV).

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, cli, createLink, it, startServer, unique, visit } from './harness.mjs';

let srv;
let spent;      // max_clicks 2, both used
let fresh;      // max_clicks 5, none used
let plain;      // no limit

before(async () => {
    srv = await startServer();
    spent = await createLink(srv, srv.adminKey, { url: 'https://example.com/spent', alias: unique('spent'), max_clicks: 2 });
    fresh = await createLink(srv, srv.adminKey, { url: 'https://example.com/fresh', alias: unique('fresh'), max_clicks: 5 });
    plain = await createLink(srv, srv.adminKey, { url: 'https://example.com/plain', alias: unique('plain') });
    assert.equal(spent.state, 'active');
    for (let i = 0; i < 2; i++) assert.equal((await visit(srv, spent.code)).status, 302);
    assert.equal((await visit(srv, spent.code)).status, 410);
});

after(async () => {
    if (srv) await srv.stop();
});

async function codes(query) {
    const r = await api(srv, 'GET', `/api/links${query}`, { key: srv.adminKey });
    assert.equal(r.status, 200, r.text);
    return r.json.map((l) => l.code);
}

it('the link object of a used-up link says exhausted, with no clicks left', async () => {
    const r = await api(srv, 'GET', `/api/links/${spent.code}`, { key: srv.adminKey });
    assert.equal(r.status, 200);
    assert.equal(r.json.state, 'exhausted');
    assert.equal(r.json.clicks_left, 0);
    const f = await api(srv, 'GET', `/api/links/${fresh.code}`, { key: srv.adminKey });
    assert.equal(f.json.state, 'active');
});

it('?state=exhausted lists it, active does not, the default and all do', async () => {
    assert.deepEqual(await codes('?state=exhausted'), [spent.code]);
    const active = await codes('?state=active');
    assert.ok(!active.includes(spent.code), 'state=active lists a link that answers 410');
    assert.ok(active.includes(fresh.code) && active.includes(plain.code));
    assert.ok((await codes('')).includes(spent.code), 'the default listing lost the exhausted link');
    assert.ok((await codes('?state=all')).includes(spent.code));
    assert.ok(!(await codes('?state=expired')).includes(spent.code));
    const bad = await api(srv, 'GET', '/api/links?state=spent', { key: srv.adminKey });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.field, 'state');
    assert.match(bad.json.error.message, /exhausted/);
});

it('shortd link list shows it as exhausted', () => {
    const r = cli(['link', 'list', '--db', srv.db]);
    assert.equal(r.code, 0, r.stderr);
    const line = r.stdout.split('\n').find((l) => l.startsWith(spent.code + ' '));
    assert.ok(line, r.stdout);
    assert.equal(line.split(/\s+/)[1], 'exhausted', line);
    const other = r.stdout.split('\n').find((l) => l.startsWith(fresh.code + ' '));
    assert.equal(other.split(/\s+/)[1], 'active', other);
});

it('the export says exhausted, through the API and the CLI', async () => {
    const j = await api(srv, 'GET', '/api/export?format=json', { key: srv.adminKey });
    assert.equal(j.status, 200);
    assert.equal(j.json.find((l) => l.code === spent.code).state, 'exhausted');
    assert.equal(j.json.find((l) => l.code === fresh.code).state, 'active');
    const c = cli(['export', '--db', srv.db, '--format', 'csv']);
    assert.equal(c.code, 0, c.stderr);
    const rows = c.stdout.split('\n').filter((l) => l.startsWith(spent.code + ','));
    assert.ok(rows.length > 0, c.stdout);
    for (const row of rows) assert.equal(row.split(',')[4], 'exhausted', row);
});
