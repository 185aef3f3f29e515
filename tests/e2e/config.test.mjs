// config.test.mjs - flags > environment SHORTD_* > config file, seen through
// the short_url of a created link; a bad config file stops the server with a
// message that names the problem.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after } from 'node:test';

import { ROOT, api, cli, createLink, freePort, it, startServer, tempDir, visit } from './harness.mjs';

const started = [];

after(async () => {
    for (const s of started) if (s.running) await s.stop();
});

function writeConfig(text) {
    const file = path.join(tempDir(), 'shortd.conf');
    fs.writeFileSync(file, text);
    return file;
}

const CONFIG = [
    '# shortd test configuration',
    '',
    '   # an indented comment',
    'base-url = http://from-file.example',
    '',
].join('\n');

async function shortUrlWith(opts) {
    const s = await startServer(opts);
    started.push(s);
    try {
        const l = await createLink(s, s.adminKey, { url: 'https://example.com/config' });
        return { short: l.short_url, code: l.code };
    } finally {
        await s.stop();
    }
}

it('the config file sets base-url', async () => {
    const file = writeConfig(CONFIG);
    const { short, code } = await shortUrlWith({ args: ['--config', file] });
    assert.equal(short, `http://from-file.example/${code}`);
});

it('SHORTD_BASE_URL overrides the config file', async () => {
    const file = writeConfig(CONFIG);
    const { short, code } = await shortUrlWith({
        args: ['--config', file], env: { SHORTD_BASE_URL: 'http://from-env.example' },
    });
    assert.equal(short, `http://from-env.example/${code}`);
});

it('SHORTD_BASE_URL applies without a config file', async () => {
    const { short, code } = await shortUrlWith({ env: { SHORTD_BASE_URL: 'https://env-only.example' } });
    assert.equal(short, `https://env-only.example/${code}`);
});

it('--base-url overrides the environment and the config file', async () => {
    const file = writeConfig(CONFIG);
    const { short, code } = await shortUrlWith({
        args: ['--config', file], env: { SHORTD_BASE_URL: 'http://from-env.example' },
        baseUrl: 'http://from-flag.example',
    });
    assert.equal(short, `http://from-flag.example/${code}`);
});

it('config values tolerate spacing variants', async () => {
    const file = writeConfig('base-url=http://tight.example\n');
    const { short, code } = await shortUrlWith({ args: ['--config', file] });
    assert.equal(short, `http://tight.example/${code}`);
    const file2 = writeConfig('\t base-url   =   http://loose.example  \n');
    const r2 = await shortUrlWith({ args: ['--config', file2] });
    assert.equal(r2.short, `http://loose.example/${r2.code}`);
});

it('the shipped example config is a valid config', async () => {
    const example = path.join(ROOT, 'shortd.conf.example');
    assert.ok(fs.existsSync(example), 'shortd.conf.example is missing');
    const s = await startServer({ args: ['--config', example] });
    started.push(s);
    const l = await createLink(s, s.adminKey, { url: 'https://example.com/p?a=1' });
    assert.equal(l.short_url, `http://127.0.0.1:${s.port}/${l.code}`, '--listen must win over the example file');
    await s.stop();
});

it('pass-query, home and permanent-max-age from the config file and the environment', async () => {
    const file = writeConfig('pass-query = false\nhome = /from-file\npermanent-max-age = 60\n');
    const s = await startServer({ args: ['--config', file] });
    started.push(s);
    const l = await createLink(s, s.adminKey, { url: 'https://example.com/p?a=1' });
    const r = await visit(s, `${l.code}?b=2`);
    assert.equal(r.headers.get('location'), 'https://example.com/p?a=1', 'pass-query = false still passes the query');
    const home = await api(s, 'GET', '/');
    assert.equal(home.status, 302);
    assert.equal(new URL(home.headers.get('location'), s.url).pathname, '/from-file');
    const p = await createLink(s, s.adminKey, { url: 'https://example.com/perm', permanent: true });
    const pr = await visit(s, p.code);
    assert.equal(pr.status, 301);
    assert.match(pr.headers.get('cache-control') || '', /max-age=60\b/);
    await s.stop();

    const e = await startServer({ args: ['--config', file], env: { SHORTD_HOME: '/from-env', SHORTD_PASS_QUERY: 'true' } });
    started.push(e);
    const el = await createLink(e, e.adminKey, { url: 'https://example.com/p?a=1' });
    assert.equal((await visit(e, `${el.code}?b=2`)).headers.get('location'), 'https://example.com/p?a=1&b=2');
    assert.equal(new URL((await api(e, 'GET', '/')).headers.get('location'), e.url).pathname, '/from-env');
    await e.stop();
});

/* Runs `shortd serve` expecting it to refuse to start. */
async function serveFails(args, env = {}) {
    const port = await freePort();
    const db = path.join(tempDir(), 'shortd.db');
    const r = cli(['serve', '--listen', `127.0.0.1:${port}`, '--db', db, ...args], { env, timeoutMs: 15_000 });
    assert.equal(r.signal, null, `shortd serve ${args.join(' ')} kept running (killed after 15 s)\nstderr: ${r.stderr}`);
    assert.notEqual(r.code, 0, `shortd serve ${args.join(' ')} exited 0`);
    return `${r.stderr}\n${r.stdout}`;
}

it('an unknown config key stops the server with a message naming it', async () => {
    const file = writeConfig('base-url = http://x.example\nno-such-setting = 5\n');
    const out = await serveFails(['--config', file]);
    assert.ok(out.includes('no-such-setting'), `the message does not name the key: ${out}`);
});

it('a bad value in the config file stops the server with a message naming the key', async () => {
    const file = writeConfig('max-connections = lots\n');
    const out = await serveFails(['--config', file]);
    assert.ok(out.includes('max-connections'), `the message does not name the key: ${out}`);
});

it('a config line without "=" stops the server', async () => {
    const file = writeConfig('base-url http://x.example\n');
    await serveFails(['--config', file]);
});

it('a missing config file stops the server with a message naming it', async () => {
    const missing = path.join(tempDir(), 'nope.conf');
    const out = await serveFails(['--config', missing]);
    assert.ok(out.includes('nope.conf'), `the message does not name the file: ${out}`);
});
