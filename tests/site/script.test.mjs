// script.test.mjs - the page script's source (web/site/) under node, on a
// fake window: the payload of each beacon it sends (decoded as the server
// decodes it), the visit flags it keeps in localStorage, the links it counts,
// single-page route changes, the behavioural probe, custom events and their
// queue, and which transport each beacon takes. The built script in a real
// browser against shortd is tests/browser/sites.test.mjs.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { KEY, SESSION_MS, bucket, encode, linkEvent, pageFields, randomChars, visitFlags } from '../../web/site/beacon.js';
import { start } from '../../web/site/tracker.js';

const decode = (v) => {
    assert.match(v, /^[A-Za-z0-9_-]+$/, 'base64url without padding');
    return JSON.parse(Buffer.from(v, 'base64url').toString('utf8'));
};

class MemoryStorage {
    constructor() { this.m = new Map(); }
    getItem(k) { return this.m.has(k) ? this.m.get(k) : null; }
    setItem(k, v) { this.m.set(k, String(v)); }
}

/* An element that answers what the script asks of a link. */
function anchor(attrs) {
    return {
        getAttribute: (n) => (n in attrs ? attrs[n] : null),
        hasAttribute: (n) => n in attrs,
        closest() { return this; },
    };
}

/* A window with what the script uses; every beacon lands in 'sent' as
 * {via: 'image'|'beacon', url, data}. */
function fakeWindow({ href = 'https://blog.example.org/posts/one?utm_source=news&utm_medium=mail', referrer = 'https://search.example.net/',
    src = 'https://stats.example.com:8443/s.js', storage = new MemoryStorage(), beaconOk = true } = {}) {
    const listeners = new Map();   // "target:type" -> [{fn, capture, once}]
    const sent = [];
    let url = new URL(href);
    let clock = 1000;
    const on = (target) => ({
        addEventListener(type, fn, opts) {
            const key = `${target}:${type}`;
            const capture = opts === true || !!(opts && opts.capture);
            const list = listeners.get(key) || [];
            if (!list.some((l) => l.fn === fn && l.capture === capture)) list.push({ fn, capture, once: !!(opts && opts.once) });
            listeners.set(key, list);
        },
        removeEventListener(type, fn, opts) {
            const capture = opts === true || !!(opts && opts.capture);
            const key = `${target}:${type}`;
            listeners.set(key, (listeners.get(key) || []).filter((l) => !(l.fn === fn && l.capture === capture)));
        },
    });
    const location = {
        get href() { return url.href; },
        get pathname() { return url.pathname; },
        get search() { return url.search; },
        get hostname() { return url.hostname; },
        get host() { return url.host; },
        get origin() { return url.origin; },
    };
    const win = {
        ...on('window'),
        location,
        innerWidth: 800,
        navigator: {
            language: 'de-DE',
            sendBeacon: (u, body) => {
                if (!beaconOk) return false;
                assert.match(body, /^v=/);
                sent.push({ via: 'beacon', url: u, data: decode(body.slice(2)) });
                return true;
            },
        },
        performance: { now: () => clock },
        history: {
            pushState(state, title, to) { if (to !== undefined) url = new URL(to, url); },
            replaceState(state, title, to) { if (to !== undefined) url = new URL(to, url); },
        },
        Image: class {
            set src(u) {
                const p = new URL(u);
                sent.push({ via: 'image', url: `${p.origin}${p.pathname}`, data: decode(p.searchParams.get('v')) });
            }
        },
        document: {
            ...on('document'),
            currentScript: { src },
            referrer,
            get baseURI() { return url.href; },
            querySelector: () => null,
        },
    };
    Object.defineProperty(win, 'localStorage', {
        get() {
            if (storage === 'throws') throw new Error('SecurityError');
            return storage;
        },
    });
    const fire = (target, type, ev = {}) => {
        const list = listeners.get(`${target}:${type}`) || [];
        for (const l of [...list]) {
            if (l.once) win.removeEventListener(type, l.fn, { capture: l.capture });
            l.fn({ type, isTrusted: true, ...ev });
        }
    };
    return {
        win, sent, fire,
        tick: (ms) => { clock += ms; },
        go: (to) => { url = new URL(to, url); },
        armed: () => ['pointerdown', 'keydown', 'touchstart', 'wheel', 'mousemove'].map((t) => (listeners.get(`window:${t}`) || []).length),
    };
}

/* ----------------------------------------------------------- beacon.js */

test('encode: base64url of UTF-8 JSON, no padding, a fresh 6-character nonce each time, values cut to 128', () => {
    const fields = { p: '/über/straße', ev: 'x'.repeat(300), w: 1024 };
    const a = encode(fields);
    const b = encode(fields);
    assert.notEqual(a, b, 'two equal beacons are two URLs');
    const d = decode(a);
    assert.equal(d.p, '/über/straße');
    assert.equal(d.ev, 'x'.repeat(128));
    assert.equal(d.w, 1024);
    assert.match(d.z, /^[0-9a-z]{6}$/);
    assert.notEqual(d.z, decode(b).z);
    assert.doesNotMatch(a, /[=+/]/);
    // Every length of payload, so that each padding case occurs.
    for (let n = 0; n < 6; n++) assert.equal(decode(encode({ p: '/'.padEnd(n + 1, 'é') })).p, '/'.padEnd(n + 1, 'é'));
    assert.equal(randomChars(6, () => 0.999999), 'zzzzzz');
});

test('bucket: <150, 150-2000, >2000 milliseconds', () => {
    assert.deepEqual([0, 149.9, 150, 2000, 2000.5, 60_000].map(bucket), ['<150', '<150', '150-2000', '150-2000', '>2000', '>2000']);
});

test('pageFields: path, host, referrer, language, zone, width, and the UTM parameters that are set', () => {
    const { win } = fakeWindow({ href: 'https://blog.example.org/a/b?utm_source=news&utm_campaign=spring&x=1#top' });
    const d = pageFields(win, '');
    assert.equal(d.p, '/a/b');
    assert.equal(d.h, 'blog.example.org');
    assert.equal(d.r, '');
    assert.equal(d.l, 'de-DE');
    assert.equal(d.w, 800);
    assert.equal(d.us, 'news');
    assert.equal(d.uc, 'spring');
    assert.ok(!('um' in d));
    assert.equal(typeof d.tz, 'string');
    const bare = fakeWindow({ href: 'https://blog.example.org/' });
    bare.win.innerWidth = 0;
    const e = pageFields(bare.win, 'https://other.example/');
    assert.deepEqual(Object.keys(e).filter((k) => ['us', 'um', 'uc', 'w'].includes(k)), []);
    assert.equal(e.r, 'https://other.example/');
});

test('visitFlags: first view of the day, new session, bounce of a one-view session; the id stays in storage', () => {
    const s = new MemoryStorage();
    const t0 = Date.parse('2026-12-02T10:00:00Z');
    assert.deepEqual(visitFlags(s, t0), { uv: 1, ss: 1 });
    const kept = JSON.parse(s.getItem(KEY));
    assert.match(kept.id, /^[0-9a-z]{16}$/);
    assert.deepEqual(visitFlags(s, t0 + 60_000), {}, 'same session, same day');
    // 30 minutes after the last view: a new session; the last one had two views.
    assert.deepEqual(visitFlags(s, t0 + 60_000 + SESSION_MS), { ss: 1 });
    // ... and this one had one: its end is a bounce.
    assert.deepEqual(visitFlags(s, t0 + 60_000 + 2 * SESSION_MS + 1), { ss: 1, bo: 1 });
    assert.equal(JSON.parse(s.getItem(KEY)).id, kept.id, 'one id for the browser');
    // A new UTC day within a session: a new visitor of the day, same session.
    const late = Date.parse('2026-12-02T23:59:00Z');
    const t = new MemoryStorage();
    visitFlags(t, late);
    assert.deepEqual(visitFlags(t, late + 2 * 60_000), { uv: 1 });
});

test('visitFlags: no flag at all without storage, when it refuses to write, or reads back garbage', () => {
    assert.deepEqual(visitFlags(null, Date.now()), {});
    const full = new MemoryStorage();
    full.setItem = () => { throw new Error('QuotaExceededError'); };
    assert.deepEqual(visitFlags(full, Date.now()), {});
    const bad = new MemoryStorage();
    bad.setItem(KEY, '{not json');
    assert.deepEqual(visitFlags(bad, Date.now()), { uv: 1, ss: 1 }, 'damaged state starts again');
});

test('linkEvent: outbound links, downloads by extension or attribute, nothing for this host or other schemes', () => {
    const loc = new URL('https://blog.example.org/posts/one');
    const ev = (attrs) => linkEvent(anchor(attrs), loc, loc.href);
    assert.deepEqual(ev({ href: 'https://other.example/page?q=1#frag' }), { ev: 'outbound', et: 'https://other.example/page?q=1' });
    assert.equal(ev({ href: '/posts/two' }), null);
    assert.equal(ev({ href: 'https://blog.example.org/x' }), null);
    assert.deepEqual(ev({ href: '/files/report.PDF?v=2' }), { ev: 'download', et: '/files/report.PDF' });
    assert.deepEqual(ev({ href: 'notes', download: '' }), { ev: 'download', et: '/posts/notes' });
    assert.deepEqual(ev({ href: 'https://cdn.example/app.zip?sig=secret' }), { ev: 'download', et: 'https://cdn.example/app.zip' });
    assert.equal(ev({ href: 'mailto:me@example.org' }), null);
    assert.equal(ev({ href: 'javascript:void(0)' }), null);
    assert.equal(ev({ href: 'http://[bad' }), null);
});

/* ----------------------------------------------------------- tracker.js */

test('start: a page view at load to /e of the script\'s origin, with the visit flags', () => {
    const f = fakeWindow();
    assert.equal(start(f.win), true);
    assert.equal(f.sent.length, 1);
    const [b] = f.sent;
    assert.equal(b.via, 'image');
    assert.equal(b.url, 'https://stats.example.com:8443/e');
    const { z, tz, ...rest } = b.data;
    assert.match(z, /^[0-9a-z]{6}$/);
    assert.equal(typeof tz, 'string');
    assert.deepEqual(rest, {
        p: '/posts/one', h: 'blog.example.org', r: 'https://search.example.net/', l: 'de-DE', w: 800,
        us: 'news', um: 'mail', uv: 1, ss: 1,
    });
    assert.equal(start(f.win), false, 'a second copy of the script does nothing');
    assert.equal(f.sent.length, 1);
});

test('start: without localStorage, or when reading it throws, no flag is sent', () => {
    for (const storage of [null, 'throws']) {
        const f = fakeWindow({ storage });
        start(f.win);
        assert.ok(!('uv' in f.sent[0].data) && !('ss' in f.sent[0].data) && !('bo' in f.sent[0].data), String(storage));
    }
});

test('single-page routes: pushState, replaceState and popstate count when path or query change, not for the fragment', () => {
    const f = fakeWindow({ href: 'https://blog.example.org/' });
    start(f.win);
    f.win.history.pushState({}, '', '/about');
    f.win.history.pushState({}, '', '/about#team');
    f.win.history.replaceState({}, '', '/about#team');
    f.win.history.pushState({}, '', '/about?tab=2');
    f.win.history.replaceState({}, '', '/contact');
    f.go('/about');
    f.fire('window', 'popstate');
    f.fire('window', 'popstate');
    const views = f.sent.filter((b) => !b.data.ev).map((b) => [b.data.p, b.data.r]);
    assert.deepEqual(views, [
        ['/', 'https://search.example.net/'],
        ['/about', 'https://blog.example.org/'],
        ['/about', 'https://blog.example.org/about'],
        ['/contact', 'https://blog.example.org/about'],
        ['/about', 'https://blog.example.org/contact'],
    ]);
    assert.deepEqual(f.sent.slice(1).map((b) => 'uv' in b.data || 'ss' in b.data), [false, false, false, false], 'one session');
    // pushState still does its work and returns what it returned.
    assert.equal(f.win.location.pathname, '/about');
});

test('the probe: the first trusted interaction after a view reports its delay bucket, once', () => {
    const f = fakeWindow();
    start(f.win);
    assert.deepEqual(f.armed(), [1, 1, 1, 1, 1]);
    f.tick(420);
    f.fire('window', 'mousemove', { clientX: 10, clientY: 20 });
    f.fire('window', 'keydown', { key: 'a' });
    f.fire('window', 'pointerdown');
    assert.deepEqual(f.armed(), [0, 0, 0, 0, 0], 'every listener gone after the first');
    const probes = f.sent.filter((b) => b.data.ev);
    assert.equal(probes.length, 1);
    const { z, ...d } = probes[0].data;
    assert.deepEqual(d, { ev: 'hi', et: '150-2000', h: 'blog.example.org' }, 'nothing of the event itself');
    assert.match(z, /^[0-9a-z]{6}$/);
    // A route change arms it again: a quick key press then a slow one.
    f.win.history.pushState({}, '', '/two');
    f.tick(90);
    f.fire('window', 'keydown');
    f.win.history.pushState({}, '', '/three');
    f.tick(2500);
    f.fire('window', 'wheel');
    assert.deepEqual(f.sent.filter((b) => b.data.ev === 'hi').map((b) => b.data.et), ['150-2000', '<150', '>2000']);
});

test('the probe: an event a script dispatched (isTrusted false) is bot[synthetic]', () => {
    const f = fakeWindow();
    start(f.win);
    f.fire('window', 'pointerdown', { isTrusted: false });
    f.fire('window', 'pointerdown');
    const probes = f.sent.filter((b) => b.data.ev).map((b) => [b.data.ev, b.data.et]);
    assert.deepEqual(probes, [['bot', 'synthetic']]);
});

test('links: outbound and download clicks go by sendBeacon; middle clicks count, right clicks and this host\'s links do not', () => {
    const f = fakeWindow();
    start(f.win);
    f.fire('document', 'click', { target: anchor({ href: 'https://other.example/x' }) });
    f.fire('document', 'click', { target: anchor({ href: '/docs/guide.pdf' }) });
    f.fire('document', 'click', { target: anchor({ href: '/posts/two' }) });
    f.fire('document', 'auxclick', { button: 1, target: anchor({ href: 'https://other.example/y' }) });
    f.fire('document', 'auxclick', { button: 2, target: anchor({ href: 'https://other.example/z' }) });
    f.fire('document', 'click', { target: { closest: () => null } });
    const evs = f.sent.filter((b) => b.data.ev).map((b) => [b.via, b.data.ev, b.data.et]);
    assert.deepEqual(evs, [
        ['beacon', 'outbound', 'https://other.example/x'],
        ['beacon', 'download', '/docs/guide.pdf'],
        ['beacon', 'outbound', 'https://other.example/y'],
    ]);
    assert.ok(f.sent.filter((b) => b.via === 'beacon').every((b) => b.url === 'https://stats.example.com:8443/e'));
});

test('links: when sendBeacon refuses, the image carries the event', () => {
    const f = fakeWindow({ beaconOk: false });
    start(f.win);
    f.fire('document', 'click', { target: anchor({ href: 'https://other.example/x' }) });
    assert.deepEqual(f.sent.map((b) => [b.via, b.data.ev]), [['image', undefined], ['image', 'outbound']]);
});

test('custom events: queued calls are sent after the page view, later ones at once; hi and bot are not the page\'s', () => {
    const f = fakeWindow();
    const q = [['event', 'signup', 'newsletter'], ['event', 'hi', '<150'], ['other', 'x'], ['event', 'play']];
    f.win.shortd = Object.assign(() => {}, { q: q.map((a) => Object.assign([], a)) });
    start(f.win);
    f.win.shortd('event', 'bot', 'synthetic');
    f.win.shortd('event', 'share', 42);
    f.win.shortd('event', '');
    const evs = f.sent.map((b) => [b.via, b.data.ev, b.data.et]);
    assert.deepEqual(evs, [
        ['image', undefined, undefined],
        ['image', 'signup', 'newsletter'],
        ['image', 'play', undefined],
        ['image', 'share', '42'],
    ]);
});

test('pagehide: what is sent afterwards goes by sendBeacon; a return from the back-forward cache is a page view', () => {
    const f = fakeWindow();
    start(f.win);
    f.fire('window', 'pagehide', { persisted: true });
    f.win.shortd('event', 'leave');
    f.fire('window', 'pageshow', { persisted: true });
    f.fire('window', 'pageshow', { persisted: false });
    assert.deepEqual(f.sent.map((b) => [b.via, b.data.ev ?? 'view']), [['image', 'view'], ['beacon', 'leave'], ['image', 'view']]);
});

test('no script element to tell the origin: nothing is sent', () => {
    const f = fakeWindow();
    f.win.document.currentScript = null;
    assert.equal(start(f.win), false);
    assert.deepEqual(f.sent, []);
});
