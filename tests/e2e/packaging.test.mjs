// packaging.test.mjs - what the packaging relies on: `shortd --version` names
// the version and the commit; the man page (`shortd man`) holds every command
// and every setting and renders without a warning; the bash completion
// completes from the binary's tables; SIGHUP reloads the config file's live
// settings, names the others, and a bad file changes nothing.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after } from 'node:test';

import { api, BIN, cli, it, poll, ROOT, startServer, tempDir } from './harness.mjs';

const servers = [];
after(async () => {
    for (const s of servers) if (s.running) await s.stop();
});

function ok(args) {
    const r = cli(args);
    assert.equal(r.code, 0, `shortd ${args.join(' ')} exited ${r.code}\n${r.stderr}`);
    return r.stdout;
}

/* The commands `shortd --help` lists ("key create", "serve", ...). */
function helpCommands() {
    return ok(['--help']).split('\n').map((l) => /^ {2}shortd ([a-z-]+(?: [a-z-]+)?)/.exec(l))
        .filter(Boolean).map((m) => m[1].split(' ').filter((w) => !w.startsWith('-')).join(' '));
}

/* Every setting `shortd config example` writes (set or commented out). */
function exampleSettings() {
    return ok(['config', 'example']).split('\n').map((l) => /^(?:# )?([a-z][a-z0-9-]*) =/.exec(l))
        .filter(Boolean).map((m) => m[1]);
}

/* -------------------------------------------------------------- version */

it('shortd --version and shortd version name the VERSION file and a commit of this repository', () => {
    const want = fs.readFileSync(path.join(ROOT, 'VERSION'), 'utf8').trim();
    for (const args of [['--version'], ['version']]) {
        const out = ok(args).trim();
        const m = /^shortd (\S+) \((\S+)\)$/.exec(out);
        assert.ok(m, `shortd ${args[0]} printed "${out}"`);
        assert.equal(m[1], want);
        const commit = m[2].replace(/-dirty$/, '').replace(/^.*-g(?=[0-9a-f]+$)/, '');
        assert.match(commit, /^[0-9a-f]{7,40}$/, `not a commit: ${m[2]}`);
        const r = spawnSync('git', ['-C', ROOT, 'cat-file', '-t', commit], { encoding: 'utf8' });
        assert.equal(r.stdout.trim(), 'commit', `${commit} is no commit of ${ROOT}`);
    }
});

it('a build outside a git checkout says the commit is unknown', () => {
    const dir = tempDir();
    for (const f of ['Makefile', 'VERSION']) fs.copyFileSync(path.join(ROOT, f), path.join(dir, f));
    const r = spawnSync('make', ['--no-print-directory', '-C', dir, 'build/gen/version.h'],
        { encoding: 'utf8', env: { ...process.env, GIT_CEILING_DIRECTORIES: path.dirname(dir) } });
    assert.equal(r.status, 0, r.stderr);
    const h = fs.readFileSync(path.join(dir, 'build/gen/version.h'), 'utf8');
    const want = fs.readFileSync(path.join(ROOT, 'VERSION'), 'utf8').trim();
    assert.match(h, new RegExp(`SHORTD_VERSION "${want.replace(/\./g, '\\.')}"`));
    assert.match(h, /SHORTD_COMMIT "unknown"/);
});

/* -------------------------------------------------------------- man page */

function renderMan(file) {
    return spawnSync('man', ['--warnings', '-l', file], {
        encoding: 'utf8', env: { ...process.env, MANWIDTH: '1000', LC_ALL: 'C.UTF-8', MANPAGER: 'cat', PAGER: 'cat' },
    });
}

it('the man page holds every command and every setting, and man renders it without a warning', () => {
    const file = path.join(tempDir(), 'shortd.1');
    fs.writeFileSync(file, ok(['man']));
    const r = renderMan(file);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '', `man warned:\n${r.stderr}`);
    // Wide lines: nothing is hyphenated; U+2010 would be a hyphenation point.
    const text = r.stdout.replace(/\u2010/g, '-').replace(/[ \t]+/g, ' ');
    const commands = helpCommands();
    assert.ok(commands.length >= 15, `--help lists ${commands.length} commands`);
    for (const c of commands) assert.ok(text.includes(`shortd ${c}`), `the man page lacks "shortd ${c}"`);
    const settings = exampleSettings();
    assert.ok(settings.length >= 50, `config example has ${settings.length} settings`);
    for (const s of settings) {
        assert.ok(new RegExp(`^\\s*--${s} [A-Z/]+$`, 'm').test(text), `the man page lacks the setting --${s}`);
    }
    // The live settings say so, the others do not.
    const para = (s) => text.split(new RegExp(`^\\s*--${s} `, 'm'))[1].split(/\n\s*\n/)[0];
    assert.match(para('rate-auth'), /applies a change on SIGHUP/);
    assert.match(para('log-level'), /applies a change on SIGHUP/);
    assert.doesNotMatch(para('threads'), /SIGHUP/);
    assert.match(text, /^NAME\n\s*shortd - /m);
});

it('make builds build/shortd.1 with the release binary, the same as its shortd man prints', (t) => {
    const built = path.join(ROOT, 'build/shortd.1');
    const release = path.join(ROOT, 'build/shortd');
    if (!fs.existsSync(built) || !fs.existsSync(release)) return t.skip('no release build (make all)');
    const r = spawnSync(release, ['man'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(fs.readFileSync(built, 'utf8'), r.stdout);
});

/* ------------------------------------------------------------ completion */

/* What the bash completion offers for the words typed so far (the last one
 * being completed). */
function complete(...words) {
    const script = [
        `source ${JSON.stringify(path.join(ROOT, 'packaging/shortd.bash-completion'))}`,
        `COMP_WORDS=(${[BIN, ...words].map((w) => JSON.stringify(w)).join(' ')})`,
        `COMP_CWORD=${words.length}`,
        '_shortd',
        'printf "%s\\n" "${COMPREPLY[@]}"',
    ].join('\n');
    const r = spawnSync('bash', ['--norc', '-c', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter(Boolean);
}

it('the bash completion completes commands, subcommands and options from the binary', () => {
    const first = [...new Set(helpCommands().map((c) => c.split(' ')[0]))].sort();
    assert.deepEqual(complete('').filter((w) => !w.startsWith('-')).sort(), first);
    assert.deepEqual(complete('mi'), ['migrate', 'migrate-store']);
    assert.deepEqual(complete('key', '').sort(), ['create', 'list', 'revoke', 'yourls-token']);
    assert.deepEqual(complete('key', 'create', '--').sort(),
        ['--admin', '--db', '--domain', '--help', '--name', '--scopes', '--store']);
    const rates = complete('serve', '--rate-');
    assert.deepEqual(rates.sort(), exampleSettings().filter((s) => s.startsWith('rate-')).map((s) => `--${s}`).sort());
    // After an option that takes a value, nothing: bash completes a file name.
    assert.deepEqual(complete('serve', '--db', ''), []);
    assert.deepEqual(complete('link', 'create', '--url', 'https://e.com', '--p'), ['--permanent']);
    assert.deepEqual(complete('nosuch', ''), []);
});

/* -------------------------------------------------------------- SIGHUP */

/* The API answers 401 to a bad key; rate-auth limits those per address. */
async function unauthorised(srv, n) {
    const codes = [];
    for (let i = 0; i < n; i++) codes.push((await api(srv, 'GET', '/api/links', { key: 'sk_wrong' })).status);
    return codes;
}

it('SIGHUP applies the live settings of the config file, names the others, and survives a bad file', async () => {
    const dir = tempDir();
    const conf = path.join(dir, 'shortd.conf');
    fs.writeFileSync(conf, 'rate-auth = off\nlog-level = info\n');
    const srv = await startServer({ args: ['--config', conf] });
    servers.push(srv);
    assert.deepEqual(await unauthorised(srv, 4), [401, 401, 401, 401]);

    const hup = async (want) => {
        const before = srv.stderr().length;
        srv.proc.kill('SIGHUP');
        return poll(() => {
            const fresh = srv.stderr().slice(before);
            return want.test(fresh) ? fresh : null;
        }, { timeoutMs: 5000 });
    };

    fs.writeFileSync(conf, 'rate-auth = 2/3600\nlog-level = info\nthreads = 3\nmax-body-bytes = 2048\n');
    let log = await hup(/reloaded the configuration/);
    assert.ok(log, `no reload logged:\n${srv.stderr()}`);
    assert.match(log, /reloaded the configuration from '.*shortd\.conf': 1 live setting changed/);
    assert.match(log, /setting 'threads' changed; it takes effect at the next start/);
    assert.match(log, /setting 'max-body-bytes' changed; it takes effect at the next start/);
    assert.deepEqual(await unauthorised(srv, 3), [401, 401, 429]);

    // A bad line: an error naming the file and line, and nothing changes.
    fs.writeFileSync(conf, 'rate-auth = off\nlog-level = loud\n');
    log = await hup(/cannot reload the configuration/);
    assert.ok(log, `no reload error logged:\n${srv.stderr()}`);
    assert.match(log, /shortd\.conf:2: 'log-level' must be debug, info, warn, error or off, not 'loud'; nothing changed/);
    assert.deepEqual(await unauthorised(srv, 1), [429]);

    // The log level is live too: at warn, the reload's own info line is gone.
    fs.writeFileSync(conf, 'rate-auth = off\nlog-level = warn\n');
    srv.proc.kill('SIGHUP');
    assert.ok(await poll(async () => (await unauthorised(srv, 1))[0] === 401, { timeoutMs: 5000 }),
        'rate-auth = off was not applied');
    const quiet = srv.stderr().length;
    fs.writeFileSync(conf, 'rate-auth = 1/3600\nlog-level = warn\n');
    srv.proc.kill('SIGHUP');
    assert.ok(await poll(async () => (await unauthorised(srv, 1))[0] === 429, { timeoutMs: 5000 }));
    assert.doesNotMatch(srv.stderr().slice(quiet), /reloaded the configuration/);

    // SIGTERM still stops it cleanly (stop() asserts exit 0, no sanitizer report).
    await srv.stop();
});
