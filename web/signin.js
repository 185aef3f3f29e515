// signin.js - the sign-in page: a user's name and password, sent to
// POST /api/session; the server answers with an HttpOnly session cookie, so
// nothing secret is kept by this page or in the browser's storage.
import { session } from './api.js';
import { h } from './dom.js';

export function renderSignin(view, { notice } = {}) {
    const name = h('input', {
        id: 'username', name: 'username', type: 'text', autocomplete: 'username', spellcheck: 'false',
        autocapitalize: 'none', required: true, 'aria-describedby': 'signin-error',
    });
    const password = h('input', {
        id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true,
        'aria-describedby': 'signin-help signin-error',
    });
    const error = h('p', { id: 'signin-error', class: 'field-error', role: 'alert' });
    const button = h('button', { type: 'submit', class: 'button primary', text: 'Sign in' });
    const form = h('form', { class: 'panel signin', novalidate: true },
        h('h1', { text: 'Sign in to shortd' }),
        notice ? h('p', { class: 'notice', role: 'status', text: notice }) : null,
        h('label', { for: 'username', text: 'Name' }),
        name,
        h('label', { for: 'password', text: 'Password' }),
        password,
        error,
        h('p', { id: 'signin-help', class: 'help' },
            'An admin gives you an account (the Users page, or ', h('code', { text: 'shortd user create NAME' }),
            '). Scripts use API keys (', h('code', { text: 'shortd key create' }), ') instead.'),
        button);
    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        error.textContent = '';
        name.removeAttribute('aria-invalid');
        password.removeAttribute('aria-invalid');
        const missing = !name.value.trim() ? name : !password.value ? password : null;
        if (missing) {
            error.textContent = missing === name ? 'Enter your name.' : 'Enter your password.';
            missing.setAttribute('aria-invalid', 'true');
            missing.focus();
            return;
        }
        button.disabled = true;
        button.textContent = 'Signing in…';
        try {
            await session.signIn(name.value.trim(), password.value);
            password.value = '';
            location.hash = '#/links';
        } catch (e) {
            error.textContent = e.status === 401 ? 'Wrong name or password.' : e.message;
            password.setAttribute('aria-invalid', 'true');
            password.value = '';
            password.focus();
        } finally {
            button.disabled = false;
            button.textContent = 'Sign in';
        }
    });
    view.replaceChildren(form);
    name.focus();
}
