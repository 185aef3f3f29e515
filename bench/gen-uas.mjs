#!/usr/bin/env node
// gen-uas.mjs - writes bench/uas.txt: distinct, real-looking browser user
// agents (desktop and mobile Chrome, Edge, Opera, Samsung Internet, Firefox,
// Safari) built from real version and device strings, deterministically
// (seeded), so the benchmark's requests carry many different user agents and
// a small per-UA cache cannot make analytics look free. Only browsers: no
// crawler, library or preview agent, so every benchmark click is a human one.
//
//   node bench/gen-uas.mjs [COUNT] > bench/uas.txt      (default 2000)

const count = Number(process.argv[2] || 2000);

let seed = 0x5eed1234;
function rnd(n) {            // xorshift32, deterministic across runs
    seed ^= seed << 13; seed >>>= 0;
    seed ^= seed >>> 17;
    seed ^= seed << 5; seed >>>= 0;
    return seed % n;
}
const pick = (a) => a[rnd(a.length)];

const chromeMajors = [];
for (let v = 109; v <= 131; v++) chromeMajors.push(v);
const chromeBuild = (maj) => {
    // Chrome's build number grows about 60 per milestone (120 -> 6099, 126 -> 6478)
    const build = Math.round(6099 + (maj - 120) * 63) + rnd(3);
    return `${maj}.0.${build}.${rnd(220)}`;
};
// Since 2021 Chrome freezes most of the string ("reduced UA"): minor is 0.0.0
const chromeVer = (maj) => (rnd(3) === 0 ? chromeBuild(maj) : `${maj}.0.0.0`);

const desktops = [
    'Windows NT 10.0; Win64; x64',
    'Windows NT 10.0; WOW64',
    'Windows NT 6.1; Win64; x64',
    'Windows NT 6.3; Win64; x64',
    'Macintosh; Intel Mac OS X 10_15_7',
    'Macintosh; Intel Mac OS X 10_15_6',
    'Macintosh; Intel Mac OS X 10_14_6',
    'X11; Linux x86_64',
    'X11; Ubuntu; Linux x86_64',
    'X11; Fedora; Linux x86_64',
    'X11; CrOS x86_64 14541.0.0',
    'X11; CrOS aarch64 15359.58.0',
];
const androidVersions = ['10', '11', '12', '13', '14', '15'];
const androidModels = [
    'K', 'SM-S918B', 'SM-S911B', 'SM-S908E', 'SM-G991B', 'SM-G998U', 'SM-A536B', 'SM-A546E',
    'SM-A145R', 'SM-A125F', 'SM-N986B', 'SM-F946B', 'SM-X700', 'Pixel 6', 'Pixel 6a', 'Pixel 7',
    'Pixel 7 Pro', 'Pixel 8', 'Pixel 8 Pro', 'Pixel 5', 'Pixel 4a', 'M2101K6G', '2201117TY',
    '23049PCD8G', 'Redmi Note 9 Pro', 'Redmi Note 8', 'M2007J20CG', 'CPH2219', 'CPH2449', 'RMX3363',
    'RMX2193', 'V2111', 'V2202', 'moto g power (2022)', 'moto g(60)', 'motorola edge 30',
    'ONEPLUS A6013', 'LE2113', 'NE2213', 'IN2023', 'HD1913', 'ANE-LX1', 'VOG-L29', 'MAR-LX1A',
    'Nokia G21', 'TA-1053', 'XQ-BC52', 'XQ-CT54', 'SO-51A', 'ASUS_I005D', 'Infinix X6816',
    'TECNO KI5q', 'itel A571W',
];
const iosVersions = [
    '15_7', '15_8', '16_0', '16_1_1', '16_3_1', '16_5', '16_6', '16_7_2', '17_0_3', '17_1', '17_1_2',
    '17_2_1', '17_3', '17_4_1', '17_5', '17_5_1', '17_6_1', '18_0', '18_0_1', '18_1', '18_1_1',
];
const firefoxVersions = [];
for (let v = 102; v <= 133; v++) firefoxVersions.push(v);
const samsungVersions = ['19.0', '20.0', '21.0', '22.0', '23.0', '24.0', '25.0', '26.0'];
const operaVersions = ['95.0.0.0', '99.0.0.0', '102.0.0.0', '105.0.0.0', '109.0.0.0', '114.0.0.0'];

const gens = [
    // desktop Chrome
    [30, () => `Mozilla/5.0 (${pick(desktops)}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${chromeVer(pick(chromeMajors))} Safari/537.36`],
    // Android Chrome
    [22, () => `Mozilla/5.0 (Linux; Android ${pick(androidVersions)}; ${pick(androidModels)}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${chromeVer(pick(chromeMajors))} Mobile Safari/537.36`],
    // iPhone / iPad Safari
    [14, () => {
        const v = pick(iosVersions);
        const dev = rnd(5) === 0 ? 'iPad; CPU OS' : 'iPhone; CPU iPhone OS';
        const ver = v.replace(/_/g, '.');
        return `Mozilla/5.0 (${dev} ${v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/${ver} Mobile/15E148 Safari/604.1`;
    }],
    // iPhone Chrome (CriOS)
    [4, () => `Mozilla/5.0 (iPhone; CPU iPhone OS ${pick(iosVersions)} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/${chromeBuild(pick(chromeMajors))} Mobile/15E148 Safari/604.1`],
    // macOS Safari
    [6, () => {
        const ver = `${pick(['15', '16', '17', '18'])}.${rnd(6)}${rnd(2) ? '.' + (1 + rnd(3)) : ''}`;
        return `Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_${rnd(8)}) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/${ver} Safari/605.1.15`;
    }],
    // desktop Firefox
    [9, () => {
        const v = pick(firefoxVersions);
        const os = pick(['Windows NT 10.0; Win64; x64', 'Macintosh; Intel Mac OS X 10.15', 'X11; Linux x86_64', 'X11; Ubuntu; Linux x86_64', 'Windows NT 6.1; Win64; x64']);
        return `Mozilla/5.0 (${os}; rv:${v}.0) Gecko/20100101 Firefox/${v}.0`;
    }],
    // Android Firefox
    [2, () => {
        const v = pick(firefoxVersions);
        return `Mozilla/5.0 (Android ${pick(androidVersions)}; Mobile; rv:${v}.0) Gecko/${v}.0 Firefox/${v}.0`;
    }],
    // Edge
    [7, () => {
        const maj = pick(chromeMajors);
        return `Mozilla/5.0 (${pick(desktops.slice(0, 7))}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${maj}.0.0.0 Safari/537.36 Edg/${chromeBuild(maj)}`;
    }],
    // Samsung Internet
    [4, () => {
        const maj = pick(chromeMajors);
        return `Mozilla/5.0 (Linux; Android ${pick(androidVersions)}; ${pick(androidModels.filter((m) => m.startsWith('SM-')))}) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/${pick(samsungVersions)} Chrome/${maj}.0.0.0 Mobile Safari/537.36`;
    }],
    // Opera
    [2, () => {
        const maj = pick(chromeMajors);
        return `Mozilla/5.0 (${pick(desktops.slice(0, 8))}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${maj}.0.0.0 Safari/537.36 OPR/${pick(operaVersions)}`;
    }],
];
const total = gens.reduce((s, g) => s + g[0], 0);

const seen = new Set();
let guard = 0;
while (seen.size < count && guard++ < count * 1000) {
    let r = rnd(total);
    let g = gens[0];
    for (const cand of gens) {
        if (r < cand[0]) { g = cand; break; }
        r -= cand[0];
    }
    seen.add(g[1]());
}
if (seen.size < count) {
    console.error(`gen-uas: only ${seen.size} distinct user agents`);
    process.exit(1);
}
process.stdout.write([...seen].join('\n') + '\n');
