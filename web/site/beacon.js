// beacon.js - what the page script puts in a beacon (README, "Site analytics":
// the wire format of /e): the fields of a page view, of a link click, of the
// behavioural probe's verdict, the visit flags kept in localStorage, and the
// encoding (base64url of UTF-8 JSON, no padding). Pure functions of their
// arguments, so that tests run them under node with plain objects.

// The storage key, and the gap that ends a session.
export const KEY = 'shortd';
export const SESSION_MS = 30 * 60 * 1000;

// The server keeps at most 128 bytes of a value; the same cut here keeps a
// long path or title from pushing the payload past the server's 4 KiB.
const MAX_VALUE = 128;

// Links to files by extension (the path's, any case): their clicks are
// downloads. A link with a download attribute is one whatever it names.
const FILE = /\.(7z|apk|avi|bz2|csv|deb|dmg|docx?|epub|exe|flac|gz|iso|jar|key|m4a|mkv|mov|mp3|mp4|msi|od[pst]|ogg|pdf|pkg|pptx?|rar|rpm|rtf|tar|tgz|tsv|txt|wav|webm|xlsx?|xz|zip)$/i;

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/* 'n' random characters of [0-9a-z]. */
export function randomChars(n, random = Math.random) {
    let s = '';
    while (s.length < n) s += ALPHABET[Math.floor(random() * 36)];
    return s;
}

/* The payload of 'fields' with its nonce 'z': every string value cut to
 * MAX_VALUE characters, then base64url (no padding) of its UTF-8 JSON. */
export function encode(fields, random = Math.random) {
    const d = {};
    for (const [k, v] of Object.entries(fields)) d[k] = typeof v === 'string' ? v.slice(0, MAX_VALUE) : v;
    // The browser drops an image request that repeats an earlier URL: six
    // random characters make two equal beacons two requests.
    d.z = randomChars(6, random);
    let bin = '';
    for (const b of new TextEncoder().encode(JSON.stringify(d))) bin += String.fromCharCode(b);
    return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/* The probe's bucket of a delay in milliseconds. */
export function bucket(ms) {
    return ms < 150 ? '<150' : ms <= 2000 ? '150-2000' : '>2000';
}

/* The fields of a page view of window 'win' whose referrer is 'ref' ("" for
 * none): path, host, referrer, language, time zone, viewport width and the
 * page address's UTM parameters (each only when set). */
export function pageFields(win, ref) {
    const loc = win.location;
    const d = { p: loc.pathname, h: loc.hostname, r: ref || '' };
    if (win.navigator.language) d.l = win.navigator.language;
    try {
        d.tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    } catch { /* no Intl: no time zone */ }
    if (win.innerWidth > 0) d.w = Math.round(win.innerWidth);
    const q = new URLSearchParams(loc.search);
    for (const [k, name] of [['us', 'utm_source'], ['um', 'utm_medium'], ['uc', 'utm_campaign']]) {
        const v = q.get(name);
        if (v) d[k] = v;
    }
    return d;
}

/* The visit flags of a page view at 'now' (ms since the epoch), from the
 * state kept in 'storage' (localStorage) under KEY, which it then updates:
 * uv on the browser's first view of the UTC day, ss when 30 minutes passed
 * without a view (a new session), bo when the session that ss ends had
 * exactly one view. The state is a random id and counters; none of it is
 * sent. {} (no flag at all) when storage is missing or refuses to write,
 * since the flags would then be guesses. */
export function visitFlags(storage, now, random = Math.random) {
    try {
        let s = null;
        try {
            s = JSON.parse(storage.getItem(KEY));
        } catch { /* not ours, or damaged: start again */ }
        if (!s || typeof s !== 'object' || typeof s.id !== 'string') s = { id: randomChars(16, random) };
        const day = new Date(now).toISOString().slice(0, 10);
        const f = {};
        if (s.d !== day) f.uv = 1;
        // Written as "not within" so that a missing or damaged time is a new session.
        if (!(now - s.t < SESSION_MS)) {
            f.ss = 1;
            if (s.n === 1) f.bo = 1;
            s.n = 0;
        }
        s.n = (Number(s.n) || 0) + 1;
        s.d = day;
        s.t = now;
        storage.setItem(KEY, JSON.stringify(s));
        return f;
    } catch {
        return {};
    }
}

/* The event of a click on link 'a' of a page at 'loc' (its Location), or
 * null: a download for a link with a download attribute or to a file by its
 * extension (et: the path on this host, the address without query
 * elsewhere), else an outbound click for a link to another host (et: the
 * address without its fragment). Links that are not http(s) are neither. */
export function linkEvent(a, loc, base) {
    let u;
    try {
        u = new URL(a.getAttribute('href'), base || loc.href);
    } catch {
        return null;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    const here = u.host === loc.host;
    if (a.hasAttribute('download') || FILE.test(u.pathname)) return { ev: 'download', et: here ? u.pathname : u.origin + u.pathname };
    if (here) return null;
    u.hash = '';
    return { ev: 'outbound', et: u.href };
}
