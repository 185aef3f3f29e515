// link.js - one link's page: what it is, its clicks over a range of days
// (7, 30, 90 or chosen), where they came from, when, the last ones, and its
// QR code. Bot clicks are counted apart and only drawn when asked for.
import { can, getJSON, qrBlob, request } from './api.js';
import { h, fill, copyButton, outLink, toast, confirmDialog, download } from './dom.js';
import { num, when, remaining, isoDay, addDays, daysBetween, country, language, botKind } from './format.js';
import { timeSeries, bars, heatmap } from './charts.js';
import { linkForm } from './linkform.js';

const PRESETS = [7, 30, 90];
const MAX_DAYS = 1000;

const DIMENSIONS = [
    ['referrers', 'Referrers', (k) => k],
    ['ref_groups', 'Referrer groups', (k) => k],
    ['countries', 'Countries', country],
    ['browsers', 'Browsers', (k) => k],
    ['os', 'Operating systems', (k) => k],
    ['devices', 'Devices', (k) => k],
    ['languages', 'Languages', language],
    ['utm_source', 'UTM source', (k) => k],
    ['utm_medium', 'UTM medium', (k) => k],
    ['utm_campaign', 'UTM campaign', (k) => k],
];

function rangeOf(params) {
    const today = isoDay(new Date());
    const from = params.get('from');
    const to = params.get('to');
    if (from && to && /^\d{4}-\d{2}-\d{2}$/.test(from) && /^\d{4}-\d{2}-\d{2}$/.test(to)) {
        return { from, to, preset: null };
    }
    const days = PRESETS.includes(Number(params.get('days'))) ? Number(params.get('days')) : 30;
    return { from: addDays(today, -(days - 1)), to: today, preset: days };
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

export function renderLink(view, code, params, ctx) {
    const range = rangeOf(params);
    const showBots = params.get('bots') === '1';
    const base = `#/link/${encodeURIComponent(code)}`;
    // A new range keeps the bot choice, which the checkbox may have changed.
    const go = (p) => {
        const q = new URLSearchParams(p);
        if (document.getElementById('show-bots')?.checked) q.set('bots', '1');
        location.hash = `${base}?${q}`;
    };

    view.replaceChildren(h('p', { class: 'muted loading', text: 'Loading…' }));
    const path = `/api/links/${encodeURIComponent(code)}`;
    const statsPath = `${path}/stats?from=${range.from}&to=${range.to}`;
    Promise.all([getJSON(path), getJSON(statsPath)]).then(([{ data: link }, { data: stats }]) => {
        if (!ctx.alive()) return;
        draw(link, stats);
    }, (e) => {
        if (!ctx.alive()) return;
        const msg = e.status === 404 ? `No link “${code}” among yours.`
            : e.field === 'from' || e.field === 'to' ? `That range does not work: ${e.message}.` : `Could not load this link: ${e.message}`;
        fill(view, h('div', { class: 'panel' },
            h('h1', { text: code }),
            h('p', { class: 'error', role: 'alert', text: msg }),
            e.field ? h('p', {}, h('a', { href: base, text: 'Show the last 30 days' })) : null,
            h('p', {}, h('a', { href: '#/links', text: '← All links' }))));
    });

    function draw(link, stats) {
        // --- header
        // A viewer gets no changes to make, a member no disabling (admins').
        const del = link.state === 'deleted' || !can.write() ? null : h('button', {
            type: 'button', class: 'button danger-ghost', text: 'Delete', onclick: async () => {
                const ok = await confirmDialog({
                    title: `Delete ${link.code}?`,
                    text: `${link.short_url} will answer 410 Gone from now on, and the code is never handed out again. Its click statistics stay.`,
                    ok: 'Delete link',
                });
                if (!ok) return;
                try {
                    await request(path, { method: 'DELETE' });
                    toast(`Deleted ${link.code}`);
                    location.hash = '#/links';
                } catch (e) {
                    toast(`Could not delete: ${e.message}`, 'error');
                }
            },
        });
        const admin = !can.admin() ? null : link.state === 'disabled'
            ? h('button', { type: 'button', class: 'button ghost', id: 'enable', text: 'Enable', onclick: () => setDisabled(false) })
            : link.state === 'deleted' ? null
                : h('button', { type: 'button', class: 'button ghost', id: 'disable', text: 'Disable', title: 'Admins only: the link answers 410 until enabled', onclick: () => setDisabled(true) });
        async function setDisabled(off) {
            if (off && !await confirmDialog({
                title: `Disable ${link.code}?`,
                text: `${link.short_url} will answer 410 Gone until an admin enables it again.`,
                ok: 'Disable link',
            })) return;
            try {
                await request(`${path}/${off ? 'disable' : 'enable'}`, { method: 'POST' });
                toast(`${off ? 'Disabled' : 'Enabled'} ${link.code}`);
                ctx.rerender();
            } catch (e) {
                toast(e.status === 403 ? 'Only an admin can disable or enable a link.' : `Could not change it: ${e.message}`, 'error');
            }
        }
        const head = h('section', { class: 'panel link-head' },
            h('p', { class: 'crumbs' }, h('a', { href: '#/links', text: '← Links' })),
            h('div', { class: 'link-title' },
                h('h1', { text: link.title || link.code }),
                h('span', { class: `badge ${link.state}`, text: link.state }),
                linkBadges(link)),
            h('p', { class: 'short-url' }, outLink(link.short_url), ' ', copyButton(link.short_url)),
            destinations(link),
            h('dl', { class: 'meta' },
                h('dt', { text: 'Created' }), h('dd', { text: when(link.created_at) }),
                h('dt', { text: 'Expires' }), h('dd', { text: link.expires_at ? `${when(link.expires_at)} (${remaining(link)})` : 'never' }),
                h('dt', { text: 'Click limit' }), h('dd', { id: 'click-limit', text: link.max_clicks ? `${num(link.clicks_left)} of ${num(link.max_clicks)} clicks left` : 'none' }),
                h('dt', { text: 'All-time clicks' }), h('dd', { id: 'total-clicks', text: num(stats.total_clicks) }),
                h('dt', { text: 'All-time bot clicks' }), h('dd', { text: num(stats.total_bot_clicks) }),
                link.permanent ? [h('dt', { text: 'Redirect' }), h('dd', { text: '301 permanent (browsers cache it)' })] : null,
                link.track === false ? [h('dt', { text: 'Tracking' }), h('dd', { id: 'tracking', text: 'off: visits are not recorded' })] : null,
                link.domain ? [h('dt', { text: 'Short host' }), h('dd', { text: link.domain })] : null,
                (link.tags || []).length ? [h('dt', { text: 'Tags' }), h('dd', { class: 'tags' },
                    link.tags.map((t) => h('a', { class: 'tag', href: `#/links?tag=${encodeURIComponent(t)}`, text: t })))] : null,
                link.note ? [h('dt', { text: 'Note' }), h('dd', { class: 'note', text: link.note })] : null),
            h('div', { class: 'actions wrap' },
                link.state === 'deleted' || !can.write() ? null : h('a', { class: 'button', id: 'edit', href: `${base}/edit`, text: 'Edit' }),
                admin, del));

        // --- where visitors were sent, and what changed
        const split = link.variants ? abCard(link, stats) : null;
        const hist = card('Destination history', h('p', { class: 'muted', text: 'Loading…' }));
        hist.id = 'history-card';
        getJSON(`${path}/history`).then(({ data }) => {
            if (ctx.alive()) fill(hist, h('h2', { text: 'Destination history' }), historyList(data, link));
        }, (e) => {
            if (ctx.alive()) fill(hist, h('h2', { text: 'Destination history' }), h('p', { class: 'error', text: `Could not load it: ${e.message}` }));
        });

        // --- range
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
            h('label', { class: 'check' }, bots, ' Show bot clicks'),
            h('button', { type: 'button', class: 'button ghost', id: 'refresh', text: 'Refresh', onclick: () => ctx.rerender() }),
            rangeErr);
        rangeForm.addEventListener('submit', (ev) => {
            ev.preventDefault();
            const f = from.value;
            const t = to.value;
            if (!f || !t) { rangeErr.textContent = 'Pick both days.'; return; }
            if (f > t) { rangeErr.textContent = 'The first day must not be after the last.'; return; }
            if (daysBetween(f, t) >= MAX_DAYS) { rangeErr.textContent = `A range is at most ${MAX_DAYS} days.`; return; }
            go({ from: f, to: t });
        });

        // --- totals for the range
        const kpis = h('section', { class: 'kpis' },
            kpi('Clicks', num(stats.clicks), `${stats.from} – ${stats.to}`, 'kpi-clicks'),
            kpi('Unique visitors', num(stats.unique_visitors), 'summed per day', 'kpi-uniques'),
            kpi('Bot clicks', num(stats.bot_clicks), 'apart: never in the clicks', 'kpi-bots'));

        // --- the series
        const chartBox = h('div', { class: 'chart', id: 'daily-chart' });
        const series = card('Daily clicks and unique visitors (UTC days)', chartBox);

        // --- heatmap, dimensions, bots, recent
        const heat = card('When people click: weekday × hour (UTC)', heatmap(stats.dowhour));
        heat.id = 'heatmap-card';
        const dims = h('div', { class: 'grid-bars' }, DIMENSIONS.map(([k, title, label]) => {
            const c = card(title, bars(stats[k], { label, total: stats.clicks }));
            c.dataset.dim = k;
            return c;
        }));
        // By kind, then by the agent that made them ("other": one shortd does not name).
        const botCard = card('Bot clicks',
            h('p', { class: 'help', text: 'Crawlers, link previewers, scanners, HTTP libraries, headless browsers and prefetches. They are counted here and never in the figures above.' }),
            h('h3', { class: 'card-sub', text: 'By kind' }),
            h('div', { id: 'bot-kinds' }, bars(stats.bot_kinds, { label: botKind, total: stats.bot_clicks, empty: 'No bot clicks in this range.' })),
            h('h3', { class: 'card-sub', text: 'By agent' }),
            h('div', { id: 'bot-agents' }, bars(stats.bot_agents, { total: stats.bot_clicks, empty: 'No bot named in this range.' })));
        botCard.id = 'bots-card';
        botCard.hidden = !showBots;
        const recent = card('Last clicks', recentTable(stats.recent || []));
        recent.id = 'recent-card';

        // --- QR
        const qrImg = h('img', { class: 'qr', alt: `QR code of ${link.short_url}`, width: '176', height: '176' });
        const scaleSel = h('select', { id: 'qr-scale' }, [4, 8, 12, 20].map((s) => h('option', { value: String(s), text: `${s} px per module` })));
        scaleSel.value = '12';
        const qr = card('QR code', qrImg,
            h('p', { class: 'help', text: `Encodes ${link.short_url}` }),
            h('div', { class: 'qr-actions' },
                h('label', { for: 'qr-scale', class: 'sr-only', text: 'PNG size' }), scaleSel),
            h('div', { class: 'qr-actions' },
                h('button', { type: 'button', class: 'button small', id: 'qr-png', text: 'Download PNG', onclick: () => save('png') }),
                h('button', { type: 'button', class: 'button small', id: 'qr-svg', text: 'Download SVG', onclick: () => save('svg') })));
        qr.id = 'qr-card';
        async function save(format) {
            try {
                const blob = await qrBlob(link.code, format, format === 'png' ? Number(scaleSel.value) : 8);
                download(blob, `${link.code}-qr.${format}`);
            } catch (e) {
                toast(`No QR code: ${e.message}`, 'error');
            }
        }

        fill(view, h('div', { class: 'link-page' },
            h('div', { class: 'link-top' }, head, qr),
            rangeForm, kpis, series, split, heat, dims, botCard, hist, recent));

        const plot = timeSeries(chartBox, stats.days || [], { showBots });
        ctx.onLeave(() => plot.destroy());
        bots.addEventListener('change', () => {
            plot.setBots(bots.checked);
            botCard.hidden = !bots.checked;
            const q = new URLSearchParams(location.hash.split('?')[1] || '');
            if (bots.checked) q.set('bots', '1'); else q.delete('bots');
            history.replaceState(null, '', `${base}?${q}`);
        });

        qrBlob(link.code, 'png', 8).then((blob) => {
            if (!ctx.alive()) return;
            const src = URL.createObjectURL(blob);
            ctx.onLeave(() => URL.revokeObjectURL(src));
            qrImg.src = src;
        }, (e) => qrImg.replaceWith(h('p', { class: 'error', text: `No QR code: ${e.message}` })));
    }
}

function recentTable(list) {
    if (!list.length) return h('p', { class: 'muted empty', text: 'No human clicks yet.' });
    // Newest first by time: clicks of the same moment handled by two server
    // threads may be stored in either order.
    const rows = [...list].sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0));
    return h('div', { class: 'table-wrap' }, h('table', { class: 'recent' },
        h('thead', {}, h('tr', {}, ['Time', 'Referrer', 'Country', 'Device', 'Browser'].map((t) => h('th', { scope: 'col', text: t })))),
        h('tbody', {}, rows.map((r) => h('tr', {},
            h('td', { title: r.time, text: when(r.time) }),
            h('td', { text: r.referrer || 'direct' }),
            h('td', { text: r.country ? country(r.country) : 'Unknown' }),
            h('td', { text: r.device || '' }),
            h('td', { text: r.browser || '' }))))));
}

/* The badges of what a link does besides redirecting. */
export function linkBadges(link) {
    const out = [];
    if (link.protected) out.push(h('span', { class: 'pill protected', text: 'protected' }));
    if (link.max_clicks) out.push(h('span', { class: 'pill limited', text: 'limited' }));
    if (link.expires_at && link.state === 'active') out.push(h('span', { class: 'pill expiring', text: 'expiring' }));
    if (link.permanent) out.push(h('span', { class: 'pill permanent', text: 'permanent' }));
    if (link.variants) out.push(h('span', { class: 'pill ab', text: 'A/B' }));
    if (link.track === false) {
        out.push(h('span', { class: 'pill untracked', text: 'not tracked', title: 'Visits redirect but are not recorded' }));
    }
    return out.length ? h('span', { class: 'flags' }, out) : null;
}

/* Where the link sends visitors: each A/B variant with its share, the URL
 * with its UTM parameters merged, or the plain destination. */
function destinations(link) {
    if (!link.url) return h('p', { class: 'dest muted', text: '(destination removed)' });
    if (link.variants) {
        const sum = link.variants.reduce((s, v) => s + (v.weight ?? 1), 0);
        return h('div', { class: 'dest', id: 'destinations' },
            h('p', { class: 'muted small', text: 'Sends each visitor to one of:' }),
            h('ol', { class: 'dest-list' }, link.variants.map((v, i) => h('li', { dataset: { variant: String(i + 1) } },
                outLink(v.url), h('span', { class: 'muted small', text: ` weight ${v.weight ?? 1} (${Math.round((100 * (v.weight ?? 1)) / sum)}%)` })))));
    }
    return h('div', { class: 'dest', id: 'destinations' },
        h('p', {}, '→ ', outLink(link.destination || link.url)),
        link.destination ? h('p', { class: 'muted small' }, 'UTM parameters added to ', outLink(link.url)) : null);
}

/* The A/B split: where this range's visitors were sent (stats' variants
 * dimension, "1".."10" in the link's order) beside each variant's weight. */
function abCard(link, stats) {
    const counts = stats.variants || {};
    const sum = link.variants.reduce((s, v) => s + (v.weight ?? 1), 0);
    const labels = Object.fromEntries(link.variants.map((v, i) => [String(i + 1),
        `Variant ${i + 1}: ${v.url} (weight ${Math.round((100 * (v.weight ?? 1)) / sum)}%)`]));
    const shown = Object.fromEntries(link.variants.map((v, i) => [String(i + 1), counts[String(i + 1)] || 0]));
    const c = card('A/B split: where visitors were sent',
        h('div', { id: 'ab-chart' }, bars(shown, { label: (k) => labels[k] || `Variant ${k}`, limit: 10, total: stats.clicks })));
    c.id = 'ab-card';
    return c;
}

function historyList(changes, link) {
    if (!changes.length) return h('p', { class: 'muted empty', text: `Never changed since it was made on ${when(link.created_at)}.` });
    const rows = [...changes].sort((a, b) => b.seq - a.seq);
    return h('ol', { class: 'history', id: 'history' }, rows.map((c) => h('li', {},
        h('time', { datetime: c.changed_at, text: when(c.changed_at) }),
        h('div', { class: 'change' },
            h('span', { class: 'old' }, c.old_url ? outLink(c.old_url) : '(none)'),
            h('span', { class: 'arrow', 'aria-label': 'changed to', text: ' → ' }),
            h('span', { class: 'new' }, c.new_url ? outLink(c.new_url) : '(removed)')))));
}

/* #/link/CODE/edit: the form with the link's values. */
export function renderEdit(view, code, ctx) {
    view.replaceChildren(h('p', { class: 'muted loading', text: 'Loading…' }));
    const path = `/api/links/${encodeURIComponent(code)}`;
    getJSON(path).then(({ data: link }) => {
        if (!ctx.alive()) return;
        const { form, focus } = linkForm({
            link,
            onSaved: (saved) => {
                toast(`Saved ${saved.code}`);
                location.hash = `#/link/${encodeURIComponent(saved.code)}`;
            },
        });
        fill(view, h('div', { class: 'edit-page' }, form));
        focus();
    }, (e) => {
        if (!ctx.alive()) return;
        fill(view, h('div', { class: 'panel' }, h('h1', { text: code }),
            h('p', { class: 'error', role: 'alert', text: e.status === 404 ? `No link “${code}” among yours.` : `Could not load this link: ${e.message}` })));
    });
}
