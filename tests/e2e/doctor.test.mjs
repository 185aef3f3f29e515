// shortd doctor against real installs: a healthy store served and stopped
// exits 0; one broken thing at a time (a config value out of bounds, the
// database readable by others, the journal folder of a served store gone,
// PostgreSQL unreachable) exits 1 with the line that names it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
    BROWSER_UA, PG_MODE, api, cli, createLink, freePort, it, poll, sqliteOnly, startServer,
    tempDir, visit,
} from './harness.mjs';

/* The doctor on a server's store and listen address, plus 'more' flags. */
function doctor(server, more = []) {
    const where = server.store ? ['--store', server.store, '--journal', server.journal] : ['--db', server.db];
    return cli(['doctor', ...where, '--listen', `127.0.0.1:${server.port}`, ...more]);
}

/* The line of 'check' (its first word is ok, warn or FAIL). */
function lineOf(out, check) {
    return out.split('\n').find((l) => l.split(/\s+/)[1] === check) || '';
}

/* A served store with one link and one counted click, then stopped. */
async function servedAndStopped() {
    const s = await startServer();
    const created = await createLink(s, s.adminKey, { url: 'https://example.com/doctor' });
    const r = await visit(s, created.code, { headers: { 'User-Agent': BROWSER_UA } });
    assert.equal(r.status, 302);
    await poll(async () => {
        const st = await api(s, 'GET', `/api/links/${created.code}`, { key: s.adminKey });
        return st.json && st.json.clicks === 1;
    });
    await s.stop();
    return s;
}

it('a healthy store, served then stopped: every check ok, exit 0', async () => {
    const s = await servedAndStopped();
    const r = doctor(s);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    for (const check of ['config', 'store', 'permissions', 'journal', 'disk', 'clock', 'listen']) {
        assert.match(lineOf(r.stdout, check), /^ok /, `${check}:\n${r.stdout}`);
    }
    assert.match(r.stdout, /doctor: \d+ ok, 0 warnings, 0 failures/);
    // PostgreSQL's round trip is the fastest of a few: a busy moment on this
    // machine must not make a database next door look far away.
    if (PG_MODE) assert.match(lineOf(r.stdout, 'store'), /the fastest of 5 round trips took \d+\.\d ms$/);
    const j = JSON.parse(doctor(s, ['--json']).stdout);
    assert.equal(j.fail, 0);
    assert.ok(j.checks.some((c) => c.check === 'store' && c.status === 'ok'));
});

it('a running server: the listen address is its own, and the doctor says so', async () => {
    const s = await startServer();
    const r = doctor(s);
    assert.equal(r.code, 0, r.stdout);
    assert.match(lineOf(r.stdout, 'listen'), /^ok .*served by a running shortd/);
    // Something that is not shortd on the address is a failure.
    await s.stop();
    const net = await import('node:net');
    const squatter = net.createServer((c) => c.end('HTTP/1.1 404 Not Found\r\n\r\n'));
    await new Promise((res) => squatter.listen(s.port, '127.0.0.1', res));
    try {
        const busy = doctor(s);
        assert.equal(busy.code, 1, busy.stdout);
        assert.match(lineOf(busy.stdout, 'listen'), /^FAIL .*which is no shortd/);
    } finally {
        squatter.close();
    }
});

it('a config value out of bounds: FAIL on the config line, with the file and line', async () => {
    const s = await servedAndStopped();
    const conf = path.join(tempDir(), 'shortd.conf');
    fs.writeFileSync(conf, 'threads = 2\nmax-body-bytes = 12\n');
    const r = doctor(s, ['--config', conf]);
    assert.equal(r.code, 1, r.stdout);
    const line = lineOf(r.stdout, 'config');
    assert.match(line, /^FAIL /);
    assert.match(line, /max-body-bytes/);
    assert.match(line, /shortd\.conf:2/);
    assert.match(r.stdout, /fix: /);
});

it('a database readable by every user: FAIL on permissions, with the chmod', async (t) => {
    if (sqliteOnly(t, 'file modes of the SQLite database')) return;
    const s = await servedAndStopped();
    fs.chmodSync(s.db, 0o644);
    const r = doctor(s);
    assert.equal(r.code, 1, r.stdout);
    assert.match(lineOf(r.stdout, 'permissions'), /^FAIL .*readable by every user \(mode 0644/);
    assert.match(r.stdout, /fix: chmod 600/);
    fs.chmodSync(s.db, 0o600);
    assert.equal(doctor(s).code, 0);
});

it('the journal folder of a served store missing: FAIL on the journal line', async (t) => {
    if (sqliteOnly(t, 'the journal beside a SQLite file; a PostgreSQL store holds every node\'s')) return;
    const s = await servedAndStopped();
    fs.rmSync(`${s.db}.clicks`, { recursive: true });
    const r = doctor(s);
    assert.equal(r.code, 1, r.stdout);
    assert.match(lineOf(r.stdout, 'journal'), /^FAIL .*does not exist, yet the store has been served/);
});

it('a clock two hours behind the store: FAIL on the clock line', async () => {
    // libfaketime (Debian's faketime) moves this one run's wall clock back.
    const lib = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';
    assert.ok(fs.existsSync(lib), `no ${lib}: run scripts/setup.sh (apt-get install faketime)`);
    const s = await servedAndStopped();
    const where = s.store ? ['--store', s.store, '--journal', s.journal] : ['--db', s.db];
    const r = cli(['doctor', ...where, '--listen', `127.0.0.1:${s.port}`], {
        env: {
            LD_PRELOAD: lib,
            FAKETIME: '-2h',
            // libfaketime comes before the ASan runtime in the link order.
            ASAN_OPTIONS: `${process.env.ASAN_OPTIONS || ''}:verify_asan_link_order=0`,
        },
    });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(lineOf(r.stdout, 'clock'), /^FAIL .*(the clock is behind|behind PostgreSQL's)/);
    assert.match(r.stdout, /fix: .*(NTP|set the clock)/);
});

it('PostgreSQL unreachable: FAIL on the store line, saying it cannot connect', async () => {
    const port = await freePort(); // nothing listens there
    const journal = path.join(tempDir(), 'journal');
    const r = cli(['doctor', '--store', `postgres://shortd:s3cret@127.0.0.1:${port}/shortd`,
        '--journal', journal, '--listen', `127.0.0.1:${await freePort()}`]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(lineOf(r.stdout, 'store'), /^FAIL .*postgres .*cannot connect/);
    assert.doesNotMatch(r.stdout, /s3cret/); // never the password
});

it('PostgreSQL reachable: its latency and clock are reported', async (t) => {
    if (!PG_MODE) {
        t.skip('needs a PostgreSQL store (SHORTD_E2E_STORE=pg)');
        return;
    }
    const s = await servedAndStopped();
    const r = doctor(s);
    assert.equal(r.code, 0, r.stdout);
    assert.match(lineOf(r.stdout, 'store'), /^ok .*schema \d+ \(current\), connected in [\d.]+ ms/);
    assert.match(lineOf(r.stdout, 'clock'), /^ok .*PostgreSQL's/);
});
