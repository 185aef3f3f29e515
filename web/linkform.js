// linkform.js - the form that creates a link (everything POST /api/links
// takes) or edits one (everything PATCH /api/links/CODE takes). The API
// decides what is valid; its error names the field, and the message is shown
// next to that field. A password is only ever sent, never shown.
import { getJSON, request } from './api.js';
import { h } from './dom.js';
import { when } from './format.js';

const EXPIRY = [
    ['never', 'Never'],
    ['3600', 'In 1 hour'],
    ['86400', 'In 1 day'],
    ['604800', 'In 7 days'],
    ['2592000', 'In 30 days'],
    ['at', 'At a date and time…'],
];
export const UTM_KEYS = ['source', 'medium', 'campaign', 'term', 'content'];

/* The URL a redirect sends for 'url' with the UTM object 'utm', as the server
 * builds it (src/links/utm.h): a utm_* already in the query is replaced in
 * place and its repeats dropped, new ones are appended in UTM_KEYS order,
 * the fragment stays last, values percent-encoded but for A-Z a-z 0-9 - . _ ~. */
export function withUtm(url, utm) {
    if (!utm || !url) return url;
    const enc = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
    const hashAt = url.indexOf('#');
    const frag = hashAt < 0 ? '' : url.slice(hashAt);
    const rest = hashAt < 0 ? url : url.slice(0, hashAt);
    const qAt = rest.indexOf('?');
    const base = qAt < 0 ? rest : rest.slice(0, qAt);
    const parts = qAt < 0 ? [] : rest.slice(qAt + 1).split('&').filter((p) => p !== '');
    const out = [];
    const done = new Set();
    for (const p of parts) {
        const name = p.split('=')[0];
        const key = name.startsWith('utm_') ? name.slice(4) : null;
        if (key && UTM_KEYS.includes(key) && utm[key]) {
            if (!done.has(key)) out.push(`utm_${key}=${enc(utm[key])}`);
            done.add(key);
        } else {
            out.push(p);
        }
    }
    for (const k of UTM_KEYS) if (utm[k] && !done.has(k)) out.push(`utm_${k}=${enc(utm[k])}`);
    return `${base}${out.length ? `?${out.join('&')}` : ''}${frag}`;
}

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

function check(name, label, input) {
    input.id = `f-${name}`;
    input.name = name;
    return h('div', { class: 'field check', dataset: { field: name } },
        input,
        h('label', { for: input.id, text: label }),
        h('p', { class: 'field-error', id: `err-${name}`, role: 'alert' }));
}

/* The A/B variants editor: rows of URL and weight, 2 to 10 of them. */
function variantsEditor(initial) {
    const rows = h('ol', { class: 'variants', id: 'variant-rows' });
    const add = h('button', { type: 'button', class: 'button small', id: 'variant-add', text: 'Add a variant' });
    let n = 0;
    const share = () => {
        const ws = [...rows.children].map((li) => Math.max(0, Number(li.querySelector('.v-weight').value) || 0));
        const sum = ws.reduce((a, b) => a + b, 0);
        [...rows.children].forEach((li, i) => {
            li.querySelector('.v-share').textContent = sum ? `${Math.round((100 * ws[i]) / sum)}% of visitors` : '';
            li.querySelector('.v-num').textContent = `Variant ${i + 1}`;
        });
        add.disabled = rows.children.length >= 10;
    };
    const row = (v = { url: '', weight: 1 }) => {
        n++;
        const url = h('input', { type: 'url', id: `f-variant-url-${n}`, class: 'v-url', value: v.url, placeholder: 'https://example.com/b', autocomplete: 'off' });
        const weight = h('input', { type: 'number', id: `f-variant-weight-${n}`, class: 'v-weight', min: '1', max: '1000', value: String(v.weight ?? 1), inputmode: 'numeric' });
        const num = h('span', { class: 'v-num' });
        const li = h('li', { class: 'variant' },
            h('div', { class: 'field grow' }, h('label', { for: url.id }, num, ' URL'), url),
            h('div', { class: 'field weight' }, h('label', { for: weight.id, text: 'Weight' }), weight),
            h('span', { class: 'v-share muted small', 'aria-live': 'polite' }),
            h('button', { type: 'button', class: 'button small danger-ghost v-remove', text: 'Remove', onclick: () => { li.remove(); share(); } }));
        weight.addEventListener('input', share);
        rows.append(li);
        li.querySelectorAll('.v-remove').forEach((b) => b.setAttribute('aria-label', `Remove variant ${rows.children.length}`));
        share();
        return url;
    };
    // Variants come two at least: the first click makes both rows.
    add.addEventListener('click', () => {
        const first = row();
        if (rows.children.length < 2) row();
        first.focus();
    });
    for (const v of initial || []) row(v);
    return {
        el: h('div', {}, rows, add),
        value() {
            return [...rows.children].map((li) => ({
                url: li.querySelector('.v-url').value.trim(),
                weight: Number(li.querySelector('.v-weight').value) || 1,
            })).filter((v) => v.url);
        },
        ensure(k) { while (rows.children.length < k) row(); },
        clear() { rows.replaceChildren(); share(); },
    };
}

/* The form. 'link': the link to edit (null: create). onSaved(link) after a
 * success. Returns {form, focus()}. */
export function linkForm({ link = null, onSaved }) {
    const edit = !!link;
    const url = h('input', { type: 'url', required: true, placeholder: 'https://example.com/a/long/path', autocomplete: 'url', value: link?.url || '' });
    const alias = h('input', { type: 'text', placeholder: 'optional', autocomplete: 'off', spellcheck: 'false', maxlength: '30' });
    const domain = h('select', {}, h('option', { value: '', text: 'The default short host' }));
    const expiry = h('select', {},
        edit && link.expires_at ? h('option', { value: 'keep', text: `Keep (${when(link.expires_at)})` }) : null,
        EXPIRY.map(([v, t]) => h('option', { value: v, text: t })));
    if (edit && link.expires_at) expiry.value = 'keep';
    const at = h('input', { type: 'datetime-local' });
    const atField = field('expires_at', 'Expires at (your local time)', at);
    atField.hidden = true;
    const title = h('input', { type: 'text', maxlength: '256', placeholder: 'optional', value: link?.title || '' });
    const tags = h('input', { type: 'text', placeholder: 'docs, launch', autocomplete: 'off', value: (link?.tags || []).join(', ') });
    const note = h('textarea', { rows: '2', placeholder: 'optional, only you see it' });
    note.value = link?.note || '';
    const permanent = h('input', { type: 'checkbox' });
    const track = h('input', { type: 'checkbox' });
    track.checked = link?.track !== false;
    const maxClicks = h('input', { type: 'number', min: '1', inputmode: 'numeric', placeholder: 'no limit' });
    const password = h('input', { type: 'password', autocomplete: 'new-password', maxlength: '128', placeholder: edit && link.protected ? 'unchanged' : 'none' });
    const removePw = h('input', { type: 'checkbox' });
    const utmIn = Object.fromEntries(UTM_KEYS.map((k) => [k, h('input', { type: 'text', maxlength: '128', autocomplete: 'off', value: link?.utm?.[k] || '' })]));
    const preview = h('output', { class: 'utm-preview', id: 'utm-preview', for: 'f-url' });
    const previewLead = h('span', { class: 'muted small', text: 'Visitors are sent to ' });
    const variants = variantsEditor(link?.variants);
    const general = h('p', { class: 'form-error', role: 'alert' });
    const label = edit ? 'Save changes' : 'Create short link';
    const submit = h('button', { type: 'submit', class: 'button primary', text: label });

    const utmValue = () => {
        const o = {};
        for (const k of UTM_KEYS) if (utmIn[k].value.trim()) o[k] = utmIn[k].value.trim();
        return Object.keys(o).length ? o : null;
    };
    const showPreview = () => {
        const u = utmValue();
        const on = !!(u && url.value.trim());
        previewLead.hidden = !on;
        preview.textContent = on ? withUtm(url.value.trim(), u) : 'Add a UTM parameter to see the URL visitors are sent to.';
    };
    url.addEventListener('input', showPreview);
    for (const k of UTM_KEYS) utmIn[k].addEventListener('input', showPreview);
    showPreview();
    expiry.addEventListener('change', () => { atField.hidden = expiry.value !== 'at'; });
    removePw.addEventListener('change', () => { password.disabled = removePw.checked; });
    // A browser caches a 301 and never comes back to be counted: the API
    // refuses a click limit on a permanent link, so the form offers neither
    // with the other.
    permanent.addEventListener('change', () => {
        maxClicks.disabled = permanent.checked || !track.checked;
        if (permanent.checked) maxClicks.value = '';
    });
    maxClicks.addEventListener('input', () => {
        permanent.disabled = !!maxClicks.value;
        track.disabled = !!maxClicks.value;
    });
    // A click limit counts the visits: the API refuses it on a link that
    // records none, so the form offers neither with the other.
    track.addEventListener('change', () => {
        maxClicks.disabled = !track.checked || permanent.checked;
        if (!track.checked) maxClicks.value = '';
    });

    const utmBox = h('fieldset', { class: 'group', id: 'utm-group' },
        h('legend', { text: 'UTM parameters' }),
        h('p', { class: 'help', text: 'Added to the destination\'s query on every redirect. Not with A/B variants.' }),
        h('div', { class: 'row3' }, UTM_KEYS.map((k) => field(`utm-${k}`, k[0].toUpperCase() + k.slice(1), utmIn[k]))),
        h('div', { class: 'preview-box' }, previewLead, preview));
    const abBox = h('fieldset', { class: 'group', id: 'variants-group' },
        h('legend', { text: 'A/B variants' }),
        h('p', { class: 'help', text: 'Two to ten destinations; each visitor is sent to one, in proportion to its weight, and stays with it. Leave empty for one destination.' }),
        variants.el,
        h('p', { class: 'field-error', id: 'err-variants', role: 'alert' }));

    const pwField = edit && link.protected
        ? h('div', { class: 'row2' },
            field('password', 'New password', password, 'Visitors must enter it before they are sent on. Leave empty to keep the current one.'),
            check('password-remove', 'Remove the password', removePw))
        : field('password', 'Password', password, 'Visitors must enter it before they are sent on. It is never shown again.');

    const form = h('form', { class: 'panel create link-form', novalidate: true },
        h('h1', { text: edit ? `Edit ${link.code}` : 'New short link' }),
        field('url', 'Destination URL', url, edit ? 'Changing it is recorded in the link\'s history.' : 'http or https, with a host.'),
        edit ? null : h('div', { class: 'row2' },
            field('alias', 'Custom alias', alias, '4–30 letters, digits, _ or -. Leave empty for a generated code.'),
            field('domain', 'Short host', domain, 'A custom domain you registered (Domains page).')),
        h('div', { class: 'row2' },
            field('title', 'Title', title),
            field('tags', 'Tags', tags, 'Separated by commas.')),
        field('note', 'Note', note),
        h('div', { class: 'row2' },
            h('div', {}, field('expiry', 'Expires', expiry), atField),
            edit ? h('div', { class: 'field' }, h('p', { class: 'label-like', text: 'Click limit' }),
                h('p', { id: 'clicks-left', text: link.max_clicks ? `${link.clicks_left} of ${link.max_clicks} clicks left` : 'No limit' }),
                h('p', { class: 'help', text: 'Set when the link is made.' }))
                : field('max_clicks', 'Click limit', maxClicks, 'After this many clicks the link answers 410 Gone. Not with a permanent redirect.')),
        pwField,
        edit ? null : check('permanent', 'Permanent redirect (301). Browsers cache it, so their repeat clicks are not counted.', permanent),
        // A limited link always records its visits: no box to offer.
        edit && link.max_clicks ? null
            : check('track', 'Record visits. Unchecked, the link still redirects, but nothing about its visits is counted, stored or sent.', track),
        utmBox,
        abBox,
        general,
        h('div', { class: 'actions' }, submit,
            edit ? h('a', { class: 'button ghost', href: `#/link/${encodeURIComponent(link.code)}`, text: 'Cancel' }) : null));

    if (!edit) {
        getJSON('/api/domains').then(({ data }) => {
            for (const d of data) domain.append(h('option', { value: d.host, text: d.host }));
        }, () => { /* no custom domains to offer */ });
    }

    // One Idempotency-Key per attempt: a retry after a network failure cannot
    // make a second link; any answer from the server starts a new one.
    let idem = crypto.randomUUID();

    const clearErrors = () => {
        general.textContent = '';
        for (const p of form.querySelectorAll('.field-error')) p.textContent = '';
        for (const c of form.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
    };
    const showError = (name, message) => {
        let target = { ttl: 'expiry' }[name] || name;
        if (/^utm/.test(target)) target = target.includes('.') ? `utm-${target.split('.')[1]}` : 'utm-source';
        if (/^variants/.test(target)) target = 'variants';
        const err = form.querySelector(`#err-${CSS.escape(target)}`);
        const control = form.querySelector(`#f-${CSS.escape(target)}`) || (target === 'variants' ? form.querySelector('.v-url') : null);
        if (!err) {
            general.textContent = message;
            return;
        }
        if (target === 'expires_at') atField.hidden = false;
        err.textContent = message;
        control?.setAttribute('aria-invalid', 'true');
        control?.focus();
    };

    const tagList = () => [...new Set(tags.value.split(',').map((t) => t.trim()).filter(Boolean))];
    const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

    function body() {
        const b = {};
        const u = url.value.trim();
        if (!u) throw ['url', 'Enter the URL the short link should lead to.'];
        if (!edit || u !== link.url) b.url = u;
        if (expiry.value === 'at') {
            if (!at.value) throw ['expires_at', 'Pick a date and time, or choose another expiry.'];
            const d = new Date(at.value);
            if (Number.isNaN(d.getTime())) throw ['expires_at', 'This is not a date and time.'];
            b.expires_at = d.toISOString();
        } else if (expiry.value === 'never') {
            if (edit && link.expires_at) b.expires_at = null;
        } else if (expiry.value !== 'keep') {
            b.ttl = Number(expiry.value);
        }
        const t = title.value.trim();
        const n = note.value.trim();
        const tg = tagList();
        const utm = utmValue();
        const vs = variants.value();
        const v = vs.length ? vs : null;
        if (edit) {
            if (t !== (link.title || '')) b.title = t || null;
            if (n !== (link.note || '')) b.note = n || null;
            if (!same(tg, link.tags || [])) b.tags = tg.length ? tg : null;
            if (!same(utm, link.utm)) b.utm = utm;
            if (!same(v, link.variants?.map((x) => ({ url: x.url, weight: x.weight ?? 1 })) ?? null)) b.variants = v;
            if (track.checked !== (link.track !== false)) b.track = track.checked;
            if (removePw.checked) b.password = null;
            else if (password.value) b.password = password.value;
        } else {
            if (alias.value.trim()) b.alias = alias.value.trim();
            if (domain.value) b.domain = domain.value;
            if (t) b.title = t;
            if (n) b.note = n;
            if (tg.length) b.tags = tg;
            if (permanent.checked) b.permanent = true;
            if (!track.checked) b.track = false;
            if (maxClicks.value) b.max_clicks = Number(maxClicks.value);
            if (password.value) b.password = password.value;
            if (utm) b.utm = utm;
            if (v) b.variants = v;
        }
        return b;
    }

    form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        clearErrors();
        let b;
        try { b = body(); } catch (e) { return showError(e[0], e[1]); }
        if (edit && !Object.keys(b).length) { general.textContent = 'Nothing changed.'; return; }
        submit.disabled = true;
        submit.textContent = edit ? 'Saving…' : 'Creating…';
        try {
            const res = edit
                ? await request(`/api/links/${encodeURIComponent(link.code)}`, { method: 'PATCH', body: b })
                : await request('/api/links', { method: 'POST', body: b, headers: { 'Idempotency-Key': idem } });
            idem = crypto.randomUUID();
            const saved = await res.json();
            if (!edit) {
                form.reset();
                atField.hidden = true;
                variants.clear();
                showPreview();
            }
            onSaved(saved);
        } catch (e) {
            if (e.status) idem = crypto.randomUUID();
            showError(e.field || '', e.message);
        } finally {
            submit.disabled = false;
            submit.textContent = label;
        }
    });

    return { form, focus: () => url.focus() };
}
