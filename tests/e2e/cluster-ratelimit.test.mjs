// cluster-ratelimit.test.mjs - rate limits shared by two nodes on one
// PostgreSQL and one Redis (issue 6, point 2): requests alternated between
// the nodes meet one limit (exactly N pass: a burst inside one window is
// counted exactly); Redis holds only keyed hashes, never an address or a
// key id; with Redis killed every node limits on its own and no request
// fails, and once Redis is back the nodes share again.
//
// Needs SHORTD_TEST_PG (tests/pg.sh) and SHORTD_TEST_REDIS plus
// SHORTD_TEST_REDIS_CONF (tests/redis.sh): run as
//     tests/pg.sh tests/redis.sh node --test tests/e2e/cluster-ratelimit.test.mjs
// Every test is skipped when either URL is unset (as in the plain e2e runs).
// It kills the Redis it was given: do not share that Redis with other files.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { after, before } from 'node:test';

import { migratedSchema, psql, startNode } from './cluster-kit.mjs';
import { api, cli, it, lastWord, poll } from './harness.mjs';

const PG = process.env.SHORTD_TEST_PG || '';
const REDIS = process.env.SHORTD_TEST_REDIS || '';
const REDIS_CONF = process.env.SHORTD_TEST_REDIS_CONF || '';
const skip = PG && REDIS && REDIS_CONF ? false
    : 'SHORTD_TEST_PG, SHORTD_TEST_REDIS and SHORTD_TEST_REDIS_CONF must be set ' +
      '(tests/pg.sh tests/redis.sh node --test ...)';

const SCHEMA = `clusterrl_${process.pid}`;
const REDIS_PORT = REDIS ? Number(new URL(REDIS).port || 6379) : 0;
let url;
let A, B;
const nodes = [];

function redisCli(args, timeoutMs = 10_000) {
    return spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(REDIS_PORT), ...args],
        { encoding: 'utf8', timeout: timeoutMs });
}
const redisPing = () => redisCli(['ping'], 2000).stdout?.trim() === 'PONG';

let redisDown = false;
async function redisKill() {
    const m = /^pidfile\s+(\S+)/m.exec(fs.readFileSync(REDIS_CONF, 'utf8'));
    assert.ok(m, `${REDIS_CONF} names no pidfile`);
    const pid = Number(fs.readFileSync(m[1], 'utf8').trim());
    assert.ok(pid, 'no pid in the pid file');
    redisDown = true;
    process.kill(pid, 'SIGKILL');
    assert.ok(await poll(() => !redisPing(), { timeoutMs: 5000 }), 'redis survived SIGKILL');
}

async function redisStart() {
    const r = spawnSync('redis-server', [REDIS_CONF, '--daemonize', 'yes'], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.status, 0, `redis-server failed: ${r.stdout}${r.stderr}`);
    assert.ok(await poll(redisPing, { timeoutMs: 10_000 }), 'the restarted Redis does not answer');
    redisDown = false;
}

function keyCreate(name) {
    const r = cli(['key', 'create', '--store', url, '--name', name]);
    assert.equal(r.code, 0, `shortd key create: ${r.stdout}${r.stderr}`);
    return lastWord(r.stdout);
}

async function node(name) {
    const s = await startNode({ url, redis: REDIS, name,
        args: ['--trusted-proxies', '127.0.0.1/32', '--rate-auth', '6/3600', '--rate-create-key', '4/3600'] });
    nodes.push(s);
    return s;
}

before(async () => {
    if (skip) return;
    url = migratedSchema(PG, SCHEMA);
    [A, B] = await Promise.all([node('rl-a'), node('rl-b')]);
});

after(async () => {
    if (skip) return;
    if (redisDown) try { await redisStart(); } catch (e) { console.error(e.message); }
    const errors = [];
    for (const s of nodes) {
        try { await s.stop(); } catch (e) { errors.push(e); }
    }
    try { psql(PG, `DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`); } catch (e) { errors.push(e); }
    if (errors.length) throw errors[0];
});

const create = (node, key) => api(node, 'POST', '/api/links', { key, body: { url: 'https://example.com/c' } });

it('two nodes share one auth limit: 6 failed keys in all, then 429 on both', async () => {
    const from = { 'x-forwarded-for': '198.51.100.50' };
    const statuses = [];
    for (let i = 0; i < 14; i++) {
        const r = await api(i % 2 ? A : B, 'GET', '/api/links', { key: `sk_guess${i}`, headers: from });
        statuses.push(r.status);
        if (r.status === 429) assert.ok(Number(r.headers.get('retry-after')) >= 1);
    }
    assert.deepEqual(statuses, [...Array(6).fill(401), ...Array(8).fill(429)]);
}, { skip });

it('two nodes share one create limit per key: exactly 4 of 10 alternated creates pass', async () => {
    const key = keyCreate('shared');
    const statuses = [];
    for (let i = 0; i < 10; i++) statuses.push((await create(i % 2 ? A : B, key)).status);
    assert.deepEqual(statuses, [201, 201, 201, 201, 429, 429, 429, 429, 429, 429]);
}, { skip });

it('Redis holds keyed hashes only: no address, no key id', async () => {
    const r = redisCli(['--scan', '--pattern', 'shortd:rl:*']);
    assert.equal(r.status, 0, r.stderr);
    const keys = r.stdout.split('\n').filter(Boolean);
    assert.ok(keys.length >= 2, `rate limit keys in Redis: ${keys.length}`);
    for (const k of keys) assert.match(k, /^shortd:rl:[0-9a-f]{32}:\d+$/);
    for (const k of keys) {
        const v = redisCli(['get', k]).stdout.trim();
        assert.match(v, /^\d+$/, `${k} holds ${v}`);
    }
}, { skip });

it('Redis killed: each node limits on its own and no request fails; back, they share again',
    async () => {
        await redisKill();
        const key = keyCreate('outage');
        for (const n of [A, B]) {
            const statuses = [];
            for (let i = 0; i < 6; i++) statuses.push((await create(n, key)).status);
            assert.deepEqual(statuses, [201, 201, 201, 201, 429, 429], `${n.name} with Redis down`);
        }
        await redisStart();
        // Each node's breaker tries Redis again within its back-off (5 s at
        // most); from then on a fresh key is limited across both nodes.
        let last;
        const shared = await poll(async () => {
            const fresh = keyCreate(`after${Date.now()}`);
            last = [];
            for (let i = 0; i < 6; i++) {
                const r = await create(i % 2 ? A : B, fresh);
                assert.ok(r.status === 201 || r.status === 429, `${r.status} ${r.text}`);
                last.push(r.status);
            }
            return last.filter((x) => x === 201).length === 4;
        }, { timeoutMs: 20_000, intervalMs: 500 });
        assert.ok(shared, `not shared again after Redis came back: ${last}`);
    }, { skip, timeout: 90_000 });
