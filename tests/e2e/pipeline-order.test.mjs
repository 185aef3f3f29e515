// pipeline-order.test.mjs - pipelined requests come back in order (issue 23,
// "Tests and figures"): once requests that need the store are answered off
// the event loop, a connection's answers must still leave in the order its
// requests came. One raw TCP connection writes, in a single write, a mix of
// requests that need storage (an API read, an uncached code, a create) and
// ones that do not (a cached code, a remembered miss, /healthz), twice over;
// every answer is parsed and told apart by its status and its Location or
// body, and they must come back in exactly that order.
//
// Runs on SQLite, and on PostgreSQL with SHORTD_E2E_STORE=pg like the others.

import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before } from 'node:test';

import { BROWSER_UA, api, cli, createLink, it, lastWord, parseResponses, startServer, unique, visit } from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer();
});

after(async () => {
    if (srv && srv.running) await srv.stop();
});

/* A link made by the CLI on the server's store: the server has never seen
 * it, so its first redirect reads the store. Returns {code, url}. */
function uncachedLink(tag) {
    const url = `https://example.com/uncached/${unique(tag)}`;
    const r = cli(['link', 'create', '--db', srv.db, '--url', url]);
    assert.equal(r.code, 0, `shortd link create: ${r.stdout}${r.stderr}`);
    const code = lastWord(r.stdout);
    assert.match(code, /^[0-9A-Za-z]{7}$/, `shortd link create printed no code: ${r.stdout}`);
    return { code, url };
}

/* Writes every request in one write on one connection and collects bytes
 * until 'count' responses are complete (or the server closes, or 20 s). */
function pipeline(requests, count) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        let done = false;
        const sock = net.connect({ port: srv.port, host: '127.0.0.1' });
        const finish = (err) => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            sock.destroy();
            const buf = Buffer.concat(chunks);
            let responses;
            try {
                responses = parseResponses(buf, { closed: true });
            } catch (e) {
                reject(e);
                return;
            }
            if (responses.length < count) {
                reject(new Error(`${err || 'closed'} after ${responses.length} of ${count} answers:\n` +
                    buf.toString('latin1').slice(0, 3000)));
                return;
            }
            resolve(responses);
        };
        const timer = setTimeout(() => finish('no more answers within 20 s'), 20_000);
        sock.on('connect', () => sock.write(Buffer.from(requests.join(''), 'latin1')));
        sock.on('data', (d) => {
            chunks.push(d);
            try {
                if (parseResponses(Buffer.concat(chunks)).length >= count) finish();
            } catch { /* incomplete or malformed: decided at the end */ }
        });
        sock.on('error', (e) => finish(e.message));
        sock.on('close', () => finish());
    });
}

it('pipelined requests that need the store and ones that do not are answered in order', async () => {
    const key = srv.adminKey;
    const host = `Host: 127.0.0.1:${srv.port}\r\n`;
    const get = (p, extra = '') => `GET ${p} HTTP/1.1\r\n${host}User-Agent: ${BROWSER_UA}\r\n${extra}\r\n`;
    const auth = `Authorization: Bearer ${key}\r\n`;
    const post = (url) => {
        const body = JSON.stringify({ url });
        return `POST /api/links HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    };

    // Two rounds, each with links of its own, so that every lookup of an
    // uncached code, of an API link and of a miss is a first one.
    const requests = [];
    const expect = [];
    for (let round = 0; round < 2; round++) {
        const apiLink = await createLink(srv, key, { url: `https://example.com/api-read/${unique(`r${round}`)}` });
        const cached = await createLink(srv, key, { url: `https://example.com/cached/${unique(`r${round}`)}` });
        const first = await visit(srv, cached.code);   // now it is in the cache
        assert.equal(first.status, 302, first.text);
        const uncached = uncachedLink(`r${round}`);
        const nosuch = `nx${round}${unique('').slice(0, 5)}`;
        const created = `https://example.com/created/${unique(`r${round}`)}`;

        requests.push(get(`/api/links/${apiLink.code}`, auth));
        expect.push({ what: `GET /api/links/${apiLink.code}`, status: 200, json: (j) => j.code === apiLink.code });
        requests.push(get(`/${cached.code}`));
        expect.push({ what: `GET /${cached.code} (cached)`, status: 302, location: cached.url });
        requests.push(get(`/${uncached.code}`));
        expect.push({ what: `GET /${uncached.code} (uncached)`, status: 302, location: uncached.url });
        requests.push(get(`/${nosuch}`));
        expect.push({ what: `GET /${nosuch} (unknown)`, status: 404 });
        requests.push(post(created));
        expect.push({ what: 'POST /api/links', status: 201, json: (j) => j.url === created, created });
        requests.push(get('/healthz'));
        expect.push({ what: 'GET /healthz', status: 200 });
    }

    const got = await pipeline(requests, expect.length);
    const seen = got.map((r) => `${r.status} ${r.headers.location || r.text.slice(0, 80)}`);
    assert.equal(got.length, expect.length, `answers:\n${seen.join('\n')}`);
    for (const [i, e] of expect.entries()) {
        const r = got[i];
        const where = `answer ${i + 1} (to ${e.what}) is out of order or wrong; every answer:\n${seen.join('\n')}`;
        assert.equal(r.status, e.status, where);
        if (e.location) assert.equal(r.headers.location, e.location, where);
        if (e.json) {
            let j = null;
            try { j = JSON.parse(r.text); } catch { /* not JSON */ }
            assert.ok(j && e.json(j), `${where}\nbody: ${r.text.slice(0, 300)}`);
        }
    }

    // Each create made exactly one link.
    const list = await api(srv, 'GET', '/api/links?limit=1000', { key });
    assert.equal(list.status, 200, list.text);
    for (const e of expect.filter((x) => x.created)) {
        assert.equal(list.json.filter((l) => l.url === e.created).length, 1, `${e.created} is not listed once`);
    }
});
