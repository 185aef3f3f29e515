// bulk.js - the Import and export page: every link with its daily counts as
// CSV or JSON (GET /api/export), and a CSV file of new links sent through
// POST /api/links/bulk, with the server's answer shown for each row.
import { can, request } from './api.js';
import { h, fill, outLink, toast, download } from './dom.js';
import { num } from './format.js';

// Columns a CSV may have (a header row names them, in any order), as
// POST /api/links takes them; tags are separated by '|' or ';'.
const COLUMNS = ['url', 'alias', 'title', 'note', 'tags', 'expires_at', 'ttl', 'permanent', 'domain', 'max_clicks', 'utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content'];
const MAX_ROWS = 1000;

/* RFC 4180 CSV into rows of fields. Written here because the dashboard loads
 * plain modules with no bundler, and this is all it needs: quoted fields
 * with "" for a quote, CRLF or LF line ends, commas or semicolons. */
export function parseCsv(text) {
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const firstLine = text.split(/\r?\n/, 1)[0];
    const sep = (firstLine.match(/;/g) || []).length > (firstLine.match(/,/g) || []).length ? ';' : ',';
    const rows = [];
    let row = [];
    let f = '';
    let quoted = false;
    for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (quoted) {
            if (c === '"' && text[i + 1] === '"') { f += '"'; i++; } else if (c === '"') quoted = false; else f += c;
        } else if (c === '"' && f === '') {
            quoted = true;
        } else if (c === sep) {
            row.push(f); f = '';
        } else if (c === '\n' || c === '\r') {
            if (c === '\r' && text[i + 1] === '\n') i++;
            row.push(f); f = '';
            rows.push(row); row = [];
        } else {
            f += c;
        }
    }
    if (f !== '' || row.length) { row.push(f); rows.push(row); }
    return rows.filter((r) => r.some((x) => x.trim() !== ''));
}

/* The rows as POST /api/links bodies; throws a message naming the problem. */
export function linksFromCsv(text) {
    const rows = parseCsv(text);
    if (!rows.length) throw new Error('The file is empty.');
    const head = rows[0].map((x) => x.trim().toLowerCase());
    const unknown = head.filter((x) => !COLUMNS.includes(x));
    if (!head.includes('url')) throw new Error(`The first row must name the columns, one of them "url" (found: ${head.join(', ') || 'nothing'}).`);
    if (unknown.length) throw new Error(`Unknown column ${unknown.map((x) => `"${x}"`).join(', ')}: the columns are ${COLUMNS.join(', ')}.`);
    if (rows.length - 1 > MAX_ROWS) throw new Error(`At most ${MAX_ROWS} links at once (this file has ${rows.length - 1}).`);
    return rows.slice(1).map((r) => {
        const o = {};
        const utm = {};
        head.forEach((col, i) => {
            const v = (r[i] ?? '').trim();
            if (v === '') return;
            if (col.startsWith('utm_')) utm[col.slice(4)] = v;
            else if (col === 'tags') o.tags = v.split(/[|;]/).map((t) => t.trim()).filter(Boolean);
            else if (col === 'permanent') o.permanent = /^(1|true|yes)$/i.test(v);
            else if (col === 'ttl' || col === 'max_clicks') o[col] = /^\d+$/.test(v) ? Number(v) : v;
            else o[col] = v;
        });
        if (Object.keys(utm).length) o.utm = utm;
        return o;
    });
}

export function renderBulk(view, ctx) {
    const exportBtn = (format) => h('button', {
        type: 'button', class: 'button', id: `export-${format}`, text: `Download ${format.toUpperCase()}`,
        onclick: async (ev) => {
            const b = ev.currentTarget;
            b.disabled = true;
            try {
                const res = await request(`/api/export?format=${format}`, { headers: { Accept: format === 'csv' ? 'text/csv' : 'application/json' } });
                download(await res.blob(), `shortd-links-${new Date().toISOString().slice(0, 10)}.${format}`);
                toast(`Exported as ${format.toUpperCase()}`);
            } catch (e) {
                toast(`Could not export: ${e.message}`, 'error');
            } finally {
                b.disabled = false;
            }
        },
    });

    const file = h('input', { type: 'file', id: 'bulk-file', accept: '.csv,text/csv', 'aria-describedby': 'bulk-help bulk-error' });
    const err = h('p', { class: 'field-error', id: 'bulk-error', role: 'alert' });
    const submit = h('button', { type: 'submit', class: 'button primary', text: 'Create the links' });
    const result = h('div', { id: 'bulk-result', 'aria-live': 'polite' });
    const form = h('form', { class: 'bulk-form' },
        h('div', { class: 'field' }, h('label', { for: 'bulk-file', text: 'CSV file' }), file,
            h('p', { class: 'help', id: 'bulk-help' },
                'A header row, then one link a row. Columns: ', h('code', { text: COLUMNS.join(', ') }),
                '. Only url is needed; tags are separated by | . Up to 1,000 rows; rows with a problem are reported and the others still made.'),
            err),
        h('div', { class: 'actions' }, submit));

    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        err.textContent = '';
        result.replaceChildren();
        const f = file.files[0];
        if (!f) { err.textContent = 'Choose a CSV file first.'; file.focus(); return; }
        let links;
        try {
            links = linksFromCsv(await f.text());
            if (!links.length) throw new Error('The file has a header row but no links.');
        } catch (e) {
            err.textContent = e.message;
            file.focus();
            return;
        }
        submit.disabled = true;
        submit.textContent = 'Creating…';
        try {
            const res = await request('/api/links/bulk', { method: 'POST', body: { links }, headers: { 'Idempotency-Key': crypto.randomUUID() } });
            const { results } = await res.json();
            if (!ctx.alive()) return;
            const ok = results.filter((r) => r.status < 300).length;
            fill(result,
                h('p', { class: 'bulk-summary', text: `${num(ok)} of ${num(results.length)} rows made a link${ok < results.length ? `; ${num(results.length - ok)} refused, see below` : ''}.` }),
                h('div', { class: 'table-wrap' }, h('table', { class: 'bulk-results', id: 'bulk-table' },
                    h('thead', {}, h('tr', {}, ['Row', 'Result', 'Short link or problem'].map((t) => h('th', { scope: 'col', text: t })))),
                    h('tbody', {}, results.map((r, i) => h('tr', { class: r.status < 300 ? 'ok' : 'bad', dataset: { row: String(i + 2), status: String(r.status) } },
                        h('td', { text: `${i + 2}` }),
                        h('td', {}, h('span', { class: `badge ${r.status < 300 ? 'active' : 'deleted'}`, text: r.status === 201 ? 'created' : r.status === 200 ? 'existing' : `refused (${r.status})` })),
                        h('td', {}, r.link
                            ? [h('a', { href: `#/link/${encodeURIComponent(r.link.code)}`, text: r.link.code }), ' ', outLink(r.link.short_url)]
                            : h('span', { class: 'error', text: `${r.error?.field ? `${r.error.field}: ` : ''}${r.error?.message || 'refused'}` }))))))));
        } catch (e) {
            err.textContent = `The upload was refused: ${e.message}`;
        } finally {
            submit.disabled = false;
            submit.textContent = 'Create the links';
        }
    });

    view.replaceChildren(h('div', { class: 'bulk-page' },
        h('section', { class: 'panel' },
            h('h1', { text: 'Import and export' }),
            h('h2', { text: 'Export' }),
            h('p', { class: 'muted', text: 'Every link of yours with its daily clicks, unique visitors and bot clicks; the JSON also has each link\'s referrers, countries, browsers and the other dimensions.' }),
            h('div', { class: 'actions' }, exportBtn('csv'), exportBtn('json'))),
        // A viewer makes no links: no upload.
        can.write() ? h('section', { class: 'panel' },
            h('h2', { text: 'Upload a CSV of links' }),
            form,
            result) : null));
}
