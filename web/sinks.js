// sinks.js - the sinks events go to (/api/sinks), on the admin page: each
// with its kind, endpoint and event types, a button to give it a new
// signing secret and one to delete it; a form to add one. A secret is
// shown once, when it is made, with a copy button.
import { getJSON, request } from './api.js';
import { h, fill, toast, confirmDialog, copyButton } from './dom.js';
import { when } from './format.js';

const TYPES = ['click', 'link.created', 'link.updated', 'link.deleted', 'link.disabled', 'link.expired', 'link.exhausted'];

export function sinkList(ctx) {
    const list = h('div', { id: 'sink-list', 'aria-live': 'polite' }, h('p', { class: 'muted', text: 'Loading…' }));
    const secret = h('div', { id: 'sink-secret', 'aria-live': 'polite' });
    const kind = h('select', { id: 'sink-kind', name: 'kind' },
        ['webhook', 'ingest', 'redis-stream'].map((k) => h('option', { value: k, text: k })));
    const endpoint = h('input', { type: 'url', id: 'sink-endpoint', name: 'endpoint', placeholder: 'https://hooks.example/shortd', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'sink-err' });
    const boxes = TYPES.map((t) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'types', value: t }), ` ${t}`));
    const err = h('p', { class: 'field-error', id: 'sink-err', role: 'alert' });
    const form = h('form', { class: 'host-form' },
        h('div', { class: 'field' }, h('label', { for: kind.id, text: 'Kind' }), kind),
        h('div', { class: 'field grow' }, h('label', { for: endpoint.id, text: 'Endpoint' }), endpoint, err),
        h('fieldset', { class: 'field' }, h('legend', { text: 'Events (none ticked: all)' }), ...boxes),
        h('div', { class: 'field end' }, h('button', { type: 'submit', class: 'button primary', text: 'Add sink' })));

    const showSecret = (s, what) => fill(secret, h('p', { role: 'status' },
        `${what} of sink ${s.id}, shown this once: `, h('code', { text: s.secret }), ' ', copyButton(s.secret, 'Copy secret')));

    const load = async () => {
        try {
            const { data } = await getJSON('/api/sinks');
            if (!ctx.alive()) return;
            fill(list, data.length ? h('ul', { class: 'host-list' }, data.map((s) => h('li', { dataset: { sink: String(s.id) } },
                h('div', { class: 'host-line' },
                    h('strong', { class: 'host', text: `${s.kind} → ${s.endpoint}` }),
                    h('span', { class: 'muted small', text: ` ${s.types.length ? s.types.join(', ') : 'all events'}, added ${when(s.created_at)}${s.rotating ? ', two secrets valid' : ''}` }),
                    h('button', { type: 'button', class: 'button small', text: 'New secret', 'aria-label': `New secret for sink ${s.id}`, onclick: () => rotate(s) }),
                    h('button', { type: 'button', class: 'button small danger-ghost', text: 'Delete', 'aria-label': `Delete sink ${s.id}`, onclick: () => remove(s) }))))) :
                h('p', { class: 'muted empty', text: 'None yet.' }));
        } catch (e) {
            if (!ctx.alive()) return;
            fill(list, h('p', { class: 'error', role: 'alert', text: e.status === 403 ? 'Only an admin may see and change this.' : `Could not load: ${e.message}` }));
        }
    };
    async function rotate(s) {
        if (!await confirmDialog({ title: `New secret for sink ${s.id}?`, text: 'The current secret stays valid beside the new one until the next rotation.', ok: 'Make a new secret' })) return;
        try {
            showSecret(await (await request(`/api/sinks/${s.id}/rotate-secret`, { method: 'POST' })).json(), 'New secret');
            load();
        } catch (e) {
            toast(`Could not rotate: ${e.message}`, 'error');
        }
    }
    async function remove(s) {
        if (!await confirmDialog({ title: `Delete sink ${s.id}?`, text: `No more events go to ${s.endpoint}; its failed batches stay in the archive.` })) return;
        try {
            await request(`/api/sinks/${s.id}`, { method: 'DELETE' });
            toast(`Deleted sink ${s.id}`);
            load();
        } catch (e) {
            toast(`Could not delete: ${e.message}`, 'error');
        }
    }
    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        err.textContent = '';
        endpoint.removeAttribute('aria-invalid');
        const types = boxes.map((b) => b.querySelector('input')).filter((i) => i.checked).map((i) => i.value);
        try {
            const made = await (await request('/api/sinks', { method: 'POST', body: { kind: kind.value, endpoint: endpoint.value.trim(), types } })).json();
            showSecret(made, 'Secret');
            endpoint.value = '';
            load();
        } catch (e) {
            err.textContent = e.message;
            endpoint.setAttribute('aria-invalid', 'true');
            endpoint.focus();
        }
    });
    load();
    return h('div', {}, form, secret, list);
}
