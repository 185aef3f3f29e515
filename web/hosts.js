// hosts.js - a list of host names with a form to add one and a button to
// remove each: the Domains page (/api/domains) and the blocklist
// (/api/admin/blocklist) share it.
import { getJSON, request } from './api.js';
import { h, fill, toast, confirmDialog } from './dom.js';
import { when } from './format.js';

/* api: the collection's path. id: prefix of element ids. extra(host): more
 * content under a host (its links), or null. readOnly: the list alone, with
 * no form and no remove buttons (a viewer's). */
export function hostList({ api, id, label, help, addText, removeText, confirmText, extra = () => null, ctx, onChange = () => {}, readOnly = false }) {
    const input = h('input', { type: 'text', id: `${id}-host`, name: 'host', placeholder: 'links.example.com', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': `${id}-help ${id}-err` });
    const err = h('p', { class: 'field-error', id: `${id}-err`, role: 'alert' });
    const list = h('div', { id: `${id}-list`, 'aria-live': 'polite' }, h('p', { class: 'muted', text: 'Loading…' }));
    const form = h('form', { class: 'host-form' },
        h('div', { class: 'field grow' }, h('label', { for: input.id, text: label }), input,
            h('p', { class: 'help', id: `${id}-help`, text: help }), err),
        h('div', { class: 'field end' }, h('button', { type: 'submit', class: 'button primary', text: addText })));

    const load = async () => {
        try {
            const { data } = await getJSON(api);
            if (!ctx.alive()) return;
            fill(list, data.length ? h('ul', { class: 'host-list' }, data.map((d) => h('li', { dataset: { host: d.host } },
                h('div', { class: 'host-line' },
                    h('strong', { class: 'host', text: d.host }),
                    d.created_at ? h('span', { class: 'muted small', text: ` added ${when(d.created_at)}` }) : null,
                    readOnly ? null : h('button', {
                        type: 'button', class: 'button small danger-ghost', text: removeText, 'aria-label': `${removeText} ${d.host}`,
                        onclick: () => remove(d.host),
                    })),
                extra(d.host)))) : h('p', { class: 'muted empty', text: 'None yet.' }));
            onChange(data);
        } catch (e) {
            if (!ctx.alive()) return;
            fill(list, h('p', { class: 'error', role: 'alert', text: e.status === 403 ? 'Only an admin may see and change this.' : `Could not load: ${e.message}` }));
        }
    };
    async function remove(host) {
        if (!await confirmDialog({ title: `${removeText} ${host}?`, text: confirmText(host), ok: removeText })) return;
        try {
            await request(`${api}/${encodeURIComponent(host)}`, { method: 'DELETE' });
            toast(`Removed ${host}`);
            load();
        } catch (e) {
            toast(`Could not remove ${host}: ${e.message}`, 'error');
        }
    }
    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        err.textContent = '';
        input.removeAttribute('aria-invalid');
        const host = input.value.trim();
        if (!host) { err.textContent = 'Enter a host name.'; input.focus(); return; }
        try {
            await request(api, { method: 'POST', body: { host } });
            toast(`Added ${host}`);
            input.value = '';
            load();
        } catch (e) {
            err.textContent = e.message;
            input.setAttribute('aria-invalid', 'true');
            input.focus();
        }
    });
    load();
    return h('div', {}, readOnly ? null : form, list);
}
