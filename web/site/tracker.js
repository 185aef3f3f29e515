// tracker.js - the page script's behaviour, started once on a page's window:
//
//   - a page view at load, and at each route change of a single-page app
//     (pushState, replaceState, popstate: when the path or query changed,
//     not the fragment alone) and on a return from the back-forward cache;
//   - after each page view, the behavioural probe: the first of pointerdown,
//     keydown, touchstart, wheel or mousemove reports how long after the
//     beacon it came (hi, bucketed), or bot[synthetic] when a script made it
//     (isTrusted false); nothing else about the event leaves the page;
//   - clicks on links to another host (outbound) and on files (download);
//   - custom events: shortd('event', name, target), queued in shortd.q by
//     the snippet until this script runs.
//
// Beacons go to /e on the origin the script was loaded from: an image GET,
// or sendBeacon's POST when the page may be unloading (a link click, or
// anything after pagehide), falling back to the image when it refuses.
import { bucket, encode, linkEvent, pageFields, visitFlags } from './beacon.js';

const PROBE = ['pointerdown', 'keydown', 'touchstart', 'wheel', 'mousemove'];

/* Starts the script on window 'win'. Returns false when it does not run:
 * it already runs there, or it cannot tell where it was loaded from. */
export function start(win) {
    const doc = win.document;
    const nav = win.navigator;
    const queued = win.shortd;
    if (queued && queued.started) return false;
    // currentScript is null in a module or a callback; then the first
    // script element whose address names s.js.
    const script = doc.currentScript || doc.querySelector('script[src*="/s.js"]');
    if (!script || !script.src) return false;
    const endpoint = new URL('/e', script.src).href;
    let leaving = false;     // pagehide came: beacons go by sendBeacon
    let shown = null;        // path and query of the last page view
    let shownUrl = '';       // its address without query, the next view's referrer
    let disarm = null;       // removes the probe's listeners, while armed

    function send(fields, unloading) {
        fields.h = win.location.hostname;
        const v = encode(fields);
        if ((unloading || leaving) && nav.sendBeacon) {
            try {
                if (nav.sendBeacon(endpoint, `v=${v}`)) return;
            } catch { /* refused: the image below */ }
        }
        new win.Image().src = `${endpoint}?v=${v}`;
    }

    function arm() {
        if (disarm) disarm();
        const t0 = win.performance.now();
        const on = (e) => {
            disarm();
            send(e.isTrusted ? { ev: 'hi', et: bucket(win.performance.now() - t0) } : { ev: 'bot', et: 'synthetic' });
        };
        disarm = () => {
            for (const t of PROBE) win.removeEventListener(t, on, true);
            disarm = null;
        };
        // Capture, on the window: a page that stops an event's propagation,
        // or an event that does not bubble, still reaches the probe.
        for (const t of PROBE) win.addEventListener(t, on, { capture: true, passive: true, once: true });
    }

    function view(ref) {
        const loc = win.location;
        shown = loc.pathname + loc.search;
        shownUrl = loc.origin + loc.pathname;
        let storage = null;
        try {
            storage = win.localStorage;
        } catch { /* blocked: no flags */ }
        const fields = pageFields(win, ref);
        if (storage) Object.assign(fields, visitFlags(storage, Date.now()));
        send(fields);
        arm();
    }

    // A route change of a single-page app: the previous view is its referrer.
    function route() {
        const loc = win.location;
        if (loc.pathname + loc.search !== shown) view(shownUrl);
    }

    function click(e) {
        if (e.type === 'auxclick' && e.button !== 1) return;
        const a = e.target && e.target.closest ? e.target.closest('a[href]') : null;
        const d = a && linkEvent(a, win.location, doc.baseURI);
        if (d) send(d, true);
    }

    function api(cmd, name, target) {
        // hi and bot are the probe's: a page cannot forge its verdicts.
        if (cmd !== 'event' || name == null || name === '' || name === 'hi' || name === 'bot') return;
        const d = { ev: String(name) };
        if (target != null) d.et = String(target);
        send(d);
    }
    api.started = true;
    win.shortd = api;

    const hist = win.history;
    for (const m of ['pushState', 'replaceState']) {
        const orig = hist[m];
        if (typeof orig !== 'function') continue;
        hist[m] = function (...args) {
            const r = orig.apply(this, args);
            route();
            return r;
        };
    }
    win.addEventListener('popstate', route);
    win.addEventListener('pagehide', () => {
        leaving = true;
    });
    win.addEventListener('pageshow', (e) => {
        leaving = false;
        if (e.persisted) view(doc.referrer);
    });
    doc.addEventListener('click', click, true);
    doc.addEventListener('auxclick', click, true);

    // A prerendered page counts once someone sees it.
    if (doc.prerendering) doc.addEventListener('prerenderingchange', () => view(doc.referrer), { once: true });
    else view(doc.referrer);
    for (const args of (queued && queued.q) || []) api(...args);
    return true;
}
