// bot-agents.test.mjs - which agent a bot click was (issue 22, item 16): bot
// clicks with known user agents show up under their names in the stats'
// bot_agents, beside bot_kinds; a bot shortd does not name counts as
// "other"; a bot's own name inside an in-app browser's user agent
// (TikTokSpider, SnapchatAds, BrandVerity in a Twitter agent) is a bot, not a
// click; the same through the CLI's stats. Both stores (SHORTD_E2E_STORE).

import assert from 'node:assert/strict';
import { after, before } from 'node:test';

import { BROWSER_UA, Conn, api, cli, createLink, it, poll, startServer } from './harness.mjs';

const BOTS = [
    ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'crawler', 'googlebot'],
    ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'crawler', 'googlebot'],
    ['Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)', 'crawler', 'bingbot'],
    ['facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)', 'previewer', 'facebookexternalhit'],
    ['Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)', 'previewer', 'slackbot'],
    ['Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
        'ai_crawler', 'gptbot'],
    ['Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)', 'monitor', 'uptimerobot'],
    ['Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)', 'monitor', 'pingdom'],
    ['Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 ' +
        '(compatible; TikTokSpider; ttspider-feedback@tiktok.com)', 'crawler', 'tiktokspider'],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.0 ' +
        'Safari/605.1.15 (compatible; SnapchatAds/1.0; +https://businesshelp.snapchat.com/s/article/adsbot-crawler)',
        'crawler', 'snapchatads'],
    ['Mozilla/5.0 (iPhone; CPU iPhone OS 7_0 like Mac OS X) AppleWebKit/537.51.1 (KHTML, like Gecko) ' +
        'Mobile/11A465 Twitter for iPhone BrandVerity/1.0 (http://www.brandverity.com/why-is-brandverity-visiting-me)',
        'crawler', 'brandverity'],
    ['Mozilla/5.0 (compatible; inoreader.com; 2 subscribers)', 'other', 'other'],
    ['', 'empty_ua', 'other'],
];

const tally = (pairs) => {
    const o = {};
    for (const k of pairs) o[k] = (o[k] || 0) + 1;
    return o;
};

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv && srv.running) await srv.stop(); });

/* Sends each request on one kept-alive connection, in order; each must be
 * answered 302. */
async function clicks(port, code, uas) {
    const c = await Conn.open(port);
    try {
        for (const ua of uas) {
            const h = ua === null ? '' : `User-Agent: ${ua}\r\n`;
            c.write(`GET /${code} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${h}\r\n`);
            const r = await c.read({ timeoutMs: 20_000 });
            assert.ok(r && r.status === 302, `GET /${code} as ${JSON.stringify(ua)}: ${r && r.status}`);
        }
    } finally {
        c.destroy();
    }
}

async function stats(code) {
    const r = await api(srv, 'GET', `/api/links/${code}/stats`, { key: srv.adminKey });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    return r.json;
}

it('bot clicks show up under their agents\' names in bot_agents, beside bot_kinds', async () => {
    const l = await createLink(srv, srv.adminKey, { url: 'https://example.com/agents' });
    // The browser's click last: one connection is folded in order, so once it
    // is counted, every bot click before it is too.
    await clicks(srv.port, l.code, [...BOTS.map(([ua]) => ua), BROWSER_UA]);
    let s;
    const ok = await poll(async () => {
        s = await stats(l.code);
        return s.clicks >= 1;
    }, { timeoutMs: 20_000, intervalMs: 100 });
    assert.ok(ok, `the click was never counted: ${JSON.stringify(s)}`);
    assert.equal(s.clicks, 1, 'the in-app-shaped bots are not clicks');
    assert.equal(s.bot_clicks, BOTS.length);
    assert.deepEqual(s.bot_kinds, tally(BOTS.map(([, k]) => k)));
    assert.deepEqual(s.bot_agents, tally(BOTS.map(([, , a]) => a)));
    // A person's click names no agent.
    assert.deepEqual(s.browsers, { Chrome: 1 });

    // The CLI's stats read the same rows.
    const r = cli(['stats', '--db', srv.db, l.code]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout).bot_agents, s.bot_agents, r.stdout);
});
