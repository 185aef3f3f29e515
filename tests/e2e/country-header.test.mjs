// country-header.test.mjs - the CDN country header (issue 22, item 12) is
// believed only from a trusted proxy (`trusted-proxies`, the setting that
// already decides whether X-Forwarded-For is): from any other peer a client
// could claim any country, so the click's country is unknown; from a trusted
// peer the header decides, as before. `--country-header NAME` obeys the same.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, createLink, it, poll, startServer, visit } from './harness.mjs';

let open;       // no trusted proxies (the default)
let elsewhere;  // trusts 10.0.0.0/8, while the test connects from 127.0.0.1
let trusting;   // trusts 127.0.0.1: the test is the CDN

before(async () => {
    [open, elsewhere, trusting] = await Promise.all([
        startServer({ args: ['--click-flush-ms', '50'] }),
        startServer({ args: ['--click-flush-ms', '50', '--trusted-proxies', '10.0.0.0/8'] }),
        startServer({ args: ['--click-flush-ms', '50', '--trusted-proxies', '127.0.0.1/32',
            '--country-header', 'X-Geo-Country'] }),
    ]);
});

after(async () => {
    for (const s of [open, elsewhere, trusting]) if (s && s.running) await s.stop();
});

/* Clicks the link with each header set, then waits for the stats of all. */
async function countries(server, headerSets) {
    const l = await createLink(server, server.adminKey, { url: 'https://example.com/country' });
    for (const h of headerSets) {
        const r = await visit(server, l.code, { headers: h });
        assert.equal(r.status, 302, r.text);
    }
    let last;
    const done = await poll(async () => {
        const r = await api(server, 'GET', `/api/links/${l.code}/stats`, { key: server.adminKey });
        last = r.json;
        return r.status === 200 && last.clicks === headerSets.length;
    }, { intervalMs: 50 });
    assert.ok(done, `stats: ${JSON.stringify(last)}`);
    return { countries: last.countries, recent: last.recent.map((c) => c.country) };
}

it('without trusted proxies the country header is not believed', async () => {
    const s = await countries(open, [{ 'CF-IPCountry': 'DE' }, { 'CF-IPCountry': 'US', 'X-Forwarded-For': '10.1.2.3' }]);
    assert.deepEqual(s.countries, {});
    assert.deepEqual(s.recent, ['', '']);
});

it('from a peer outside trusted-proxies the header is not believed, whatever X-Forwarded-For says', async () => {
    const s = await countries(elsewhere, [{ 'CF-IPCountry': 'FR', 'X-Forwarded-For': '10.0.0.1' }]);
    assert.deepEqual(s.countries, {});
});

it('from a trusted proxy the configured country header decides', async () => {
    const s = await countries(trusting, [{ 'X-Geo-Country': 'se' }, { 'X-Geo-Country': 'SE', 'CF-IPCountry': 'FR' },
        { 'CF-IPCountry': 'FR' }]);
    assert.deepEqual(s.countries, { SE: 2 });
});
