// keys.js - the Keys page: the API keys of the signed-in user (an admin's:
// every key), with their scopes, domain and last use (/api/keys); a new key,
// with the scopes and custom domain it is limited to, shown once with a copy
// button; revoking one, refused by every node at once. A viewer reads the
// list but makes and revokes nothing (the API refuses a viewer's writes).
import { can, getJSON, request } from './api.js';
import { h, fill, toast, confirmDialog, copyButton } from './dom.js';
import { when } from './format.js';

const SCOPES = [
    ['links:read', 'see links'],
    ['links:write', 'create, edit and delete links'],
    ['stats:read', 'read analytics'],
    ['admin', 'the admin routes (admins only)'],
];

export function renderKeys(view, ctx) {
    const list = h('div', { id: 'key-list', 'aria-live': 'polite' }, h('p', { class: 'muted', text: 'Loading…' }));
    const shown = h('div', { id: 'new-key', 'aria-live': 'polite' });

    async function revoke(k) {
        if (!await confirmDialog({ title: `Revoke ${k.name}?`, text: 'Scripts using this key are refused from now on, on every node.', ok: 'Revoke key' })) return;
        try {
            await request(`/api/keys/${k.id}`, { method: 'DELETE' });
            toast(`Revoked ${k.name}`);
            load();
        } catch (e) {
            toast(`Could not revoke ${k.name}: ${e.message}`, 'error');
        }
    }

    const row = (k) => h('li', { dataset: { key: String(k.id) } },
        h('div', { class: 'user-line' },
            h('strong', { text: k.name }),
            h('span', { class: `badge ${k.revoked_at ? 'disabled' : 'active'}`, text: k.revoked_at ? 'revoked' : 'valid' }),
            h('span', { class: 'muted small', text: k.last_used_at ? `last used ${when(k.last_used_at)}` : 'never used' }),
            k.revoked_at || !can.write() ? null : h('button', {
                type: 'button', class: 'button small danger-ghost', text: 'Revoke', 'aria-label': `Revoke ${k.name}`, onclick: () => revoke(k),
            })),
        h('p', { class: 'muted small key-meta', text: `${k.scopes.join(', ')}${k.domain ? ` · only on ${k.domain}` : ''} · made ${when(k.created_at)}` }));

    async function load() {
        try {
            const { data } = await getJSON('/api/keys');
            if (!ctx.alive()) return;
            // The rows that own users' links (user:NAME) open nothing: not shown.
            const keys = data.keys.filter((k) => !/^user:/.test(k.name));
            fill(list, keys.length ? h('ul', { class: 'user-list' }, keys.map(row)) : h('p', { class: 'muted empty', text: 'No keys yet.' }));
        } catch (e) {
            if (ctx.alive()) fill(list, h('p', { class: 'error', role: 'alert', text: `Could not load: ${e.message}` }));
        }
    }

    let form = null;
    if (can.write()) {
        const name = h('input', { id: 'key-name', type: 'text', maxlength: '100', autocomplete: 'off', 'aria-describedby': 'key-err' });
        const boxes = SCOPES.filter(([s]) => s !== 'admin' || can.admin()).map(([s, what]) => {
            const box = h('input', { type: 'checkbox', id: `scope-${s.replace(':', '-')}`, value: s, checked: s !== 'admin' });
            return h('label', { class: 'check', for: box.id }, box, `${s}: ${what}`);
        });
        const domain = h('select', { id: 'key-domain' }, h('option', { value: '', text: 'Any short host' }));
        getJSON('/api/domains').then(({ data }) => {
            for (const d of data) domain.append(h('option', { value: d.host, text: `Only ${d.host}` }));
        }, () => {});
        const err = h('p', { class: 'field-error', id: 'key-err', role: 'alert' });
        form = h('form', { class: 'key-form', novalidate: true },
            h('div', { class: 'field' }, h('label', { for: name.id, text: 'Key name' }), name,
                h('p', { class: 'help', text: 'What uses it, for example ci-deploy.' })),
            h('fieldset', { class: 'field scopes' }, h('legend', { text: 'Scopes' }), boxes),
            h('div', { class: 'field' }, h('label', { for: domain.id, text: 'Limited to' }), domain),
            err,
            h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Create key' })));
        form.addEventListener('submit', async (ev) => {
            ev.preventDefault();
            err.textContent = '';
            name.removeAttribute('aria-invalid');
            const scopes = boxes.map((l) => l.querySelector('input')).filter((b) => b.checked).map((b) => b.value);
            try {
                const res = await request('/api/keys', { method: 'POST', body: { name: name.value.trim(), scopes, domain: domain.value || null } });
                const k = await res.json();
                fill(shown, h('div', { class: 'notice key-once' },
                    h('p', {}, h('strong', { text: `Key ${k.name}: ` }), 'copy it now, it is shown this once.'),
                    h('p', { class: 'key-token' }, h('code', { id: 'key-token', text: k.key }), ' ', copyButton(k.key))));
                name.value = '';
                load();
            } catch (e) {
                err.textContent = e.message;
                if (e.field === 'name' || !e.field) {
                    name.setAttribute('aria-invalid', 'true');
                    name.focus();
                }
            }
        });
    }

    view.replaceChildren(h('section', { class: 'panel users-page keys-page' },
        h('h1', { text: 'API keys' }),
        h('p', { class: 'muted', text: 'Keys let scripts use the API as you (Authorization: Bearer KEY). A key never does more than your role allows.' }),
        form ? [h('h2', { text: 'New key' }), form, shown] : null,
        h('h2', { text: can.admin() ? 'Every key' : 'Your keys' }),
        list));
    load();
}
