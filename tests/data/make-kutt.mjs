// make-kutt.mjs - a Kutt 3 database for the import tests, made afresh:
//   node tests/data/make-kutt.mjs FILE          an SQLite file (Kutt's db/data)
//   node tests/data/make-kutt.mjs postgres://…  tables in that PostgreSQL database
// or import { makeKutt } and use what it returns: the rows written and what
// shortd should show for them once imported.
//
// The tables are Kutt v3.2.3's (github.com/thedevs-network/kutt, commit
// e75d4b2bac8758c1b8be837b42a0902529024127): server/models/domain.model.js,
// link.model.js and visit.model.js as its migrations run them, written here as
// the SQL that knex 3.1.0 (Kutt's) compiles them to for better-sqlite3 and for
// pg: the same columns, types, defaults and constraints. `users` is only the
// target of their foreign keys (its own columns are not read). Rows are
// written as Kutt writes them: UTC dates as "YYYY-MM-DD HH:MM:SS" text in
// SQLite and timestamptz in PostgreSQL, visits one row a link and hour with
// per-browser and per-OS counts and JSON tallies of lower-case countries and
// of referrer hosts spelled with "[dot]", passwords as bcryptjs's "$2a$"
// hashes. SQLite goes through the sqlite3 program, PostgreSQL through psql.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const KUTT_PASSWORD = 'kutt pass, 1';

/* A "$2a$" bcrypt hash of pw, made by libcrypt through Python's crypt module;
 * "$2b$" and "$2a$" give the same hash of a password this short, and Kutt's
 * bcryptjs writes "$2a$". */
export function bcryptHash(pw) {
    const r = spawnSync('python3', ['-W', 'ignore', '-c',
        'import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))',
        pw], { encoding: 'utf8' });
    if (r.status !== 0 || !r.stdout.startsWith('$2b$10$')) {
        throw new Error(`cannot make a bcrypt hash: ${r.stderr || r.stdout}`);
    }
    return '$2a$' + r.stdout.trim().slice(4);
}

const UUID_SQLITE = "(lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || " +
    "substr(lower(hex(randomblob(2))),2) || '-' || substr('89ab',abs(random()) % 4 + 1, 1) || " +
    "substr(lower(hex(randomblob(2))),2) || '-' || lower(hex(randomblob(6))))";

const COUNTS = ['br_chrome', 'br_edge', 'br_firefox', 'br_ie', 'br_opera', 'br_other', 'br_safari',
    'os_android', 'os_ios', 'os_linux', 'os_macos', 'os_other', 'os_windows'];

function schema(pg) {
    const counts = (q) => COUNTS.map((c) => `${q(c)} integer not null default '0'`).join(', ');
    if (pg) {
        const q = (c) => `"${c}"`;
        return `
create table "users" ("id" serial primary key);
create table "domains" ("id" serial primary key, "banned" boolean not null default '0', "banned_by_id" integer, "address" varchar(255) not null, "homepage" varchar(255) null, "user_id" integer, "uuid" uuid not null default (gen_random_uuid()), "created_at" timestamptz not null default CURRENT_TIMESTAMP, "updated_at" timestamptz not null default CURRENT_TIMESTAMP);
alter table "domains" add constraint "domains_banned_by_id_foreign" foreign key ("banned_by_id") references "users" ("id");
alter table "domains" add constraint "domains_address_unique" unique ("address");
alter table "domains" add constraint "domains_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete SET NULL;
create table "links" ("id" serial primary key, "address" varchar(255) not null, "description" varchar(255), "banned" boolean not null default '0', "banned_by_id" integer, "domain_id" integer, "password" varchar(255), "expire_in" timestamptz, "target" varchar(2040) not null, "user_id" integer, "visit_count" integer not null default '0', "uuid" uuid not null default (gen_random_uuid()), "created_at" timestamptz not null default CURRENT_TIMESTAMP, "updated_at" timestamptz not null default CURRENT_TIMESTAMP);
alter table "links" add constraint "links_banned_by_id_foreign" foreign key ("banned_by_id") references "users" ("id");
alter table "links" add constraint "links_domain_id_foreign" foreign key ("domain_id") references "domains" ("id");
alter table "links" add constraint "links_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete CASCADE;
create table "visits" ("id" serial primary key, "countries" jsonb, "created_at" timestamptz not null default CURRENT_TIMESTAMP, "updated_at" timestamptz default CURRENT_TIMESTAMP, "link_id" integer, "user_id" integer, "referrers" jsonb, "total" integer not null default '0', ${counts(q)});
alter table "visits" add constraint "visits_link_id_foreign" foreign key ("link_id") references "links" ("id") on delete CASCADE;
alter table "visits" add constraint "visits_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete CASCADE;
create index links_domain_id_index on links (domain_id);
create index links_address_index on links (address);
create index visits_link_id_index on visits (link_id);
`;
    }
    const q = (c) => `\`${c}\``;
    return `
create table \`users\` (\`id\` integer not null primary key autoincrement);
create table \`domains\` (\`id\` integer not null primary key autoincrement, \`banned\` boolean not null default '0', \`banned_by_id\` integer, \`address\` varchar(255) not null, \`homepage\` varchar(255) null, \`user_id\` integer, \`uuid\` char(36) not null default ${UUID_SQLITE}, \`created_at\` datetime not null default CURRENT_TIMESTAMP, \`updated_at\` datetime not null default CURRENT_TIMESTAMP, foreign key(\`banned_by_id\`) references \`users\`(\`id\`), constraint \`domains_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete SET NULL);
create unique index \`domains_address_unique\` on \`domains\` (\`address\`);
create table \`links\` (\`id\` integer not null primary key autoincrement, \`address\` varchar(255) not null, \`description\` varchar(255), \`banned\` boolean not null default '0', \`banned_by_id\` integer, \`domain_id\` integer, \`password\` varchar(255), \`expire_in\` datetime, \`target\` varchar(2040) not null, \`user_id\` integer, \`visit_count\` integer not null default '0', \`uuid\` char(36) not null default ${UUID_SQLITE}, \`created_at\` datetime not null default CURRENT_TIMESTAMP, \`updated_at\` datetime not null default CURRENT_TIMESTAMP, foreign key(\`banned_by_id\`) references \`users\`(\`id\`), foreign key(\`domain_id\`) references \`domains\`(\`id\`), constraint \`links_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete CASCADE);
create table \`visits\` (\`id\` integer not null primary key autoincrement, \`countries\` json, \`created_at\` datetime not null default CURRENT_TIMESTAMP, \`updated_at\` datetime default CURRENT_TIMESTAMP, \`link_id\` integer, \`user_id\` integer, \`referrers\` json, \`total\` integer not null default '0', ${counts(q)}, constraint \`visits_link_id_foreign\` foreign key(\`link_id\`) references \`links\`(\`id\`) on delete CASCADE, constraint \`visits_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete CASCADE);
create index links_domain_id_index on links (domain_id);
create index links_address_index on links (address);
create index visits_link_id_index on visits (link_id);
`;
}

const lit = (v) => v === null || v === undefined ? 'NULL'
    : typeof v === 'number' ? String(v)
    : `'${String(v).replaceAll("'", "''")}'`;

/* The rows. Dates are UTC "YYYY-MM-DD HH:MM:SS", as Kutt writes them. */
function rows(hash) {
    const domains = [{ id: 1, address: 'go.kutt-import.test' }];
    const links = [
        { id: 1, address: 'Promo-X', target: 'https://example.com/promo?a=1&b=2', description: 'Spring promo, 20% off',
            created_at: '2026-11-01 09:30:00', visit_count: 9 },
        { id: 2, address: 'secret', target: 'https://example.com/secret', password: hash,
            created_at: '2026-11-02 10:00:00', visit_count: 0 },
        { id: 3, address: 'dom1', target: 'https://example.org/d', domain_id: 1,
            created_at: '2026-11-03 11:00:00', expire_in: '2030-01-01 00:00:00', visit_count: 3 },
        { id: 4, address: 'banned1', target: 'https://example.net/bad', banned: true,
            created_at: '2026-11-04 12:00:00', visit_count: 0 },
        { id: 5, address: 'old_one', target: 'https://example.com/old', created_at: '2025-06-01 00:00:00',
            expire_in: '2026-01-01 00:00:00', visit_count: 0 },
        // Kutt keeps an address once a domain: the same one on the custom
        // domain, which shortd (a code once) cannot take.
        { id: 6, address: 'Promo-X', target: 'https://example.com/other-promo', domain_id: 1,
            created_at: '2026-11-05 12:00:00', visit_count: 50, shadowed: true },
    ];
    const visits = [
        { id: 1, link_id: 1, created_at: '2026-11-20 10:00:00', total: 4, br_chrome: 3, br_firefox: 1,
            os_windows: 2, os_macos: 1, os_linux: 1, countries: { us: 3, de: 1 },
            referrers: { direct: 2, 'google[dot]com': 1, 't[dot]co': 1 } },
        { id: 2, link_id: 1, created_at: '2026-11-20 11:00:00', total: 1, br_safari: 1, os_ios: 1,
            countries: { unknown: 1 }, referrers: { direct: 1 } },
        { id: 3, link_id: 1, created_at: '2026-11-21 08:00:00', total: 2, br_edge: 1, br_other: 1,
            os_windows: 1, os_other: 1, countries: { fr: 2 }, referrers: { 'news[dot]ycombinator[dot]com': 2 } },
        { id: 4, link_id: 3, created_at: '2026-11-22 13:00:00', total: 3, br_opera: 1, br_ie: 2,
            os_android: 1, os_windows: 2, countries: { gb: 3 }, referrers: { direct: 3 } },
        { id: 5, link_id: 6, created_at: '2026-11-20 10:00:00', total: 50, br_chrome: 50, os_windows: 50,
            countries: { us: 50 }, referrers: { direct: 50 } },
    ];
    return { domains, links, visits };
}

function inserts(pg, { domains, links, visits }) {
    const date = (d) => d ? (pg ? lit(`${d}+00`) : lit(d)) : 'NULL';
    const bool = (b) => pg ? (b ? 'true' : 'false') : (b ? '1' : '0');
    let sql = '';
    for (const d of domains) {
        sql += `insert into domains (id, address) values (${d.id}, ${lit(d.address)});\n`;
    }
    for (const l of links) {
        sql += 'insert into links (id, address, target, description, banned, domain_id, password, ' +
            'expire_in, visit_count, created_at, updated_at) values (' +
            [l.id, lit(l.address), lit(l.target), lit(l.description), bool(l.banned), lit(l.domain_id),
                lit(l.password), date(l.expire_in), l.visit_count, date(l.created_at), date(l.created_at)]
                .join(', ') + ');\n';
    }
    for (const v of visits) {
        sql += `insert into visits (id, link_id, created_at, updated_at, total, countries, referrers, ${COUNTS.join(', ')}) values (` +
            [v.id, v.link_id, date(v.created_at), date(v.created_at), v.total, lit(JSON.stringify(v.countries)),
                lit(JSON.stringify(v.referrers)), ...COUNTS.map((c) => v[c] || 0)].join(', ') + ');\n';
    }
    if (pg) {
        for (const t of ['domains', 'links', 'visits']) {
            sql += `select setval(pg_get_serial_sequence('${t}', 'id'), (select max(id) from ${t}));\n`;
        }
    }
    return sql;
}

function run(target, sql) {
    const pg = target.startsWith('postgres://') || target.startsWith('postgresql://');
    const r = pg
        ? spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', target], {
            input: `BEGIN;\n${sql}COMMIT;\n`, encoding: 'utf8',
            env: { ...process.env, PGOPTIONS: '-c client_min_messages=warning' } })
        : spawnSync('sqlite3', ['-bail', target], { input: `BEGIN;\n${sql}COMMIT;\n`, encoding: 'utf8' });
    if (r.error || r.status !== 0) {
        throw new Error(`${pg ? 'psql' : 'sqlite3'} failed: ${r.error ? r.error.message : r.stderr}`);
    }
}

/* Writes Kutt's tables and rows into 'target' (an SQLite path that does not
 * exist yet, or a postgres:// URL whose search_path is an empty schema).
 * 'extraSql' is run after (bad rows a test adds). Returns the rows. */
export function makeKutt(target, { extraSql = '' } = {}) {
    const pg = target.startsWith('postgres://') || target.startsWith('postgresql://');
    const data = rows(bcryptHash(KUTT_PASSWORD));
    run(target, schema(pg) + inserts(pg, data) + extraSql);
    return data;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
    if (process.argv.length !== 3) {
        console.error('usage: node tests/data/make-kutt.mjs FILE|postgres://URL');
        process.exit(2);
    }
    makeKutt(process.argv[2]);
}
