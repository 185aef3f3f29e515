// setup.js - the setup page (/setup?token=...): the first admin account of a
// new shortd, made with the one-time token its first start printed (or wrote
// beside the store). The token leaves the address bar and the history at
// once (it stays in this page's memory only); it is checked before the form
// is shown, so a used or expired link says so instead of asking for a name.
// The account is made and signed in by POST /api/setup.
import { ApiError, session } from './api.js';
import { h } from './dom.js';

const HOW = 'Start shortd again on the empty store for a new setup link, or make the account on the server with ';

function refused(view, err) {
    const done = err.status === 409;
    view.replaceChildren(h('section', { class: 'panel signin setup' },
        h('h1', { text: done ? 'shortd is set up' : 'This setup link does not work' }),
        h('p', { class: 'notice', role: 'alert', id: 'setup-refused', text: done
            ? 'The first admin account exists already. Sign in, or ask an admin for an account.'
            : err.status === 401 ? 'It is unknown, used or expired: a setup link works once, within an hour of the start that printed it.'
                : `shortd answered: ${err.message}` }),
        done ? null : h('p', { class: 'help' }, HOW, h('code', { text: 'shortd user create NAME --role admin' }), '.'),
        h('p', {}, h('a', { class: 'button primary', href: '/dashboard#/signin', text: 'Go to sign in' }))));
}

async function check(token) {
    const res = await fetch(`/api/setup?token=${encodeURIComponent(token)}`, { cache: 'no-store', headers: { Accept: 'application/json' } });
    if (res.ok) return;
    let e = null;
    try { e = (await res.json()).error; } catch { /* not JSON */ }
    throw new ApiError(res.status, e?.code || 'http', e?.message || `shortd answered ${res.status}`);
}

export async function renderSetup(view) {
    const token = new URLSearchParams(location.search).get('token') || '';
    // Out of the address bar, the history and any later Referer.
    history.replaceState(null, '', '/setup');
    document.title = 'Set up · shortd';
    if (!token) {
        refused(view, new ApiError(401, 'invalid_setup_token', 'no token'));
        return;
    }
    try {
        await check(token);
    } catch (e) {
        refused(view, e);
        return;
    }
    const field = (id, label, props) => {
        const input = h('input', { id, name: id, required: true, 'aria-describedby': `${id}-help setup-error`, ...props });
        return [h('label', { for: id, text: label }), input];
    };
    const [nameLabel, name] = field('setup-name', 'Admin name', { type: 'text', autocomplete: 'username', spellcheck: 'false', autocapitalize: 'none', maxlength: '64' });
    const [pwLabel, pw] = field('setup-password', 'Password', { type: 'password', autocomplete: 'new-password', maxlength: '128' });
    const [againLabel, again] = field('setup-again', 'Password again', { type: 'password', autocomplete: 'new-password', maxlength: '128' });
    const error = h('p', { id: 'setup-error', class: 'field-error', role: 'alert' });
    const button = h('button', { type: 'submit', class: 'button primary', text: 'Create admin account' });
    const form = h('form', { class: 'panel signin setup', novalidate: true },
        h('h1', { text: 'Set up shortd' }),
        h('p', { class: 'muted', text: 'Make the first admin account. This link works once, within an hour of the start that printed it.' }),
        nameLabel, name,
        h('p', { class: 'help', id: 'setup-name-help', text: 'Lowercase letters, digits and . _ - @, up to 64.' }),
        pwLabel, pw,
        h('p', { class: 'help', id: 'setup-password-help', text: 'At least 8 characters.' }),
        againLabel, again,
        h('p', { class: 'help', id: 'setup-again-help', text: 'The same password, to be sure of it.' }),
        error,
        button);
    const invalid = (input, text) => {
        error.textContent = text;
        input.setAttribute('aria-invalid', 'true');
        input.focus();
    };
    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        error.textContent = '';
        for (const i of [name, pw, again]) i.removeAttribute('aria-invalid');
        const n = name.value.trim();
        if (!n) return invalid(name, 'Enter a name for the admin.');
        if (pw.value.length < 8) return invalid(pw, 'The password must be at least 8 characters.');
        if (pw.value !== again.value) return invalid(again, 'The two passwords differ.');
        button.disabled = true;
        button.textContent = 'Creating…';
        try {
            await session.setup(token, n, pw.value);
            location.replace('/dashboard#/links');
        } catch (e) {
            if (e.status === 401 || e.status === 409) { refused(view, e); return; }
            invalid(e.field === 'name' ? name : pw, e.message);
        } finally {
            pw.value = '';
            again.value = '';
            button.disabled = false;
            button.textContent = 'Create admin account';
        }
    });
    view.replaceChildren(form);
    name.focus();
}
