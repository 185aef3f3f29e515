// selflinks.test.mjs - destinations that are shortd itself, and IP literals
// in every spelling (issue 22, the URL parts of item 8): a link may not
// point at shortd in any spelling of its address or name (another loopback
// address when it listens on loopback, IPv4-mapped IPv6, localhost, www. or
// another subdomain of its name, a default short host, a registered custom
// domain), so no chain of links can loop through it; a blocked address is
// blocked in every spelling, and a blocklist entry is stored in the one
// canonical form URLs are compared in.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { api, createKey, it, startServer } from './harness.mjs';

const BASE_HOST = 'sho.example';
let srv;
let admin;

before(async () => {
    srv = await startServer({ baseUrl: `https://${BASE_HOST}`, args: ['--hosts', `${BASE_HOST}, s.example`] });
    admin = srv.adminKey;
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

const create = (key, url) => api(srv, 'POST', '/api/links', { key, body: { url } });

async function refused(key, url, message) {
    const r = await create(key, url);
    assert.equal(r.status, 400, `${url}: ${r.status} ${r.text}`);
    assert.equal(r.json.error.code, 'invalid_field', url);
    assert.equal(r.json.error.field, 'url', url);
    assert.match(r.json.error.message, message, url);
}

it('shortd itself in any spelling of its address or name is refused as a destination', async () => {
    const key = createKey(srv, 'self');
    const p = srv.port;
    for (const url of [
        `http://127.0.0.1:${p}/x`,            // as before
        `http://127.0.0.2:${p}/x`,            // another loopback address
        `http://127.1.2.3/x`,
        `http://[::ffff:127.0.0.1]:${p}/x`,   // IPv4-mapped
        `http://[::ffff:7f00:1]:${p}/x`,
        `http://[::1]:${p}/x`,
        `http://localhost:${p}/x`,
        `http://LOCALHOST./x`,
        `http://0.0.0.0:${p}/x`,
        `https://${BASE_HOST}/x`,             // as before
        `https://www.${BASE_HOST}/x`,         // a subdomain of its name
        'https://s.example/abc',             // a default short host
        'https://www.s.example/abc',
    ]) await refused(key, url, /points back at this shortener/);

    const ok = await create(key, `https://${BASE_HOST}.other.example/x`);
    assert.equal(ok.status, 201, ok.text);
    const ok2 = await create(key, 'https://example.s.example.org/x');
    assert.equal(ok2.status, 201, ok2.text);

    // A PATCH to itself is refused the same way.
    const patch = await api(srv, 'PATCH', `/api/links/${ok.json.code}`,
        { key, body: { url: `http://[::ffff:127.0.0.1]:${p}/${ok.json.code}` } });
    assert.equal(patch.status, 400, patch.text);
    assert.equal(patch.json.error.field, 'url');
});

it('a registered custom domain (and its subdomains) is refused as a destination, on any owner', async () => {
    const owner = createKey(srv, 'domain-owner');
    const other = createKey(srv, 'someone-else');
    const ok = await create(other, 'https://go.brand-self.example/before');
    assert.equal(ok.status, 201, 'not registered yet: an ordinary host');
    const reg = await api(srv, 'POST', '/api/domains', { key: owner, body: { host: 'go.brand-self.example' } });
    assert.equal(reg.status, 201, reg.text);
    for (const key of [owner, other]) {
        await refused(key, 'https://go.brand-self.example/abc', /blocked/);
        await refused(key, 'https://www.go.brand-self.example/abc', /blocked/);
    }
    const patch = await api(srv, 'PATCH', `/api/links/${ok.json.code}`,
        { key: other, body: { url: 'https://go.brand-self.example/loop' } });
    assert.equal(patch.status, 400, patch.text);
    const parent = await create(other, 'https://brand-self.example/x');
    assert.equal(parent.status, 201, `a parent of the domain is someone else: ${parent.text}`);

    const del = await api(srv, 'DELETE', '/api/domains/go.brand-self.example', { key: owner });
    assert.equal(del.status, 204, del.text);
    const again = await create(other, 'https://go.brand-self.example/after');
    assert.equal(again.status, 201, `unregistered, an ordinary host again: ${again.text}`);
});

it('a blocked address is blocked in every spelling; blocklist entries are stored canonical', async () => {
    const key = createKey(srv, 'ip-block');
    const add = async (host, stored) => {
        const r = await api(srv, 'POST', '/api/admin/blocklist', { key: admin, body: { host } });
        assert.equal(r.status, 201, `${host}: ${r.text}`);
        assert.equal(r.json.host, stored, host);
    };
    await add('192.0.2.9', '192.0.2.9');
    await refused(key, 'http://192.0.2.9/x', /blocked/);
    await refused(key, 'http://[::ffff:192.0.2.9]/x', /blocked/);
    await refused(key, 'http://[::ffff:c000:209]:8080/x', /blocked/);

    await add('[::ffff:192.0.2.10]', '192.0.2.10');
    await refused(key, 'http://192.0.2.10/x', /blocked/);
    await add('3221226000', '192.0.2.16');           // decimal
    await refused(key, 'http://192.0.2.16/x', /blocked/);
    await add('0xc0.0.2.17', '192.0.2.17');          // hex and octal parts
    await add('0300.0.2.18', '192.0.2.18');
    await refused(key, 'http://192.0.2.17/x', /blocked/);
    await refused(key, 'http://[::ffff:192.0.2.18]/x', /blocked/);
    const dup = await api(srv, 'POST', '/api/admin/blocklist', { key: admin, body: { host: '0xc0000209' } });
    assert.equal(dup.status, 409, `192.0.2.9 in another spelling is the same entry: ${dup.text}`);

    // "0.2.9" is an address to a browser (0.2.0.9), not a parent of 198.0.2.9.
    await add('0.2.9', '0.2.0.9');
    const near = await create(key, 'http://198.0.2.9/x');
    assert.equal(near.status, 201, near.text);

    const list = await api(srv, 'GET', '/api/admin/blocklist', { key: admin });
    const hosts = list.json.map((e) => e.host);
    for (const h of ['192.0.2.9', '192.0.2.10', '192.0.2.16', '192.0.2.17', '192.0.2.18']) assert.ok(hosts.includes(h), h);
    const del = await api(srv, 'DELETE', '/api/admin/blocklist/3221226000', { key: admin });
    assert.equal(del.status, 204, `deleted in another spelling: ${del.text}`);
    const back = await create(key, 'http://192.0.2.16/x');
    assert.equal(back.status, 201, back.text);
});
