#!/usr/bin/env node
// report.mjs - turns the TSV files of one bench/run.sh run into the Markdown
// results (stdout) and the data of the chart (RUN/chart.dat, for bench/chart.gp).
//   node bench/report.mjs RUN_DIR        (run.sh passes the machine in env)
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const run = process.argv[2];
const env = process.env;
const tsv = (name) => {
    const p = join(run, name);
    if (!existsSync(p)) return [];
    return readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => l.split('\t'));
};
const median = (xs) => {
    const a = xs.filter((x) => Number.isFinite(x)).sort((x, y) => x - y);
    if (!a.length) return NaN;
    return a.length % 2 ? a[(a.length - 1) / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
};
const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');
const fix = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const nname = (n) => (n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6} M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3} K` : String(n));
const us = (x) => (Number.isFinite(x) ? `${x.toFixed(0)} µs` : 'n/a');

// N layout server pair rps cpu_us requests errors drain pending
const runs = tsv('runs.tsv').map((r) => ({
    n: +r[0], layout: r[1], server: r[2], pair: +r[3], rps: +r[4], cpu: +r[5], requests: +r[6],
    errors: +r[7], drain: +r[8], pending: +r[9], foreign: +r[10], attempt: +r[11],
}));
// N server target achieved p50 p99 p999 max errors lag_max foreign attempt lag_avg pair
const lat = tsv('latency.tsv').map((r) => ({
    n: +r[0], server: r[1], target: +r[2], rate: +r[3], p50: +r[4], p99: +r[5], p999: +r[6], max: +r[7],
    errors: +r[8], lag: +r[9], foreign: +r[10], attempt: +r[11], lagavg: +r[12],
}));
// N creates/s p50 p99 p999 non201 errors connections (runs before it had one count, CREATE_CONNS)
const creates = tsv('create.tsv').map((r) => ({
    n: +r[0], rate: +r[1], p50: +r[2], p99: +r[3], p999: +r[4], other: +r[5], errors: +r[6],
    conns: r[7] === undefined || r[7] === '' ? +env.CREATE_CONNS : +r[7],
}));
// N layout rss0 rss1 entries avg_url per_link nginx_pss warm_s
const mem = tsv('memory.tsv').map((r) => ({
    n: +r[0], layout: r[1], rss0: +r[2], rss1: +r[3], entries: +r[4], url: +r[5], per: +r[6],
    ngpss: r[7] === '' ? NaN : +r[7], warm: +r[8],
    anon0: r[9] === undefined || r[9] === '' ? NaN : +r[9], anon1: r[10] === undefined || r[10] === '' ? NaN : +r[10],
}));
// N layout clicks bots lo hi ok
const checks = tsv('checks.tsv').map((r) => ({
    n: +r[0], layout: r[1], clicks: +r[2], bots: +r[3], lo: +r[4], hi: +r[5], ok: r[6],
}));

// N layout pair tid comm us_per_request
const threads = tsv('threads.tsv').map((r) => ({ n: +r[0], layout: r[1], pair: +r[2], tid: r[3], comm: r[4], us: +r[5] }));

const ns = [...new Set(runs.map((r) => r.n))].sort((a, b) => a - b);
// every layout measured, then the skewed workloads' runs ("unpinned zipf")
const layouts = [...new Set(runs.map((r) => r.layout))];
const baseLayouts = layouts.filter((l) => !l.includes(' '));
// Medians are over the runs that other processes did not disturb (other
// load <= FOREIGN_MAX), when there is at least one; disturbed runs are marked.
const foreignMax = Number(env.FOREIGN_MAX || 10);
// The runs a median is taken over: the clean ones, or all when none is.
const undisturbed = (every) => {
    const clean = every.filter((r) => !(r.foreign > foreignMax));
    return { clean, use: clean.length ? clean : every };
};
const agg = (n, layout, server) => {
    const every = runs.filter((r) => r.n === n && r.layout === layout && r.server === server);
    const { clean, use: rs } = undisturbed(every);
    return {
        clean: clean.length, total: every.length,
        rps: median(rs.map((r) => r.rps)), cpu: median(rs.map((r) => r.cpu)),
        // requests over the run plus the time until their clicks were stored
        sustained: median(rs.map((r) => r.requests / (r.requests / r.rps + (r.drain || 0)))),
        all: every.map((r) => int(r.rps) + (r.foreign > foreignMax ? '\\*' : '')).join(' / '),
        errors: every.reduce((s, r) => s + r.errors, 0),
        drain: Math.max(0, ...rs.map((r) => r.drain || 0)), count: rs.length,
        foreign: Math.max(0, ...rs.map((r) => r.foreign || 0)),
        retried: every.filter((r) => r.attempt > 1).length,
    };
};
// The latency of one server at one N: the median of each figure over its
// runs, errors summed.
const latAgg = (n, server) => {
    const every = lat.filter((r) => r.n === n && r.server === server);
    const { use } = undisturbed(every);
    if (!use.length) return null;
    const m = (k) => median(use.map((r) => r[k]));
    return {
        n, server, count: use.length, runs: every, target: m('target'), rate: m('rate'), p50: m('p50'), p99: m('p99'),
        p999: m('p999'), max: m('max'), lag: m('lag'), lagavg: m('lagavg'), foreign: Math.max(...use.map((r) => r.foreign)),
        errors: use.reduce((a, r) => a + r.errors, 0),
    };
};

const out = [];
const p = (s = '') => out.push(s);
const pf = (ok) => (ok === null ? 'n/a' : ok ? '**PASS**' : '**FAIL**');

p('# shortd vs nginx: benchmark results');
p();
p('| | |');
p('|---|---|');
p(`| machine | ${env.NCPU} cores (\`nproc\`), ${env.CPU_MODEL}, ${env.MEM_GIB} GiB RAM, Linux ${env.KERNEL || ''} |`);
p(`| commit | ${env.COMMIT} |`);
if (env.NOTE) p(`| note | ${env.NOTE} |`);
p(`| date | ${env.DATE_UTC} |`);
p(`| command | \`${env.COMMAND}\` (total ${env.ELAPSED} s) |`);
p(`| settings | links ${env.LINKS}; ${env.DURATION} s per run; ${env.PAIRS} alternating shortd/nginx pair(s) per layout; wrk ${env.CONNS} connections; creates with ${env.CREATE_CONNS} connections |`);
p(`| software | ${env.NGINX_VERSION || 'nginx not used'}; ${env.WRK_VERSION}; shortd release build (-O2${env.SHORTD_MD5 ? `, md5 ${env.SHORTD_MD5}…` : ''}), default configuration (analytics on, journal synced every 20 ms) |`);
p();

// ---- targets
const at = ns.includes(1e6) ? 1e6 : ns[ns.length - 1];
const atName = nname(at);
const targets = [];
for (const l of layouts) {
    const s = agg(at, l, 'shortd'), g = agg(at, l, 'nginx');
    const ratio = s.rps / g.rps;
    targets.push([`redirects/s ≥ 1.1 × nginx, ${atName} links, ${l}`, `${int(s.rps)} vs ${int(g.rps)} = ${fix(ratio)} ×`,
        g.count ? ratio >= 1.1 : null]);
}
for (const l of layouts) {
    const s = agg(at, l, 'shortd');
    if (!s.total) continue;
    targets.push([`clicks stored as fast as answered: sustained ≥ 0.9 × peak, ${atName} links, ${l}`,
        `${int(s.sustained)} vs ${int(s.rps)} = ${fix(s.sustained / s.rps)} ×`, s.sustained >= 0.9 * s.rps]);
}
for (const l of layouts) {
    const s = agg(at, l, 'shortd'), g = agg(at, l, 'nginx');
    targets.push([`CPU per redirect < nginx's, ${atName} links, ${l}`, `${fix(s.cpu)} µs vs ${fix(g.cpu)} µs = ${fix(s.cpu / g.cpu)} ×`,
        g.count ? s.cpu < g.cpu : null]);
}
{
    const x = latAgg(at, 'shortd');
    targets.push([`p99 < 1 ms at half of shortd's peak (${atName} links; median of ${x ? x.count : 0} run(s))`, x ? `${us(x.p99)} at ${int(x.target)}/s` : 'not measured',
        x ? x.p99 < 1000 && x.errors === 0 : null]);
}
// The design's creates target names no store size and no number of clients:
// each store size is shown with every connection count measured, and it is
// met when one of them reaches it.
{
    const sizes = [...new Set(creates.map((x) => x.n))];
    for (const n of sizes.length ? sizes : [null]) {
        const xs = creates.filter((x) => x.n === n);
        targets.push([`durable creates ≥ 30,000/s (${n === null ? atName : nname(n)} links in the store)`,
            xs.length ? xs.map((x) => `${int(x.rate)}/s with ${x.conns} connections (p99 ${us(x.p99)})`).join('; ') : 'not measured',
            xs.length ? xs.some((x) => x.rate >= 30000 && x.other === 0) : null]);
    }
}
// Memory: every measurement with enough links for fixed costs to fade
// (each layout is a server of its own, with its own threads).
{
    const big = mem.filter((r) => r.n >= 100000);
    for (const x of big.length ? big : [mem.find((r) => r.n === at)])
        targets.push([`≤ 48 bytes per cached link beyond its URL (${x ? `${nname(x.n)}, ${x.layout}` : atName})`,
            x ? `${fix(x.per, 1)} bytes` : 'not measured', x && x.n >= 100000 ? x.per <= 48 : null]);
}
const big = ns.find((n) => n >= 1e7);
for (const l of baseLayouts) {
    const small = ns[0];
    if (!big || small > 1000) {
        targets.push([`10 M links: rate within 20 % of 1 K's, ${l}`, 'not measured (BENCH_LINKS=1000,1000000,10000000)', null]);
        continue;
    }
    const a = agg(small, l, 'shortd').rps, b = agg(big, l, 'shortd').rps;
    targets.push([`10 M links: rate within 20 % of 1 K's, ${l}`, `${int(b)} vs ${int(a)} = ${fix(b / a)} ×`, b >= 0.8 * a]);
}
{
    const ok = checks.length > 0 && checks.every((c) => c.ok === 'PASS');
    targets.push(['no cheating: stored clicks between completed requests and that plus open connections',
        `${checks.filter((c) => c.ok === 'PASS').length} of ${checks.length} server runs`, checks.length ? ok : null]);
}
p('## Targets');
p();
p('| target | measured | result |');
p('|---|---|---|');
for (const t of targets) p(`| ${t[0]} | ${t[1]} | ${pf(t[2])} |`);
p();

// ---- throughput
p(`## Redirect throughput (wrk, random codes, 2,000 user agents; medians of ${env.PAIRS} alternating runs)`);
p();
p('Codes are drawn uniformly (the worst case for caches and the store) in every layout; the layouts named with "zipf" and "viral" are the last layout again, at 100,000 links and more, with skewed codes (`bench/redirect.lua`): "zipf", the k-th code with a probability about 1/k, as link popularity goes; "viral", half the requests to one link and the other half uniform. Pick the row that matches your traffic.');
p();
p(`Runs marked \\* were disturbed by other processes (more than ${foreignMax} % of a core, after the allowed repeats); the medians leave them out when at least one run of that server is clean, and the "other load" column is the worst of the runs the median uses.`);
p();
p('| links | layout | shortd req/s | nginx req/s | ratio | shortd CPU/req | nginx CPU/req | CPU ratio | shortd runs | nginx runs | errors | clicks in store after | shortd sustained | other load (max) |');
p('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
const chart = [];
for (const n of ns) {
    for (const l of layouts) {
        const s = agg(n, l, 'shortd'), g = agg(n, l, 'nginx');
        if (!s.total && !g.total) continue; // a workload run at larger N only
        p(`| ${nname(n)} | ${l} | ${int(s.rps)} | ${int(g.rps)} | ${fix(s.rps / g.rps)} | ${fix(s.cpu)} µs | ${fix(g.cpu)} µs | ${fix(s.cpu / g.cpu)} | ${s.all} | ${g.all || 'n/a'} | ${s.errors + g.errors} | ≤ ${fix(s.drain, 1)} s | ${int(s.sustained)} | ${fix(Math.max(s.foreign, g.foreign || 0), 0)} %${s.retried + g.retried ? ` (${s.retried + g.retried} run(s) repeated)` : ''} |`);
        chart.push(`"${nname(n)}\\n${l}" ${Number.isFinite(s.rps) ? s.rps : 0} ${Number.isFinite(g.rps) ? g.rps : 0} ${Number.isFinite(s.cpu) ? s.cpu : 0} ${Number.isFinite(g.cpu) ? g.cpu : 0}`);
    }
}
writeFileSync(join(run, 'chart.dat'), '# label shortd_rps nginx_rps shortd_cpu_us nginx_cpu_us\n' + chart.join('\n') + '\n');
p();
p('"other load": CPU time (utime+stime, plus that of their ended children) used during a run by processes other than the servers and the benchmark itself, kernel threads left out, in % of one core; a run above ' + (env.FOREIGN_MAX || 10) + ' % is repeated (at most ' + (env.RETRIES || 2) + ' times) and the last attempt kept. Kernel softirq work (loopback TCP) is charged, as the kernel does, to the task it interrupted, for both servers alike.');
p();
p('"CPU/req": utime+stime of every thread (shortd) or process (nginx master and workers) from /proc, over the run divided by the requests wrk completed; for shortd the meter keeps running until `shortd_clicks_pending` is 0, so the analytics work the run caused is included ("clicks in store after" is how long that took, at most). "shortd sustained" = requests / (run + that time): the rate at which redirects *and* their clicks were done, which is what shortd can keep up for long.');
p();

// ---- shortd's threads
if (threads.length) {
    p('## Where shortd\'s CPU goes: per thread, µs per redirect (medians over the runs; run and click drain)');
    p();
    p('The event-loop threads answer the requests; the others journal, fold and store the clicks (and run the writer). Threads are shown by name and id, busiest first.');
    p();
    p('| links | layout | threads |');
    p('|---|---|---|');
    for (const n of ns) {
        for (const l of layouts) {
            const ts = threads.filter((t) => t.n === n && t.layout === l);
            const ids = [...new Set(ts.map((t) => t.tid))];
            const rows = ids.map((id) => {
                const mine = ts.filter((t) => t.tid === id);
                return { id, comm: mine[0].comm, us: median(mine.map((t) => t.us)) };
            }).filter((x) => x.us >= 0.05).sort((a, b) => b.us - a.us);
            if (rows.length)
                p(`| ${nname(n)} | ${l} | ${rows.map((x) => `${x.comm}/${x.id}: ${fix(x.us)}`).join('; ')} |`);
        }
    }
    p();
}

// ---- rate vs N
if (ns.length > 1) {
    p('## Redirect rate against the number of links (shortd, medians)');
    p();
    p(`| layout | ${ns.map(nname).join(' | ')} | ${ns.slice(1).map((n) => `${nname(n)} / ${nname(ns[0])}`).join(' | ')} |`);
    p(`|---|${ns.map(() => '---').join('|')}|${ns.slice(1).map(() => '---').join('|')}|`);
    for (const l of layouts) {
        const base = agg(ns[0], l, 'shortd').rps;
        p(`| ${l} | ${ns.map((n) => int(agg(n, l, 'shortd').rps)).join(' | ')} | ${ns.slice(1).map((n) => fix(agg(n, l, 'shortd').rps / base)).join(' | ')} |`);
    }
    p();
}

// ---- latency
if (lat.length) {
    p(`## Latency at a constant rate of half shortd's median peak (bench/loadgen, open loop, ${env.CONNS} connections, ${env.DURATION} s, layout ${baseLayouts[0]})`);
    p();
    p('Each figure is the median over the runs (the two servers took turns); "p99 of each run" lists them in order.');
    p();
    p('| links | server | rate asked | rate done | p50 | p99 | p99.9 | max | p99 of each run | errors | generator late: avg / max | other load (max) |');
    p('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const n of [...new Set(lat.map((r) => r.n))])
        for (const server of ['shortd', 'nginx']) {
            const x = latAgg(n, server);
            if (!x) continue;
            const each = x.runs.map((r) => us(r.p99) + (r.foreign > foreignMax ? '\\*' : '')).join(' / ');
            p(`| ${nname(x.n)} | ${x.server} | ${int(x.target)}/s | ${int(x.rate)}/s | ${us(x.p50)} | ${us(x.p99)} | ${us(x.p999)} | ${us(x.max)} | ${each} | ${x.errors} | ${us(x.lagavg)} / ${us(x.lag)} | ${fix(x.foreign, 0)} % |`);
        }
    p();
    p('Latency is measured from the moment each request was *due* on the schedule, so a request that waits for a free connection or for a late generator counts its wait (no coordinated omission).');
    p();
}

// ---- creates
if (creates.length) {
    p(`## Durable creates (POST /api/links, closed loop, ${env.DURATION} s, layout ${baseLayouts[baseLayouts.length - 1]})`);
    p();
    p('| links in store | connections | creates/s (201) | p50 | p99 | p99.9 | not 201 | errors |');
    p('|---|---|---|---|---|---|---|---|');
    for (const x of creates)
        p(`| ${nname(x.n)} | ${x.conns} | ${int(x.rate)} | ${us(x.p50)} | ${us(x.p99)} | ${us(x.p999)} | ${x.other} | ${x.errors} |`);
    p();
}

// ---- memory
if (mem.length) {
    p('## Memory of the redirect cache (every link requested once with HEAD, which is never counted)');
    p();
    p('| links | layout | shortd RSS before | RSS warm | cache entries | average URL | bytes per link beyond its URL | same from RssAnon only | nginx PSS (master + workers) | warm-up |');
    p('|---|---|---|---|---|---|---|---|---|---|');
    for (const x of mem) {
        const anon = (x.anon1 - x.anon0) * 1024 / x.n - x.url;
        p(`| ${nname(x.n)} | ${x.layout} | ${fix(x.rss0 / 1024, 1)} MiB | ${fix(x.rss1 / 1024, 1)} MiB | ${int(x.entries)} | ${fix(x.url, 1)} B | ${fix(x.per, 1)}${x.n < 100000 ? ' (N too small to mean much)' : ''} | ${fix(anon, 1)} | ${Number.isFinite(x.ngpss) ? fix(x.ngpss / 1024, 1) + ' MiB' : 'n/a'} | ${fix(x.warm, 1)} s |`);
    }
    p();
    p('"bytes per link beyond its URL" = (VmRSS warm − VmRSS before) / N − average URL; the RssAnon column leaves out file-backed pages (a memory-mapped database file would count in VmRSS).');
    p();
}

// ---- checks
if (checks.length) {
    p('## No cheating: clicks in the store after a clean SIGTERM');
    p();
    p('| links | layout | clicks stored | bot clicks | requests completed (lower bound) | + open connections (upper bound) | result |');
    p('|---|---|---|---|---|---|---|');
    for (const c of checks)
        p(`| ${nname(c.n)} | ${c.layout} | ${int(c.clicks)} | ${int(c.bots)} | ${int(c.lo)} | ${int(c.hi)} | ${c.ok} |`);
    p();
}

p('## Method');
p();
p('- Layouts (`../shared/research/httpstack.md`): **pin1** = the server on core 0 (`taskset -c 0`, shortd `--threads 1`, nginx `worker_processes 1`; shortd\'s journal, aggregator and writer threads are on core 0 too), `wrk -t1` on core 1; **unpinned** = 2 worker threads / processes, `wrk -t2`, no pinning. Both with the same connections and the same requests.');
p('- Requests: `bench/redirect.lua` picks a code uniformly from all N and a user agent from `bench/uas.txt` (2,000 distinct browser agents) per request. nginx answers from a `map $uri` of the same codes (`return 302 $target;`, `Cache-Control: private, no-store` added, access log off, `keepalive_requests` raised, `reuseport`).');
p('- shortd is started fresh per layout from a copy of the same store (links bulk-loaded with sqlite3), its cache warmed with a HEAD of every code, and stopped with SIGTERM, after which the clicks in the store are summed.');
p('- Latency: `bench/loadgen rate` (C, one thread, epoll, one request in flight per connection, open-loop schedule kept by busy-polling the clock on its own core: requests that fall due together leave together, a few to tens of µs late, reported as "generator late" (with a connection free, i.e. its own lateness); on loopback the client\'s own processing time, and the guest\'s cost of waking a sleeping vCPU, are part of every figure, for both servers alike).');
p('- Creates: `bench/loadgen create`, each connection sends the next POST when the last one was answered; only 201s count.');
p('- User agents: 2,000 distinct browsers (`bench/gen-uas.mjs`); shortd\'s classification cache (`ua-cache`, default 10,000) holds them all once seen, a cache of a few hundred would not; the visitor hash on the redirect path hashes the agent of every request.');
p(`- Each figure is from one run of \`bench/run.sh\`; run-to-run spread on this shared 2-core VM is a few per cent (see the per-run columns).`);
process.stdout.write(out.join('\n') + '\n');
