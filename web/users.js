// users.js - the Users page (admins only): who signs in to this shortd, with
// their role, state and last sign-in (/api/users); an admin adds a user,
// changes a role, disables or enables a user (their sessions and keys stop
// at once) and resets a password (their sessions end). The signed-in admin's
// own row offers none of these for themselves: the API refuses an admin's
// taking their own admin role or disabling themselves.
import { getJSON, request, session } from './api.js';
import { h, fill, toast, confirmDialog } from './dom.js';
import { when } from './format.js';

const ROLES = { admin: 'Admin', member: 'Member', viewer: 'Viewer' };

/* A role picker; 'label' names it when no <label> does. */
function roleSelect(id, value, label) {
    const s = h('select', { id, 'aria-label': label }, Object.entries(ROLES).map(([r, text]) => h('option', { value: r, text })));
    s.value = value;
    return s;
}

export function renderUsers(view, ctx) {
    const list = h('div', { id: 'user-list', 'aria-live': 'polite' }, h('p', { class: 'muted', text: 'Loading…' }));

    // --- add a user
    const name = h('input', { id: 'new-user-name', type: 'text', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none', maxlength: '64', 'aria-describedby': 'new-user-help new-user-err' });
    const pw = h('input', { id: 'new-user-password', type: 'password', autocomplete: 'new-password', maxlength: '128', 'aria-describedby': 'new-user-err' });
    const role = roleSelect('new-user-role', 'member', null);
    const err = h('p', { class: 'field-error', id: 'new-user-err', role: 'alert' });
    const form = h('form', { class: 'user-form', novalidate: true },
        h('div', { class: 'field' }, h('label', { for: name.id, text: 'Name' }), name,
            h('p', { class: 'help', id: 'new-user-help', text: 'Lowercase letters, digits and . _ - @. They sign in with it.' })),
        h('div', { class: 'field' }, h('label', { for: pw.id, text: 'Password' }), pw),
        h('div', { class: 'field' }, h('label', { for: role.id, text: 'Role' }), role,
            h('p', { class: 'help', text: 'Admin: everything. Member: their own links and keys. Viewer: reads only.' })),
        err,
        h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Add user' })));
    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        err.textContent = '';
        for (const i of [name, pw]) i.removeAttribute('aria-invalid');
        try {
            await request('/api/users', { method: 'POST', body: { name: name.value.trim(), password: pw.value, role: role.value } });
            toast(`Added ${name.value.trim()}`);
            name.value = '';
            pw.value = '';
            load();
        } catch (e) {
            err.textContent = e.message;
            const bad = e.field === 'password' ? pw : name;
            bad.setAttribute('aria-invalid', 'true');
            bad.focus();
        }
    });

    const patch = async (u, body, done) => {
        try {
            await request(`/api/users/${u.id}`, { method: 'PATCH', body });
            toast(done);
            load();
        } catch (e) {
            toast(`Could not change ${u.name}: ${e.message}`, 'error');
            load();
        }
    };

    function resetForm(u, slot) {
        const id = `reset-${u.id}`;
        const input = h('input', { id, type: 'password', autocomplete: 'new-password', maxlength: '128', 'aria-describedby': `${id}-err` });
        const e = h('p', { class: 'field-error', id: `${id}-err`, role: 'alert' });
        const f = h('form', { class: 'reset-form', novalidate: true },
            h('label', { for: id, text: `New password for ${u.name}` }), input, e,
            h('div', { class: 'actions' },
                h('button', { type: 'submit', class: 'button primary small', text: 'Set password' }),
                h('button', { type: 'button', class: 'button ghost small', text: 'Cancel', onclick: () => fill(slot) })));
        f.addEventListener('submit', async (ev) => {
            ev.preventDefault();
            try {
                await request(`/api/users/${u.id}`, { method: 'PATCH', body: { password: input.value } });
                toast(`Set a new password for ${u.name}; their sessions ended`);
                fill(slot);
            } catch (x) {
                e.textContent = x.message;
                input.setAttribute('aria-invalid', 'true');
                input.focus();
            }
        });
        fill(slot, f);
        input.focus();
    }

    function row(u) {
        const me = session.user && session.user.name === u.name;
        const slot = h('div', { class: 'reset-slot' });
        const sel = roleSelect(`role-${u.id}`, u.role, `Role of ${u.name}`);
        sel.disabled = me;
        sel.addEventListener('change', () => patch(u, { role: sel.value }, `${u.name} is now ${sel.value}`));
        const toggle = me ? null : u.disabled
            ? h('button', { type: 'button', class: 'button small', text: 'Enable', 'aria-label': `Enable ${u.name}`, onclick: () => patch(u, { disabled: false }, `Enabled ${u.name}`) })
            : h('button', {
                type: 'button', class: 'button small danger-ghost', text: 'Disable', 'aria-label': `Disable ${u.name}`,
                onclick: async () => {
                    if (!await confirmDialog({ title: `Disable ${u.name}?`, text: `${u.name} is signed out everywhere and their API keys stop at once. Their links stay.`, ok: 'Disable user' })) return;
                    patch(u, { disabled: true }, `Disabled ${u.name}`);
                },
            });
        return h('li', { dataset: { user: u.name } },
            h('div', { class: 'user-line' },
                h('strong', { class: 'user-name', text: u.name }),
                me ? h('span', { class: 'muted small', text: '(you)' }) : null,
                h('span', { class: `badge ${u.disabled ? 'disabled' : 'active'}`, text: u.disabled ? 'disabled' : 'active' }),
                h('span', { class: 'muted small last-signin', text: u.last_signin_at ? `last signed in ${when(u.last_signin_at)}` : 'never signed in' })),
            h('div', { class: 'user-controls' },
                sel,
                h('button', { type: 'button', class: 'button small', text: 'Reset password', 'aria-label': `Reset password for ${u.name}`, onclick: () => resetForm(u, slot) }),
                toggle),
            slot);
    }

    async function load() {
        try {
            const { data } = await getJSON('/api/users');
            if (!ctx.alive()) return;
            fill(list, data.users.length ? h('ul', { class: 'user-list' }, data.users.map(row)) : h('p', { class: 'muted empty', text: 'No users yet.' }));
        } catch (e) {
            if (!ctx.alive()) return;
            fill(list, h('p', { class: 'error', role: 'alert', text: e.status === 403 ? 'Only an admin may see and change users.' : `Could not load: ${e.message}` }));
        }
    }

    view.replaceChildren(h('section', { class: 'panel users-page' },
        h('h1', { text: 'Users' }),
        h('p', { class: 'muted', text: 'People who sign in to this dashboard. Scripts use API keys instead.' }),
        h('h2', { text: 'Add a user' }),
        form,
        h('h2', { text: 'Everyone' }),
        list));
    load();
}
