// harness.mjs - runs the real shortd binary for the end-to-end tests.
//
// Every test file starts its own server(s) in `before` and stops them in
// `after`. A server gets a fresh temporary directory, a free port and its own
// SQLite file; its stdout and stderr are kept so that a failing test can show
// them.
//
// With SHORTD_E2E_STORE=pg (and SHORTD_TEST_PG, which tests/pg.sh sets) every
// server startServer() makes gets a fresh PostgreSQL schema of its own
// instead (created, then prepared with `shortd migrate --store URL`), and is
// started with `--store URL --journal DIR/journal`; its `db` is that URL,
// which every data subcommand takes in --db as well. Tests that are about the
// SQLite file itself skip there through sqliteOnly(t, why).
//
// stop() insists on a clean exit (code 0): under AddressSanitizer a leak or
// any sanitizer report makes the exit code non-zero, which is a real bug.
//
// Only Node's built-in modules are used.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.resolve(ROOT, process.env.SHORTD_BIN || 'build/asan/shortd');

/* A user agent that no bot classifier would take for a bot: clicks made by
 * the tests must count as human clicks. */
export const BROWSER_UA =
    'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

/* ------------------------------------------------------------ store mode */

const STORE_MODE = process.env.SHORTD_E2E_STORE || 'sqlite';
if (STORE_MODE !== 'sqlite' && STORE_MODE !== 'pg') {
    throw new Error(`SHORTD_E2E_STORE must be sqlite or pg, not ${JSON.stringify(STORE_MODE)}`);
}
const PG_BASE = process.env.SHORTD_TEST_PG || '';
if (STORE_MODE === 'pg' && !PG_BASE) {
    throw new Error('SHORTD_E2E_STORE=pg needs SHORTD_TEST_PG (a postgres:// URL): run the tests under tests/pg.sh');
}

/* True when startServer() puts servers on PostgreSQL (SHORTD_E2E_STORE=pg). */
export const PG_MODE = STORE_MODE === 'pg';

/* The skip reason of a test about SQLite itself (its file, its WAL, `shortd
 * backup`, sqlite3) in PostgreSQL mode; false in SQLite mode. For a
 * `{ skip }` option: it('...', fn, { skip: sqliteOnlyReason('why') }). */
export function sqliteOnlyReason(why) {
    return PG_MODE ? `SQLite only (${why}); this run uses PostgreSQL (SHORTD_E2E_STORE=pg)` : false;
}

/* Inside a test: in PostgreSQL mode marks it skipped and returns true (the
 * test then returns: `if (sqliteOnly(t, 'reads the .db file')) return;`); in
 * SQLite mode returns false. Placed part way down a test, what comes before it
 * still runs on PostgreSQL. */
export function sqliteOnly(t, why) {
    const reason = sqliteOnlyReason(why);
    if (reason) t.skip(reason);
    return !!reason;
}

const pgSchemas = [];          // the schemas this file made, dropped at a clean exit
let pgSchemaSeq = 0;

function withSearchPath(base, schema) {
    return `${base}${base.includes('?') ? '&' : '?'}options=-csearch_path%3D${schema}`;
}

/* Runs a program without blocking the event loop: {code, stdout, stderr}. */
function runAsync(cmd, args, { env, timeoutMs = 60_000 } = {}) {
    return new Promise((resolve, reject) => {
        const p = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        p.stdout.setEncoding('utf8');
        p.stderr.setEncoding('utf8');
        p.stdout.on('data', (d) => { stdout += d; });
        p.stderr.on('data', (d) => { stderr += d; });
        const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
        p.on('error', (e) => { clearTimeout(timer); reject(new Error(`cannot run ${cmd}: ${e.message}`)); });
        p.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }); });
    });
}

const PSQL = ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d'];
const PSQL_ENV = { PGOPTIONS: '-c client_min_messages=warning' };

/* A fresh, migrated schema; resolves with the store URL that reaches it. */
async function freshPgStore() {
    const schema = `e2e_${process.pid}_${++pgSchemaSeq}`;
    pgSchemas.push(schema);
    const sql = `DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`;
    const c = await runAsync('psql', [...PSQL, PG_BASE, '-c', sql], { env: PSQL_ENV, timeoutMs: 30_000 });
    if (c.code !== 0) {
        throw new Error(`psql could not create schema ${schema} (exit ${c.code}, ${c.signal}): ${c.stderr}`);
    }
    const url = withSearchPath(PG_BASE, schema);
    const m = await runAsync(BIN, ['migrate', '--store', url]);
    if (m.code !== 0) {
        throw new Error(`shortd migrate --store ${url} failed (exit ${m.code}, ${m.signal})\n` +
            `stdout: ${m.stdout}\nstderr: ${m.stderr}`);
    }
    return url;
}

/* At exit (synchronous): drops the schemas this file made. */
function dropPgSchemas() {
    const sql = pgSchemas.map((s) => `DROP SCHEMA IF EXISTS ${s} CASCADE;`).join(' ');
    const r = spawnSync('psql', [...PSQL, PG_BASE, '-c', sql],
        { encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...PSQL_ENV } });
    if (r.error || r.status !== 0) {
        console.error(`harness: could not drop the test schemas: ${r.error ? r.error.message : r.stderr}`);
    }
}

const SANITIZER_REPORT = /ERROR: (Address|Leak|Thread)Sanitizer|runtime error:|SUMMARY: UndefinedBehaviorSanitizer/;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* Polls fn() until it returns a truthy value or timeoutMs passes; returns the
 * last value (falsy on timeout). Deadlines here are kept on the monotonic
 * clock (performance.now()): the wall clock can step forward seconds at
 * once, as it once did here, ending 10-second waits after less than one. */
export async function poll(fn, { timeoutMs = 10_000, intervalMs = 50 } = {}) {
    const deadline = performance.now() + timeoutMs;
    let v;
    for (;;) {
        v = await fn();
        if (v || performance.now() >= deadline) return v;
        await sleep(intervalMs);
    }
}

/* Waits until Date.now() >= t (no-op when already past). */
export async function until(t) {
    const d = t - Date.now();
    if (d > 0) await sleep(d);
}

export function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.unref();
        s.on('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}

function tail(s, lines = 40) {
    const a = String(s).split('\n');
    return a.slice(Math.max(0, a.length - lines)).join('\n');
}

/* ---------------------------------------------------------------- servers */

const servers = new Set();     // every server started by this test file
const tempDirs = new Set();

process.on('exit', (code) => {
    for (const s of servers) {
        if (s.proc && s.proc.exitCode === null && s.proc.signalCode === null) {
            try { s.proc.kill('SIGKILL'); } catch { /* already gone */ }
        }
    }
    if (!code && !process.exitCode && !process.env.SHORTD_KEEP_TMP) {
        for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
        if (pgSchemas.length) dropPgSchemas();
    }
});

export class Server {
    constructor({ dir, db, store, journal, port, args, env, baseUrl }) {
        this.dir = dir;
        this.db = db;            // the SQLite file, or in PostgreSQL mode the store URL
        this.store = store;      // PostgreSQL mode: the store URL (served with --store)
        this.journal = journal;  // PostgreSQL mode: the journal directory
        this.port = port;
        this.url = `http://127.0.0.1:${port}`;
        this.args = args;
        this.env = env;
        this.baseUrl = baseUrl;
        this.adminKey = null;    // made with `shortd key create --admin` before the first start
        this.setupUrl = null;    // a first start of an empty store: its setup URL (firstStart)
        this.setupToken = null;  // ... and the token in it
        this.proc = null;
        this.runs = 0;
        this._stdout = '';       // everything, all runs
        this._stderr = '';
        this._runStdout = '';    // the current run only
        this._runStderr = '';
        this.setupFile = null;   // where the first start wrote the setup URL
        this._exit = null;       // promise of {code, signal} for the current run
    }

    stdout() { return this._stdout; }
    stderr() { return this._stderr; }

    get running() {
        return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
    }

    describe() {
        return `shortd ${this.argv().join(' ')}\n(dir ${this.dir})`;
    }

    argv() {
        const a = ['serve', '--listen', `127.0.0.1:${this.port}`];
        if (this.store) a.push('--store', this.store, '--journal', this.journal);
        else a.push('--db', this.db);
        if (this.baseUrl) a.push('--base-url', this.baseUrl);
        return a.concat(this.args);
    }

    logs(lines = 40) {
        return `--- ${this.describe()}\n--- stdout (tail) ---\n${tail(this._stdout, lines)}\n` +
            `--- stderr (tail) ---\n${tail(this._stderr, lines)}`;
    }

    /* Before the first start: the schema, and an admin key made the way a
     * script makes one (`shortd key create --admin`), so the store is not
     * empty and the server makes no setup token. */
    makeAdminKey(storeUrl = this.store) {
        const where = storeUrl ? ['--store', storeUrl] : ['--db', this.db];
        const m = cli(['migrate', ...where]);
        if (m.code !== 0) throw new Error(`shortd migrate failed (exit ${m.code}): ${m.stderr}`);
        const k = cli(['key', 'create', ...where, '--name', 'admin', '--admin']);
        if (k.code !== 0) throw new Error(`shortd key create --admin failed (exit ${k.code}): ${k.stderr}`);
        this.adminKey = k.stdout.trim().split(/\s+/).pop();
    }

    async _spawn({ expectSetup }) {
        if (!fs.existsSync(BIN)) {
            throw new Error(`shortd binary not found at ${BIN}: run \`make asan\` or set SHORTD_BIN`);
        }
        this.runs++;
        this._runStdout = '';
        this._runStderr = '';
        const proc = spawn(BIN, this.argv(), {
            cwd: this.dir,
            env: { ...process.env, ...this.env },
            stdio: ['ignore', 'pipe', 'pipe'],
        });
        this.proc = proc;
        proc.stdout.setEncoding('utf8');
        proc.stderr.setEncoding('utf8');
        proc.stdout.on('data', (d) => { this._stdout += d; this._runStdout += d; });
        proc.stderr.on('data', (d) => { this._stderr += d; this._runStderr += d; });
        let spawnError = null;
        this._exit = new Promise((resolve) => {
            proc.on('error', (e) => { spawnError = e; resolve({ code: null, signal: null, error: e }); });
            // 'close' rather than 'exit': stdout/stderr are fully read by then.
            proc.on('close', (code, signal) => resolve({ code, signal }));
        });

        // Ready when GET /healthz answers 200 (a fresh connection each time,
        // closed afterwards, so no idle connection counts against a cap).
        const deadline = performance.now() + 20_000;
        let exited = null;
        this._exit.then((e) => { exited = e; });
        for (;;) {
            if (exited || spawnError) {
                throw new Error(`shortd exited before it was ready (code ${exited?.code}, signal ` +
                    `${exited?.signal}${spawnError ? ', ' + spawnError.message : ''})\n${this.logs()}`);
            }
            const r = await rawExchange(this.port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${this.port}\r\n` +
                'Connection: close\r\n\r\n', { timeoutMs: 1000, stopAfter: 1 });
            if (statusOf(r.text) === 200) break;
            if (performance.now() > deadline) {
                throw new Error(`shortd did not answer GET /healthz with 200 within 20 s\n${this.logs()}`);
            }
            await sleep(50);
        }

        if (expectSetup) {
            // Not on a terminal, the first start of an empty store writes its
            // setup URL to a file of its own and logs the file's path (never
            // the token); the line may arrive just after the listener is up.
            const file = await poll(() => setupFileOf(this._runStderr), { timeoutMs: 5000 });
            if (!file) {
                this.proc.kill('SIGKILL');
                throw new Error('first start of an empty store logged no "setup URL ... is in \'FILE\'" ' +
                    `line within 5 s of being ready\n${this.logs()}`);
            }
            this.setupFile = path.resolve(this.dir, file);
            this.setupUrl = fs.readFileSync(this.setupFile, 'utf8').trim();
            this.setupToken = new URL(this.setupUrl).searchParams.get('token');
        }
    }

    /* Sends 'signal' (SIGTERM by default), waits for the exit and asserts a
     * clean one: exit code 0 and no sanitizer report. Returns the code. */
    async stop(signal = 'SIGTERM') {
        if (!this.proc) throw new Error('server was never started');
        if (this.running) this.proc.kill(signal);
        let timer;
        const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve(null), 30_000); });
        let r = await Promise.race([this._exit, timeout]);
        clearTimeout(timer);
        if (!r) {
            this.proc.kill('SIGKILL');
            r = await this._exit;
            throw new Error(`shortd did not exit within 30 s of ${signal}\n${this.logs()}`);
        }
        if (r.code !== 0) {
            throw new Error(`shortd did not exit cleanly after ${signal}: code ${r.code}, signal ${r.signal}\n` +
                this.logs(80));
        }
        if (SANITIZER_REPORT.test(this._stderr)) {
            throw new Error(`sanitizer report in shortd's stderr\n${this.logs(120)}`);
        }
        // Logs never hold an API key: checked on every server the tests run.
        if (this.adminKey && this._stderr.includes(this.adminKey)) {
            throw new Error(`shortd's stderr holds the admin API key\n${this.logs()}`);
        }
        if (this.setupToken && this._stderr.includes(this.setupToken)) {
            throw new Error(`shortd's stderr holds the setup token\n${this.logs()}`);
        }
        return r.code;
    }

    /* kill -9; resolves with {code, signal} once the process is gone. */
    async kill9() {
        if (this.running) this.proc.kill('SIGKILL');
        return this._exit;
    }

    /* Starts the server again on the same database and port. A store that
     * is not empty gets no setup token; one still empty (a firstStart whose
     * setup was not done) gets a new one, which replaces the last: pass
     * expectSetup. */
    async restart({ expectSetup = false } = {}) {
        if (this.running) throw new Error('restart() of a server that is still running');
        await this._spawn({ expectSetup });
        if (!expectSetup && (setupLine(this._runStdout) || setupFileOf(this._runStderr))) {
            throw new Error(`a restart on a store that is not empty offered a setup URL\n${this.logs()}`);
        }
        return this;
    }
}

function setupLine(out) {
    return out.split('\n').find((l) => /\/setup\?token=/.test(l)) || null;
}

function setupFileOf(log) {
    const m = /setup URL that makes the first admin account is in '([^']+)'/.exec(log);
    return m ? m[1] : null;
}

/* startServer({args, env, baseUrl, db, configFile})
 *   args:    extra arguments after serve --listen --db [--base-url]
 *   env:     extra environment
 *   baseUrl: passed as --base-url
 *   db:      an existing database to serve (not a first start: no admin key)
 *   firstStart: start on an empty store, as a new install does: no admin key
 *            is made before, and the server's setup URL is read (setupUrl,
 *            setupToken); otherwise a fresh store gets an admin key first
 *            (adminKey, made with `shortd key create --admin`)
 * In PostgreSQL mode (PG_MODE) a fresh server gets a schema of its own and is
 * served with --store URL --journal DIR/journal instead of --db; one given
 * `db`, or `--store` in args (a test that manages its own stores), is started
 * as in SQLite mode.
 */
export async function startServer(opts = {}) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shortd-e2e-'));
    tempDirs.add(dir);
    const port = await freePort();
    const fresh = !opts.db;
    const onPg = PG_MODE && fresh && !(opts.args || []).includes('--store');
    const store = onPg ? await freshPgStore() : undefined;
    const s = new Server({
        dir,
        db: store || opts.db || path.join(dir, 'shortd.db'),
        store,
        journal: onPg ? path.join(dir, 'journal') : undefined,
        port,
        args: opts.args || [],
        env: opts.env || {},
        baseUrl: opts.baseUrl,
    });
    servers.add(s);
    // A test that manages its own store passes it as --store: the key goes there.
    const own = (opts.args || []).indexOf('--store');
    if (fresh && !opts.firstStart) s.makeAdminKey(own >= 0 ? opts.args[own + 1] : store);
    await s._spawn({ expectSetup: fresh && !!opts.firstStart });
    return s;
}

/* Every file under a directory, recursively (for scanning what a server
 * wrote to disk). */
export function filesUnder(dir) {
    const out = [];
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) out.push(...filesUnder(p));
        else if (e.isFile()) out.push(p);
    }
    return out;
}

export function tempDir() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shortd-e2e-'));
    tempDirs.add(dir);
    return dir;
}

/* A test whose failure message carries the tails of the logs of every server
 * this file started. */
export function it(name, fn, opts = {}) {
    return test(name, { timeout: 60_000, ...opts }, async (t) => {
        const earlier = new Set(servers);
        try {
            await fn(t);
        } catch (e) {
            // The servers this test started and did not stop: their child
            // processes would keep this file's process alive, and the suite
            // would wait for it forever (the logs below are read first).
            const left = [...servers].filter((s) => !earlier.has(s) && s.proc &&
                s.proc.exitCode === null && s.proc.signalCode === null);
            try {
                const logs = [...servers].map((s) => s.logs()).join('\n');
                if (e && typeof e === 'object' && logs) {
                    const frames = String(e.stack || '').split('\n').filter((l) => /^\s+at /.test(l)).join('\n');
                    e.message = `${e.message}\n${logs}`;
                    // Reporters print the stack, which holds the message as it was.
                    e.stack = `${e.name}${e.code ? ` [${e.code}]` : ''}: ${e.message}\n${frames}`;
                }
            } catch { /* keep the original error */ }
            for (const s of left) {
                try { s.proc.kill('SIGKILL'); } catch { /* already gone */ }
            }
            throw e;
        }
    });
}

/* -------------------------------------------------------------------- CLI */

/* Runs the binary synchronously: {code, stdout, stderr}. */
export function cli(args, opts = {}) {
    const r = spawnSync(BIN, args, {
        encoding: 'utf8',
        timeout: opts.timeoutMs ?? 30_000,
        env: { ...process.env, ...(opts.env || {}) },
        cwd: opts.cwd,
        input: opts.input,
    });
    if (r.error) throw new Error(`cannot run ${BIN} ${args.join(' ')}: ${r.error.message}`);
    return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/* The same, without blocking the event loop (for CLI runs that overlap HTTP
 * traffic from this process). */
export function cliAsync(args, opts = {}) {
    return new Promise((resolve, reject) => {
        const p = spawn(BIN, args, { env: { ...process.env, ...(opts.env || {}) }, cwd: opts.cwd });
        let stdout = '';
        let stderr = '';
        p.stdout.setEncoding('utf8');
        p.stderr.setEncoding('utf8');
        p.stdout.on('data', (d) => { stdout += d; });
        p.stderr.on('data', (d) => { stderr += d; });
        const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
        p.on('error', reject);
        p.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }); });
    });
}

export function lastWord(text) {
    const lines = String(text).split('\n').map((l) => l.trim()).filter(Boolean);
    if (!lines.length) return null;
    return lines[lines.length - 1].split(/\s+/).pop();
}

/* `shortd key create` on the server's database; returns the new key. */
export function createKey(server, name, { admin = false } = {}) {
    const args = ['key', 'create', '--db', server.db, '--name', name];
    if (admin) args.push('--admin');
    const r = cli(args);
    if (r.code !== 0) {
        throw new Error(`shortd ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    }
    const key = lastWord(r.stdout);
    if (!key) throw new Error(`shortd key create printed no key\nstdout: ${r.stdout}`);
    return key;
}

/* ------------------------------------------------------------------- HTTP */

/* fetch wrapper: {status, headers, json, text}. Never follows redirects. */
export async function api(server, method, p, { key, body, headers = {}, raw, timeoutMs = 30_000 } = {}) {
    const h = { ...headers };
    if (key !== undefined && key !== null) h.authorization = `Bearer ${key}`;
    let payload;
    if (raw !== undefined) {
        payload = raw;
        if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['content-type'] = 'application/json';
    } else if (body !== undefined) {
        payload = JSON.stringify(body);
        h['content-type'] = 'application/json';
    }
    const base = typeof server === 'string' ? server : server.url;
    const res = await fetch(base + p, {
        method,
        headers: h,
        body: payload,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: res.status, headers: res.headers, json, text };
}

/* The server's /metrics values whose names start with 'prefix' (unlabelled
 * ones), as {name: number}. */
export async function metricsOf(server, prefix) {
    const r = await api(server, 'GET', '/metrics');
    if (r.status !== 200) throw new Error(`GET /metrics answered ${r.status}: ${r.text.slice(0, 300)}`);
    const m = {};
    for (const line of r.text.split('\n')) {
        const w = /^(\w+) (\d+)$/.exec(line);
        if (w && w[1].startsWith(prefix)) m[w[1]] = Number(w[2]);
    }
    return m;
}

/* A click: GET (or HEAD) /CODE with a browser user agent. */
export function visit(server, codeAndQuery, { method = 'GET', headers = {} } = {}) {
    return api(server, method, '/' + codeAndQuery, { headers: { 'user-agent': BROWSER_UA, ...headers } });
}

/* Creates a link; asserts 201 and returns the link object. */
export async function createLink(server, key, body, headers = {}) {
    const r = await api(server, 'POST', '/api/links', { key, body, headers });
    if (r.status !== 201) {
        throw new Error(`POST /api/links ${JSON.stringify(body).slice(0, 300)} answered ${r.status}: ` +
            `${r.text.slice(0, 500)}`);
    }
    return r.json;
}

/* Asserts the error body shape; returns the inner error object. */
export function errorOf(r) {
    const e = r.json && r.json.error;
    if (!e || typeof e !== 'object' || typeof e.code !== 'string' || typeof e.message !== 'string' ||
        !('field' in e)) {
        throw new Error(`expected {"error": {"code", "message", "field"}}, got ${r.status}: ${r.text.slice(0, 500)}`);
    }
    return e;
}

/* Parses a `Link` header: the URL of rel="next", or null. */
export function nextLink(linkHeader) {
    if (!linkHeader) return null;
    for (const part of linkHeader.split(/,(?=\s*<)/)) {
        const m = /^\s*<([^>]*)>\s*(.*)$/.exec(part);
        if (m && /(^|;)\s*rel="?next"?\s*(;|$)/i.test(m[2])) return m[1];
    }
    return null;
}

/* ---------------------------------------------------------------- raw HTTP */

/* The status code of the first response in 'text', or null. */
export function statusOf(text) {
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(String(text));
    return m ? Number(m[1]) : null;
}

/* Parses one response at buf[off...]. Returns {res, next} or null when it is
 * not complete yet. head: the request was HEAD (no body). closed: the
 * connection has been closed (a body without length runs to the end). */
export function parseOne(buf, off = 0, { head = false, closed = false } = {}) {
    const end = buf.indexOf('\r\n\r\n', off, 'latin1');
    if (end < 0) return null;
    const lines = buf.subarray(off, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/(1\.[01]) (\d{3})(?: (.*))?$/.exec(lines[0]);
    if (!m) throw new Error(`not an HTTP response: ${JSON.stringify(lines[0].slice(0, 200))}`);
    const status = Number(m[2]);
    const headers = {};
    for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        if (i <= 0) throw new Error(`malformed response header line: ${JSON.stringify(l)}`);
        const k = l.slice(0, i).trim().toLowerCase();
        const v = l.slice(i + 1).trim();
        headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
    }
    let p = end + 4;
    let body = Buffer.alloc(0);
    if (head || status === 204 || status === 304 || (status >= 100 && status < 200)) {
        // no body
    } else if (/chunked/i.test(headers['transfer-encoding'] || '')) {
        const parts = [];
        for (;;) {
            const le = buf.indexOf('\r\n', p, 'latin1');
            if (le < 0) return null;
            const size = parseInt(buf.subarray(p, le).toString('latin1'), 16);
            if (Number.isNaN(size)) throw new Error('bad chunk size in response');
            p = le + 2;
            if (size === 0) {
                const te = buf.indexOf('\r\n\r\n', p - 2, 'latin1');
                if (te < 0) return null;
                p = te + 4;
                break;
            }
            if (buf.length < p + size + 2) return null;
            parts.push(buf.subarray(p, p + size));
            p += size + 2;
        }
        body = Buffer.concat(parts);
    } else if (headers['content-length'] !== undefined) {
        const n = Number(headers['content-length']);
        if (buf.length < p + n) return null;
        body = buf.subarray(p, p + n);
        p += n;
    } else {
        if (!closed) return null;
        body = buf.subarray(p);
        p = buf.length;
    }
    return {
        res: { version: m[1], status, reason: m[3] || '', headers, body, text: body.toString('utf8') },
        next: p,
    };
}

/* Every complete response in buf (heads: per-response HEAD flags). */
export function parseResponses(buf, { heads = [], closed = false } = {}) {
    const out = [];
    let off = 0;
    for (;;) {
        if (off >= buf.length) break;
        const r = parseOne(buf, off, { head: !!heads[out.length], closed });
        if (!r) break;
        out.push(r.res);
        off = r.next;
    }
    return out;
}

/* Opens a TCP connection, writes 'data' (a string, Buffer or an array of them,
 * written in order), and collects everything until the server closes, an
 * error, the timeout, or — with stopAfter N — N complete responses.
 * Returns {text, buf, closed, error, timedOut, ms}. */
export function rawExchange(port, data, { timeoutMs = 5000, stopAfter = 0, head = false, gapMs = 0 } = {}) {
    return new Promise((resolve) => {
        const chunks = [];
        let done = false;
        let closed = false;
        let error = null;
        const t0 = Date.now();
        const sock = net.connect({ port, host: '127.0.0.1' });
        sock.setNoDelay(true);
        const finish = (timedOut) => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            sock.destroy();
            const buf = Buffer.concat(chunks);
            resolve({ buf, text: buf.toString('latin1'), closed, error, timedOut, ms: Date.now() - t0 });
        };
        const timer = setTimeout(() => finish(true), timeoutMs);
        sock.on('connect', async () => {
            const parts = Array.isArray(data) ? data : [data];
            for (const [i, part] of parts.entries()) {
                if (done) return;
                if (i && gapMs) await sleep(gapMs);
                sock.write(typeof part === 'string' ? Buffer.from(part, 'latin1') : part);
            }
        });
        sock.on('data', (d) => {
            chunks.push(d);
            if (stopAfter) {
                try {
                    const n = parseResponses(Buffer.concat(chunks), { heads: [head] }).length;
                    if (n >= stopAfter) finish(false);
                } catch { /* wait for close */ }
            }
        });
        sock.on('end', () => { closed = true; finish(false); });
        sock.on('close', () => { closed = true; finish(false); });
        sock.on('error', (e) => { error = e; closed = true; finish(false); });
    });
}

/* The brief's name: the text of rawExchange. */
export async function rawRequest(port, bytes, { timeoutMs = 5000, stopAfter = 0 } = {}) {
    return (await rawExchange(port, bytes, { timeoutMs, stopAfter })).text;
}

/* A kept-alive connection: write requests, read responses in order. */
export class Conn {
    static open(port) {
        return new Promise((resolve, reject) => {
            const sock = net.connect({ port, host: '127.0.0.1' });
            sock.once('connect', () => { sock.off('error', reject); resolve(new Conn(sock, port)); });
            sock.once('error', reject);
        });
    }

    constructor(sock, port) {
        this.sock = sock;
        this.port = port;
        this.buf = Buffer.alloc(0);
        this.closed = false;
        this.closedAt = null;
        this.error = null;
        this.waiters = [];
        sock.setNoDelay(true);
        sock.on('data', (d) => { this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d; this._wake(); });
        const onClose = () => {
            if (!this.closed) { this.closed = true; this.closedAt = Date.now(); }
            this._wake();
        };
        sock.on('end', onClose);
        sock.on('close', onClose);
        sock.on('error', (e) => { this.error = e; onClose(); });
    }

    _wake() {
        const w = this.waiters;
        this.waiters = [];
        for (const f of w) f();
    }

    _wait(ms) {
        return new Promise((resolve) => {
            const t = setTimeout(resolve, ms);
            this.waiters.push(() => { clearTimeout(t); resolve(); });
        });
    }

    write(data) {
        this.sock.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
    }

    /* The next complete response; null when the connection closed first. */
    async read({ head = false, timeoutMs = 10_000 } = {}) {
        const deadline = performance.now() + timeoutMs;
        for (;;) {
            const r = parseOne(this.buf, 0, { head, closed: this.closed });
            if (r) {
                this.buf = this.buf.subarray(r.next);
                return r.res;
            }
            if (this.closed) return null;
            const left = deadline - performance.now();
            if (left <= 0) throw new Error(`no complete response within ${timeoutMs} ms`);
            await this._wait(left);
        }
    }

    async request(data, opts = {}) {
        this.write(data);
        return this.read(opts);
    }

    /* GET path on this connection (keep-alive), with a browser user agent. */
    get(p, { headers = '', head = false, timeoutMs } = {}) {
        return this.request(`${head ? 'HEAD' : 'GET'} ${p} HTTP/1.1\r\nHost: 127.0.0.1:${this.port}\r\n` +
            `User-Agent: ${BROWSER_UA}\r\n${headers}\r\n`, { head, timeoutMs });
    }

    /* Resolves true once the server has closed the connection, false on timeout. */
    async waitClose(timeoutMs) {
        const deadline = performance.now() + timeoutMs;
        while (!this.closed) {
            const left = deadline - performance.now();
            if (left <= 0) return false;
            await this._wait(left);
        }
        return true;
    }

    destroy() { this.sock.destroy(); }
}

/* Sends the raw requests 'texts' over 'conns' connections, 100 pipelined
 * at a time, each answered with 'status'. */
export async function pipelined(port, texts, { conns = 4, status = 302 } = {}) {
    const open = await Promise.all(Array.from({ length: conns }, () => Conn.open(port)));
    try {
        await Promise.all(open.map(async (c, ci) => {
            const mine = texts.filter((_, i) => i % conns === ci);
            for (let i = 0; i < mine.length; i += 100) {
                const part = mine.slice(i, i + 100);
                c.write(part.join(''));
                for (let j = 0; j < part.length; j++) {
                    const r = await c.read({ timeoutMs: 30_000 });
                    if (!r || r.status !== status)
                        throw new Error(`expected ${status}, got ${r ? r.status : 'no answer'}`);
                }
            }
        }));
    } finally {
        for (const c of open) c.destroy();
    }
}

/* --------------------------------------------------------------- helpers */

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function base62Decode(s) {
    let v = 0n;
    for (const c of s) {
        const i = BASE62.indexOf(c);
        if (i < 0) throw new Error(`not base62: ${s}`);
        v = v * 62n + BigInt(i);
    }
    return v;
}

/* RFC 3339 date-time (with 'Z' or an offset, optional fraction). */
export const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function isoSeconds(ms) {
    return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

let uniq = 0;
/* A string unique within this run, for aliases, names and URLs. */
export function unique(prefix = 'u') {
    uniq++;
    return `${prefix}${process.pid.toString(36)}${uniq.toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}
