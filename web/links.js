// links.js - the table of the caller's links, newest first.
//
// Without a search the table shows one page of GET /api/links at a time and
// follows its Link header (rel="next") for the next page. With a search or a
// tag the page fetches every page of the list (1,000 links a request), filters
// in this browser and says so. It does not pass the server's ?q= and ?tag=:
// those are narrower than this search (one exact substring, not every word;
// an exact tag, not any case; neither looks at tags or short_url), so a link
// this search shows would be missing.
import { can, getJSON, nextLink, request } from './api.js';
import { h, fill, copyButton, outLink, toast, confirmDialog } from './dom.js';
import { num, when, remaining } from './format.js';
import { linkBadges } from './link.js';

const PAGE = 50;
const SPARK_DAYS = 30;
const ALL_PAGE = 1000;
const ALL_MAX_PAGES = 50;

const DEFAULT_STATES = 'active,expired,exhausted';
const STATES = [
    ['active,expired,exhausted', 'Active, expired, exhausted'],
    ['active', 'Active'],
    ['expired', 'Expired'],
    ['exhausted', 'Exhausted (click limit used up)'],
    ['deleted', 'Deleted'],
    ['disabled', 'Disabled'],
    ['all', 'All'],
];

/* The last days' clicks as small bars (the list's ?spark=N), with the
 * figures in words for a screen reader. */
function sparkline(days) {
    const max = Math.max(...days);
    const total = days.reduce((a, b) => a + b, 0);
    const box = h('span', {
        class: 'spark', role: 'img',
        'aria-label': `Last ${days.length} days: ${num(total)} clicks${total ? `, at most ${num(max)} a day` : ''}`,
        title: `Last ${days.length} days: ${num(total)} clicks`,
    });
    for (const n of days) {
        const b = h('span', { class: n ? 'spark-bar' : 'spark-bar zero' });
        b.style.height = `${n ? Math.max(12, (100 * n) / max) : 6}%`;
        box.append(b);
    }
    return box;
}

/* Every link of 'state' (all pages), for filtering here. */
async function fetchAll(state, ctx) {
    // The server reads query values undecoded: 'state' (letters and commas)
    // goes as it is.
    let url = `/api/links?limit=${ALL_PAGE}&state=${state}`;
    const out = [];
    let pages = 0;
    while (url && pages < ALL_MAX_PAGES) {
        const { data, res } = await getJSON(url);
        if (!ctx.alive()) return null;
        out.push(...data);
        url = nextLink(res.headers.get('Link'));
        pages++;
    }
    return { links: out, truncated: !!url };
}

function matches(link, q, tag) {
    if (tag && !(link.tags || []).some((t) => t.toLowerCase() === tag.toLowerCase())) return false;
    if (!q) return true;
    const hay = [link.code, link.short_url, link.url, link.title, link.note, ...(link.tags || [])]
        .filter(Boolean).join('\n').toLowerCase();
    return q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
}

export function renderLinks(view, params, ctx) {
    const state = { q: params.get('q') || '', tag: params.get('tag') || '', st: params.get('state') || DEFAULT_STATES };
    if (!STATES.some(([v]) => v === state.st)) state.st = DEFAULT_STATES;
    let pages = [null];       // URL of each page seen (null: the first)
    let pageIndex = 0;
    let all = null;           // {links, truncated} while filtering here
    let localPage = 0;

    const search = h('input', { type: 'search', id: 'search', placeholder: 'Code, URL, title, note or tag', value: state.q, autocomplete: 'off' });
    const tag = h('input', { type: 'text', id: 'tag', placeholder: 'any', value: state.tag, list: 'tag-list', autocomplete: 'off' });
    const tagList = h('datalist', { id: 'tag-list' });
    const stateSel = h('select', { id: 'state' }, STATES.map(([v, t]) => h('option', { value: v, text: t })));
    stateSel.value = state.st;
    const refresh = h('button', { type: 'button', class: 'button ghost', text: 'Refresh' });
    const note = h('p', { class: 'muted filter-note', role: 'status' });
    const tableWrap = h('div', { class: 'table-wrap' });
    const prev = h('button', { type: 'button', class: 'button ghost', text: '← Newer' });
    const next = h('button', { type: 'button', class: 'button ghost', text: 'Older →' });
    const pageInfo = h('span', { class: 'muted' });

    view.replaceChildren(h('section', { class: 'links-page' },
        h('div', { class: 'page-head' },
            h('h1', { text: 'Links' }),
            can.write() ? h('a', { class: 'button primary', href: '#/new', text: 'New link' }) : null),
        h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() },
            h('div', { class: 'field grow' }, h('label', { for: 'search', text: 'Search' }), search),
            h('div', { class: 'field' }, h('label', { for: 'tag', text: 'Tag' }), tag, tagList),
            h('div', { class: 'field' }, h('label', { for: 'state', text: 'State' }), stateSel),
            h('div', { class: 'field end' }, refresh)),
        note,
        tableWrap,
        h('nav', { class: 'pager', 'aria-label': 'Pages' }, prev, pageInfo, next)));

    const filtering = () => !!(state.q || state.tag);

    const saveHash = () => {
        const p = new URLSearchParams();
        if (state.q) p.set('q', state.q);
        if (state.tag) p.set('tag', state.tag);
        if (state.st !== DEFAULT_STATES) p.set('state', state.st);
        const s = p.toString();
        history.replaceState(null, '', `#/links${s ? `?${s}` : ''}`);
    };

    const row = (l) => {
        const del = l.state === 'deleted' || !can.write() ? null : h('button', {
            type: 'button', class: 'button small danger-ghost', text: 'Delete', 'aria-label': `Delete ${l.code}`,
            onclick: () => remove(l),
        });
        return h('tr', { dataset: { code: l.code } },
            h('td', { class: 'code' },
                h('a', { href: `#/link/${encodeURIComponent(l.code)}`, class: 'code-link', text: l.code }),
                h('div', { class: 'muted small' }, outLink(l.short_url))),
            h('td', { class: 'dest' },
                l.title ? h('div', { class: 'title', text: l.title }) : null,
                l.url ? h('div', { class: 'url' }, outLink(l.url)) : h('div', { class: 'muted', text: '(removed)' }),
                (l.tags || []).length ? h('div', { class: 'tags' }, l.tags.map((t) => h('button', {
                    type: 'button', class: 'tag', text: t, title: `Only links tagged ${t}`,
                    onclick: () => { tag.value = t; onFilter(); },
                }))) : null),
            h('td', { class: 'num clicks', dataset: { label: 'Clicks' }, title: `${num(l.bot_clicks)} bot clicks apart` },
                h('span', { text: num(l.clicks) }), l.spark ? sparkline(l.spark) : null),
            h('td', { class: 'created', dataset: { label: 'Created' }, title: l.created_at, text: when(l.created_at) }),
            h('td', { class: 'remaining', dataset: { label: 'Expires in' }, title: l.expires_at ? `expires ${when(l.expires_at)}` : 'no expiry', text: remaining(l) }),
            h('td', { class: 'state' }, h('span', { class: `badge ${l.state}`, text: l.state }), ' ', linkBadges(l)),
            h('td', {}, h('div', { class: 'row-actions' }, copyButton(l.short_url), del)));
    };

    const table = (links) => {
        if (!links.length) {
            return h('div', { class: 'panel empty' },
                filtering() ? h('p', { text: 'No link matches.' })
                    : h('p', {}, 'No links here yet. ', h('a', { href: '#/new', text: 'Create one' }), '.'));
        }
        return h('table', { class: 'links', id: 'links-table' },
            h('thead', {}, h('tr', {},
                ['Short link', 'Destination', 'Clicks', 'Created', 'Days remaining', 'State', ''].map((t, i) =>
                    h('th', { scope: 'col', class: i === 2 ? 'num' : null, text: t })))),
            h('tbody', {}, links.map(row)));
    };

    const seeTags = (links) => {
        const have = new Set([...tagList.options].map((o) => o.value));
        for (const l of links) for (const t of l.tags || []) {
            if (!have.has(t)) { have.add(t); tagList.append(h('option', { value: t })); }
        }
    };

    const load = async () => {
        tableWrap.setAttribute('aria-busy', 'true');
        try {
            if (filtering()) {
                if (!all) {
                    note.textContent = 'Fetching all your links to search them…';
                    all = await fetchAll(state.st, ctx);
                    if (!all) return;
                }
                seeTags(all.links);
                const hits = all.links.filter((l) => matches(l, state.q, state.tag));
                const pagesN = Math.max(1, Math.ceil(hits.length / PAGE));
                localPage = Math.min(localPage, pagesN - 1);
                fill(tableWrap, table(hits.slice(localPage * PAGE, (localPage + 1) * PAGE)));
                note.textContent = `${num(hits.length)} of ${num(all.links.length)} links match. ` +
                    'Searched in this browser: the server does not filter by text or tag yet.' +
                    (all.truncated ? ` Only the newest ${num(all.links.length)} were searched.` : '');
                prev.disabled = localPage === 0;
                next.disabled = localPage >= pagesN - 1;
                pageInfo.textContent = `Page ${localPage + 1} of ${pagesN}`;
            } else {
                const url = pages[pageIndex] || `/api/links?limit=${PAGE}&state=${state.st}&spark=${SPARK_DAYS}`;
                const { data, res } = await getJSON(url);
                if (!ctx.alive()) return;
                const nxt = nextLink(res.headers.get('Link'));
                pages = pages.slice(0, pageIndex + 1);
                if (nxt) pages.push(nxt);
                seeTags(data);
                fill(tableWrap, table(data));
                note.textContent = '';
                prev.disabled = pageIndex === 0;
                next.disabled = !nxt;
                pageInfo.textContent = `Page ${pageIndex + 1}`;
            }
        } catch (e) {
            if (!ctx.alive()) return;
            fill(tableWrap, h('p', { class: 'error', role: 'alert', text: `Could not load your links: ${e.message}` }));
        } finally {
            tableWrap.removeAttribute('aria-busy');
        }
    };

    const reset = () => { pages = [null]; pageIndex = 0; all = null; localPage = 0; };

    let timer = 0;
    const onFilter = () => {
        const q = search.value.trim();
        const t = tag.value.trim();
        if (q === state.q && t === state.tag) return;
        // The fetched list serves every search; only a new state refetches.
        state.q = q;
        state.tag = t;
        localPage = 0;
        if (!filtering()) reset();
        saveHash();
        load();
    };
    search.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(onFilter, 200); });
    tag.addEventListener('change', onFilter);
    tag.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(onFilter, 300); });
    stateSel.addEventListener('change', () => { state.st = stateSel.value; reset(); saveHash(); load(); });
    refresh.addEventListener('click', () => { all = null; if (!filtering()) pages = pages.slice(0, pageIndex + 1); load(); });
    prev.addEventListener('click', () => { if (filtering()) localPage--; else pageIndex--; load(); });
    next.addEventListener('click', () => { if (filtering()) localPage++; else pageIndex++; load(); });
    ctx.onLeave(() => clearTimeout(timer));

    async function remove(l) {
        const ok = await confirmDialog({
            title: `Delete ${l.code}?`,
            text: `${l.short_url} will answer 410 Gone from now on, and the code is never handed out again. Its click statistics stay.`,
            ok: 'Delete link',
        });
        if (!ok) return;
        try {
            await request(`/api/links/${encodeURIComponent(l.code)}`, { method: 'DELETE' });
            toast(`Deleted ${l.code}`);
            all = null;
            load();
        } catch (e) {
            toast(`Could not delete ${l.code}: ${e.message}`, 'error');
        }
    }

    load();
}
