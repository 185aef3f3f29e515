// app.js - the dashboard's entry: hash routes, the signed-in frame, and the
// life of a page (a page may register clean-ups; a late answer for a page
// that is gone is dropped).
//
//   #/signin            sign in with a name and password
//   #/links?q&tag&state the links table
//   #/new               create a link
//   #/link/CODE?days|from&to&bots   one link's analytics and QR code
//   #/link/CODE/edit    edit a link
//   #/domains           custom short domains and their links
//   #/bulk              export, and a CSV upload through /api/links/bulk
//   #/keys              API keys: made (shown once), scoped, revoked
//   #/users             users, their roles and state (admins)
//   #/admin             the blocklist (admins)
//   #/service           service-wide totals
//   #/sites             the sites whose page views this shortd counts
//   #/site/ID?days|from&to&bots   one site's analytics
//   #/site/ID/settings  its hosts, badge, read tokens; delete
//   #/site/ID/setup     its snippet, and a live check for the first beacon
//
// /setup?token=... (a path of its own, served the same page) makes the first
// admin account with the first start's setup token (setup.js).
//
// What the signed-in role may do shapes what is offered (api.js's can): a
// viewer gets no New link and no page that writes; only an admin gets Users
// and Admin. Asking for such a page by its address lands on the links.
import { can, session, setUnauthorizedHandler } from './api.js';
import { renderSignin } from './signin.js';
import { renderLinks } from './links.js';
import { renderCreate } from './create.js';
import { renderLink, renderEdit } from './link.js';
import { renderDomains } from './domains.js';
import { renderBulk } from './bulk.js';
import { renderAdmin } from './admin.js';
import { renderService } from './service.js';
import { renderSites, renderSite, renderSiteSettings, renderSiteSetup } from './sites.js';
import { renderSetup } from './setup.js';
import { renderUsers } from './users.js';
import { renderKeys } from './keys.js';

const view = document.getElementById('view');
const nav = document.getElementById('nav');
const signout = document.getElementById('signout');

let generation = 0;
let leaving = [];
let notice = '';

function parseHash() {
    const raw = location.hash.replace(/^#/, '') || '/links';
    const q = raw.indexOf('?');
    const path = q < 0 ? raw : raw.slice(0, q);
    return { path, params: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)) };
}

function render() {
    for (const f of leaving) { try { f(); } catch { /* keep going */ } }
    leaving = [];
    const gen = ++generation;
    const ctx = {
        alive: () => gen === generation,
        onLeave: (f) => leaving.push(f),
        rerender: render,
    };
    const { path, params } = parseHash();
    const signedIn = !!session.user;
    nav.hidden = !signedIn;
    signout.hidden = !signedIn;
    if (!signedIn && path !== '/signin') {
        location.replace('#/signin');
        return;
    }
    if (signedIn && path === '/signin') {
        location.replace('#/links');
        return;
    }
    const need = { new: can.write, users: can.admin, admin: can.admin };
    if (signedIn && ((need[path.slice(1)] && !need[path.slice(1)]()) || (/\/(edit|settings)$/.test(path) && !can.write()))) {
        location.replace('#/links');
        return;
    }
    for (const a of nav.querySelectorAll('a[data-need]')) {
        a.hidden = !(a.dataset.need === 'admin' ? can.admin() : can.write());
    }
    let page = path.split('/')[1] || 'links';
    if (page === 'link') page = 'links';
    if (page === 'site') page = 'sites';
    for (const a of nav.querySelectorAll('a')) {
        if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
        else a.removeAttribute('aria-current');
    }
    let m;
    if (path === '/signin') {
        document.title = 'Sign in · shortd';
        renderSignin(view, { notice });
        notice = '';
    } else if (path === '/links') {
        document.title = 'Links · shortd';
        renderLinks(view, params, ctx);
    } else if (path === '/new') {
        document.title = 'New link · shortd';
        renderCreate(view, ctx);
    } else if ((m = /^\/link\/([^/]+)\/edit$/.exec(path))) {
        let code;
        try { code = decodeURIComponent(m[1]); } catch { code = m[1]; }
        document.title = `Edit ${code} · shortd`;
        renderEdit(view, code, ctx);
    } else if (path === '/domains') {
        document.title = 'Domains · shortd';
        renderDomains(view, ctx);
    } else if (path === '/bulk') {
        document.title = 'Import and export · shortd';
        renderBulk(view, ctx);
    } else if (path === '/keys') {
        document.title = 'API keys · shortd';
        renderKeys(view, ctx);
    } else if (path === '/users') {
        document.title = 'Users · shortd';
        renderUsers(view, ctx);
    } else if (path === '/admin') {
        document.title = 'Admin · shortd';
        renderAdmin(view, ctx);
    } else if ((m = /^\/link\/([^/]+)$/.exec(path))) {
        let code;
        try { code = decodeURIComponent(m[1]); } catch { code = m[1]; }
        document.title = `${code} · shortd`;
        renderLink(view, code, params, ctx);
    } else if (path === '/sites') {
        document.title = 'Sites · shortd';
        renderSites(view, ctx);
    } else if ((m = /^\/site\/([^/]+)(?:\/(settings|setup))?$/.exec(path))) {
        let id;
        try { id = decodeURIComponent(m[1]); } catch { id = m[1]; }
        document.title = `${m[2] === 'settings' ? 'Settings of ' : m[2] === 'setup' ? 'Set up ' : ''}${id} · shortd`;
        if (m[2] === 'settings') renderSiteSettings(view, id, ctx);
        else if (m[2] === 'setup') renderSiteSetup(view, id, ctx);
        else renderSite(view, id, params, ctx);
    } else if (path === '/service') {
        document.title = 'Service · shortd';
        renderService(view, params, ctx);
    } else {
        location.replace('#/links');
    }
}

setUnauthorizedHandler((err) => {
    notice = `You were signed out: ${err.message}.`;
    if (location.hash === '#/signin') render();
    else location.hash = '#/signin';
});

signout.addEventListener('click', async () => {
    await session.signOut().catch(() => { /* ended here anyway */ });
    // A fresh document: nothing fetched in the session stays in memory.
    location.replace('/dashboard#/signin');
    location.reload();
});

if (location.pathname === '/setup') {
    renderSetup(view);
} else {
    window.addEventListener('hashchange', render);
    // Who is signed in comes from the server: the cookie is not the page's to read.
    session.load().catch(() => null).then(render);
}
