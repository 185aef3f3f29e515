// sites.js - the Sites section: the sites whose pages send beacons to this
// shortd (/api/sites), each with its analytics, its settings and its setup.
//
//   #/sites                          the list, and a form to add a site
//   #/site/ID?days|from&to&bots      its page views, events and the probe
//   #/site/ID/settings               hosts, badge, read tokens, delete
//   #/site/ID/setup                  the snippet, and a live check
//
// A site's figures are counted independently of each other (no visitor is
// followed from one to the next): each card is one dimension on its own.
import { can, getJSON, request } from './api.js';
import { h, fill, copyButton, toast, confirmDialog, download } from './dom.js';
import { num, pct, when, isoDay, addDays, daysBetween, country, language, botKind } from './format.js';
import { timeSeries, bars, heatmap } from './charts.js';

const PRESETS = [7, 30, 90];
const MAX_DAYS = 1000;
const POLL_MS = 3000;
const ID_RE = /^[a-z0-9-]{1,64}$/;

// The cards of a site's page, one a dimension: [stats key, title, label].
const PAGE_DIMS = [
    ['paths', 'Pages', (k) => k],
    ['referrers', 'Referrers', (k) => k],
    ['ref_groups', 'Referrer groups', (k) => k],
    ['hosts', 'Hosts', (k) => k],
    ['countries', 'Countries', country],
    ['browsers', 'Browsers', (k) => k],
    ['os', 'Operating systems', (k) => k],
    ['devices', 'Devices', (k) => k],
    ['viewports', 'Screen widths', viewport],
    ['languages', 'Languages', language],
    ['timezones', 'Time zones', (k) => k],
    ['utm_source', 'UTM source', (k) => k],
    ['utm_medium', 'UTM medium', (k) => k],
    ['utm_campaign', 'UTM campaign', (k) => k],
];

const VIEWPORTS = { xs: 'Phones (under 576 px)', sm: 'Large phones (576–767 px)', md: 'Tablets (768–991 px)', lg: 'Laptops (992–1199 px)', xl: 'Desktops (1200 px and more)' };
function viewport(k) { return VIEWPORTS[k] || k; }

const PROBE = { '<150': 'Under 150 ms (too quick for a person?)', '150-2000': '150 ms to 2 s', '>2000': 'Over 2 s' };

// A count: a number, or the sum of a dimension's {value: count}.
const sum = (o) => (typeof o === 'number' ? o : Object.values(o || {}).reduce((s, v) => s + v, 0));
const sitePath = (id) => `/api/sites/${encodeURIComponent(id)}`;
const siteHash = (id) => `#/site/${encodeURIComponent(id)}`;

/* The hosts typed in a field: split on commas and spaces, lower case. */
function parseHosts(text) {
    return [...new Set(text.split(/[\s,]+/).map((s) => s.trim().toLowerCase()).filter(Boolean))];
}

/* The snippet a site's pages include: the script from this shortd, and
 * the queue for custom events sent before it has loaded. */
export function snippet(origin = location.origin) {
    return `<script defer src="${origin}/s.js"></script>\n` +
        '<script>window.shortd = window.shortd || function () { (shortd.q = shortd.q || []).push(arguments); };</script>';
}

function card(title, ...body) {
    return h('section', { class: 'card' }, h('h2', { text: title }), ...body);
}

function kpi(label, value, sub, id) {
    return h('div', { class: 'kpi', id },
        h('div', { class: 'kpi-label', text: label }),
        h('div', { class: 'kpi-value', text: value }),
        sub ? h('div', { class: 'kpi-sub', text: sub }) : null);
}

function siteTabs(id, current) {
    const tabs = [['stats', siteHash(id), 'Analytics'], ['settings', `${siteHash(id)}/settings`, 'Settings'], ['setup', `${siteHash(id)}/setup`, 'Setup']]
        .filter(([k]) => k !== 'settings' || can.write());
    return h('nav', { class: 'presets site-tabs', 'aria-label': `Site ${id}` }, tabs.map(([k, href, text]) => h('a', {
        class: 'button seg', href, text, 'aria-current': k === current ? 'page' : null,
    })));
}

function loadError(view, id, e, what) {
    fill(view, h('div', { class: 'panel' },
        h('h1', { text: id }),
        h('p', { class: 'error', role: 'alert', text: e.status === 404 ? `No site “${id}” among yours.` : `Could not load ${what}: ${e.message}` }),
        h('p', {}, h('a', { href: '#/sites', text: '← All sites' }))));
}

/* ------------------------------------------------------------- #/sites */

export function renderSites(view, ctx) {
    const idIn = h('input', { type: 'text', id: 'site-id', name: 'id', autocomplete: 'off', spellcheck: 'false', placeholder: 'my-blog', 'aria-describedby': 'site-id-help site-id-err' });
    const hostsIn = h('input', { type: 'text', id: 'site-hosts', name: 'hosts', autocomplete: 'off', spellcheck: 'false', placeholder: 'blog.example.org, www.example.org', 'aria-describedby': 'site-hosts-help site-hosts-err' });
    const badgeIn = h('input', { type: 'checkbox', id: 'site-badge', name: 'badge' });
    const idErr = h('p', { class: 'field-error', id: 'site-id-err', role: 'alert' });
    const hostsErr = h('p', { class: 'field-error', id: 'site-hosts-err', role: 'alert' });
    const formErr = h('p', { class: 'form-error', id: 'site-form-err', role: 'alert' });
    const form = h('form', { class: 'site-form', id: 'site-form', 'aria-labelledby': 'site-form-title' },
        h('h2', { id: 'site-form-title', text: 'Add a site' }),
        h('div', { class: 'row2' },
            h('div', { class: 'field' }, h('label', { for: 'site-id', text: 'Site id' }), idIn,
                h('p', { class: 'help', id: 'site-id-help', text: 'Lower-case letters, digits and “-”, up to 64: it names the site in the API and the dashboard.' }), idErr),
            h('div', { class: 'field' }, h('label', { for: 'site-hosts', text: 'Hosts' }), hostsIn,
                h('p', { class: 'help', id: 'site-hosts-help', text: 'The host names its pages are served from, separated by commas. Beacons from any other host are counted nowhere.' }), hostsErr)),
        h('div', { class: 'field check' }, badgeIn, h('label', { for: 'site-badge', text: 'Public badge: anyone may see its all-time page views as an image' })),
        formErr,
        h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Add site' })));
    const list = h('div', { id: 'site-list', 'aria-live': 'polite' }, h('p', { class: 'muted', text: 'Loading…' }));

    const load = async () => {
        try {
            const { data } = await getJSON('/api/sites');
            if (!ctx.alive()) return;
            const sites = Array.isArray(data) ? data : data.sites || [];
            fill(list, sites.length ? h('ul', { class: 'host-list site-list' }, sites.map((s) => h('li', { dataset: { site: s.id } },
                h('div', { class: 'host-line' },
                    h('a', { class: 'site-name', href: siteHash(s.id) }, h('strong', { text: s.id })),
                    s.badge ? h('span', { class: 'pill', text: 'badge' }) : null,
                    h('span', { class: 'muted small', text: (s.hosts || []).join(', ') || 'no host yet' }),
                    h('span', { class: 'site-actions' },
                        h('a', { class: 'button small', href: `${siteHash(s.id)}/setup`, text: 'Setup', 'aria-label': `Setup of ${s.id}` }),
                        can.write() ? h('a', { class: 'button small', href: `${siteHash(s.id)}/settings`, text: 'Settings', 'aria-label': `Settings of ${s.id}` }) : null)))))
                : h('p', { class: 'muted empty', text: 'No site yet: add one above, then put its snippet on your pages.' }));
        } catch (e) {
            if (ctx.alive()) fill(list, h('p', { class: 'error', role: 'alert', text: `Could not load the sites: ${e.message}` }));
        }
    };

    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        for (const [el, err] of [[idIn, idErr], [hostsIn, hostsErr]]) { err.textContent = ''; el.removeAttribute('aria-invalid'); }
        formErr.textContent = '';
        const id = idIn.value.trim();
        const hosts = parseHosts(hostsIn.value);
        const bad = (el, err, msg) => { err.textContent = msg; el.setAttribute('aria-invalid', 'true'); el.focus(); };
        if (!ID_RE.test(id)) return bad(idIn, idErr, 'Use 1 to 64 lower-case letters, digits and “-”.');
        if (!hosts.length) return bad(hostsIn, hostsErr, 'Enter at least one host name, such as blog.example.org.');
        try {
            await request('/api/sites', { method: 'POST', body: { id, hosts, badge: badgeIn.checked } });
            toast(`Added ${id}`);
            location.hash = `${siteHash(id)}/setup`;
        } catch (e) {
            if (e.field === 'id') bad(idIn, idErr, e.message);
            else if (e.field === 'hosts' || e.field === 'host') bad(hostsIn, hostsErr, e.message);
            else formErr.textContent = e.message;
        }
    });

    fill(view, h('section', { class: 'panel sites-page' },
        h('h1', { text: 'Sites' }),
        h('p', { class: 'muted', text: 'Count the page views of your own sites here, as shortd counts clicks: no cookie, no address kept, nothing that follows a visitor.' }),
        can.write() ? form : null,
        h('h2', { class: 'card-sub', text: 'Your sites' }),
        list));
    load();
}

/* ------------------------------------------------------ #/site/ID (stats) */

function rangeOf(params) {
    const today = isoDay(new Date());
    const from = params.get('from');
    const to = params.get('to');
    if (from && to && /^\d{4}-\d{2}-\d{2}$/.test(from) && /^\d{4}-\d{2}-\d{2}$/.test(to)) return { from, to, preset: null };
    const days = PRESETS.includes(Number(params.get('days'))) ? Number(params.get('days')) : 30;
    return { from: addDays(today, -(days - 1)), to: today, preset: days };
}

/* The totals of a site's stats answer (page views and bot hits, the flags'
 * counts, the probe's verdicts). */
export function totals(stats) {
    const bot = stats.bot || {};
    return {
        pv: stats.page_views ?? 0,
        uv: sum(stats.uv),
        sessions: sum(stats.sessions),
        bounces: sum(stats.bounce),
        hi: sum(stats.hi),
        uaBots: bot.ua ?? stats.bots ?? 0,
        synthetic: bot.synthetic ?? 0,
        events: sum(stats.events),
    };
}

export function renderSite(view, id, params, ctx) {
    const range = rangeOf(params);
    const showBots = params.get('bots') === '1';
    const base = siteHash(id);
    const go = (p) => {
        const q = new URLSearchParams(p);
        if (document.getElementById('show-bots')?.checked) q.set('bots', '1');
        location.hash = `${base}?${q}`;
    };
    view.replaceChildren(h('p', { class: 'muted loading', text: 'Loading…' }));
    Promise.all([getJSON(sitePath(id)), getJSON(`${sitePath(id)}/stats?from=${range.from}&to=${range.to}`)]).then(([{ data: site }, { data: stats }]) => {
        if (ctx.alive()) draw(site, stats);
    }, (e) => {
        if (ctx.alive()) loadError(view, id, e, 'this site');
    });

    function draw(site, stats) {
        const t = totals(stats);
        const head = h('section', { class: 'panel link-head' },
            h('p', { class: 'crumbs' }, h('a', { href: '#/sites', text: '← Sites' })),
            h('div', { class: 'link-title' }, h('h1', { text: site.id }), site.badge ? h('span', { class: 'pill', text: 'badge' }) : null),
            h('p', { class: 'muted', text: (site.hosts || []).join(', ') || 'No host: beacons are counted nowhere until it has one.' }),
            site.badge ? h('p', { class: 'muted small', id: 'site-total', text: `${num(site.page_views_total ?? 0)} page views since the badge was turned on` }) : null,
            siteTabs(site.id, 'stats'));

        const from = h('input', { type: 'date', id: 'range-from', value: range.from, max: isoDay(new Date()) });
        const to = h('input', { type: 'date', id: 'range-to', value: range.to, max: isoDay(new Date()) });
        const rangeErr = h('p', { class: 'field-error', role: 'alert', id: 'range-error' });
        const bots = h('input', { type: 'checkbox', id: 'show-bots', checked: showBots });
        const rangeForm = h('form', { class: 'range panel', 'aria-label': 'Range of days' },
            h('div', { class: 'presets', role: 'group', 'aria-label': 'Preset ranges' },
                PRESETS.map((d) => h('button', {
                    type: 'button', class: 'button seg', 'aria-pressed': String(range.preset === d), text: `${d} days`,
                    onclick: () => go({ days: String(d) }),
                }))),
            h('div', { class: 'custom' },
                h('label', { for: 'range-from', text: 'From' }), from,
                h('label', { for: 'range-to', text: 'to' }), to,
                h('button', { type: 'submit', class: 'button', text: 'Apply' })),
            h('label', { class: 'check' }, bots, ' Show bots'),
            h('button', { type: 'button', class: 'button ghost', id: 'csv', text: 'CSV', title: 'Every figure of this range as CSV, referrer groups included', onclick: saveCsv }),
            h('button', { type: 'button', class: 'button ghost', id: 'refresh', text: 'Refresh', onclick: () => ctx.rerender() }),
            rangeErr);
        async function saveCsv() {
            try {
                const res = await request(`${sitePath(site.id)}/stats?from=${range.from}&to=${range.to}&format=csv`, { headers: { Accept: 'text/csv' } });
                download(await res.blob(), `${site.id}-${range.from}-${range.to}.csv`);
            } catch (e) {
                toast(`No CSV: ${e.message}`, 'error');
            }
        }
        rangeForm.addEventListener('submit', (ev) => {
            ev.preventDefault();
            if (!from.value || !to.value) { rangeErr.textContent = 'Pick both days.'; return; }
            if (from.value > to.value) { rangeErr.textContent = 'The first day must not be after the last.'; return; }
            if (daysBetween(from.value, to.value) >= MAX_DAYS) { rangeErr.textContent = `A range is at most ${MAX_DAYS} days.`; return; }
            go({ from: from.value, to: to.value });
        });

        // Each figure is a sum of one dimension over the range's days, so a
        // visitor of two days is two unique visitors.
        const kpis = h('section', { class: 'kpis' },
            kpi('Page views', num(t.pv), `${stats.from ?? range.from} – ${stats.to ?? range.to}`, 'kpi-pv'),
            kpi('Unique visitors', num(t.uv), 'summed per day', 'kpi-uv'),
            kpi('Sessions', num(t.sessions), '30 minutes without a view ends one', 'kpi-sessions'),
            kpi('Bounce rate', t.sessions ? pct(t.bounces, t.sessions) : '–', 'sessions of one page view', 'kpi-bounce'),
            kpi('Human interaction', t.pv ? pct(t.hi, t.pv) : '–', `${num(t.hi)} page views with a first input`, 'kpi-hi'));

        const chartBox = h('div', { class: 'chart', id: 'daily-chart' });
        const series = card('Daily page views (UTC days)', chartBox);
        const heat = card('When pages are read: weekday × hour (UTC)', heatmap(stats.dowhour, { noun: 'page view' }));
        heat.id = 'heatmap-card';
        const dims = h('div', { class: 'grid-bars' }, PAGE_DIMS.map(([k, title, label]) => {
            const c = card(title, bars(stats[k], { label, total: t.pv }));
            c.dataset.dim = k;
            return c;
        }));
        const events = card('Events',
            h('p', { class: 'help', text: 'Outbound links, downloads and your own events (shortd(\'event\', name, target)). They are not page views.' }),
            h('h3', { class: 'card-sub', text: 'By name' }),
            h('div', { id: 'site-events' }, bars(stats.events, { empty: 'No event in this range.' })),
            h('h3', { class: 'card-sub', text: 'By target' }),
            h('div', { id: 'site-event-targets' }, bars(stats.event_targets, { empty: 'No event in this range.' })));
        events.id = 'events-card';
        const probe = card('First input after a page view',
            h('p', { class: 'help', text: 'How long after a page view its visitor first moved, pressed or touched. Counted on its own, never joined with the rest: read it as a trend.' }),
            h('div', { id: 'site-hi' }, bars(stats.hi, { label: (k) => PROBE[k] || k, empty: 'No input measured in this range.' })));
        probe.id = 'probe-card';
        const botCard = card('Bots',
            h('p', { class: 'help', text: 'Crawlers and headless browsers (by their user agent), and pages whose first input was made by a script (synthetic). Counted here and never in the page views.' }),
            h('div', { class: 'kpis' },
                kpi('By user agent', num(t.uaBots), null, 'kpi-bot-ua'),
                kpi('Synthetic input', num(t.synthetic), null, 'kpi-bot-synthetic')),
            h('h3', { class: 'card-sub', text: 'By kind' }),
            h('div', { id: 'bot-kinds' }, bars(stats.bot_kinds, { label: botKind, total: t.uaBots, empty: 'No bot in this range.' })));
        botCard.id = 'bots-card';
        botCard.hidden = !showBots;

        fill(view, h('div', { class: 'link-page site-page' }, head, rangeForm, kpis, series, heat,
            h('div', { class: 'grid-bars wide' }, events, probe), dims, botCard));

        const days = (stats.days || []).map((d) => ({ day: d.day, clicks: d.page_views ?? 0, bot_clicks: d.bots ?? 0 }));
        const plot = timeSeries(chartBox, days, { showBots, labels: { clicks: 'Page views', uniques: null, bots: 'Bot hits' } });
        ctx.onLeave(() => plot.destroy());
        bots.addEventListener('change', () => {
            plot.setBots(bots.checked);
            botCard.hidden = !bots.checked;
            const q = new URLSearchParams(location.hash.split('?')[1] || '');
            if (bots.checked) q.set('bots', '1'); else q.delete('bots');
            history.replaceState(null, '', `${base}?${q}`);
        });
    }
}

/* -------------------------------------------------- #/site/ID/settings */

export function renderSiteSettings(view, id, ctx) {
    view.replaceChildren(h('p', { class: 'muted loading', text: 'Loading…' }));
    getJSON(sitePath(id)).then(({ data }) => {
        if (ctx.alive()) draw(data);
    }, (e) => {
        if (ctx.alive()) loadError(view, id, e, 'this site');
    });

    function draw(site) {
        const hostsIn = h('input', { type: 'text', id: 'edit-hosts', autocomplete: 'off', spellcheck: 'false', value: (site.hosts || []).join(', '), 'aria-describedby': 'edit-hosts-help edit-hosts-err' });
        const hostsErr = h('p', { class: 'field-error', id: 'edit-hosts-err', role: 'alert' });
        const badgeIn = h('input', { type: 'checkbox', id: 'edit-badge', checked: !!site.badge });
        const badgeUrl = `${location.origin}/badge/${encodeURIComponent(site.id)}.svg`;
        const form = h('form', { class: 'site-form', id: 'site-edit', 'aria-labelledby': 'site-edit-title' },
            h('h2', { id: 'site-edit-title', text: 'Hosts and badge' }),
            h('div', { class: 'field' }, h('label', { for: 'edit-hosts', text: 'Hosts' }), hostsIn,
                h('p', { class: 'help', id: 'edit-hosts-help', text: 'Separated by commas. A page on any other host is counted nowhere.' }), hostsErr),
            h('div', { class: 'field check' }, badgeIn, h('label', { for: 'edit-badge', text: 'Public badge of all-time page views' })),
            site.badge ? h('div', { class: 'help badge-preview' },
                h('img', { src: `/badge/${encodeURIComponent(site.id)}.svg`, alt: `Badge of ${site.id}: its all-time page views`, height: '20' }),
                h('p', {}, 'Put it on a page: ', h('code', { text: `<img src="${badgeUrl}" alt="page views">` }))) : null,
            h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Save' })));
        form.addEventListener('submit', async (ev) => {
            ev.preventDefault();
            hostsErr.textContent = '';
            hostsIn.removeAttribute('aria-invalid');
            try {
                await request(sitePath(site.id), { method: 'PATCH', body: { hosts: parseHosts(hostsIn.value), badge: badgeIn.checked } });
                toast(`Saved ${site.id}`);
                ctx.rerender();
            } catch (e) {
                hostsErr.textContent = e.message;
                hostsIn.setAttribute('aria-invalid', 'true');
                hostsIn.focus();
            }
        });

        const tokenList = h('div', { id: 'token-list', 'aria-live': 'polite' }, h('p', { class: 'muted', text: 'Loading…' }));
        const fresh = h('div', { id: 'token-new', 'aria-live': 'polite' });
        const loadTokens = async () => {
            try {
                const { data } = await getJSON(sitePath(site.id));
                if (!ctx.alive()) return;
                const list = data.tokens || [];
                fill(tokenList, list.length ? h('ul', { class: 'host-list' }, list.map((tk) => h('li', { dataset: { token: String(tk.id) } },
                    h('div', { class: 'host-line' },
                        h('strong', { text: `Token ${tk.id}` }),
                        tk.created_at ? h('span', { class: 'muted small', text: ` made ${when(tk.created_at)}` }) : null,
                        h('button', { type: 'button', class: 'button small danger-ghost', text: 'Revoke', 'aria-label': `Revoke token ${tk.id}`, onclick: () => revoke(tk.id) })))))
                    : h('p', { class: 'muted empty', text: 'No read token.' }));
            } catch (e) {
                if (ctx.alive()) fill(tokenList, h('p', { class: 'error', role: 'alert', text: `Could not load the tokens: ${e.message}` }));
            }
        };
        async function revoke(tid) {
            if (!await confirmDialog({ title: `Revoke token ${tid}?`, text: 'Whoever holds it can no longer read this site\'s analytics.', ok: 'Revoke' })) return;
            try {
                await request(`${sitePath(site.id)}/tokens/${encodeURIComponent(tid)}`, { method: 'DELETE' });
                toast(`Revoked token ${tid}`);
                loadTokens();
            } catch (e) {
                toast(`Could not revoke it: ${e.message}`, 'error');
            }
        }
        const makeToken = h('button', { type: 'button', class: 'button', id: 'token-create', text: 'New read token', onclick: async () => {
            try {
                const res = await request(`${sitePath(site.id)}/tokens`, { method: 'POST' });
                const tk = await res.json();
                if (!ctx.alive()) return;
                const statsUrl = `${location.origin}${sitePath(site.id)}/stats?token=${encodeURIComponent(tk.token)}`;
                fill(fresh, h('div', { class: 'notice' },
                    h('p', { text: 'The token, shown this once: keep it now.' }),
                    h('p', {}, h('code', { class: 'token', id: 'token-value', text: tk.token }), ' ', copyButton(tk.token)),
                    h('p', { class: 'help' }, 'Its stats: ', h('code', { text: statsUrl }))));
                loadTokens();
            } catch (e) {
                toast(`No token: ${e.message}`, 'error');
            }
        } });

        const del = h('button', { type: 'button', class: 'button danger-ghost', id: 'site-delete', text: 'Delete site', onclick: async () => {
            const ok = await confirmDialog({
                title: `Delete ${site.id}?`,
                text: `Every page view and event counted for ${site.id}, its hosts and its read tokens are deleted. Beacons from its pages are counted nowhere from now on.`,
                ok: 'Delete site',
            });
            if (!ok) return;
            try {
                await request(sitePath(site.id), { method: 'DELETE' });
                toast(`Deleted ${site.id}`);
                location.hash = '#/sites';
            } catch (e) {
                toast(`Could not delete: ${e.message}`, 'error');
            }
        } });

        fill(view, h('div', { class: 'link-page site-page' },
            h('section', { class: 'panel link-head' },
                h('p', { class: 'crumbs' }, h('a', { href: '#/sites', text: '← Sites' })),
                h('div', { class: 'link-title' }, h('h1', { text: site.id })),
                siteTabs(site.id, 'settings')),
            h('section', { class: 'panel' }, form),
            h('section', { class: 'panel', id: 'tokens' },
                h('h2', { text: 'Read tokens' }),
                h('p', { class: 'help', text: 'A read token lets whoever holds it read this site\'s analytics (GET …/stats?token=…), and nothing else.' }),
                fresh, tokenList, h('div', { class: 'actions' }, makeToken)),
            h('section', { class: 'panel' }, h('h2', { text: 'Delete' }), del)));
        loadTokens();
    }
}

/* ----------------------------------------------------- #/site/ID/setup */

/* A step of the setup list: its state is 'done', 'wait' or 'todo'. */
function step(n, title, state, ...body) {
    const mark = { done: '✓', wait: '…', todo: String(n) }[state];
    return h('li', { class: `step ${state}`, dataset: { step: String(n), state } },
        h('span', { class: 'step-mark', 'aria-hidden': 'true', text: mark }),
        h('div', { class: 'step-body' },
            h('h2', {}, title, h('span', { class: 'sr-only', text: state === 'done' ? ' (done)' : state === 'wait' ? ' (waiting)' : '' })),
            ...body));
}

export function renderSiteSetup(view, id, ctx) {
    view.replaceChildren(h('p', { class: 'muted loading', text: 'Loading…' }));
    getJSON(sitePath(id)).then(({ data }) => {
        if (ctx.alive()) draw(data);
    }, (e) => {
        if (ctx.alive()) loadError(view, id, e, 'this site');
    });

    function draw(site) {
        const hosts = site.hosts || [];
        const code = snippet();
        const scriptState = h('p', { id: 'setup-script', class: 'muted', text: 'Checking that this shortd serves the script…' });
        const live = h('div', { id: 'setup-live', 'aria-live': 'polite' });
        const steps = h('ol', { class: 'steps' },
            step(1, 'The site and its hosts', hosts.length ? 'done' : 'todo',
                hosts.length ? h('p', {}, 'Pages on ', h('strong', { text: hosts.join(', ') }), ' are counted for ', h('strong', { text: site.id }), '.')
                    : h('p', { class: 'error' }, 'No host yet: ', h('a', { href: `${siteHash(site.id)}/settings`, text: 'add the host names of your pages' }), '.')),
            step(2, 'Put the snippet in every page', 'todo',
                h('p', { text: 'Paste it into the <head> of each page (or of the template they share):' }),
                h('pre', { class: 'snippet', id: 'setup-snippet', tabindex: '0', 'aria-label': 'The snippet' }, h('code', { text: code })),
                h('p', {}, copyButton(code, 'Copy the snippet')),
                h('p', { class: 'help', text: 'The second line is needed only for custom events sent before the script has loaded: shortd(\'event\', \'signup\', \'newsletter\').' }),
                scriptState),
            step(3, 'The first page view', 'wait',
                h('p', { text: 'Open one of the site\'s pages in another tab: its page view shows up here within seconds.' }),
                live));
        fill(view, h('div', { class: 'link-page site-page' },
            h('section', { class: 'panel link-head' },
                h('p', { class: 'crumbs' }, h('a', { href: '#/sites', text: '← Sites' })),
                h('div', { class: 'link-title' }, h('h1', { text: `Set up ${site.id}` })),
                siteTabs(site.id, 'setup')),
            h('section', { class: 'panel' }, steps)));

        // The script is fetched from here, as a page of the site would.
        fetch('/s.js', { cache: 'no-store' }).then(async (res) => {
            if (!ctx.alive()) return;
            const body = await res.text();
            scriptState.className = res.ok ? 'ok-text' : 'error';
            scriptState.textContent = res.ok ? `✓ ${location.origin}/s.js answers (${num(body.length)} bytes).` : `${location.origin}/s.js answers ${res.status}: the pages cannot load it.`;
        }, () => {
            if (!ctx.alive()) return;
            scriptState.className = 'error';
            scriptState.textContent = `Cannot fetch ${location.origin}/s.js.`;
        });
        watch(site, live, steps.lastElementChild);
    }

    /* Polls today's stats until a page view arrives beyond those counted
     * when the page opened, then names the hosts it came from. */
    function watch(site, live, last) {
        let before = null;
        let timer = 0;
        ctx.onLeave(() => clearTimeout(timer));
        const poll = async () => {
            const today = isoDay(new Date());
            try {
                const { data } = await getJSON(`${sitePath(site.id)}/stats?from=${today}&to=${today}`);
                if (!ctx.alive()) return;
                const pv = totals(data).pv;
                const hosts = data.hosts || {};
                if (before === null) {
                    before = { pv, hosts };
                    fill(live, h('p', { class: 'waiting', id: 'setup-waiting' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }),
                        pv ? `Waiting for the next page view (${num(pv)} already today)…` : 'Waiting for the first page view…'));
                } else if (pv > before.pv) {
                    const from = Object.keys(hosts).filter((k) => hosts[k] > (before.hosts[k] || 0));
                    last.dataset.state = 'done';
                    last.className = 'step done';
                    last.querySelector('.step-mark').textContent = '✓';
                    last.querySelector('h2 .sr-only').textContent = ' (done)';
                    fill(live, h('p', { class: 'ok-text', id: 'setup-arrived' },
                        `✓ A page view arrived${from.length ? ` from ${from.join(', ')}` : ''}. The script works: `,
                        h('a', { href: siteHash(site.id), text: 'see the analytics' }), '.'));
                    return;
                }
            } catch (e) {
                if (!ctx.alive()) return;
                fill(live, h('p', { class: 'error', role: 'alert', text: `Could not read the stats: ${e.message}. Trying again…` }));
            }
            timer = setTimeout(poll, POLL_MS);
        };
        poll();
    }
}
