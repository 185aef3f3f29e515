// cluster-kit.mjs - what the cluster test files share: a PostgreSQL schema
// of their own (made, migrated with `shortd migrate`, dropped), and nodes
// started on it with one Redis, each with a journal of its own.
//
// Only Node's built-in modules and harness.mjs are used.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before } from 'node:test';
import path from 'node:path';

import { cli, lastWord, startServer, tempDir } from './harness.mjs';

/* Runs one SQL string against the database at pg (a postgres:// URL). */
export function psql(pg, sql) {
    const r = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', pg, '-c', sql],
        { encoding: 'utf8', env: { ...process.env, PGOPTIONS: '-c client_min_messages=warning' } });
    if (r.error) throw new Error(`cannot run psql: ${r.error.message}`);
    assert.equal(r.status, 0, `psql -c "${sql}" failed: ${r.stderr}`);
}

/* The store URL of schema in the database at pg. */
export function withSchema(pg, schema) {
    return `${pg}${pg.includes('?') ? '&' : '?'}options=-csearch_path%3D${schema}`;
}

/* Makes schema anew and migrates it; returns its store URL. */
export function migratedSchema(pg, schema) {
    psql(pg, `DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    const url = withSchema(pg, schema);
    const m = cli(['migrate', '--store', url]);
    assert.equal(m.code, 0, `shortd migrate failed\nstdout: ${m.stdout}\nstderr: ${m.stderr}`);
    return url;
}

/* A node on the store url and the Redis at redis, named name (--node-id),
 * with a journal in a temporary folder of its own and args added. When
 * adminKey is given, stop() checks that it never shows in the node's logs. */
export async function startNode({ url, redis, name, args = [], adminKey }) {
    const dir = tempDir();
    const s = await startServer({
        db: path.join(dir, 'unused.db'),
        args: ['--store', url, '--cache', redis, '--journal', path.join(dir, 'journal'), '--node-id', name,
            ...args],
    });
    if (adminKey) s.adminKey = adminKey;
    s.name = name;
    return s;
}

/* Two nodes on a schema of their own (schema) sharing the Redis at redis,
 * named prefix-a and prefix-b, with an admin key made by the CLI: started
 * in a before hook (unless skip), stopped and the schema dropped in an
 * after hook. The fields of what it returns are set once before has run:
 * url, admin, a, b. */
export function twoNodes({ pg, redis, schema, prefix, skip }) {
    const pair = { url: '', admin: '', a: null, b: null };
    const nodes = [];
    before(async () => {
        if (skip) return;
        pair.url = migratedSchema(pg, schema);
        const k = cli(['key', 'create', '--store', pair.url, '--name', `${prefix}-admin`, '--admin']);
        assert.equal(k.code, 0, `shortd key create: ${k.stdout}${k.stderr}`);
        pair.admin = lastWord(k.stdout);
        const start = async (name) => {
            const s = await startNode({ url: pair.url, redis, name, adminKey: pair.admin });
            nodes.push(s);
            return s;
        };
        [pair.a, pair.b] = await Promise.all([start(`${prefix}-a`), start(`${prefix}-b`)]);
    });
    after(async () => {
        if (skip) return;
        const errors = [];
        for (const s of nodes) {
            try { await s.stop(); } catch (e) { errors.push(e); }
        }
        try { psql(pg, `DROP SCHEMA IF EXISTS ${schema} CASCADE`); } catch (e) { errors.push(e); }
        if (errors.length) throw errors[0];
    });
    return pair;
}
