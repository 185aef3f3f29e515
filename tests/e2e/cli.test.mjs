// cli.test.mjs - the shortd subcommands against a database a running server
// serves: keys (create, list, revoke → 401), links (create, list, delete),
// help, and wrong usage.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';

import {
    api, cli, createKey, createLink, it, lastWord, poll, sqliteOnly, startServer, tempDir, unique, visit,
} from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer();
});

after(async () => {
    if (srv) await srv.stop();
});

function ok(args) {
    const r = cli(args);
    assert.equal(r.code, 0, `shortd ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r;
}

function fails(args, mention) {
    const r = cli(args, { timeoutMs: 15_000 });
    assert.notEqual(r.code, 0, `shortd ${args.join(' ')} should fail\nstdout: ${r.stdout}`);
    assert.equal(r.signal, null, `shortd ${args.join(' ')} died of ${r.signal}\nstderr: ${r.stderr}`);
    assert.ok(r.stderr.trim().length > 0, `shortd ${args.join(' ')} failed without a message on stderr`);
    if (mention) {
        const any = [].concat(mention);
        assert.ok(any.some((m) => r.stderr.toLowerCase().includes(m.toLowerCase())),
            `the message should mention ${any.map((m) => `"${m}"`).join(' or ')}: ${r.stderr}`);
    }
    return r;
}

/* The line of `key list` for the key named 'name'. */
function keyLine(name) {
    const out = ok(['key', 'list', '--db', srv.db]).stdout;
    const line = out.split('\n').find((l) => l.split(/\s+/).includes(name) || l.includes(`name=${name}`));
    assert.ok(line, `no line for ${name} in key list:\n${out}`);
    return line;
}

function keyId(line) {
    const first = line.trim().split(/\s+/)[0];
    const m = /^(?:id=|#)?([^\s,]+?),?$/.exec(first);
    return m[1];
}

/* -------------------------------------------------------------------- help */

it('shortd --help and shortd CMD --help print usage on stdout and exit 0', async () => {
    const top = ok(['--help']);
    assert.match(top.stdout, /usage/i);
    for (const cmd of ['serve', 'key', 'link', 'backup']) {
        assert.ok(top.stdout.includes(cmd), `--help does not mention ${cmd}`);
    }
    for (const cmd of [['serve'], ['key'], ['link'], ['backup'], ['key', 'create'], ['link', 'create']]) {
        const r = ok([...cmd, '--help']);
        assert.match(r.stdout, /usage/i, `shortd ${cmd.join(' ')} --help`);
    }
    const serve = ok(['serve', '--help']).stdout;
    for (const flag of ['--listen', '--db', '--base-url', '--config']) assert.ok(serve.includes(flag), `serve --help lacks ${flag}`);
    const create = ok(['key', 'create', '--help']).stdout;
    for (const flag of ['--name', '--admin']) assert.ok(create.includes(flag), `key create --help lacks ${flag}`);
});

it('wrong usage exits non-zero with a message on stderr', async () => {
    const db = srv.db;
    fails(['frobnicate'], 'frobnicate');
    fails(['key'], null);
    fails(['key', 'frobnicate', '--db', db], 'frobnicate');
    fails(['key', 'create', '--db', db], 'name');
    fails(['key', 'create', '--db', db, '--name'], 'name');
    fails(['key', 'create', '--db', db, '--name', 'x', '--bogus-flag'], 'bogus-flag');
    fails(['key', 'revoke', '--db', db], null);
    fails(['link'], null);
    fails(['link', 'create', '--db', db], 'url');
    fails(['link', 'create', '--db', db, '--url', 'https://example.com/', '--ttl', 'soon'], ['ttl', 'soon']);
    fails(['link', 'delete', '--db', db], null);
    fails(['serve', '--bogus-flag'], 'bogus-flag');
    fails(['serve', '--listen', 'not-an-address', '--db', path.join(tempDir(), 'x.db')], ['listen', 'not-an-address']);
});

/* -------------------------------------------------------------------- keys */

it('key create prints a long random key that works on the API at once', async () => {
    const name = unique('alice');
    const r = ok(['key', 'create', '--db', srv.db, '--name', name]);
    const key = lastWord(r.stdout);
    assert.ok(key.length >= 20, `key "${key}" is too short to be a random token`);
    const key2 = createKey(srv, unique('alice2'));
    assert.notEqual(key, key2);
    const g = await api(srv, 'GET', '/api/links', { key });
    assert.equal(g.status, 200, g.text);
    assert.deepEqual(g.json, []);
    const l = await createLink(srv, key, { url: 'https://example.com/cli-key' });
    assert.equal((await visit(srv, l.code)).status, 302);
    // A user key is not an admin key.
    assert.equal((await api(srv, 'GET', '/api/admin/blocklist', { key })).status, 403);
});

it('key create --admin makes an admin key', async () => {
    const boss = createKey(srv, unique('boss'), { admin: true });
    const r = await api(srv, 'GET', '/api/admin/blocklist', { key: boss });
    assert.equal(r.status, 200, r.text);
});

it('key list shows id, name, role and state, and never the key itself', async () => {
    const uname = unique('user');
    const aname = unique('admin');
    const ukey = createKey(srv, uname);
    const akey = createKey(srv, aname, { admin: true });
    const out = ok(['key', 'list', '--db', srv.db]).stdout;
    assert.ok(!out.includes(ukey) && !out.includes(akey), 'key list prints the secret keys');
    assert.ok(!out.includes(srv.adminKey), 'key list prints the first admin key');
    const ul = keyLine(uname);
    const al = keyLine(aname);
    assert.match(ul, /\buser\b/i);
    assert.doesNotMatch(ul, /\badmin\b/i);
    assert.match(al, /\badmin\b/i);
    assert.doesNotMatch(ul, /\brevoked\b/i);
    assert.notEqual(keyId(ul), keyId(al));
});

it('key revoke makes the key answer 401 and leaves the others alone', async () => {
    const name = unique('carol');
    const other = createKey(srv, unique('dave'));
    const key = createKey(srv, name);
    const l = await createLink(srv, key, { url: 'https://example.com/revoked-owner' });
    assert.equal((await api(srv, 'GET', '/api/links', { key })).status, 200);
    const id = keyId(keyLine(name));
    ok(['key', 'revoke', '--db', srv.db, id]);
    const got = await poll(async () => (await api(srv, 'GET', '/api/links', { key })).status === 401,
        { timeoutMs: 3000 });
    assert.ok(got, 'a revoked key still works on the running server after 3 s');
    const p = await api(srv, 'POST', '/api/links', { key, body: { url: 'https://example.com/' } });
    assert.equal(p.status, 401);
    assert.equal(p.json.error.code, 'unauthorized');
    assert.match(keyLine(name), /revoked/i);
    assert.equal((await api(srv, 'GET', '/api/links', { key: other })).status, 200);
    // The revoked key's links keep redirecting.
    assert.equal((await visit(srv, l.code)).status, 302);
    // Revoking what does not exist fails.
    fails(['key', 'revoke', '--db', srv.db, '999999'], null);
});

it('the database holds no API key in clear', async (t) => {
    if (sqliteOnly(t, 'reads the SQLite file and its -wal')) return;
    const key = createKey(srv, unique('secret'));
    const files = [srv.db, `${srv.db}-wal`].filter((f) => fs.existsSync(f));
    for (const f of files) {
        const bytes = fs.readFileSync(f);
        assert.ok(!bytes.includes(Buffer.from(key)), `${path.basename(f)} contains a key in clear`);
        assert.ok(!bytes.includes(Buffer.from(srv.adminKey)), `${path.basename(f)} contains the admin key in clear`);
    }
});

/* ------------------------------------------------------------------- links */

it('link create prints the code; the running server redirects it', async () => {
    const r = ok(['link', 'create', '--db', srv.db, '--url', 'https://example.com/from-cli']);
    const code = lastWord(r.stdout);
    assert.match(code, /^[0-9A-Za-z]{7}$/);
    const v = await visit(srv, code);
    assert.equal(v.status, 302);
    assert.equal(v.headers.get('location'), 'https://example.com/from-cli');

    const alias = unique('cli-');
    const a = ok(['link', 'create', '--db', srv.db, '--url', 'https://example.com/cli-alias', '--alias', alias]);
    assert.equal(lastWord(a.stdout), alias);
    assert.equal((await visit(srv, alias)).headers.get('location'), 'https://example.com/cli-alias');

    const t = ok(['link', 'create', '--db', srv.db, '--url', 'https://example.com/cli-ttl', '--ttl', '3600']);
    const g = await api(srv, 'GET', `/api/links/${lastWord(t.stdout)}`, { key: srv.adminKey });
    assert.equal(g.status, 200, g.text);
    assert.equal(g.json.days_remaining, 1);
    const ttl = Date.parse(g.json.expires_at) - Date.parse(g.json.created_at);
    assert.ok(Math.abs(ttl - 3600_000) <= 1000, `ttl ${ttl} ms`);

    // The same rules as the API.
    fails(['link', 'create', '--db', srv.db, '--url', 'ftp://example.com/'], 'url');
    fails(['link', 'create', '--db', srv.db, '--url', 'https://example.com/', '--alias', 'dashboard'], 'alias');
    fails(['link', 'create', '--db', srv.db, '--url', 'https://example.com/', '--alias', alias], null);
});

it('CLI changes reach a running server that has the code cached', async () => {
    // Deleting a link the server has just served (and cached).
    const l = await createLink(srv, srv.adminKey, { url: 'https://example.com/cached' });
    assert.equal((await visit(srv, l.code)).status, 302);
    assert.equal((await visit(srv, l.code)).status, 302);
    ok(['link', 'delete', '--db', srv.db, l.code]);
    const gone = await poll(async () => (await visit(srv, l.code)).status === 410, { timeoutMs: 3000 });
    assert.ok(gone, 'a link deleted with the CLI still redirects on the running server after 3 s');
    // Creating an alias the server has just answered 404 for.
    const alias = unique('cli-late-');
    assert.equal((await visit(srv, alias)).status, 404);
    ok(['link', 'create', '--db', srv.db, '--url', 'https://example.com/cli-late', '--alias', alias]);
    const there = await poll(async () => (await visit(srv, alias)).status === 302, { timeoutMs: 3000 });
    assert.ok(there, 'an alias created with the CLI still answers 404 on the running server after 3 s');
});

it('--store sqlite:PATH works like --db PATH', async (t) => {
    if (sqliteOnly(t, 'names the SQLite file in a sqlite: URL')) return;
    const store = `sqlite:${srv.db}`;
    const name = unique('store');
    const r = ok(['key', 'create', '--store', store, '--name', name]);
    const key = lastWord(r.stdout);
    assert.equal((await api(srv, 'GET', '/api/links', { key })).status, 200);
    const out = ok(['key', 'list', '--store', store]).stdout;
    assert.ok(out.includes(name));
    const code = lastWord(ok(['link', 'create', '--store', store, '--url', 'https://example.com/store']).stdout);
    assert.equal((await visit(srv, code)).headers.get('location'), 'https://example.com/store');
    fails(['key', 'list', '--store', 'nosuchbackend:/x'], null);
});

it('link list shows the links; link delete makes the code 410', async () => {
    const url = `https://example.com/cli-list/${unique()}`;
    const code = lastWord(ok(['link', 'create', '--db', srv.db, '--url', url]).stdout);
    const api1 = await createLink(srv, srv.adminKey, { url: 'https://example.com/api-made' });
    const out = ok(['link', 'list', '--db', srv.db]).stdout;
    const line = out.split('\n').find((l) => l.includes(code));
    assert.ok(line, `link list lacks ${code}:\n${out}`);
    assert.ok(line.includes(url), `link list line lacks the url: ${line}`);
    assert.ok(out.includes(api1.code), 'link list lacks a link made through the API');

    ok(['link', 'delete', '--db', srv.db, code]);
    assert.equal((await visit(srv, code)).status, 410);
    const g = await api(srv, 'GET', `/api/links/${code}`, { key: srv.adminKey });
    assert.equal(g.json.state, 'deleted');
    fails(['link', 'delete', '--db', srv.db, 'zzzzzzz'], null);
});
