// create.js - the form that makes a link. The API decides what is valid; its
// error names the field, and the message is shown next to that field.
import { request, qrBlob } from './api.js';
import { h, fill, copyButton, outLink, toast } from './dom.js';
import { remaining } from './format.js';

const EXPIRY = [
    ['never', 'Never'],
    ['3600', 'In 1 hour'],
    ['86400', 'In 1 day'],
    ['604800', 'In 7 days'],
    ['2592000', 'In 30 days'],
    ['at', 'At a date and time…'],
];

function field(name, label, control, help) {
    control.id = `f-${name}`;
    control.name = name;
    const err = h('p', { class: 'field-error', id: `err-${name}`, role: 'alert' });
    control.setAttribute('aria-describedby', [help ? `help-${name}` : null, `err-${name}`].filter(Boolean).join(' '));
    return h('div', { class: 'field', dataset: { field: name } },
        h('label', { for: control.id, text: label }),
        control,
        help ? h('p', { class: 'help', id: `help-${name}`, text: help }) : null,
        err);
}

export function renderCreate(view, ctx) {
    const url = h('input', { type: 'url', required: true, placeholder: 'https://example.com/a/long/path', autocomplete: 'url' });
    const alias = h('input', { type: 'text', placeholder: 'optional', autocomplete: 'off', spellcheck: 'false', maxlength: '30' });
    const expiry = h('select', {}, EXPIRY.map(([v, t]) => h('option', { value: v, text: t })));
    const at = h('input', { type: 'datetime-local' });
    const atField = field('expires_at', 'Expires at (your local time)', at);
    atField.hidden = true;
    const title = h('input', { type: 'text', maxlength: '256', placeholder: 'optional' });
    const tags = h('input', { type: 'text', placeholder: 'docs, launch', autocomplete: 'off' });
    const note = h('textarea', { rows: '2', placeholder: 'optional, only you see it' });
    const permanent = h('input', { type: 'checkbox', id: 'f-permanent', name: 'permanent' });
    const general = h('p', { class: 'form-error', role: 'alert' });
    const submit = h('button', { type: 'submit', class: 'button primary', text: 'Create short link' });
    const result = h('section', { class: 'panel result', 'aria-live': 'polite' },
        h('h2', { text: 'Your short link' }),
        h('p', { class: 'muted', text: 'It appears here once created, with a button to copy it and its QR code.' }));

    expiry.addEventListener('change', () => { atField.hidden = expiry.value !== 'at'; });

    const form = h('form', { class: 'panel create', novalidate: true },
        h('h1', { text: 'New short link' }),
        field('url', 'Destination URL', url, 'http or https, with a host.'),
        h('div', { class: 'row2' },
            field('alias', 'Custom alias', alias, '4–30 letters, digits, _ or -. Leave empty for a generated code.'),
            h('div', {}, field('expiry', 'Expires', expiry), atField)),
        h('div', { class: 'row2' },
            field('title', 'Title', title),
            field('tags', 'Tags', tags, 'Separated by commas.')),
        field('note', 'Note', note),
        h('div', { class: 'field check', dataset: { field: 'permanent' } },
            permanent,
            h('label', { for: 'f-permanent', text: 'Permanent redirect (301). Browsers cache it, so their repeat clicks are not counted.' }),
            h('p', { class: 'field-error', id: 'err-permanent', role: 'alert' })),
        general,
        h('div', { class: 'actions' }, submit));

    // One Idempotency-Key per attempt: a retry after a network failure cannot
    // make a second link; any answer from the server starts a new one.
    let idem = crypto.randomUUID();

    const clearErrors = () => {
        general.textContent = '';
        for (const p of form.querySelectorAll('.field-error')) p.textContent = '';
        for (const c of form.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
    };
    const showError = (name, message) => {
        const target = { ttl: 'expiry' }[name] || name;
        const err = form.querySelector(`#err-${CSS.escape(target)}`);
        const control = form.querySelector(`#f-${CSS.escape(target)}`);
        if (!err) {
            general.textContent = message;
            return;
        }
        if (target === 'expires_at') atField.hidden = false;
        err.textContent = message;
        control?.setAttribute('aria-invalid', 'true');
        control?.focus();
    };

    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        clearErrors();
        const body = { url: url.value.trim() };
        if (!body.url) return showError('url', 'Enter the URL the short link should lead to.');
        if (alias.value.trim()) body.alias = alias.value.trim();
        if (expiry.value === 'at') {
            if (!at.value) return showError('expires_at', 'Pick a date and time, or choose another expiry.');
            const d = new Date(at.value);
            if (Number.isNaN(d.getTime())) return showError('expires_at', 'This is not a date and time.');
            body.expires_at = d.toISOString();
        } else if (expiry.value !== 'never') {
            body.ttl = Number(expiry.value);
        }
        if (title.value.trim()) body.title = title.value.trim();
        if (note.value.trim()) body.note = note.value.trim();
        const tagList = [...new Set(tags.value.split(',').map((t) => t.trim()).filter(Boolean))];
        if (tagList.length) body.tags = tagList;
        if (permanent.checked) body.permanent = true;

        submit.disabled = true;
        submit.textContent = 'Creating…';
        try {
            const res = await request('/api/links', { method: 'POST', body, headers: { 'Idempotency-Key': idem } });
            idem = crypto.randomUUID();
            const link = await res.json();
            form.reset();
            atField.hidden = true;
            showResult(result, link, ctx);
            toast(`Created ${link.short_url}`);
        } catch (e) {
            if (e.status) idem = crypto.randomUUID();
            showError(e.field || '', e.message);
        } finally {
            submit.disabled = false;
            submit.textContent = 'Create short link';
        }
    });

    view.replaceChildren(h('div', { class: 'create-page' }, form, result));
    url.focus();
}

async function showResult(result, link, ctx) {
    const qr = h('img', { class: 'qr', alt: `QR code of ${link.short_url}`, width: '180', height: '180' });
    fill(result,
        h('h2', { text: 'Your short link' }),
        h('p', { class: 'short-url' }, outLink(link.short_url), ' ', copyButton(link.short_url)),
        h('p', { class: 'muted' }, 'Leads to ', outLink(link.url), link.expires_at ? ` · expires ${remaining(link) === 'expired' ? 'now' : `in ${remaining(link)}`}` : ''),
        qr,
        h('p', { class: 'actions' },
            h('a', { class: 'button', href: `#/link/${encodeURIComponent(link.code)}`, text: 'See its clicks' }),
            h('a', { class: 'button ghost', href: '#/links', text: 'All links' })));
    try {
        const blob = await qrBlob(link.code, 'png', 6);
        if (!ctx.alive()) return;
        const src = URL.createObjectURL(blob);
        ctx.onLeave(() => URL.revokeObjectURL(src));
        qr.src = src;
    } catch (e) {
        qr.replaceWith(h('p', { class: 'error', text: `No QR code: ${e.message}` }));
    }
}
