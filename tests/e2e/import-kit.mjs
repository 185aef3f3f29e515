// import-kit.mjs - what the importers' end-to-end tests share: empty schemas
// of the test PostgreSQL as sources, the servers to stop after, `shortd
// import` and `shortd stats` through the CLI.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after } from 'node:test';

import { cli } from './harness.mjs';

export const PG = process.env.SHORTD_TEST_PG || '';
const schemas = [];
export const servers = []; // started by a test, stopped after the file

after(async () => {
    for (const s of servers) if (s.running) await s.stop();
    if (schemas.length) {
        spawnSync('psql', ['-X', '-q', '-d', PG, '-c', schemas.map((s) => `DROP SCHEMA ${s} CASCADE;`).join(' ')]);
    }
});

/* An empty schema of the test PostgreSQL, as a URL whose search_path is it. */
export function pgSource(name) {
    const schema = `${name}_${process.pid}`;
    const r = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', PG, '-c',
        `DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    schemas.push(schema);
    return `${PG}${PG.includes('?') ? '&' : '?'}options=-csearch_path%3D${schema}`;
}

/* `shortd import FORMAT SOURCE` into the server's store. */
export function runImport(format, srv, source, extra = []) {
    return cli(['import', format, source, '--db', srv.db, ...extra], { timeoutMs: 120_000 });
}

/* A link's stats over the fixtures' days (2026-11-19 to 2026-11-23). */
export function statsOf(srv, code) {
    const r = cli(['stats', '--db', srv.db, code, '--from', '2026-11-19', '--to', '2026-11-23']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout);
}
