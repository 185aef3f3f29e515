#!/usr/bin/env node
// make-bitly.mjs - writes a CSV of links as Bitly's web app exports them,
// for the import tests:
//
//   node tests/data/make-bitly.mjs --links N --out FILE [--expect FILE] [--style web|api]
//
// Bitly publishes no schema of the file, so two headings are written: --style
// web (default) the web export's headings as migration guides quote them
// (Title, Link, Custom Link, Destination URL, Date Created, Tags,
// Engagements), --style api the v4 API's field names in another order
// (long_url, link, created_at, title, tags, custom_bitlinks, clicks). RFC 4180
// quoting (fields with a comma, quote or newline in double quotes, quotes
// doubled), CRLF line ends as spreadsheets write them. The awkward rows:
// titles and URLs with quoted commas, quotes and a newline, comma-separated
// tags, a click count with a thousands separator, case-sensitive back-halves,
// a branded (custom) domain, custom bitlinks, and two bad rows (no
// destination, a bitlink without a back-half). --expect writes what an
// import must find (JSON).
import fs from 'node:fs';

const o = {links: 20, out: null, expect: null, style: 'web'};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i], v = () => process.argv[++i];
  if (a === '--links') o.links = Number(v());
  else if (a === '--out') o.out = v();
  else if (a === '--expect') o.expect = v();
  else if (a === '--style') o.style = v();
  else { console.error(`make-bitly: unknown argument '${a}'`); process.exit(2); }
}
if (!o.out || !['web', 'api'].includes(o.style)) {
  console.error('make-bitly: --out FILE [--style web|api] is needed');
  process.exit(2);
}

let seed = 42;
const rand = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 4294967296; };
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const backHalf = () => Array.from({length: 7}, () => B62[Math.floor(rand() * 62)]).join('');
const csv = (s) => (/[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s);
const day0 = Math.floor(Date.now() / 86400000) * 86400000 - 40 * 86400000;
const iso = (ms) => new Date(ms).toISOString().replace(/\.\d+Z$/, '+0000'); // the API's shape

// [link, custom bitlinks, destination, title, created, tags, clicks text]
const rows = [];
const expect = {links: 0, refused: 0, byCode: {}};
const add = (link, custom, url, title, created, tags, clicks, extra = []) => {
  rows.push([link, custom, url, title, created, tags, clicks]);
  const m = /^(?:https?:\/\/)?([^/]+)\/(.+)$/.exec(link);
  const host = m[1].toLowerCase();
  const domain = ['bit.ly', 'j.mp', 'bitly.is', 'bitly.com'].includes(host) ? null : host;
  expect.byCode[m[2]] = {url, domain, title: title || null, clicks: Number(clicks.replace(/,/g, '')) || 0,
                         tags: tags ? tags.split(/[,;|]/).map((t) => t.trim()).filter(Boolean) : []};
  for (const [code, dom] of extra) expect.byCode[code] = {...expect.byCode[m[2]], domain: dom, clicks: 0};
  expect.links += 1 + extra.length;
};

add('bit.ly/3xYzAbC', '', 'https://example.com/a,b?x=1,2', 'Hello, world', iso(day0), 'marketing, spring', '1,234');
add('https://bit.ly/Up-Case', '', 'https://example.com/upper', 'He said "hi", twice', iso(day0 + 3600e3), '', '7');
add('go.example.com/Spring-Sale', 'go.example.com/launch, go.example.com/Launch-2',
    'https://shop.example.com/sale?utm_source=bitly', 'Spring sale\nsecond line', iso(day0 + 86400e3),
    'sale;promo', '42', [['launch', 'go.example.com'], ['Launch-2', 'go.example.com']]);
add('j.mp/short1', '', 'https://example.org/old-j-mp', '', o.style === 'web' ? '3/15/2025 2:05 PM' : iso(day0),
    'a|b', '0');
for (let i = 0; i < o.links; i++) {
  add('bit.ly/' + backHalf(), '', `https://example.net/page/${i}?q=${i},${i + 1}`, `Page ${i}, generated`,
      iso(day0 + i * 3600e3), i % 3 ? '' : 'generated', String(i * 3));
}
// bad rows: refused with their line, the others imported
rows.push(['bit.ly/NoDest1', '', '', 'no destination', iso(day0), '', '1']);
rows.push(['bit.ly/', '', 'https://example.com/x', 'no back-half', iso(day0), '', '1']);
expect.refused = 2;

const header = o.style === 'web'
  ? ['Title', 'Link', 'Custom Link', 'Destination URL', 'Date Created', 'Tags', 'Engagements']
  : ['long_url', 'link', 'created_at', 'title', 'tags', 'custom_bitlinks', 'clicks'];
const order = o.style === 'web' ? [3, 0, 1, 2, 4, 5, 6] : [2, 0, 4, 3, 5, 1, 6];
const lines = [header.join(',')];
let line = 2;
expect.badLines = [];
for (const r of rows) {
  const text = order.map((k) => csv(r[k])).join(',');
  if (r[0] === 'bit.ly/NoDest1' || r[0] === 'bit.ly/') expect.badLines.push(line);
  lines.push(text);
  line += (text.match(/\n/g) || []).length + 1;
}
fs.writeFileSync(o.out, lines.join('\r\n') + '\r\n');
if (o.expect) fs.writeFileSync(o.expect, JSON.stringify(expect, null, 1));
