// import-bitly.test.mjs - `shortd import bitly` on the CSV Bitly's web app
// exports, made by tests/data/make-bitly.mjs in two headings (the web
// export's and the API's field names, in other orders) with quoted commas,
// a branded domain, custom bitlinks and bad rows. After the import into a
// running server's store: every code redirects to its destination (a
// branded domain's through its host), each link keeps its title, tags,
// domain and total, the bad rows are reported with their lines, and a
// second run imports nothing. On PostgreSQL too (SHORTD_E2E_STORE=pg).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { ROOT, api, cli, it, startServer, tempDir } from './harness.mjs';

function makeBitly(dir, style) {
    const out = path.join(dir, `bitly-${style}.csv`);
    const expect = out + '.expect.json';
    const r = spawnSync('node', [path.join(ROOT, 'tests/data/make-bitly.mjs'), '--links', '30',
        '--style', style, '--out', out, '--expect', expect], { encoding: 'utf8' });
    assert.equal(r.status, 0, `make-bitly failed: ${r.stderr}`);
    return [out, JSON.parse(fs.readFileSync(expect, 'utf8'))];
}

function importBitly(server, source) {
    const store = server.store ? ['--store', server.store] : ['--db', server.db];
    const r = cli(['import', 'bitly', source, ...store, '--json']);
    let summary = null;
    try { summary = JSON.parse(r.stdout.trim().split('\n').pop()); } catch { /* below */ }
    assert.ok(summary, `no JSON summary (exit ${r.code})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return { code: r.code, summary, stderr: r.stderr };
}

for (const style of ['web', 'api']) {
    it(`a Bitly CSV export (${style} headings): codes, domains, titles, tags and totals kept`, async () => {
        const dir = tempDir();
        const [csv, expect] = makeBitly(dir, style);
        const server = await startServer();
        const r = importBitly(server, csv);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.summary.links_imported, expect.links, r.stderr);
        assert.equal(r.summary.refused, expect.refused, r.stderr);
        assert.match(r.stderr, new RegExp(`line ${expect.badLines[0]}: refused: bitlink 'bit.ly/NoDest1' has no long URL`));
        assert.match(r.stderr, new RegExp(`line ${expect.badLines[1]}: refused: 'bit.ly/' is no bitlink`));

        for (const [code, l] of Object.entries(expect.byCode)) {
            const got = await api(server, 'GET', `/api/links/${code}`, { key: server.adminKey });
            assert.equal(got.status, 200, `${code}: ${got.text.slice(0, 200)}`);
            const link = got.json;
            assert.equal(link.code, code, 'the back-half exactly, case kept');
            assert.equal(link.url, l.url);
            assert.equal(link.title, l.title, `${code}: title`);
            assert.deepEqual(link.tags, l.tags, `${code}: tags`);
            assert.equal(link.domain, l.domain, `${code}: domain`);
            assert.equal(link.clicks + link.bot_clicks, l.clicks, `${code}: the total is Bitly's`);
            const headers = l.domain ? { host: l.domain } : {};
            const hop = await api(server, 'GET', '/' + code, { headers });
            assert.ok([301, 302, 307, 308].includes(hop.status), `${code}: status ${hop.status} ${hop.text.slice(0, 200)}`);
            assert.equal(hop.headers.get('location'), l.url, `${code} redirects to its destination`);
        }

        const again = importBitly(server, csv);
        assert.equal(again.code, 0, again.stderr);
        assert.equal(again.summary.links_imported, 0);
        assert.equal(again.summary.already_there, expect.links);
        await server.stop();
    });
}

it('a CSV without a short link and a destination column is refused as a whole', async () => {
    const dir = tempDir();
    const f = path.join(dir, 'not-bitly.csv');
    fs.writeFileSync(f, 'name,value\na,b\n');
    const server = await startServer();
    const store = server.store ? ['--store', server.store] : ['--db', server.db];
    const r = cli(['import', 'bitly', f, ...store]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /no header row naming a short link column \(Bitlink, Link\) and a destination column/);
    await server.stop();
});
