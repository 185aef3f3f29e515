// cluster-sessions.test.mjs - dashboard sessions on two nodes sharing one
// PostgreSQL and one Redis: a sign-in on one node works on the other at
// once, with the same CSRF token; a sign-out on either ends the session on
// both, and so does `shortd user disable`.
//
// Needs SHORTD_TEST_PG (tests/pg.sh) and SHORTD_TEST_REDIS (tests/redis.sh):
//     tests/pg.sh tests/redis.sh node --test tests/e2e/cluster-sessions.test.mjs
// Every test is skipped when either URL is unset.

import assert from 'node:assert/strict';

import { twoNodes } from './cluster-kit.mjs';
import { api, cli, it } from './harness.mjs';

const PG = process.env.SHORTD_TEST_PG || '';
const REDIS = process.env.SHORTD_TEST_REDIS || '';
const skip = PG && REDIS ? false
    : 'SHORTD_TEST_PG and SHORTD_TEST_REDIS must both be set (tests/pg.sh tests/redis.sh node --test ...)';

const pair = twoNodes({ pg: PG, redis: REDIS, schema: `clustersess_${process.pid}`, prefix: 'sess', skip });

async function signIn(node, name, password) {
    const r = await api(node, 'POST', '/api/session', { body: { name, password } });
    assert.equal(r.status, 200, `${node.name}: ${r.text}`);
    return { cookie: r.headers.get('set-cookie').split(';')[0], csrf: r.json.csrf_token };
}

const page = (s) => ({ cookie: s.cookie, 'sec-fetch-site': 'same-origin', 'x-csrf-token': s.csrf });
const whoami = (node, s) => api(node, 'GET', '/api/session', { headers: { cookie: s.cookie } });

it('a session made on one node works on the other; a sign-out on either ends it on both', async () => {
    for (const name of ['nia', 'ned']) {
        const r = cli(['user', 'create', name, '--store', pair.url], { input: `${name}-password\n` });
        assert.equal(r.code, 0, r.stderr);
    }
    const s = await signIn(pair.a, 'nia', 'nia-password');
    const me = await whoami(pair.b, s);
    assert.equal(me.status, 200, me.text);
    assert.equal(me.json.name, 'nia');
    assert.equal(me.json.csrf_token, s.csrf);
    // A write on node b with the token node a gave.
    const made = await api(pair.b, 'POST', '/api/links', { body: { url: 'https://example.com/nia' }, headers: page(s) });
    assert.equal(made.status, 201, made.text);
    assert.equal((await api(pair.a, 'GET', `/api/links/${made.json.code}`, { headers: { cookie: s.cookie } })).status, 200);
    const out = await api(pair.b, 'DELETE', '/api/session', { headers: page(s) });
    assert.equal(out.status, 204, out.text);
    for (const n of [pair.a, pair.b]) assert.equal((await whoami(n, s)).status, 401, n.name);

    const t = await signIn(pair.b, 'ned', 'ned-password');
    assert.equal((await whoami(pair.a, t)).status, 200);
    assert.equal(cli(['user', 'disable', 'ned', '--store', pair.url]).code, 0);
    for (const n of [pair.a, pair.b]) assert.equal((await whoami(n, t)).status, 401, n.name);
}, { skip });
