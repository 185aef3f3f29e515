// users.test.mjs - `shortd user create|list|set-password|disable` against
// the store of a running server: the password read from stdin or, twice
// and unechoed, from a terminal (script(1) gives the command one), never
// stored or printed; the roles; the API key row that owns a user's links;
// and every wrong use refused with a message that names the mistake.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { after, before } from 'node:test';

import { BIN, PG_MODE, cli, it } from './harness.mjs';
import { startServer } from './harness.mjs';

let srv;

before(async () => {
    srv = await startServer();
});

after(async () => {
    if (srv) await srv.stop();
});

/* `shortd user ...` on the server's store, the password on stdin. */
function user(args, input) {
    return cli(['user', ...args, '--db', srv.db], { input: input ?? '' });
}

function ok(args, input) {
    const r = user(args, input);
    assert.equal(r.code, 0, `shortd user ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r;
}

function fails(args, input, mention) {
    const r = user(args, input);
    assert.notEqual(r.code, 0, `shortd user ${args.join(' ')} should fail\nstdout: ${r.stdout}`);
    assert.equal(r.signal, null, `died of ${r.signal}: ${r.stderr}`);
    assert.ok(r.stderr.toLowerCase().includes(mention.toLowerCase()), `the message should mention "${mention}": ${r.stderr}`);
    return r;
}

/* One value from the server's store, by SQL. */
function storeValue(sql) {
    const r = PG_MODE
        ? spawnSync('psql', ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', srv.db, '-c', sql], { encoding: 'utf8' })
        : spawnSync('sqlite3', [srv.db, sql], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${sql}: ${r.stderr}`);
    return r.stdout.trim();
}

/* The line of `user list` for 'name', split into its columns. */
function listed(name) {
    const out = ok(['list']).stdout;
    const line = out.split('\n').find((l) => l.split(/\s+/)[1] === name);
    assert.ok(line, `no line for ${name} in user list:\n${out}`);
    return line.split(/\s+/);
}

it('user create takes the password from stdin, stores only an Argon2id hash, lists the role', () => {
    const pw = 'correct horse battery';
    const r = ok(['create', 'ann', '--role', 'admin'], `${pw}\n`);
    assert.match(r.stdout, /^created admin user \d+ 'ann'$/m);
    assert.ok(!r.stdout.includes(pw) && !r.stderr.includes(pw), 'the password was printed');
    const hash = storeValue("SELECT pwhash FROM users WHERE name = 'ann'");
    assert.match(hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    assert.ok(!hash.includes(pw));
    const [id, name, role, state, created, disabled, ownerKey] = listed('ann');
    assert.ok(Number(id) > 0);
    assert.deepEqual([name, role, state, disabled], ['ann', 'admin', 'active', '-']);
    assert.match(created, /^\d{4}-\d\d-\d\dT/);
    // The key row that owns the user's links: an admin key for an admin.
    const keys = cli(['key', 'list', '--db', srv.db]).stdout;
    const key = keys.split('\n').find((l) => l.split(/\s+/)[0] === ownerKey);
    assert.ok(key, `no key ${ownerKey} in\n${keys}`);
    assert.match(key, /user:ann\s+admin\s+valid/);
    assert.ok(!ok(['list']).stdout.includes('$argon2id'), 'user list shows the hash');

    // A member and a viewer; the role defaults to member. A CRLF line end is not part of it.
    ok(['create', 'bo.b-2@example.com'], 'password-of-bob\r\n');
    ok(['create', 'vic', '--role', 'viewer'], 'password-of-vic\n');
    assert.equal(listed('bo.b-2@example.com')[2], 'member');
    assert.equal(listed('vic')[2], 'viewer');
    const vicKey = listed('vic')[6];
    assert.match(cli(['key', 'list', '--db', srv.db]).stdout, new RegExp(`^${vicKey}\\s+user:vic\\s+user\\s+valid`, 'm'));
    assert.equal(storeValue("SELECT count(*) FROM users"), '3');
});

it('wrong uses are refused and change nothing', () => {
    ok(['create', 'dora'], 'dora-password\n');
    const before1 = storeValue('SELECT count(*) FROM users') + '/' + storeValue('SELECT count(*) FROM api_keys');
    fails(['create', 'dora'], 'another-password\n', "'dora' exists already");
    fails(['create', 'eve', '--role', 'owner'], 'eve-password\n', "--role must be admin, member or viewer, not 'owner'");
    fails(['create', 'Eve'], 'eve-password\n', "'Eve' must start with a lowercase letter");
    fails(['create', 'e ve'], 'eve-password\n', 'only lowercase letters, digits');
    fails(['create', 'e'.repeat(65)], 'eve-password\n', 'must be 1 to 64 characters');
    fails(['create', 'eve'], 'short\n', 'at least 8 bytes');
    fails(['create', 'eve'], `${'x'.repeat(129)}\n`, '8 to 128 bytes');
    fails(['create', 'eve'], '', 'no password on stdin');
    fails(['create', 'eve'], Buffer.from([0x70, 0x77, 0xff, 0xfe, 0x61, 0x62, 0x63, 0x64, 0x0a]), 'utf-8');
    fails(['create'], '', 'takes 1 argument');
    fails(['set-password', 'nobody'], 'new-password\n', "no user named 'nobody'");
    fails(['set-password', 'dora'], 'short\n', 'at least 8 bytes');
    fails(['disable', 'nobody'], '', "no user named 'nobody'");
    const after1 = storeValue('SELECT count(*) FROM users') + '/' + storeValue('SELECT count(*) FROM api_keys');
    assert.equal(after1, before1);
});

it('set-password replaces the hash and ends the sessions; disable keeps the user and its links', () => {
    ok(['create', 'fred'], 'first-password\n');
    const id = listed('fred')[0];
    const old = storeValue("SELECT pwhash FROM users WHERE name = 'fred'");
    // Sessions of fred and of another user, as a sign-in leaves them.
    const other = listed('ann')[0];
    const far = Date.now() + 3_600_000;
    const ins = (hex, uid) => storeValue(PG_MODE
        ? `INSERT INTO sessions VALUES ('\\x${hex}'::bytea, ${uid}, 1, 1, ${far}) RETURNING 1`
        : `INSERT INTO sessions VALUES (x'${hex}', ${uid}, 1, 1, ${far}) RETURNING 1`);
    ins('01'.repeat(32), id);
    ins('02'.repeat(32), id);
    ins('03'.repeat(32), other);
    const r = ok(['set-password', 'fred'], 'second-password\n');
    assert.match(r.stdout, /set the password of user 'fred'/);
    const now = storeValue("SELECT pwhash FROM users WHERE name = 'fred'");
    assert.match(now, /^\$argon2id\$/);
    assert.notEqual(now, old);
    assert.equal(storeValue(`SELECT count(*) FROM sessions WHERE user_id = ${id}`), '0');
    assert.equal(storeValue(`SELECT count(*) FROM sessions WHERE user_id = ${other}`), '1');

    ins('04'.repeat(32), id);
    assert.match(ok(['disable', 'fred']).stdout, /disabled user 'fred'/);
    const row = listed('fred');
    assert.equal(row[3], 'disabled');
    assert.match(row[5], /^\d{4}-\d\d-\d\dT/);
    assert.equal(storeValue(`SELECT count(*) FROM sessions WHERE user_id = ${id}`), '0');
    assert.equal(storeValue(`SELECT count(*) FROM sessions WHERE user_id = ${other}`), '1');
    fails(['disable', 'fred'], '', "'fred' is disabled already");
    // The name stays taken: the user's links keep their owner.
    fails(['create', 'fred'], 'third-password\n', 'exists already');
});

/* Runs `shortd user ARGS` on a terminal (script(1)): types each of 'lines'
 * once the command has asked for it. Resolves to {code, output}. */
function onTerminal(args, lines) {
    return new Promise((resolve, reject) => {
        const cmd = [BIN, 'user', ...args, '--db', srv.db].map((a) => `'${a}'`).join(' ');
        const p = spawn('script', ['-qefc', cmd, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
        let output = '';
        let asked = 0;
        const timer = setTimeout(() => p.kill('SIGKILL'), 20_000);
        p.stdout.setEncoding('utf8');
        p.stdout.on('data', (d) => {
            output += d;
            const prompts = (output.match(/password for '[^']+': |again: /g) || []).length;
            while (asked < prompts && asked < lines.length) p.stdin.write(`${lines[asked++]}\n`);
        });
        p.on('error', reject);
        p.on('close', (code) => { clearTimeout(timer); resolve({ code, output }); });
    });
}

it('on a terminal, the password is asked twice, never echoed, and must match', async () => {
    const pw = 'typed-on-a-tty';
    const r = await onTerminal(['create', 'gus', '--role', 'viewer'], [pw, pw]);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /password for 'gus': /);
    assert.match(r.output, /again: /);
    assert.match(r.output, /created viewer user \d+ 'gus'/);
    assert.ok(!r.output.includes(pw), `the password was echoed:\n${r.output}`);
    assert.equal(listed('gus')[2], 'viewer');

    const bad = await onTerminal(['create', 'hal'], ['first-try-here', 'second-try-here']);
    assert.notEqual(bad.code, 0, bad.output);
    assert.match(bad.output, /the two passwords differ: nothing changed/);
    assert.equal(storeValue("SELECT count(*) FROM users WHERE name = 'hal'"), '0');

    const set = await onTerminal(['set-password', 'gus'], ['another-tty-pw', 'another-tty-pw']);
    assert.equal(set.code, 0, set.output);
    assert.ok(!set.output.includes('another-tty-pw'), set.output);
});

it('the manual page, --help and the completion know the user commands', () => {
    const man = cli(['man']).stdout;
    for (const c of ['user create', 'user list', 'user set\\-password', 'user disable']) {
        assert.ok(man.includes(c), `the manual page lacks ${c}`);
    }
    const help = cli(['user', 'create', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--role admin\|member\|viewer/);
    assert.deepEqual(cli(['complete', 'user', '']).stdout.trim().split('\n').sort(),
        ['create', 'disable', 'list', 'set-password']);
    assert.ok(cli(['complete', 'user', 'create', '--']).stdout.includes('--role'));
    assert.ok(fs.existsSync(BIN));
});
