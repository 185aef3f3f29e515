// format.js - numbers, days and names as people read them.

const nf = new Intl.NumberFormat('en');
export const num = (n) => nf.format(n ?? 0);

export function pct(part, whole) {
    if (!whole) return '0%';
    const p = (100 * part) / whole;
    return `${p >= 10 || p === 0 ? Math.round(p) : p.toFixed(1)}%`;
}

/* "2026-11-30T09:09:58.865Z" → "30 Nov 2026, 10:09" in the viewer's zone. */
export function when(iso) {
    if (!iso) return '';
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return iso;
    return d.toLocaleString('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/* YYYY-MM-DD of a Date, in UTC (the server's days are UTC days). */
export function isoDay(d) {
    return d.toISOString().slice(0, 10);
}

export function addDays(day, n) {
    const d = new Date(`${day}T00:00:00Z`);
    d.setUTCDate(d.getUTCDate() + n);
    return isoDay(d);
}

export function daysBetween(from, to) {
    return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}

/* days_remaining as the server computes it: null → never, 0 → expired. */
export function remaining(link) {
    if (link.days_remaining === null || link.days_remaining === undefined) return 'never expires';
    if (link.days_remaining === 0) return 'expired';
    return link.days_remaining === 1 ? '1 day' : `${num(link.days_remaining)} days`;
}

let regions = null;
let languages = null;
try {
    regions = new Intl.DisplayNames(['en'], { type: 'region' });
    languages = new Intl.DisplayNames(['en'], { type: 'language' });
} catch { /* names stay codes */ }

/* "DE" → "Germany (DE)"; XX and T1 are the CDN's unknown and Tor. */
export function country(code) {
    if (code === 'XX' || code === '') return 'Unknown';
    if (code === 'T1') return 'Tor (T1)';
    try {
        const n = regions && /^[A-Z]{2}$/.test(code) ? regions.of(code) : null;
        return n && n !== code ? `${n} (${code})` : code;
    } catch {
        return code;
    }
}

export function language(code) {
    try {
        const n = languages && /^[a-z]{2,3}$/.test(code) ? languages.of(code) : null;
        return n && n !== code ? `${n} (${code})` : code;
    } catch {
        return code;
    }
}

export const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/* The server's bot kinds (src/clicks/classify.h) in words. */
const BOT_KINDS = {
    crawler: 'Search and archive crawlers',
    ai_crawler: 'AI crawlers and assistants',
    http_library: 'HTTP libraries and scripts (curl, requests…)',
    previewer: 'Link previews (chat and social apps)',
    mail_scanner: 'Mail and office link scanners',
    headless: 'Headless and automated browsers',
    monitor: 'Uptime monitors',
    empty_ua: 'No user agent',
    prefetch: 'Browser prefetches',
    other: 'Other bots',
};
export function botKind(k) { return BOT_KINDS[k] || k; }
