// http.test.mjs - the HTTP layer over raw sockets: malformed and
// smuggling-shaped requests, size limits, keep-alive, pipelining, timeouts and
// the connection cap. An error answer must arrive before the connection
// closes: a reset that eats the answer fails these tests.

import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before } from 'node:test';

import { Conn, createLink, it, parseResponses, rawExchange, startServer, statusOf } from './harness.mjs';

let srv;        // defaults
let idle;       // --idle-timeout 1
let slow;       // --header-timeout 1 --body-timeout 1
let capped;     // --max-connections 5
let code;       // a live link on srv

before(async () => {
    [srv, idle, slow, capped] = await Promise.all([
        startServer(),
        startServer({ args: ['--idle-timeout', '1'] }),
        startServer({ args: ['--header-timeout', '1', '--body-timeout', '1'] }),
        startServer({ args: ['--max-connections', '5'] }),
    ]);
    code = (await createLink(srv, srv.adminKey, { url: 'https://example.com/raw' })).code;
});

after(async () => {
    for (const s of [srv, idle, slow, capped]) if (s) await s.stop();
});

function describeAnswer(r) {
    if (!r.text) return `nothing (${r.error ? r.error.code : r.timedOut ? 'timed out' : 'closed'})`;
    return JSON.stringify(r.text.slice(0, 200));
}

/* Sends raw bytes; expects 'want' as the first response's status. */
async function expectStatus(port, bytes, want, why) {
    const r = await rawExchange(port, bytes, { timeoutMs: 5000, stopAfter: 1 });
    assert.equal(statusOf(r.text), want, `${why}: want ${want}, got ${describeAnswer(r)}`);
    return r;
}

const H = (port) => `Host: 127.0.0.1:${port}\r\n`;

it('a well-formed request over a raw socket answers 200 (control)', async () => {
    const r = await rawExchange(srv.port, `GET /healthz HTTP/1.1\r\n${H(srv.port)}Connection: close\r\n\r\n`,
        { timeoutMs: 5000 });
    assert.equal(statusOf(r.text), 200, `control: got ${describeAnswer(r)}`);
    assert.ok(r.closed && !r.timedOut, 'Connection: close was not honoured');
    await expectStatus(srv.port, 'GET /healthz HTTP/1.0\r\n\r\n', 200, 'HTTP/1.0 needs no Host');
    await expectStatus(srv.port, `GET /${code} HTTP/1.1\r\n${H(srv.port)}\r\n`, 302, 'redirect');
});

const malformed = [
    ['Content-Length with Transfer-Encoding: chunked',
        'POST /api/links HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n' +
        'Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['Transfer-Encoding: chunked with Content-Length (other order)',
        'POST /api/links HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n'],
    ['two different Content-Length headers',
        'POST /api/links HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!'],
    ['one Content-Length with two different values',
        'POST /api/links HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\nhello!'],
    ['HTTP/1.1 without Host', 'GET /healthz HTTP/1.1\r\n\r\n'],
    ['HTTP/1.1 without Host, with other headers', 'GET /healthz HTTP/1.1\r\nAccept: */*\r\nUser-Agent: x\r\n\r\n'],
    ['two Host headers', 'GET /healthz HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n'],
    ['two identical Host headers', 'GET /healthz HTTP/1.1\r\nHost: a.example\r\nHost: a.example\r\n\r\n'],
    ['obs-fold with a space', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n'],
    ['obs-fold with a tab', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n\tb\r\n\r\n'],
    ['obs-fold of Host', 'GET /healthz HTTP/1.1\r\nHost: x\r\n y\r\n\r\n'],
    ['space before the colon in Host', 'GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n'],
    ['space before the colon in another header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Foo : bar\r\n\r\n'],
    ['tab before the colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Foo\t: bar\r\n\r\n'],
    ['NUL in a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Foo: a\u0000b\r\n\r\n'],
    ['NUL in a header name', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-F\u0000oo: ab\r\n\r\n'],
    ['NUL in Host', 'GET /healthz HTTP/1.1\r\nHost: x\u0000y\r\n\r\n'],
    ['bare LF line endings', 'GET /healthz HTTP/1.1\nHost: x\n\n'],
    ['bare LF after the request line', 'GET /healthz HTTP/1.1\nHost: x\r\n\r\n'],
    ['bare LF inside the headers', 'GET /healthz HTTP/1.1\r\nHost: x\nX-Foo: a\r\n\r\n'],
    ['bare CR inside a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Foo: a\rb\r\n\r\n'],
    // RFC 9112 says 400 for a final coding that is not chunked; nginx says 501.
    ['Transfer-Encoding that is not chunked last',
        'POST /api/links HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n', [400, 501]],
    ['Transfer-Encoding with a bogus coding', 'POST /api/links HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: bogus\r\n\r\n',
        [400, 501]],
    ['a negative Content-Length', 'POST /api/links HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n'],
    ['a non-numeric Content-Length', 'POST /api/links HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\nx'],
    ['a header without a colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n'],
    ['garbage request line', 'HELLO\r\n\r\n'],
    // nginx (since 1.21.1) refuses control characters in the request line.
    ['a tab in the request target', 'GET /healthz?a=x\ty HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a form feed in the request target', 'GET /healthz?a=x\fy HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a control character in the request target', 'GET /healthz?a=x\u0001y HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['DEL in the request target', 'GET /healthz?a=x\u007fy HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['an unknown HTTP version', 'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n', [400, 505]],
];

for (const [why, bytes, wants = [400]] of malformed) {
    it(`malformed: ${why} → ${wants.join(' or ')} delivered before close`, async () => {
        const r = await rawExchange(srv.port, bytes, { timeoutMs: 5000, stopAfter: 1 });
        assert.ok(wants.includes(statusOf(r.text)), `${why}: want ${wants.join(' or ')}, got ${describeAnswer(r)}`);
        const [res] = parseResponses(r.buf, { closed: true });
        assert.ok(res, 'the error answer is not a complete HTTP response');
    });
}

it('no control character of a request target reaches a Location header', async () => {
    for (const c of ['\t', '\f', '\u000b', '\u0001', '\u001b', '\u007f']) {
        const bytes = `GET /${code}?a=x${c}y HTTP/1.1\r\n${H(srv.port)}Connection: close\r\n\r\n`;
        const r = await rawExchange(srv.port, bytes, { timeoutMs: 5000, stopAfter: 1 });
        const [res] = parseResponses(r.buf, { closed: true });
        assert.ok(res, `0x${c.charCodeAt(0).toString(16)}: no answer (${describeAnswer(r)})`);
        const loc = res.headers.location;
        assert.ok(loc === undefined || !/[\x00-\x1f\x7f]/.test(loc),
            `0x${c.charCodeAt(0).toString(16)} in the query reached Location: ${JSON.stringify(loc)}`);
        assert.equal(res.status, 400, `0x${c.charCodeAt(0).toString(16)} in the request target`);
    }
});

it('one request gets one answer: Upgrade and CONNECT are not answered twice', async () => {
    const cases = [
        ['an h2c upgrade (curl --http2)', `GET /healthz HTTP/1.1\r\n${H(srv.port)}Connection: Upgrade, HTTP2-Settings\r\n` +
            'Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n', [200]],
        ['a websocket upgrade', `GET /${code} HTTP/1.1\r\n${H(srv.port)}Connection: Upgrade\r\nUpgrade: websocket\r\n` +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n', [302]],
        ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', [400, 404, 405, 501]],
    ];
    for (const [why, bytes, wants] of cases) {
        // Everything until the server closes, or 1.5 s of silence.
        const r = await rawExchange(srv.port, bytes, { timeoutMs: 1500 });
        const answers = parseResponses(r.buf, { closed: r.closed });
        assert.equal(answers.length, 1, `${why}: ${answers.length} answers to one request: ${describeAnswer(r)}`);
        assert.ok(wants.includes(answers[0].status), `${why}: status ${answers[0].status}`);
    }
    // An ignored upgrade leaves a usable HTTP/1.1 connection (or a closed one), never a stray answer.
    const c = await Conn.open(srv.port);
    try {
        const a = await c.request(`GET /healthz HTTP/1.1\r\n${H(srv.port)}Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n`);
        assert.equal(a && a.status, 200);
        if (!c.closed) {
            const b = await c.get(`/${code}`).catch(() => null);
            assert.ok(b === null || b.status === 302, `the request after an ignored upgrade got ${b && b.status}`);
        }
    } finally {
        c.destroy();
    }
});

it('a malformed request does not reach a handler: nothing is created', async () => {
    // A smuggling attempt whose "body" would be a second request.
    const smuggled = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    const bytes = 'POST /api/links HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n' +
        `0\r\n\r\n${smuggled}`;
    const r = await rawExchange(srv.port, bytes, { timeoutMs: 5000 });
    const answers = parseResponses(r.buf, { closed: true });
    assert.equal(answers.length, 1, `want one 400 and a close, got ${answers.map((a) => a.status)}`);
    assert.equal(answers[0].status, 400);
    assert.ok(r.closed, 'the connection must be closed after a malformed request');
});

/* ------------------------------------------------------------------ limits */

it('a header block over 16 KiB answers 431; just under it works', async () => {
    const big = `GET /healthz HTTP/1.1\r\n${H(srv.port)}X-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`;
    await expectStatus(srv.port, big, 431, 'one 17 KiB header');
    const many = `GET /healthz HTTP/1.1\r\n${H(srv.port)}` +
        Array.from({ length: 200 }, (_, i) => `X-H${i}: ${'b'.repeat(90)}\r\n`).join('') + '\r\n';
    await expectStatus(srv.port, many, 431, '200 headers of ~100 bytes');
    const under = `GET /healthz HTTP/1.1\r\n${H(srv.port)}X-Big: ${'a'.repeat(15 * 1024)}\r\n\r\n`;
    await expectStatus(srv.port, under, 200, 'a 15 KiB header block');
});

it('a request target over 4 KiB answers 414; just under it does not', async () => {
    await expectStatus(srv.port, `GET /${'a'.repeat(5000)} HTTP/1.1\r\n${H(srv.port)}\r\n`, 414, '5000-byte target');
    await expectStatus(srv.port, `GET /${code}?q=${'a'.repeat(8000)} HTTP/1.1\r\n${H(srv.port)}\r\n`, 414,
        '8 KB query string');
    await expectStatus(srv.port, `GET /${'a'.repeat(4000)} HTTP/1.1\r\n${H(srv.port)}\r\n`, 404, '4000-byte target');
});

it('a body over 1 MiB on POST /api/links answers 413 with JSON, before the body is sent', async () => {
    const head = `POST /api/links HTTP/1.1\r\n${H(srv.port)}Authorization: Bearer ${srv.adminKey}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n';
    const r = await expectStatus(srv.port, head, 413, 'Content-Length: 2000000');
    const [res] = parseResponses(r.buf, { closed: true });
    const body = JSON.parse(res.text);
    assert.equal(body.error.code, 'too_large');
});

it('a body over 1 MiB sent in full still gets its 413 (no reset eats the answer)', async () => {
    const body = Buffer.alloc(2_000_000, 'a');
    const head = `POST /api/links HTTP/1.1\r\n${H(srv.port)}Authorization: Bearer ${srv.adminKey}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    for (let i = 0; i < 3; i++) {
        const r = await rawExchange(srv.port, [head, body], { timeoutMs: 10_000, stopAfter: 1 });
        assert.equal(statusOf(r.text), 413, `attempt ${i + 1}: got ${describeAnswer(r)}`);
    }
});

it('a chunked body that grows past 1 MiB answers 413', async () => {
    const head = `POST /api/links HTTP/1.1\r\n${H(srv.port)}Authorization: Bearer ${srv.adminKey}\r\n` +
        'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const chunk = 64 * 1024;
    const first = '{"url": "https://example.com/", "note": "' + 'n'.repeat(chunk);
    const parts = [head, `${first.length.toString(16)}\r\n${first}\r\n`];
    for (let i = 0; i < 20; i++) parts.push(`${chunk.toString(16)}\r\n${'n'.repeat(chunk)}\r\n`);
    const r = await rawExchange(srv.port, parts, { timeoutMs: 10_000, stopAfter: 1, gapMs: 5 });
    assert.equal(statusOf(r.text), 413, `got ${describeAnswer(r)}`);
});

it('a body just under the limit is read and judged on its content', async () => {
    const body = JSON.stringify({ url: 'https://example.com/', note: 'n'.repeat(1000 * 1000) });
    const head = `POST /api/links HTTP/1.1\r\n${H(srv.port)}Authorization: Bearer ${srv.adminKey}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
    const r = await rawExchange(srv.port, [head, body], { timeoutMs: 10_000, stopAfter: 1 });
    // The note is too long (4096 bytes), so 400 field note - not 413.
    assert.equal(statusOf(r.text), 400, `got ${describeAnswer(r)}`);
    const [res] = parseResponses(r.buf, { closed: true });
    assert.equal(JSON.parse(res.text).error.field, 'note');
});

/* ------------------------------------------------------ keep-alive & pipelining */

it('keep-alive: two requests on one connection are both answered', async () => {
    const c = await Conn.open(srv.port);
    try {
        const a = await c.get('/healthz');
        assert.equal(a && a.status, 200);
        const b = await c.get(`/${code}`);
        assert.equal(b && b.status, 302);
        assert.equal(b.headers.location, 'https://example.com/raw');
        assert.ok(!c.closed, 'the server closed a keep-alive connection');
        const d = await c.get('/healthz', { head: true });
        assert.equal(d && d.status, 200);
        const e = await c.get('/healthz');
        assert.equal(e && e.status, 200, 'the answer to HEAD had a body, or the connection broke');
    } finally {
        c.destroy();
    }
});

it('pipelining: three requests in one packet get three answers in order', async () => {
    const req = (p) => `GET ${p} HTTP/1.1\r\n${H(srv.port)}\r\n`;
    const r = await rawExchange(srv.port, req('/healthz') + req('/healthz') + req('/healthz'),
        { timeoutMs: 5000, stopAfter: 3 });
    assert.deepEqual(parseResponses(r.buf).map((x) => x.status), [200, 200, 200], describeAnswer(r));

    const mixed = await rawExchange(srv.port, req('/healthz') + req('/zzzzzzz') + req(`/${code}`) + req('/readyz'),
        { timeoutMs: 5000, stopAfter: 4 });
    const answers = parseResponses(mixed.buf);
    assert.deepEqual(answers.map((x) => x.status), [200, 404, 302, 200], describeAnswer(mixed));
    assert.equal(answers[2].headers.location, 'https://example.com/raw');
});

it('pipelining: a POST with a body followed by a GET', async () => {
    const body = JSON.stringify({ url: 'https://example.com/pipelined' });
    const bytes = `POST /api/links HTTP/1.1\r\n${H(srv.port)}Authorization: Bearer ${srv.adminKey}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}` +
        `GET /healthz HTTP/1.1\r\n${H(srv.port)}\r\n`;
    const r = await rawExchange(srv.port, bytes, { timeoutMs: 5000, stopAfter: 2 });
    const answers = parseResponses(r.buf);
    assert.deepEqual(answers.map((x) => x.status), [201, 200], describeAnswer(r));
    assert.equal(JSON.parse(answers[0].text).url, 'https://example.com/pipelined');
});

// The redirect is answered after the reads of its poll, with every other
// redirect those reads completed (http_later): order, answers and
// connections that go away meanwhile must not notice.
it('redirects answered together: 300 pipelined on one connection, one on each of 60 at once, and clients that leave first', async () => {
    const links = [];
    for (let i = 0; i < 6; i++) {
        links.push(await createLink(srv, srv.adminKey, { url: `https://example.com/batch/${i}` }));
    }
    const req = (p, extra = '') => `GET ${p} HTTP/1.1\r\n${H(srv.port)}${extra}\r\n`;
    // More than the 128 answered together, mixed with requests of other
    // routes and unknown codes, the last one closing.
    const want = [];
    let bytes = '';
    for (let i = 0; i < 300; i++) {
        if (i % 7 === 3) {
            bytes += req('/healthz');
            want.push([200, null]);
        } else if (i % 11 === 5) {
            bytes += req('/nosuchcode1');
            want.push([404, null]);
        } else {
            const l = links[i % links.length];
            bytes += req(`/${l.code}`, i === 299 ? 'Connection: close\r\n' : '');
            want.push([302, l.url]);
        }
    }
    const r = await rawExchange(srv.port, bytes, { timeoutMs: 10_000, stopAfter: 300 });
    const answers = parseResponses(r.buf);
    assert.equal(answers.length, 300, describeAnswer(r));
    assert.deepEqual(answers.map((a) => [a.status, a.headers.location || null]), want);

    // One redirect on each of 60 connections written at once: each gets its own.
    const many = await Promise.all(Array.from({ length: 60 }, (_, i) => {
        const l = links[i % links.length];
        return rawExchange(srv.port, req(`/${l.code}`), { timeoutMs: 10_000, stopAfter: 1 })
            .then((x) => ({ x, url: l.url }));
    }));
    for (const { x, url } of many) {
        const [a] = parseResponses(x.buf);
        assert.equal(a && a.status, 302, describeAnswer(x));
        assert.equal(a.headers.location, url);
    }

    // Clients that send redirects and reset at once: the server carries on.
    await Promise.all(Array.from({ length: 40 }, (_, i) => new Promise((resolve) => {
        const sock = net.connect({ port: srv.port, host: '127.0.0.1' }, () => {
            sock.write(req(`/${links[i % links.length].code}`).repeat(5));
            if (i % 2) sock.resetAndDestroy(); else sock.destroy();
            resolve();
        });
        sock.on('error', resolve);
    })));
    const last = await rawExchange(srv.port, req(`/${links[0].code}`), { timeoutMs: 5000, stopAfter: 1 });
    assert.equal(parseResponses(last.buf)[0].headers.location, links[0].url, describeAnswer(last));
});

it('a request split into many small writes is assembled', async () => {
    const bytes = `GET /${code} HTTP/1.1\r\n${H(srv.port)}User-Agent: slow\r\n\r\n`;
    const parts = bytes.match(/[\s\S]{1,3}/g);
    const r = await rawExchange(srv.port, parts, { timeoutMs: 10_000, stopAfter: 1, gapMs: 2 });
    assert.equal(statusOf(r.text), 302, describeAnswer(r));
});

/* ---------------------------------------------------------------- timeouts */

it('--idle-timeout 1 closes an idle keep-alive connection after about 1 s', async () => {
    const c = await Conn.open(idle.port);
    try {
        const a = await c.get('/healthz');
        assert.equal(a && a.status, 200);
        const t = Date.now();
        const closed = await c.waitClose(4000);
        const ms = Date.now() - t;
        assert.ok(closed, 'the idle connection was still open after 4 s');
        assert.ok(ms >= 500, `closed after ${ms} ms, sooner than the 1 s idle timeout`);
    } finally {
        c.destroy();
    }
    // A busy connection is not idle: requests 0.4 s apart keep it open past 1 s.
    const b = await Conn.open(idle.port);
    try {
        for (let i = 0; i < 4; i++) {
            const r = await b.get('/healthz');
            assert.equal(r && r.status, 200, `request ${i} on a connection in use`);
            await new Promise((res) => setTimeout(res, 400));
        }
    } finally {
        b.destroy();
    }
});

it('--header-timeout 1: half a request line gets 408 and a close within ~2 s', async () => {
    const r = await rawExchange(slow.port, 'GET /heal', { timeoutMs: 4000 });
    assert.ok(!r.timedOut, `still open after 4 s; received ${describeAnswer(r)}`);
    assert.equal(statusOf(r.text), 408, `got ${describeAnswer(r)}`);
    assert.ok(r.ms >= 500 && r.ms <= 3000, `closed after ${r.ms} ms`);
    // Headers that trickle in slower than the timeout do not keep a connection alive.
    const t = await rawExchange(slow.port, ['GET /healthz HTTP/1.1\r\n', 'Host: x\r\n', 'X-A: 1\r\n', 'X-B: 2\r\n',
        'X-C: 3\r\n', 'X-D: 4\r\n', '\r\n'], { timeoutMs: 6000, gapMs: 400 });
    assert.equal(statusOf(t.text), 408, `trickled headers: got ${describeAnswer(t)}`);
});

it('--body-timeout 1: a body that stops halfway gets 408 and a close', async () => {
    const head = `POST /api/links HTTP/1.1\r\n${H(slow.port)}Authorization: Bearer ${slow.adminKey}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"url": "https://exa';
    const r = await rawExchange(slow.port, head, { timeoutMs: 5000 });
    assert.ok(!r.timedOut, `still open after 5 s; received ${describeAnswer(r)}`);
    assert.equal(statusOf(r.text), 408, `got ${describeAnswer(r)}`);
    assert.ok(r.ms >= 500 && r.ms <= 3500, `closed after ${r.ms} ms`);
});

it('--max-connections 5: the 6th simultaneous connection is closed, the first 5 still work', async () => {
    const five = [];
    try {
        for (let i = 0; i < 5; i++) {
            const c = await Conn.open(capped.port);
            five.push(c);
            const r = await c.get('/healthz');
            assert.equal(r && r.status, 200, `connection ${i + 1} of 5`);
        }
        const sixth = await Conn.open(capped.port);
        let answer;
        try {
            answer = await sixth.get('/healthz', { timeoutMs: 5000 }).catch((e) => e);
            assert.ok(!(answer instanceof Error), `the 6th connection got neither an answer nor a close: ${answer}`);
            assert.ok(answer === null || answer.status !== 200, 'the 6th connection was served');
            assert.ok(await sixth.waitClose(5000), 'the server did not close the 6th connection');
        } finally {
            sixth.destroy();
        }
        for (const [i, c] of five.entries()) {
            const r = await c.get('/healthz');
            assert.equal(r && r.status, 200, `connection ${i + 1} after the 6th was refused`);
        }
        // Freeing a slot lets a new connection in.
        five.shift().destroy();
        let served = false;
        for (let tries = 0; tries < 50 && !served; tries++) {
            const c = await Conn.open(capped.port);
            try {
                const r = await c.get('/healthz', { timeoutMs: 2000 }).catch(() => null);
                served = !!r && r.status === 200;
            } finally {
                c.destroy();
            }
            if (!served) await new Promise((res) => setTimeout(res, 100));
        }
        assert.ok(served, 'no new connection was served after one of the 5 closed');
    } finally {
        for (const c of five) c.destroy();
    }
});
