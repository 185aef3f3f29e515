// service.js - the service page: totals over every link of this shortd, and
// today's most clicked links (the caller's own; everyone's for an admin key).
import { getJSON } from './api.js';
import { h, fill, outLink } from './dom.js';
import { num } from './format.js';

export function renderService(view, ctx) {
    view.replaceChildren(h('p', { class: 'muted loading', text: 'Loading…' }));
    getJSON('/api/stats').then(({ data }) => {
        if (!ctx.alive()) return;
        const top = data.top_today || [];
        const max = Math.max(1, ...top.map((t) => t.clicks));
        fill(view, h('section', { class: 'service-page' },
            h('div', { class: 'page-head' },
                h('h1', { text: 'Service' }),
                h('button', { type: 'button', class: 'button ghost', text: 'Refresh', onclick: () => ctx.rerender() })),
            h('p', { class: 'muted', text: 'Totals of this shortd, all owners together, all time.' }),
            h('div', { class: 'kpis' },
                h('div', { class: 'kpi', id: 'svc-links' }, h('div', { class: 'kpi-label', text: 'Links' }), h('div', { class: 'kpi-value', text: num(data.links) }), h('div', { class: 'kpi-sub', text: 'deleted ones included' })),
                h('div', { class: 'kpi', id: 'svc-clicks' }, h('div', { class: 'kpi-label', text: 'Clicks' }), h('div', { class: 'kpi-value', text: num(data.clicks) })),
                h('div', { class: 'kpi', id: 'svc-bots' }, h('div', { class: 'kpi-label', text: 'Bot clicks' }), h('div', { class: 'kpi-value', text: num(data.bot_clicks) }), h('div', { class: 'kpi-sub', text: 'counted apart' }))),
            h('section', { class: 'card' },
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
                })) : h('p', { class: 'muted empty', text: 'No clicks yet today.' }))));
    }, (e) => {
        if (!ctx.alive()) return;
        fill(view, h('p', { class: 'error', role: 'alert', text: `Could not load the service totals: ${e.message}` }));
    });
}
