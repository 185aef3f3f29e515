// domains.js - the Domains page: register and remove custom short hosts
// (/api/domains), each with the links made on it.
import { can, getJSON, nextLink } from './api.js';
import { h, fill, outLink } from './dom.js';
import { hostList } from './hosts.js';

/* Every live link of the caller, to group by domain (the list route has no
 * domain filter). */
async function allLinks(ctx) {
    let url = '/api/links?limit=1000&state=all';
    const out = [];
    for (let i = 0; url && i < 50; i++) {
        const { data, res } = await getJSON(url);
        if (!ctx.alive()) return null;
        out.push(...data);
        url = nextLink(res.headers.get('Link'));
    }
    return out;
}

export function renderDomains(view, ctx) {
    let links = null;
    const boxes = new Map();
    const fillBox = (host) => {
        const box = boxes.get(host);
        if (!box || !links) return;
        const mine = links.filter((l) => l.domain === host);
        fill(box, mine.length ? h('ul', { class: 'domain-links' }, mine.map((l) => h('li', {},
            h('a', { href: `#/link/${encodeURIComponent(l.code)}`, text: l.code }), ' ',
            h('span', { class: 'muted small' }, outLink(l.short_url)), ' ',
            h('span', { class: `badge ${l.state}`, text: l.state }))))
            : h('p', { class: 'muted small', text: 'No links on it yet: pick it as the short host when you create one.' }));
    };
    const list = hostList({
        api: '/api/domains', id: 'domain', label: 'Custom domain', addText: 'Add domain', removeText: 'Remove',
        help: 'A host name whose DNS points at this shortd. Links made on it answer only there.',
        confirmText: (host) => `Links on ${host} stop answering there. They are not deleted.`,
        extra: (host) => {
            const box = h('div', { class: 'host-extra', dataset: { linksOf: host } }, h('p', { class: 'muted small', text: 'Loading its links…' }));
            boxes.set(host, box);
            fillBox(host);
            return box;
        },
        ctx,
        readOnly: !can.write(),
    });
    allLinks(ctx).then((l) => {
        if (!l) return;
        links = l;
        for (const host of boxes.keys()) fillBox(host);
    }, () => {});
    view.replaceChildren(h('section', { class: 'panel domains-page' },
        h('h1', { text: 'Domains' }),
        h('p', { class: 'muted', text: 'Short links can live on your own domain (go.example.com/launch) as well as on this shortd\'s address.' }),
        list));
}
