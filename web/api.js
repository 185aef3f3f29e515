// api.js - the dashboard's only way to the server: the JSON API under /api,
// signed in by the session cookie (HttpOnly: no script here ever holds it)
// and, on every write, the session's CSRF token in X-CSRF-Token. No key and
// no token is kept in the browser's storage. Errors arrive as ApiError
// carrying the API's {"error": {"code", "message", "field"}}.

export class ApiError extends Error {
    constructor(status, code, message, field = null) {
        super(message);
        this.status = status;
        this.code = code;
        this.field = field;
    }
}

/* Who is signed in: {name, role, csrf_token}, or null. Held in this page's
 * memory only; load() asks the server (the cookie says). */
let current = null;

/* Called when the session ends under the page (signed out elsewhere,
 * disabled, idle too long). */
let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

async function errorOf(res) {
    let e = null;
    try { e = (await res.json()).error; } catch { /* not JSON */ }
    if (e && typeof e.message === 'string') return new ApiError(res.status, e.code, e.message, e.field ?? null);
    return new ApiError(res.status, 'http', `shortd answered ${res.status} ${res.statusText}`);
}

const WRITES = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

async function send(path, { method = 'GET', body, headers = {}, signal } = {}) {
    const h = { Accept: 'application/json', ...headers };
    if (body !== undefined) h['Content-Type'] = 'application/json';
    if (WRITES.has(method) && current) h['X-CSRF-Token'] = current.csrf_token;
    try {
        return await fetch(path, {
            method,
            headers: h,
            body: body === undefined ? undefined : JSON.stringify(body),
            cache: 'no-store',
            credentials: 'same-origin',
            signal,
        });
    } catch (e) {
        if (e.name === 'AbortError') throw e;
        throw new ApiError(0, 'network', 'Cannot reach shortd. Is it running?');
    }
}

/* fetch() as the signed-in user; resolves with the Response when it is
 * 2xx, throws ApiError otherwise. */
export async function request(path, opts = {}) {
    const res = await send(path, opts);
    if (res.ok) return res;
    const err = await errorOf(res);
    if (res.status === 401) {
        current = null;
        onUnauthorized(err);
    }
    throw err;
}

/* What the signed-in role may do, for what the pages offer: a viewer reads
 * only (no create, edit, delete or key buttons); only an admin sees the
 * admin pages and disables links. The API refuses the rest anyway: this
 * only keeps buttons that would fail off the page. */
export const can = {
    write: () => !!current && current.role !== 'viewer',
    admin: () => !!current && current.role === 'admin',
};

export const session = {
    /* {name, role, csrf_token} or null */
    get user() { return current; },
    /* Asks the server who this browser is signed in as. */
    async load() {
        const res = await send('/api/session');
        current = res.ok ? await res.json() : null;
        return current;
    },
    /* Resolves with the user; throws ApiError (401: wrong name or password). */
    async signIn(name, password) {
        const res = await send('/api/session', { method: 'POST', body: { name, password } });
        if (!res.ok) throw await errorOf(res);
        current = await res.json();
        return current;
    },
    /* The first admin, made with the setup token (POST /api/setup), who is
     * then signed in. Throws ApiError (401: the token is unknown, used or
     * expired; 409: setup was done already). */
    async setup(token, name, password) {
        const res = await send('/api/setup', { method: 'POST', body: { token, name, password } });
        if (!res.ok) throw await errorOf(res);
        current = await res.json();
        return current;
    },
    /* Ends the session on the server (on every node) and here. */
    async signOut() {
        try {
            if (current) await send('/api/session', { method: 'DELETE' });
        } finally {
            current = null;
        }
    },
};

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

/* A link's QR code as a Blob (fetched like any API answer). */
export async function qrBlob(code, format, scale) {
    const res = await request(`/api/links/${encodeURIComponent(code)}/qr?format=${format}&scale=${scale}`, {
        headers: { Accept: format === 'png' ? 'image/png' : 'image/svg+xml' },
    });
    return res.blob();
}
