// charts.js - the link page's pictures: a uPlot time series of the daily
// counts (bars, or lines for long ranges), ranked bars, and the weekday × hour heatmap. uPlot is loaded from
// /static/uPlot.iife.min.js (npm uplot, pinned, built into shortd); the bars
// and the heatmap are plain elements, sized through element.style or classes.
import { h, fill } from './dom.js';
import { num, pct, WEEKDAYS } from './format.js';

const COLORS = { clicks: '#2454d6', uniques: '#0f9d6e', bots: '#a16207' };
const LINE_FROM = 120;
const dayFull = new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });
const dayLabel = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' });

/* Daily clicks, unique visitors and (optional) bot clicks over 'days' (the
 * stats answer's rows). 'labels' names the three series (a site's page
 * views and bot hits); a series labelled null is left out. Returns
 * {setBots(show), destroy()}. */
const LABELS = { clicks: 'Clicks', uniques: 'Unique visitors', bots: 'Bot clicks' };
export function timeSeries(container, days, { showBots = false, labels = LABELS } = {}) {
    const uPlot = globalThis.uPlot;
    if (!uPlot) {
        fill(container, h('p', { class: 'error', text: 'The chart library did not load.' }));
        return { setBots() {}, destroy() {} };
    }
    const xs = days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000);
    const withUniques = labels.uniques !== null;
    const data = [xs, days.map((d) => d.clicks)];
    if (withUniques) data.push(days.map((d) => d.unique_visitors));
    data.push(days.map((d) => d.bot_clicks));
    const bars = days.length <= LINE_FROM;
    const fmt = (u, v) => (v == null ? '–' : num(v));
    const width = () => Math.max(280, container.clientWidth);
    const opts = {
        width: width(),
        height: 280,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        cursor: { drag: { x: false, y: false } },
        legend: { live: true },
        scales: { x: { time: true, range: (u, min, max) => [min - 43_200, max + 43_200] }, y: { range: (u, min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
        axes: [
            {
                // Whole days only, named in UTC like the server's days.
                stroke: '#5b6474',
                grid: { stroke: '#eef0f4' },
                ticks: { stroke: '#dfe3ea' },
                space: 56,
                incrs: [1, 2, 7, 14, 28, 91, 182, 364].map((d) => d * 86_400),
                values: (u, splits) => splits.map((s) => dayLabel.format(new Date(s * 1000))),
            },
            {
                stroke: '#5b6474',
                grid: { stroke: '#eef0f4' },
                ticks: { stroke: '#dfe3ea' },
                incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6, 1e7],
                values: (u, vals) => vals.map((v) => num(v)),
                size: 56,
            },
        ],
        series: [
            { label: 'Day (UTC)', value: (u, ts) => (ts == null ? '–' : dayFull.format(new Date(ts * 1000))) },
            // Up to LINE_FROM days: clicks and unique visitors as bars side by
            // side, so both show when equal; longer ranges as lines (unique
            // visitors dashed, visible on top of an equal clicks line).
            // Alone, the first series' bars take the whole day's width.
            bars ? { label: labels.clicks, stroke: COLORS.clicks, fill: COLORS.clicks, width: 0, paths: uPlot.paths.bars({ size: withUniques ? [0.42, 28] : [0.6, 40], align: withUniques ? -1 : 0 }), points: { show: false }, value: fmt }
                : { label: labels.clicks, stroke: COLORS.clicks, fill: 'rgba(36, 84, 214, 0.10)', width: 2, points: { show: false }, value: fmt },
            !withUniques ? null
                : bars ? { label: labels.uniques, stroke: COLORS.uniques, fill: COLORS.uniques, width: 0, paths: uPlot.paths.bars({ size: [0.42, 28], align: 1 }), points: { show: false }, value: fmt }
                    : { label: labels.uniques, stroke: COLORS.uniques, width: 2, dash: [6, 4], points: { show: false }, value: fmt },
            { label: labels.bots, stroke: COLORS.bots, width: 1.5, dash: [5, 4], show: showBots, points: { show: bars, size: 4 }, value: fmt },
        ].filter(Boolean),
    };
    const botSeries = withUniques ? 3 : 2;
    container.replaceChildren();
    const plot = new uPlot(opts, data, container);
    const ro = new ResizeObserver(() => {
        const w = width();
        if (Math.abs(w - plot.width) > 2) plot.setSize({ width: w, height: 280 });
    });
    ro.observe(container);
    return {
        setBots(show) { plot.setSeries(botSeries, { show }); },
        destroy() { ro.disconnect(); plot.destroy(); },
    };
}

/* Ranked bars of an {name: count} object: the top 'limit' with a button for
 * the rest. label(name) gives the text shown for a key; shares are of
 * 'total' (the range's clicks: a click without a referrer or a country
 * counts in no bar, but still in the whole), or of the bars' sum. */
export function bars(counts, { label = (k) => k, limit = 8, total, empty = 'Nothing in this range.' } = {}) {
    const rows = Object.entries(counts || {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    if (!rows.length) return h('p', { class: 'muted empty', text: empty });
    const sum = rows.reduce((s, r) => s + r[1], 0);
    total = Math.max(total || 0, sum);
    const max = rows[0][1] || 1;
    const list = h('ol', { class: 'bars' });
    const row = ([k, v]) => {
        const fillEl = h('span', { class: 'bar-fill' });
        fillEl.style.width = `${Math.max(1, (100 * v) / max)}%`;
        const name = label(k);
        return h('li', { class: 'bar', dataset: { key: k, count: String(v) } },
            h('span', { class: 'bar-track' }, fillEl),
            h('span', { class: 'bar-label', title: name, text: name }),
            h('span', { class: 'bar-value', text: num(v) }),
            h('span', { class: 'bar-pct', text: pct(v, total) }));
    };
    rows.slice(0, limit).forEach((r) => list.append(row(r)));
    if (rows.length <= limit) return list;
    const more = h('button', { type: 'button', class: 'button link small', text: `Show all ${rows.length}` });
    more.addEventListener('click', () => {
        rows.slice(limit).forEach((r) => list.append(row(r)));
        more.remove();
    });
    return h('div', {}, list, more);
}

/* The weekday × hour heatmap from "D-HH" → count (ISO weekday 1 = Monday,
 * UTC hour): a 7 × 24 grid whose cells take one of six shades. 'noun' is
 * what is counted ("click", "page view"). */
export function heatmap(dowhour, { noun = 'click' } = {}) {
    const counts = Array.from({ length: 7 }, () => new Array(24).fill(0));
    for (const [k, v] of Object.entries(dowhour || {})) {
        const m = /^([1-7])-(\d{2})$/.exec(k);
        if (m && Number(m[2]) < 24) counts[Number(m[1]) - 1][Number(m[2])] += v;
    }
    const max = Math.max(0, ...counts.flat());
    const level = (v) => (v === 0 ? 0 : Math.min(5, 1 + Math.floor((4 * v) / Math.max(1, max))));
    // Rows are 'display: contents', so the cells sit in one CSS grid while a
    // screen reader still reads a table of weekdays by hours.
    const grid = h('div', { class: 'heatmap', role: 'table', 'aria-label': `${noun[0].toUpperCase()}${noun.slice(1)}s by weekday and hour, UTC` });
    const head = h('div', { class: 'hm-row', role: 'row' }, h('span', { class: 'hm-corner', role: 'columnheader', text: '' }));
    for (let hr = 0; hr < 24; hr++) {
        const hh = String(hr).padStart(2, '0');
        head.append(h('span', { class: 'hm-hour', role: 'columnheader', 'aria-label': `${hh}:00`, text: hr % 3 === 0 ? hh : '' }));
    }
    grid.append(head);
    for (let d = 0; d < 7; d++) {
        const row = h('div', { class: 'hm-row', role: 'row' }, h('span', { class: 'hm-day', role: 'rowheader', text: WEEKDAYS[d] }));
        for (let hr = 0; hr < 24; hr++) {
            const v = counts[d][hr];
            const hh = String(hr).padStart(2, '0');
            row.append(h('span', {
                class: `hm-cell l${level(v)}`,
                title: `${WEEKDAYS[d]} ${hh}:00–${hh}:59 UTC: ${num(v)} ${noun}${v === 1 ? '' : 's'}`,
                role: 'cell',
                dataset: { dow: String(d + 1), hour: hh, count: String(v) },
            }, h('span', { class: 'sr-only', text: num(v) })));
        }
        grid.append(row);
    }
    const legend = h('div', { class: 'hm-legend' }, h('span', { text: 'Fewer' }),
        [0, 1, 2, 3, 4, 5].map((l) => h('span', { class: `hm-cell l${l}`, 'aria-hidden': 'true' })),
        h('span', { text: max ? `More (busiest hour: ${num(max)})` : 'More' }));
    return h('div', { class: 'heatmap-wrap' }, grid, legend);
}
