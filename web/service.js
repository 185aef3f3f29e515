// service.js - the service page: totals over every link of this shortd,
// the caller's links (everyone's for an admin key) together over a range of
// days (a daily chart, unique visitors, bots, top referrers and countries),
// and today's most clicked links.
import { getJSON } from './api.js';
import { h, fill, outLink } from './dom.js';
import { num, isoDay, addDays, botKind, country } from './format.js';
import { timeSeries, bars } from './charts.js';

const RANGES = [7, 30, 90, 365];

function kpi(id, label, value, sub) {
    return h('div', { class: 'kpi', id },
        h('div', { class: 'kpi-label', text: label }),
        h('div', { class: 'kpi-value', text: value }),
        sub ? h('div', { class: 'kpi-sub', text: sub }) : null);
}

export function renderService(view, params, ctx) {
    const days = RANGES.includes(Number(params.get('days'))) ? Number(params.get('days')) : 30;
    const today = isoDay(new Date());
    view.replaceChildren(h('p', { class: 'muted loading', text: 'Loading…' }));
    getJSON(`/api/stats?from=${addDays(today, -(days - 1))}&to=${today}`).then(({ data }) => {
        if (!ctx.alive()) return;
        const range = data.range;
        const top = data.top_today || [];
        const max = Math.max(1, ...top.map((t) => t.clicks));
        const chartBox = h('div', { class: 'chart', id: 'service-chart' });
        const rangeSel = h('div', { class: 'presets', role: 'group', 'aria-label': 'Range of days' },
            RANGES.map((d) => h('a', {
                class: 'button seg', href: `#/service?days=${d}`, 'aria-current': d === days ? 'true' : null,
                'aria-pressed': null, text: d === 365 ? '1 year' : `${d} days`,
            })));
        fill(view, h('section', { class: 'service-page' },
            h('div', { class: 'page-head' },
                h('h1', { text: 'Service' }),
                h('button', { type: 'button', class: 'button ghost', text: 'Refresh', onclick: () => ctx.rerender() })),
            h('p', { class: 'muted', text: 'All time, all owners together:' }),
            h('div', { class: 'kpis' },
                kpi('svc-links', 'Links', num(data.links), 'deleted ones included'),
                kpi('svc-clicks', 'Clicks', num(data.clicks)),
                kpi('svc-bots', 'Bot clicks', num(data.bot_clicks), 'counted apart')),
            h('div', { class: 'page-head range-head' },
                h('h2', { text: `Your links together, ${range.from} – ${range.to} (UTC days)` }),
                rangeSel),
            h('div', { class: 'kpis' },
                kpi('svc-range-clicks', 'Clicks', num(range.clicks)),
                kpi('svc-range-uniques', 'Unique visitors', num(range.unique_visitors), 'summed per link and day'),
                kpi('svc-range-bots', 'Bot clicks', num(range.bot_clicks), 'apart: never in the clicks')),
            h('section', { class: 'card' }, h('h2', { text: 'Daily clicks and unique visitors' }), chartBox),
            h('div', { class: 'grid-bars service-grid' },
                h('section', { class: 'card', id: 'svc-top' },
                    h('h2', { text: `Top links today (${data.day}, UTC)` }),
                    top.length ? h('ol', { class: 'bars top-today' }, top.map((t) => {
                        const f = h('span', { class: 'bar-fill' });
                        f.style.width = `${Math.max(1, (100 * t.clicks) / max)}%`;
                        return h('li', { class: 'bar', dataset: { code: t.code, count: String(t.clicks) } },
                            h('span', { class: 'bar-track' }, f),
                            h('span', { class: 'bar-label' },
                                h('a', { href: `#/link/${encodeURIComponent(t.code)}`, text: t.code }), ' ',
                                h('span', { class: 'muted small' }, outLink(t.short_url))),
                            h('span', { class: 'bar-value', text: num(t.clicks) }));
                    })) : h('p', { class: 'muted empty', text: 'No clicks yet today.' })),
                h('section', { class: 'card', id: 'svc-referrers' },
                    h('h2', { text: 'Top referrers' }),
                    bars(range.referrers, { total: range.clicks, empty: 'No referrer in this range.' })),
                h('section', { class: 'card', id: 'svc-countries' },
                    h('h2', { text: 'Countries' }),
                    bars(range.countries, { label: country, total: range.clicks })),
                h('section', { class: 'card', id: 'svc-bot-kinds' },
                    h('h2', { text: 'Bot clicks by kind' }),
                    bars(range.bot_kinds, { label: botKind, total: range.bot_clicks, empty: 'No bot clicks in this range.' })))));
        const plot = timeSeries(chartBox, range.days || [], { showBots: range.bot_clicks > 0 });
        ctx.onLeave(() => plot.destroy());
    }, (e) => {
        if (!ctx.alive()) return;
        fill(view, h('p', { class: 'error', role: 'alert', text: `Could not load the service totals: ${e.message}` }));
    });
}
