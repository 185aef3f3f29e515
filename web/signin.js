// signin.js - the sign-in page: an API key, checked against the server
// before it is kept in local storage.
import { request, session } from './api.js';
import { h } from './dom.js';

export function renderSignin(view, { notice } = {}) {
    const input = h('input', {
        id: 'apikey', name: 'apikey', type: 'password', autocomplete: 'off', spellcheck: 'false',
        placeholder: 'sk_…', required: true, 'aria-describedby': 'apikey-help apikey-error',
    });
    const error = h('p', { id: 'apikey-error', class: 'field-error', role: 'alert' });
    const button = h('button', { type: 'submit', class: 'button primary', text: 'Sign in' });
    const form = h('form', { class: 'panel signin', novalidate: true },
        h('h1', { text: 'Sign in to shortd' }),
        notice ? h('p', { class: 'notice', role: 'status', text: notice }) : null,
        h('label', { for: 'apikey', text: 'API key' }),
        input,
        error,
        h('p', { id: 'apikey-help', class: 'help' },
            'The admin key is printed once when shortd first starts on an empty database (',
            h('code', { text: 'make run' }), '); more keys come from ',
            h('code', { text: 'shortd key create' }), '. The key stays in this browser’s local storage until you sign out.'),
        button);
    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const key = input.value.trim();
        error.textContent = '';
        input.removeAttribute('aria-invalid');
        if (!key) {
            error.textContent = 'Paste an API key.';
            input.setAttribute('aria-invalid', 'true');
            input.focus();
            return;
        }
        button.disabled = true;
        button.textContent = 'Checking…';
        try {
            await request('/api/links?limit=1', { key });
            session.set(key);
            location.hash = '#/links';
        } catch (e) {
            error.textContent = e.status === 401
                ? `This key was not accepted: ${e.message}. Check that you copied all of it.`
                : e.message;
            input.setAttribute('aria-invalid', 'true');
            input.select();
        } finally {
            button.disabled = false;
            button.textContent = 'Sign in';
        }
    });
    view.replaceChildren(form);
    input.focus();
}
