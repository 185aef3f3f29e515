// missing-store.test.mjs - a mistyped --db: the commands that work on a store
// without serving it refuse one that does not exist (a message naming the
// path, a non-zero exit, no file made) instead of creating an empty store and
// answering from it; `shortd migrate --db` and `shortd serve` still create one.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import { PG_MODE, cli, it, sqliteOnlyReason, startServer, tempDir } from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer();
});

after(async () => {
    if (srv) await srv.stop();
});

/* Every command that reads or writes a store without serving it. */
function commands(db) {
    const out = path.join(tempDir(), 'copy.db');
    return [
        ['key', 'create', '--db', db, '--name', 'ci'],
        ['key', 'list', '--db', db],
        ['key', 'revoke', '--db', db, '1'],
        ['link', 'create', '--db', db, '--url', 'https://example.com/'],
        ['link', 'list', '--db', db],
        ['link', 'delete', '--db', db, 'abc'],
        ['backup', '--db', db, '--to', out],
        ['stats', '--db', db, 'abc'],
        ['export', '--db', db],
        ['prune', '--db', db],
    ];
}

it('every store command refuses a SQLite path that does not exist, and makes no file', () => {
    const dir = tempDir();
    const typo = path.join(dir, 'shortd.bd');
    for (const args of commands(typo)) {
        const r = cli(args, { timeoutMs: 15_000 });
        const what = `shortd ${args.slice(0, 2).join(' ')}`;
        assert.equal(r.signal, null, `${what} died of ${r.signal}: ${r.stderr}`);
        assert.notEqual(r.code, 0, `${what} on a missing file succeeded:\n${r.stdout}`);
        assert.ok(r.stderr.includes(`no database at '${typo}'`), `${what} does not name the path: ${r.stderr}`);
        assert.deepEqual(fs.readdirSync(dir), [], `${what} created ${fs.readdirSync(dir).join(', ')}`);
    }
}, { skip: sqliteOnlyReason('a missing SQLite file') });

it('the store named by SHORTD_DB, or the default path, is refused the same way', () => {
    const dir = tempDir();
    const typo = path.join(dir, 'nothing.db');
    const byEnv = cli(['link', 'list'], { env: { SHORTD_DB: typo, SHORTD_STORE: '' } });
    assert.notEqual(byEnv.code, 0, byEnv.stdout);
    assert.ok(byEnv.stderr.includes(`no database at '${typo}'`), byEnv.stderr);
    const byDefault = cli(['key', 'list'], { cwd: dir, env: { SHORTD_DB: '', SHORTD_STORE: '' } });
    assert.notEqual(byDefault.code, 0, byDefault.stdout);
    assert.ok(byDefault.stderr.includes("no database at 'data/shortd.db'"), byDefault.stderr);
    assert.deepEqual(fs.readdirSync(dir), []);
}, { skip: sqliteOnlyReason('a missing SQLite file') });

it('shortd migrate --db creates the file, and then the commands work on it', () => {
    const db = path.join(tempDir(), 'new.db');
    const m = cli(['migrate', '--db', db]);
    assert.equal(m.code, 0, m.stderr);
    assert.match(m.stdout, /created the sqlite store/);
    assert.ok(fs.existsSync(db));
    const k = cli(['key', 'create', '--db', db, '--name', 'first', '--admin']);
    assert.equal(k.code, 0, k.stderr);
    const l = cli(['link', 'list', '--db', db]);
    assert.equal(l.code, 0, l.stderr);
}, { skip: sqliteOnlyReason('a new SQLite file') });

it('an existing store still works with those commands', () => {
    const ok = new Set(['key create', 'key list', 'link create', 'link list', 'export', 'prune']);
    if (!PG_MODE) ok.add('backup');     // SQLite's online backup
    for (const args of commands(srv.db).filter((a) => ok.has(a[0]) || ok.has(`${a[0]} ${a[1]}`))) {
        const r = cli(args, { timeoutMs: 15_000 });
        assert.equal(r.code, 0, `shortd ${args.join(' ')}: ${r.stderr}`);
    }
});

it('on PostgreSQL a mistyped store (a schema never migrated) is refused, and nothing is made there', () => {
    const typo = srv.db.replace(/search_path%3D([A-Za-z0-9_]+)/, 'search_path%3D$1_typo');
    assert.notEqual(typo, srv.db);
    for (const args of commands(typo).filter((a) => a[0] !== 'backup')) {
        const r = cli(args, { timeoutMs: 15_000 });
        assert.notEqual(r.code, 0, `shortd ${args.slice(0, 2).join(' ')} on an unmigrated store succeeded`);
        assert.match(r.stderr, /run shortd migrate/, r.stderr);
    }
}, { skip: PG_MODE ? false : 'PostgreSQL only (SHORTD_E2E_STORE=pg)' });
