#!/usr/bin/env node
// make-yourls.mjs - writes a YOURLS 1.10.4 installation's data the way its
// administrators export it, for the import tests and the import benchmark:
//
//   node tests/data/make-yourls.mjs --links N --visits M --out FILE [options]
//
//   --format dump   (default) a mysqldump file in the exact shape MariaDB's
//                   mariadb-dump 10.19 (MariaDB 10.11.19, Debian 12) writes
//                   of the tables YOURLS 1.10.4's installer creates
//                   (includes/functions-install.php): the sandbox-mode line,
//                   header comments, /*!40101 ... */ lines, DROP TABLE,
//                   CREATE TABLE, LOCK TABLES, extended INSERTs with a row a
//                   line, cut near --line-bytes (net_buffer_length), tables
//                   in name order (yourls_log before yourls_url). Checked by
//                   loading it into MariaDB and dumping it again: the same
//                   text but for the dump's date and the order of the url
//                   rows (mariadb-dump writes them in keyword order).
//   --flavor mysql  MySQL's mysqldump shape instead: each extended INSERT on
//                   one line, thousands of rows long
//   --format csv    FILE is a folder: yourls_url.csv and yourls_log.csv as
//                   phpMyAdmin exports a table (every field in double quotes,
//                   quotes doubled, NULL bare, a header row)
//   --prefix P      the table prefix (default yourls_)
//   --seed S        the random seed (default 1)
//   --plain         no awkward rows: only generated links and visits
//   --start DAY     the first day of the links (YYYY-MM-DD; default 70 days ago)
//   --expect FILE   writes what an import must find (JSON): totals, and for
//                   up to 10,000 links each link with its clicks and days
//
// The output is streamed: the benchmark's 1 M links and 10 M visits never
// sit in memory (a counter a link does). Awkward cases, unless --plain:
// keywords with uppercase letters and hyphens (YOURLS_URL_CONVERT 62),
// titles with quotes, backslashes, newlines and non-ASCII, URLs holding ';'
// and '),(' and "'", a NULL title, a zero click link, a bad row (a URL that
// is no URL), visits from bots (Googlebot, curl, bingbot) and browsers,
// 'direct' referrers, empty country codes, and a log row of a deleted link.
import fs from 'node:fs';
import path from 'node:path';

function parseArgs(argv) {
  const o = {links: 100, visits: 1000, out: null, format: 'dump', prefix: 'yourls_', seed: 1,
             plain: false, expect: null, lineBytes: 1000000, start: null,
             flavor: 'mariadb'};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = () => argv[++i];
    if (a === '--links') o.links = Number(v());
    else if (a === '--visits') o.visits = Number(v());
    else if (a === '--out') o.out = v();
    else if (a === '--format') o.format = v();
    else if (a === '--prefix') o.prefix = v();
    else if (a === '--seed') o.seed = Number(v());
    else if (a === '--plain') o.plain = true;
    else if (a === '--expect') o.expect = v();
    else if (a === '--line-bytes') o.lineBytes = Number(v());
    else if (a === '--start') o.start = v();
    else if (a === '--flavor') o.flavor = v();
    else throw new Error(`make-yourls: unknown argument '${a}'`);
  }
  if (!o.out) throw new Error('make-yourls: --out FILE is needed');
  if (!['dump', 'csv'].includes(o.format)) throw new Error(`make-yourls: no format '${o.format}'`);
  if (!['mariadb', 'mysql'].includes(o.flavor)) throw new Error(`make-yourls: no flavor '${o.flavor}'`);
  return o;
}

// mulberry32: small, seeded, the same sequence on every run
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The agents of the log: [user agent, is a bot].
const AGENTS = [
  ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36', false],
  ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:121.0) Gecko/20100101 Firefox/121.0', false],
  ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1', false],
  ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36', false],
  ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', true],
  ['curl/8.5.0', true],
  ['Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)', true],
];
const REFERRERS = ['direct', 'direct', 'https://www.google.com/', 'https://t.co/abc', 'https://news.ycombinator.com/item?id=1'];
const COUNTRIES = ['US', 'FR', 'DE', '', 'JP'];
const DAYS = 60; // links and visits spread over 60 days from --start
let DAY0;

// The awkward links, first in the url table: [keyword, url, title].
const AWKWARD = [
  ['Up-Case', 'https://example.com/upper?x=1', 'Upper case and a hyphen'],
  ['a-b-c', 'https://example.com/a;b;c', 'A "quoted" title with a \\ backslash'],
  ['ABC', "https://example.com/p?q=1),(2,'x');DROP", "it's O'Reilly; ),( and \"more\""],
  ['z', 'https://example.com/one-letter', null],
  ['Cafe-2024', 'https://example.com/caf%C3%A9', 'Café ☕ line\nbreak\ttab'],
  ['zero', 'https://example.com/never-clicked', 'never clicked'],
];
const BAD = ['badrow', 'not a url at all', 'a bad row'];
const DELETED = 'gone-link'; // in the log only: YOURLS keeps a deleted link's log rows

// The keyword of the i-th generated link: base36, as YOURLS makes them, with a
// prefix that no awkward keyword has.
const keyword = (i) => 'k' + i.toString(36);
const urlOf = (i) => `https://example.org/page/${i}?ref=${(i * 7919) % 1000}`;

// MySQL's escaping of a string literal (mysql_real_escape_string), in quotes.
function sqlStr(s) {
  if (s === null) return 'NULL';
  return "'" + s.replace(/[\\'"\n\r\0\x1a]/g, (c) => ({'\\': '\\\\', "'": "\\'", '"': '\\"', '\n': '\\n', '\r': '\\r', '\0': '\\0', '\x1a': '\\Z'})[c]) + "'";
}
function csvStr(s) {
  return s === null ? 'NULL' : '"' + s.replace(/"/g, '""') + '"';
}
function datetime(sec) {
  return new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');
}

// A writable stream written in chunks, waiting when it is full.
class Out {
  constructor(file) { this.s = fs.createWriteStream(file); this.parts = []; this.size = 0; this.bytes = 0; }
  async add(text) {
    this.parts.push(text);
    this.size += text.length;
    if (this.size > 1 << 20) await this.flush();
  }
  async flush() {
    if (!this.parts.length) return;
    const chunk = this.parts.join('');
    this.parts = []; this.size = 0;
    this.bytes += Buffer.byteLength(chunk);
    if (!this.s.write(chunk)) await new Promise((r) => this.s.once('drain', r));
  }
  async end() { await this.flush(); await new Promise((r) => this.s.end(r)); }
}

// Extended INSERTs: rows joined by ',' until the line is near its limit.
// Extended INSERTs: rows joined by ',' until the statement is near its
// limit. MariaDB's mariadb-dump puts each row on a line of its own, MySQL's
// mysqldump all on the statement's line; rows never hold a newline (escaped),
// so 'pos', the dump's line count shared with the text around, stays exact.
class Inserts {
  constructor(out, table, lineBytes, pos, rowLines) {
    this.out = out; this.table = table; this.max = lineBytes; this.len = 0; this.pos = pos;
    this.rowLines = rowLines;
  }
  // Adds a row; returns the line it is on.
  async row(values) {
    const text = '(' + values.join(',') + ')';
    if (this.len && this.len + text.length + 1 > this.max) await this.close();
    if (!this.len) {
      await this.out.add(`INSERT INTO \`${this.table}\` VALUES${this.rowLines ? '\n' : ' '}`);
      if (this.rowLines) this.pos.line++;
      this.len = 30;
    } else {
      await this.out.add(this.rowLines ? ',\n' : ',');
      if (this.rowLines) this.pos.line++;
    }
    await this.out.add(text);
    this.len += text.length + 1;
    return this.pos.line;
  }
  async close() {
    if (this.len) {
      await this.out.add(';\n');
      this.pos.line++;
    }
    this.len = 0;
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  // By default 70 days ago (UTC midnight): recent enough that a server's
  // retention (retention-days, 400 by default) keeps every imported day.
  DAY0 = o.start ? Date.parse(o.start + 'T00:00:00Z') / 1000
                 : Math.floor(Date.now() / 86400000) * 86400 - 70 * 86400;
  const rand = rng(o.seed);
  const n = o.links;
  const links = []; // [keyword, url, title, created] of the awkward ones
  if (!o.plain) {
    for (const [k, u, t] of AWKWARD) links.push([k, u, t]);
  }
  const total = links.length + n;
  const created = (i) => DAY0 + Math.floor((i * 86400 * DAYS) / Math.max(total, 1)) % (86400 * DAYS);
  const linkAt = (i) => (i < links.length ? links[i] : [keyword(i - links.length), urlOf(i - links.length), `Page ${i - links.length}`]);

  // The visits, drawn now so the url table can hold totals that cover them.
  // Skewed: a few links get most clicks, as in real installations; 'zero' none.
  const counts = new Uint32Array(total);
  const bots = new Uint32Array(total);
  const keepDays = total <= 10000;
  const days = keepDays ? Array.from({length: total}, () => new Map()) : null;
  const zero = o.plain ? -1 : AWKWARD.findIndex((a) => a[0] === 'zero');
  const pick = () => {
    for (;;) {
      const r = rand();
      const i = Math.floor(r * r * total);
      if (i !== zero) return i;
    }
  };

  const expect = {links: 0, bad: [], visits: 0, bots: 0, orphanVisits: 0, clicks: 0, byCode: {}};
  const prefix = o.prefix;
  const tableLog = prefix + 'log', tableUrl = prefix + 'url', tableOptions = prefix + 'options';

  let out, ins, urlCsv = null;
  if (o.format === 'dump') {
    out = new Out(o.out);
  } else {
    fs.mkdirSync(o.out, {recursive: true});
    out = new Out(path.join(o.out, tableLog + '.csv'));
    urlCsv = path.join(o.out, tableUrl + '.csv');
  }
  const pos = {line: 1}; // the dump's line the next text starts on
  const text = async (t) => { await out.add(t); pos.line += (t.match(/\n/g) || []).length; };

  if (o.format === 'dump') {
    await text(o.flavor === 'mariadb' ? `/*M!999999\\- enable the sandbox mode */ 
-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)
--
-- Host: localhost    Database: yourls
-- ------------------------------------------------------
-- Server version\t10.11.19-MariaDB-0+deb12u1

` : `-- MySQL dump 10.13  Distrib 8.0.40, for Linux (x86_64)
--
-- Host: localhost    Database: yourls
-- ------------------------------------------------------
-- Server version\t8.0.40

`);
    await text(`/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET @OLD_CHARACTER_SET_RESULTS=@@CHARACTER_SET_RESULTS */;
/*!40101 SET @OLD_COLLATION_CONNECTION=@@COLLATION_CONNECTION */;
/*!40101 SET NAMES utf8mb4 */;
/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;
/*!40103 SET TIME_ZONE='+00:00' */;
/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;
/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;
/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;
/*!40111 SET @OLD_SQL_NOTES=@@SQL_NOTES, SQL_NOTES=0 */;

--
-- Table structure for table \`${tableLog}\`
--

DROP TABLE IF EXISTS \`${tableLog}\`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE \`${tableLog}\` (
  \`click_id\` int(11) NOT NULL AUTO_INCREMENT,
  \`click_time\` datetime NOT NULL,
  \`shorturl\` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  \`referrer\` varchar(200) NOT NULL,
  \`user_agent\` varchar(255) NOT NULL,
  \`ip_address\` varchar(41) NOT NULL,
  \`country_code\` char(2) NOT NULL,
  PRIMARY KEY (\`click_id\`),
  KEY \`shorturl\` (\`shorturl\`)
) ENGINE=InnoDB AUTO_INCREMENT=${o.visits + (o.plain ? 1 : 3)} DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table \`${tableLog}\`
--

LOCK TABLES \`${tableLog}\` WRITE;
/*!40000 ALTER TABLE \`${tableLog}\` DISABLE KEYS */;
`);
    ins = new Inserts(out, tableLog, o.lineBytes, pos, o.flavor === 'mariadb');
  } else {
    await out.add('"click_id","click_time","shorturl","referrer","user_agent","ip_address","country_code"\n');
  }

  // yourls_log
  let clickId = 0;
  const logRow = async (code, at, ref, ua, ip, cc) => {
    clickId++;
    if (o.format === 'dump') {
      await ins.row([String(clickId), sqlStr(datetime(at)), sqlStr(code), sqlStr(ref), sqlStr(ua), sqlStr(ip), sqlStr(cc)]);
    } else {
      await out.add([String(clickId), datetime(at), code, ref, ua, ip, cc].map(csvStr).join(',') + '\n');
    }
  };
  for (let v = 0; v < o.visits; v++) {
    const i = pick();
    const [code] = linkAt(i);
    const agent = AGENTS[Math.floor(rand() * AGENTS.length)];
    const at = created(i) + Math.floor(rand() * 86400 * 3);
    await logRow(code, at, REFERRERS[Math.floor(rand() * REFERRERS.length)], agent[0],
                 `10.${v & 255}.${(v >> 8) & 255}.${(v >> 16) & 255}`, COUNTRIES[Math.floor(rand() * COUNTRIES.length)]);
    counts[i]++;
    if (agent[1]) bots[i]++;
    if (keepDays) {
      const day = datetime(at).slice(0, 10);
      const d = days[i].get(day) || {clicks: 0, bots: 0};
      d.clicks++;
      if (agent[1]) d.bots++;
      days[i].set(day, d);
    }
  }
  if (!o.plain) {
    // the log of a link deleted from YOURLS: no url row
    await logRow(DELETED, DAY0 + 3600, 'direct', AGENTS[0][0], '10.9.9.9', 'US');
    expect.orphanVisits = 1;
    // the bad row's visit: refused with its link
    await logRow(BAD[0], DAY0 + 7200, 'direct', AGENTS[1][0], '10.9.9.8', 'FR');
    expect.badVisits = 1;
  }

  if (o.format === 'dump') {
    if (ins) await ins.close();
    await text(`/*!40000 ALTER TABLE \`${tableLog}\` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table \`${tableOptions}\`
--

DROP TABLE IF EXISTS \`${tableOptions}\`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE \`${tableOptions}\` (
  \`option_id\` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  \`option_name\` varchar(64) NOT NULL DEFAULT '',
  \`option_value\` longtext NOT NULL,
  PRIMARY KEY (\`option_id\`,\`option_name\`),
  KEY \`option_name\` (\`option_name\`)
) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table \`${tableOptions}\`
--

LOCK TABLES \`${tableOptions}\` WRITE;
/*!40000 ALTER TABLE \`${tableOptions}\` DISABLE KEYS */;
INSERT INTO \`${tableOptions}\` VALUES${o.flavor === 'mariadb' ? '\n' : ' '}(1,'version','1.10.4'),${o.flavor === 'mariadb' ? '\n' : ''}(2,'db_version','507'),${o.flavor === 'mariadb' ? '\n' : ''}(3,'next_id','${n}'),${o.flavor === 'mariadb' ? '\n' : ''}(4,'active_plugins','a:0:{}');
/*!40000 ALTER TABLE \`${tableOptions}\` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table \`${tableUrl}\`
--

DROP TABLE IF EXISTS \`${tableUrl}\`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE \`${tableUrl}\` (
  \`keyword\` varchar(100) NOT NULL DEFAULT '',
  \`url\` text NOT NULL,
  \`title\` text CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci DEFAULT NULL,
  \`timestamp\` timestamp NOT NULL DEFAULT current_timestamp(),
  \`ip\` varchar(41) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL,
  \`clicks\` int(10) unsigned NOT NULL,
  PRIMARY KEY (\`keyword\`),
  KEY \`ip\` (\`ip\`),
  KEY \`timestamp\` (\`timestamp\`),
  KEY \`url_idx\` (\`url\`(30))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table \`${tableUrl}\`
--

LOCK TABLES \`${tableUrl}\` WRITE;
/*!40000 ALTER TABLE \`${tableUrl}\` DISABLE KEYS */;
`);
    ins = new Inserts(out, tableUrl, o.lineBytes, pos, o.flavor === 'mariadb');
  } else {
    await out.end();
    out = new Out(urlCsv);
    await out.add('"keyword","url","title","timestamp","ip","clicks"\n');
  }

  // yourls_url in generation order (mysqldump writes primary key order; an
  // importer must not care), the bad row among the first links
  let csvLine = 2;
  const urlRow = async (k, u, t, at, clicks) => {
    const values = [k, u, t, datetime(at), '127.0.0.1'];
    if (o.format === 'dump') {
      return ins.row([...values.map(sqlStr), String(clicks)]);
    }
    const row = values.map(csvStr).join(',') + ',' + csvStr(String(clicks)) + '\n';
    const at0 = csvLine;
    csvLine += (row.match(/\n/g) || []).length;
    await out.add(row);
    return at0;
  };
  const badAfter = o.plain ? -1 : Math.min(total - 1, links.length + 1);
  for (let i = 0; i < total; i++) {
    const [k, u, t] = linkAt(i);
    const extra = i === zero ? 0 : Math.floor(rand() * 3); // clicks the log no longer has
    const clicks = counts[i] + extra;
    await urlRow(k, u, t, created(i), clicks);
    expect.links++;
    expect.visits += counts[i];
    expect.bots += bots[i];
    expect.clicks += clicks;
    if (keepDays) {
      expect.byCode[k] = {url: u, title: t, created: datetime(created(i)), clicks, visits: counts[i], bots: bots[i],
                          days: Object.fromEntries([...days[i].entries()].sort())};
    }
    if (i === badAfter) {
      const where = await urlRow(BAD[0], BAD[1], BAD[2], DAY0, 5);
      expect.bad.push({code: BAD[0], line: where, reason: 'url'});
    }
  }
  if (o.format === 'dump') {
    await ins.close();
    await text(`/*!40000 ALTER TABLE \`${tableUrl}\` ENABLE KEYS */;
UNLOCK TABLES;
/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */;

/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;
/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;
/*!40014 SET UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS */;
/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;
/*!40101 SET CHARACTER_SET_RESULTS=@OLD_CHARACTER_SET_RESULTS */;
/*!40101 SET COLLATION_CONNECTION=@OLD_COLLATION_CONNECTION */;
/*!40111 SET SQL_NOTES=@OLD_SQL_NOTES */;

-- Dump completed on 2026-12-01 10:00:00
`);
  }
  await out.end();
  if (o.expect) fs.writeFileSync(o.expect, JSON.stringify(expect, null, 1));
}

main().catch((e) => { console.error(e.message); process.exit(2); });
