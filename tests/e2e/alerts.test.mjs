// alerts.test.mjs - the operations checks and alerts (src/ops/) on a real
// node, with every time shortened: a local SMTP server (npm smtp-server) and
// a webhook receiver read each message as the operator on call would. A
// missing backup, a journal made to fall behind (fold-paused), a disk nearly
// full (a small tmpfs): each sends exactly the alert the rules say, once,
// then a reminder after the (shortened) hour, then one all-clear; a blip
// shorter than the confirmation sends nothing; a restart in the middle
// repeats nothing. Also: the ops scope, `shortd ops check`, promtool on
// docs/alerts.yml.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before } from 'node:test';

import { SMTPServer } from 'smtp-server';

import { PG_MODE, ROOT, api, cli, createLink, freePort, it, poll, sleep, startServer, tempDir, visit } from './harness.mjs';
import { migratedSchema, psql, startNode } from './cluster-kit.mjs';

const PG = process.env.SHORTD_TEST_PG || '';
const REDIS = process.env.SHORTD_TEST_REDIS || '';
const PGDATA = process.env.SHORTD_TEST_PGDATA || '';

const PASSWORD = 'pw-Secret-7f3a9c';
const mails = [];
let auths = 0; // AUTH commands the SMTP server saw
const hooks = [];
let smtp;
let smtpPort;
let hook;
let hookPort;

before(async () => {
    smtpPort = await freePort();
    smtp = new SMTPServer({
        disabledCommands: ['STARTTLS'],
        allowInsecureAuth: true,
        logger: false,
        onAuth(auth, session, cb) {
            auths++;
            if (auth.username === 'alerts' && auth.password === PASSWORD) return cb(null, { user: 'alerts' });
            return cb(new Error('bad credentials'));
        },
        onData(stream, session, cb) {
            let raw = '';
            stream.setEncoding('utf8');
            stream.on('data', (d) => { raw += d; });
            stream.on('end', () => {
                const subject = /^Subject: (.*)$/m.exec(raw)?.[1] ?? '';
                mails.push({ raw, subject, to: session.envelope.rcptTo.map((r) => r.address), at: Date.now() });
                cb();
            });
        },
    });
    await new Promise((resolve) => smtp.listen(smtpPort, '127.0.0.1', resolve));
    hookPort = await freePort();
    hook = http.createServer((req, res) => {
        let body = '';
        req.setEncoding('utf8');
        req.on('data', (d) => { body += d; });
        req.on('end', () => {
            hooks.push({ path: req.url, json: JSON.parse(body), at: Date.now() });
            res.writeHead(200).end('ok');
        });
    });
    await new Promise((resolve) => hook.listen(hookPort, '127.0.0.1', resolve));
});

after(async () => {
    await new Promise((resolve) => smtp.close(resolve));
    await new Promise((resolve) => hook.close(resolve));
});

/* The settings of a node that alerts through both channels, every time
 * shortened: a check a second, confirmation 4 s, reminders every 12 s,
 * clicks waiting 2 s warn. */
function alertArgs(extra = [], node = 'node-a') {
    return ['--node-id', node, '--check-every', '1', '--alert-confirm', '4', '--alert-repeat', '12',
        '--lag-warn', '2', '--alert-timezone', 'Asia/Kolkata',
        '--smtp-host', '127.0.0.1', '--smtp-port', String(smtpPort), '--smtp-starttls', 'false',
        '--smtp-from', 'shortd@example.org', '--smtp-to', 'oncall@example.org', '--smtp-user', 'alerts',
        '--webhook-url', `http://127.0.0.1:${hookPort}/hook/${extra.includes('slack') ? 'slack' : 'am'}`,
        ...extra];
}

function mailsSince(i) { return mails.slice(i); }

/* What every message must be, and must never hold. */
function assertPersonal(m, srv) {
    assert.ok(!m.raw.includes(PASSWORD), 'the SMTP password is in a message');
    if (srv.adminKey) assert.ok(!m.raw.includes(srv.adminKey), 'the admin key is in a message');
    assert.ok(!/127\.0\.0\.1|::1/.test(m.raw.replace(/^Received:.*$/gm, '')), 'an address is in a message');
    assert.ok(!/errno|SQLITE_|curl|PGRES/i.test(m.raw), 'raw library error text in a message');
}

function backup(srv, to) {
    const r = cli(['backup', '--db', srv.db, '--to', to]);
    assert.equal(r.code, 0, r.stderr);
}

it('a missing backup: one alert, a reminder, a restart repeats nothing, one all-clear', async (t) => {
    if (PG_MODE) return t.skip('SQLite: the backup is made with shortd backup');
    const m0 = mails.length;
    const h0 = hooks.length;
    const srv = await startServer({ args: alertArgs(), env: { SHORTD_SMTP_PASSWORD: PASSWORD } });
    // Confirmed after 4 s: exactly one alert, naming the backup.
    const first = await poll(() => mailsSince(m0).length >= 1 && mailsSince(m0)[0], { timeoutMs: 15_000 });
    assert.ok(first, 'no alert within 15 s');
    const sent = Date.now();
    assert.match(first.subject, /\[shortd node-a\] 1 problem: backup fails/);
    assert.deepEqual(first.to, ['oncall@example.org']);
    assert.match(first.raw, /Measured: no backup has been recorded\./);
    assert.match(first.raw, /What it means: /);
    assert.match(first.raw, /Is anything lost: /);
    assert.match(first.raw, /shortd backup --db/);
    assert.match(first.raw, /Fixed when: /);
    assert.match(first.raw, /IST \(\d\d:\d\d UTC\)/); // the zone and UTC
    assertPersonal(first, srv);
    const am = await poll(() => hooks.slice(h0)[0], { timeoutMs: 5000 });
    assert.equal(am.json.version, '4');
    assert.equal(am.json.status, 'firing');
    assert.equal(am.json.alerts.length, 1);
    assert.equal(am.json.alerts[0].labels.code, 'backup');
    assert.equal(am.json.alerts[0].labels.severity, 'critical');
    assert.ok(!JSON.stringify(am.json).includes(PASSWORD));

    // A restart in the middle: the state is in the store, nothing repeats.
    await srv.stop();
    await srv.restart();
    await sleep(5000);
    assert.equal(mailsSince(m0).length, 1, `a restart sent again: ${mailsSince(m0).map((m) => m.subject)}`);

    // The same problem, 12 s after the alert: one reminder saying how long.
    const rem = await poll(() => mailsSince(m0).length >= 2 && mailsSince(m0)[1], { timeoutMs: 20_000 });
    assert.ok(rem, 'no reminder');
    assert.ok(rem.at - sent >= 11_000, `the reminder came after ${rem.at - sent} ms`);
    assert.match(rem.subject, /still 1 problem for .*: backup fails/);
    assert.match(rem.raw, /A reminder: these problems began .* and have lasted/);
    assertPersonal(rem, srv);

    // Fixed: a backup made. One all-clear, naming it.
    backup(srv, path.join(srv.dir, 'b1.db'));
    const clear = await poll(() => mailsSince(m0).length >= 3 && mailsSince(m0)[2], { timeoutMs: 10_000 });
    assert.ok(clear, 'no all-clear');
    assert.match(clear.subject, /all clear: backup fixed/);
    assert.match(clear.raw, /All checks on node node-a pass again/);
    const resolved = await poll(() => hooks.slice(h0).find((h) => h.json.status === 'resolved'), { timeoutMs: 5000 });
    assert.equal(resolved.json.alerts[0].labels.code, 'backup');
    await sleep(3000);
    assert.equal(mailsSince(m0).length, 3, `more than one all-clear: ${mailsSince(m0).map((m) => m.subject)}`);
    assert.equal(hooks.slice(h0).length, 3); // alert, reminder, all-clear
    await srv.stop();
}, { timeout: 120_000 });

/* A config file whose fold-paused a SIGHUP applies. */
function foldConfig(file, paused) {
    fs.writeFileSync(file, `fold-paused = ${paused}\n`);
}

it('a journal fallen behind, and a blip shorter than the confirmation', async (t) => {
    if (PG_MODE) return t.skip('SQLite: one node');
    const dir = tempDir();
    const conf = path.join(dir, 'shortd.conf');
    foldConfig(conf, false);
    const srv = await startServer({ args: [...alertArgs(), '--config', conf], env: { SHORTD_SMTP_PASSWORD: PASSWORD } });
    backup(srv, path.join(srv.dir, 'b0.db')); // the backup check passes
    const { code } = await createLink(srv, srv.adminKey, { url: 'https://example.com/behind' });
    await sleep(2500); // any blip of the start is over
    const m0 = mails.length;

    // A blip: counting stops for about 3 s, clicks wait past lag-warn (2 s)
    // for a moment, and it resumes before the 4 s confirmation.
    foldConfig(conf, true);
    srv.proc.kill('SIGHUP');
    await sleep(300);
    assert.equal((await visit(srv, code)).status, 302);
    await sleep(3200);
    foldConfig(conf, false);
    srv.proc.kill('SIGHUP');
    await sleep(7000);
    assert.equal(mailsSince(m0).length, 0, `a blip sent: ${mailsSince(m0).map((m) => m.subject)}`);

    // Fallen behind for longer: one alert naming the journal's age.
    foldConfig(conf, true);
    srv.proc.kill('SIGHUP');
    await sleep(300);
    assert.equal((await visit(srv, code)).status, 302);
    const alert = await poll(() => mailsSince(m0)[0], { timeoutMs: 15_000 });
    assert.ok(alert, 'no alert for a journal behind');
    assert.match(alert.subject, /journal-age warns/);
    assert.match(alert.raw, /Measured: the oldest click not yet counted was journaled \d+ s ago \(1 wait\)/);
    assert.match(alert.raw, /fold-paused/);
    assertPersonal(alert, srv);
    const { key: ops } = (await api(srv, 'POST', '/api/keys', { key: srv.adminKey, body: { name: 'mon', scopes: ['ops'] } })).json;
    const health = await api(srv, 'GET', '/api/ops/health', { key: ops });
    assert.equal(health.status, 200);
    assert.equal(health.json.checks.find((c) => c.code === 'journal-age').state, 'warn');
    // `shortd ops check` says the same, and exits 1 on a warning.
    const r = cli(['ops', 'check', '--url', srv.url], { env: { SHORTD_OPS_KEY: ops } });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^warn +journal-age +the oldest click/m);
    // Resumed: the click is counted, one all-clear.
    foldConfig(conf, false);
    srv.proc.kill('SIGHUP');
    const clear = await poll(() => mailsSince(m0).find((m) => /all clear/.test(m.subject)), { timeoutMs: 10_000 });
    assert.ok(clear, 'no all-clear');
    assert.match(clear.subject, /all clear: .*journal-age.* fixed/);
    await sleep(2000);
    assert.equal(mailsSince(m0).length, 2, mailsSince(m0).map((m) => m.subject).join('\n'));
    const ok = cli(['ops', 'check', '--url', srv.url], { env: { SHORTD_OPS_KEY: ops } });
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    await srv.stop();
}, { timeout: 120_000 });

it('a disk nearly full (a small tmpfs): an alert, then an all-clear once space is freed', async (t) => {
    if (PG_MODE) return t.skip('SQLite: the database is a file');
    const mnt = tempDir();
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=160m', 'tmpfs', mnt], { encoding: 'utf8' });
    if (m.status !== 0) return t.skip(`cannot mount a tmpfs here: ${m.stderr.trim()}`);
    let srv;
    const m0 = mails.length;
    try {
        // The password from a file this time (smtp-password-file), not the environment.
        const pwFile = path.join(tempDir(), 'smtp-password');
        fs.writeFileSync(pwFile, `${PASSWORD}\n`, { mode: 0o600 });
        srv = await startServer({ args: alertArgs(['--journal', path.join(mnt, 'journal'),
            '--smtp-password-file', pwFile]) });
        backup(srv, path.join(srv.dir, 'b0.db'));
        // 160 MiB free: under the 1 GiB warning; confirmed, sent once.
        const alert = await poll(() => mailsSince(m0)[0], { timeoutMs: 15_000 });
        assert.match(alert.subject, /\[shortd node-a\] 1 problem: disk-journal warns/);
        assert.ok(alert, 'no alert for the disk');
        assert.match(alert.raw, /Measured: \d+ MiB free of 160 MiB on the file system of the click journal/);
        assertPersonal(alert, srv);
        const m1 = mails.length;
        // Under 100 MiB: a failure now, a changed set, sent at once.
        fs.writeFileSync(path.join(mnt, 'filler'), Buffer.alloc(80 * 1024 * 1024));
        const worse = await poll(() => mailsSince(m1)[0], { timeoutMs: 5000 });
        assert.ok(worse, 'no message when the warning became a failure');
        assert.match(worse.subject, /problems changed, 1 now: disk-journal fails/);
        // A tmpfs this small never has a gigabyte free: the all-clear comes
        // when the journal moves back to a roomy disk, i.e. a restart without it.
        await srv.stop();
        srv.args = alertArgs(['--smtp-password-file', pwFile]);
        await srv.restart();
        const clear = await poll(() => mailsSince(m0).find((x) => /all clear/.test(x.subject)), { timeoutMs: 15_000 });
        assert.ok(clear, 'no all-clear');
        assert.match(clear.subject, /all clear: disk-journal fixed/);
        assert.equal(mailsSince(m1).length, 2, mailsSince(m1).map((x) => x.subject).join('\n'));
        await srv.stop();
    } finally {
        if (srv && srv.running) await srv.kill9();
        spawnSync('umount', [mnt]);
    }
}, { timeout: 120_000 });

it('scheduled backups: backup-dir and backup-every, recorded for the backup check', async (t) => {
    if (PG_MODE) return t.skip('SQLite: a PostgreSQL store is backed up with pg_dump');
    const dir = tempDir();
    const srv = await startServer({ args: ['--backup-dir', dir, '--backup-every', '2', '--check-every', '1'] });
    const key = srv.adminKey;
    const file = await poll(() => fs.readdirSync(dir).find((f) => /^shortd-\d{8}T\d{6}Z\.db$/.test(f)), { timeoutMs: 10_000 });
    assert.ok(file, `no backup in ${dir}: ${fs.readdirSync(dir)}`);
    const backup = await poll(async () => {
        const c = (await api(srv, 'GET', '/api/ops/health', { key })).json.checks.find((x) => x.code === 'backup');
        return c.state === 'ok' ? c : null;
    }, { timeoutMs: 5000 });
    assert.ok(backup, 'the backup check did not see the scheduled backup');
    assert.match(backup.measured, /the last backup \([\d.]+ MiB\) ended \d+ s ago/);
    assert.equal(backup.thresholds.warn, 2 * 2 + 60); // two periods and a minute
    // The copy is a database that opens, with the admin key in it.
    const r = cli(['key', 'list', '--db', path.join(dir, file)]);
    assert.equal(r.code, 0, r.stderr);
    await srv.stop();
});

it('STARTTLS required (the default): nothing, and no password, goes to a server without it', async (t) => {
    if (PG_MODE) return t.skip('SQLite: one node is enough');
    const m0 = mails.length;
    const a0 = auths;
    const args = alertArgs().filter((x, i, all) => x !== '--smtp-starttls' && all[i - 1] !== '--smtp-starttls');
    const srv = await startServer({ args, env: { SHORTD_SMTP_PASSWORD: PASSWORD } });
    await poll(() => /alert e-mail not sent: the mail server refused or failed/.test(srv.stderr()), { timeoutMs: 15_000 });
    assert.equal(mails.length, m0, 'a mail was accepted without STARTTLS');
    assert.equal(auths, a0, 'the password was offered without STARTTLS');
    assert.ok(!srv.stderr().includes(PASSWORD));
    await srv.stop();
});

it('an ops key reads health and metrics and is refused everything else', async () => {
    const srv = await startServer({ args: ['--metrics-allow', '10.9.9.9/32'] });
    const { key: ops } = (await api(srv, 'POST', '/api/keys', { key: srv.adminKey, body: { name: 'mon', scopes: ['ops'] } })).json;
    assert.equal((await api(srv, 'GET', '/api/ops/health', { key: ops })).status, 200);
    assert.equal((await api(srv, 'GET', '/metrics', { key: ops })).status, 200);
    // metrics-allow set: loopback is not enough any more.
    assert.equal((await api(srv, 'GET', '/metrics')).status, 401);
    for (const [method, p] of [['GET', '/api/links'], ['POST', '/api/links'], ['GET', '/api/keys'],
        ['GET', '/api/stats'], ['GET', '/api/session'], ['GET', '/api/admin/blocklist']]) {
        const r = await api(srv, method, p, { key: ops, body: method === 'POST' ? { url: 'https://example.com/' } : undefined });
        assert.equal(r.status, 403, `${method} ${p}: ${r.status}`);
    }
    await srv.stop();
});

it('docs/alerts.yml passes promtool check rules', (t) => {
    const which = spawnSync('which', ['promtool'], { encoding: 'utf8' });
    if (which.status !== 0) return t.skip('promtool is not installed (scripts/setup.sh installs prometheus)');
    const r = spawnSync('promtool', ['check', 'rules', path.join(ROOT, 'docs/alerts.yml')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /SUCCESS: \d+ rules found/);
});

/* SIGSTOP to the postmaster and each of its children (storage-freeze's
 * way of making PostgreSQL stop answering); thaw() sends them SIGCONT. */
function freezePg() {
    const postmaster = Number(fs.readFileSync(`${PGDATA}/postmaster.pid`, 'utf8').split('\n')[0]);
    const ppid = (pid) => {
        try {
            const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
            return Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
        } catch { return null; }
    };
    const pids = [postmaster, ...fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number)
        .filter((p) => ppid(p) === postmaster)];
    for (const p of pids) process.kill(p, 'SIGSTOP');
    const thaw = () => { for (const p of pids) { try { process.kill(p, 'SIGCONT'); } catch { /* gone */ } } };
    process.on('exit', thaw);
    return thaw;
}

it('two nodes on PostgreSQL: one sends; the store stopped under them: one alert, one all-clear', async (t) => {
    if (!PG_MODE || !PG || !REDIS || !PGDATA) {
        return t.skip('PostgreSQL mode with tests/pg.sh and tests/redis.sh: it freezes PostgreSQL');
    }
    const url = migratedSchema(PG, `alerts_${process.pid}`);
    const m0 = mails.length;
    // startNode passes this process's environment on: the password only.
    process.env.SHORTD_SMTP_PASSWORD = PASSWORD;
    const a = await startNode({ url, redis: REDIS, name: 'node-a', args: alertArgs([], 'node-a') });
    const b = await startNode({ url, redis: REDIS, name: 'node-b', args: alertArgs([], 'node-b') });
    delete process.env.SHORTD_SMTP_PASSWORD;
    let thaw = null;
    try {
        // Each node hears both on the bus, with their versions.
        const { key: ops } = (await api(a, 'POST', '/api/keys', { key: cli(['key', 'create', '--store', url,
            '--name', 'boot', '--admin']).stdout.trim().split(/\s+/).pop(), body: { name: 'mon', scopes: ['ops'] } })).json;
        const nodes = await poll(async () => {
            const c = (await api(b, 'GET', '/api/ops/health', { key: ops })).json.checks.find((x) => x.code === 'nodes');
            return c && c.value === 2 ? c : null;
        }, { timeoutMs: 10_000 });
        assert.ok(nodes, 'node-b does not list two nodes');
        assert.equal(nodes.state, 'ok');
        assert.match(nodes.measured, /2 nodes heard on the bus: .*node-a \(\d+\.\d+\.\d+\)/);
        assert.match(nodes.measured, /node-b \(/);
        // No backup recorded: one alert for the cluster, not one per node.
        const first = await poll(() => mailsSince(m0)[0], { timeoutMs: 15_000 });
        assert.ok(first, 'no alert');
        assert.match(first.subject, /1 problem: backup fails/);
        await sleep(3000);
        assert.equal(mailsSince(m0).length, 1, mailsSince(m0).map((m) => m.subject).join('\n'));
        // A backup made with pg_dump, recorded: one all-clear.
        const dump = path.join(tempDir(), 'dump.sql');
        fs.writeFileSync(dump, '-- pg_dump output\n');
        const r = cli(['backup', '--store', url, '--to', dump, '--record-only']);
        assert.equal(r.code, 0, r.stderr);
        const clear = await poll(() => mailsSince(m0)[1], { timeoutMs: 10_000 });
        assert.match(clear.subject, /all clear: backup fixed/);
        const m1 = mails.length;
        // PostgreSQL stops answering: the sender says so once confirmed,
        // with what could not be checked; nothing is lost.
        thaw = freezePg();
        const down = await poll(() => mailsSince(m1)[0], { timeoutMs: 40_000 });
        assert.ok(down, 'no alert while the store was stopped');
        assert.match(down.subject, /store fails/);
        assert.match(down.raw, /Measured: the store did not answer a trivial query/);
        assert.match(down.raw, /Clicks are not lost/);
        assert.match(down.raw, /Not checked now[^]*- backup: /);
        assertPersonal(down, a);
        thaw();
        thaw = null;
        const back = await poll(() => mailsSince(m1).find((m) => /all clear/.test(m.subject)), { timeoutMs: 40_000 });
        assert.ok(back, 'no all-clear once the store answered');
        assert.match(back.subject, /all clear: store fixed/);
        await sleep(3000);
        assert.equal(mailsSince(m1).length, 2, mailsSince(m1).map((m) => m.subject).join('\n'));
        // The lease may change hands when the store comes back (the last
        // sender's lease ran out meanwhile): the new sender then learns from
        // the store what the last one sent, and the all-clear comes once.
    } finally {
        if (thaw) thaw();
        await a.stop();
        await b.stop();
        psql(PG, `DROP SCHEMA IF EXISTS alerts_${process.pid} CASCADE`);
    }
}, { timeout: 180_000 });
