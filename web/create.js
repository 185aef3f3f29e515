// create.js - the page that makes a link: the form (linkform.js) and the
// new short link with its QR code.
import { qrBlob } from './api.js';
import { linkForm } from './linkform.js';
import { h, fill, copyButton, outLink, toast } from './dom.js';
import { remaining } from './format.js';

export function renderCreate(view, ctx) {
    const result = h('section', { class: 'panel result', 'aria-live': 'polite' },
        h('h2', { text: 'Your short link' }),
        h('p', { class: 'muted', text: 'It appears here once created, with a button to copy it and its QR code.' }));
    const { form, focus } = linkForm({
        onSaved: (link) => {
            showResult(result, link, ctx);
            toast(`Created ${link.short_url}`);
        },
    });
    view.replaceChildren(h('div', { class: 'create-page' }, form, result));
    focus();
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
