// admin.js - the admin page: the blocklist of destination hosts
// (/api/admin/blocklist) and the sinks events go to (/api/sinks), for
// admins only (users are on the Users page).
import { h } from './dom.js';
import { hostList } from './hosts.js';
import { sinkList } from './sinks.js';

export function renderAdmin(view, ctx) {
    view.replaceChildren(h('section', { class: 'panel admin-page' },
        h('h1', { text: 'Admin' }),
        h('p', {}, 'Service-wide figures are on the ', h('a', { class: 'text-link', href: '#/service', text: 'Service page' }),
            ', the people who sign in on the ', h('a', { class: 'text-link', href: '#/users', text: 'Users page' }), '.'),
        h('h2', { text: 'Blocklist' }),
        h('p', { class: 'muted', text: 'No new link, edit or variant may lead to a blocked host (or its subdomains).' }),
        hostList({
            api: '/api/admin/blocklist', id: 'block', label: 'Host to block', addText: 'Block host', removeText: 'Unblock',
            help: 'For example bad.example.',
            confirmText: (host) => `Links to ${host} may be made and followed again.`,
            ctx,
        }),
        h('h2', { text: 'Events and webhooks' }),
        h('p', { class: 'muted', text: 'Clicks and changes of links go to these sinks, each event once per ID (README, Events and webhooks).' }),
        sinkList(ctx)));
}
