// dom.js - building the page without ever parsing data as HTML.
//
// Every string that reaches the page goes through textContent, a text node or
// setAttribute: titles, notes, URLs, referrers and user agents are shown as
// the characters they are, never interpreted. No innerHTML anywhere, and no
// style attributes (the Content-Security-Policy forbids them); sizes that
// depend on data are set through element.style, which it allows.

const FORBIDDEN = new Set(['innerHTML', 'outerHTML', 'style', 'srcdoc']);

/* h('a', {href, class, text, onclick, dataset}, ...children): an element.
 * Children are nodes, strings (as text), arrays, or null/false (skipped). */
export function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
        if (v === undefined || v === null || v === false) continue;
        if (FORBIDDEN.has(k)) throw new Error(`h(): '${k}' is not allowed`);
        if (k === 'class') el.className = v;
        else if (k === 'text') el.textContent = String(v);
        else if (k === 'dataset') Object.assign(el.dataset, v);
        else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
        else if (typeof v === 'boolean' || k === 'value') el[k] = v;
        else el.setAttribute(k, String(v));
    }
    append(el, children);
    return el;
}

export function append(el, children) {
    for (const c of children.flat(Infinity)) {
        if (c === null || c === undefined || c === false) continue;
        el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
}

/* Replaces el's children. */
export function fill(el, ...children) {
    el.replaceChildren();
    return append(el, children);
}

/* An http(s) URL as given, for an href; anything else (javascript:, data:…)
 * becomes undefined, so h() leaves the attribute out. */
export function safeHref(url) {
    try {
        const u = new URL(url, location.href);
        return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : undefined;
    } catch {
        return undefined;
    }
}

/* A link out of the dashboard: new tab, no referrer, no opener. */
export function outLink(url, text) {
    return h('a', { href: safeHref(url), target: '_blank', rel: 'noopener noreferrer', text: text ?? url });
}

/* A short message in the status bar at the bottom; gone after a while. */
let toastTimer = 0;
export function toast(message, kind = 'ok') {
    const t = document.getElementById('toast');
    t.textContent = message;
    t.className = `toast ${kind}`;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, 3500);
}

/* Asks in the page's <dialog>; resolves true when confirmed. */
export function confirmDialog({ title, text, ok = 'Delete' }) {
    const d = document.getElementById('confirm');
    document.getElementById('confirm-title').textContent = title;
    document.getElementById('confirm-text').textContent = text;
    document.getElementById('confirm-ok').textContent = ok;
    d.returnValue = '';
    return new Promise((resolve) => {
        d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
        d.showModal();
        document.getElementById('confirm-cancel').focus();
    });
}

/* Copies text, with the older route as a fallback (no clipboard permission). */
export async function copyText(text) {
    try {
        await navigator.clipboard.writeText(text);
        return true;
    } catch {
        const ta = h('textarea', { class: 'offscreen', readonly: 'readonly' });
        ta.value = text;
        document.body.append(ta);
        ta.select();
        let ok = false;
        try { ok = document.execCommand('copy'); } catch { ok = false; }
        ta.remove();
        return ok;
    }
}

/* A button that copies 'text' and says so. */
export function copyButton(text, label = 'Copy') {
    const b = h('button', { type: 'button', class: 'button small', text: label });
    b.addEventListener('click', async () => {
        const ok = await copyText(text);
        b.textContent = ok ? 'Copied' : 'Copy failed';
        toast(ok ? `Copied ${text}` : 'Could not copy: select the text and press Ctrl+C', ok ? 'ok' : 'error');
        setTimeout(() => { b.textContent = label; }, 1500);
    });
    return b;
}

/* Saves a Blob as a file through a temporary blob: URL. */
export function download(blob, filename) {
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: filename, class: 'offscreen' });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
