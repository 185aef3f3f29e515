// api.js - the dashboard's only way to the server: the JSON API under /api,
// with the API key from local storage as a bearer token. Errors arrive as
// ApiError carrying the API's {"error": {"code", "message", "field"}}.

const STORAGE_KEY = 'shortd.apiKey';

export const session = {
    get key() { return localStorage.getItem(STORAGE_KEY) || ''; },
    set(key) { localStorage.setItem(STORAGE_KEY, key); },
    clear() { localStorage.removeItem(STORAGE_KEY); },
};

export class ApiError extends Error {
    constructor(status, code, message, field = null) {
        super(message);
        this.status = status;
        this.code = code;
        this.field = field;
    }
}

/* Called when a stored key stops working (revoked, or another database). */
let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

async function errorOf(res) {
    let e = null;
    try { e = (await res.json()).error; } catch { /* not JSON */ }
    if (e && typeof e.message === 'string') return new ApiError(res.status, e.code, e.message, e.field ?? null);
    return new ApiError(res.status, 'http', `shortd answered ${res.status} ${res.statusText}`);
}

/* fetch() with the key; resolves with the Response when it is 2xx, throws
 * ApiError otherwise. key: use this key instead of the stored one. */
export async function request(path, { method = 'GET', body, headers = {}, key, signal } = {}) {
    const h = { Accept: 'application/json', ...headers, Authorization: `Bearer ${key ?? session.key}` };
    if (body !== undefined) h['Content-Type'] = 'application/json';
    let res;
    try {
        res = await fetch(path, {
            method,
            headers: h,
            body: body === undefined ? undefined : JSON.stringify(body),
            cache: 'no-store',
            credentials: 'omit',
            signal,
        });
    } catch (e) {
        if (e.name === 'AbortError') throw e;
        throw new ApiError(0, 'network', 'Cannot reach shortd. Is it running?');
    }
    if (res.ok) return res;
    const err = await errorOf(res);
    if (res.status === 401 && key === undefined) onUnauthorized(err);
    throw err;
}

export async function getJSON(path, opts) {
    const res = await request(path, opts);
    return { data: await res.json(), res };
}

/* The URL of rel="next" in a Link header, or null. */
export function nextLink(header) {
    if (!header) return null;
    for (const part of header.split(/,(?=\s*<)/)) {
        const m = /^\s*<([^>]*)>\s*(.*)$/.exec(part);
        if (m && /(^|;)\s*rel="?next"?\s*(;|$)/i.test(m[2])) return m[1];
    }
    return null;
}

/* A link's QR code as a Blob (the route needs the key, so no plain <img src>). */
export async function qrBlob(code, format, scale) {
    const res = await request(`/api/links/${encodeURIComponent(code)}/qr?format=${format}&scale=${scale}`, {
        headers: { Accept: format === 'png' ? 'image/png' : 'image/svg+xml' },
    });
    return res.blob();
}
