// adminkey.test.mjs - the first start's admin key when stdout is not a
// terminal (a service manager, a pipe into a log collector): it is written to
// a file only shortd's user can read, beside the database (on a shared store
// beside the node's journal), and only that file's path is logged.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before } from 'node:test';

import { PG_MODE, api, it, startServer } from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer();
});

after(async () => {
    if (srv) await srv.stop();
});

it('a first start on a pipe puts the admin key in a 0600 file beside the store, never in its output', async () => {
    const expected = PG_MODE ? `${srv.journal}.admin-key` : `${srv.db}.admin-key`;
    assert.equal(srv.adminKeyFile, expected, 'the key file is not where the README says');
    const st = fs.statSync(srv.adminKeyFile);
    assert.equal(st.mode & 0o777, 0o600, `the key file has mode ${(st.mode & 0o777).toString(8)}`);
    assert.equal(st.uid, process.getuid(), 'the key file belongs to another user');
    assert.match(srv.adminKey, /^sk_[0-9A-Za-z]{20,}$/);
    assert.ok(!srv.stdout().includes(srv.adminKey), `stdout holds the admin key:\n${srv.stdout()}`);
    assert.ok(!srv.stderr().includes(srv.adminKey), `the log holds the admin key:\n${srv.stderr()}`);
    assert.ok(srv.stderr().includes(srv.adminKeyFile), `the log does not say where the key is:\n${srv.stderr()}`);

    const r = await api(srv, 'GET', '/api/links', { key: srv.adminKey });
    assert.equal(r.status, 200, `the key from the file does not work: ${r.text}`);
    const all = await api(srv, 'GET', '/api/admin/blocklist', { key: srv.adminKey });
    assert.equal(all.status, 200, `the key from the file is not an admin key: ${all.text}`);
});

it('a restart makes no new key and leaves the file alone', async () => {
    const before = fs.readFileSync(srv.adminKeyFile, 'utf8');
    await srv.stop();
    fs.unlinkSync(srv.adminKeyFile);
    await srv.restart();    // the harness asserts no key line and no key file path in this run's output
    assert.ok(!fs.existsSync(srv.adminKeyFile), 'a restart wrote a key file again');
    const r = await api(srv, 'GET', '/api/links', { key: before.trim() });
    assert.equal(r.status, 200, `the first key stopped working after a restart: ${r.text}`);
});
