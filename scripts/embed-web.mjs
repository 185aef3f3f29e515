#!/usr/bin/env node
// embed-web.mjs - writes the dashboard's files as a C table for src/api/dashboard.c,
// so that shortd serves them from its own binary: one file to deploy, no CDN.
// The files are everything directly in web/ (the API's OpenAPI document,
// web/openapi.json, among them) plus uPlot's browser build and
// stylesheet from node_modules (npm, pinned in package-lock.json; npm ci
// installs exactly that version). Each entry has its name (the part after
// /static/), content type, a strong ETag (the start of the SHA-256 of the
// bytes) and the bytes as one C string literal with an explicit length.
//
//   node scripts/embed-web.mjs OUT.inc   write OUT.inc (atomically)
//   node scripts/embed-web.mjs --check   exit 1 unless every package that
//                                        package-lock.json pins (uplot,
//                                        playwright-core and axe-core for
//                                        the browser tests, isbot, the OpenAPI test's
//                                        validators) is installed at its
//                                        locked version
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

const TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
};

// Files served under /static/ whose name is not their name in web/.
const FROM_NPM = [
    ["uPlot.iife.min.js", "node_modules/uplot/dist/uPlot.iife.min.js"],
    ["uPlot.min.css", "node_modules/uplot/dist/uPlot.min.css"],
];

function lockedPackages() {
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
    return Object.entries(lock.packages || {})
        .filter(([p]) => p.startsWith("node_modules/"))
        .map(([p, e]) => [p, e.version]);
}

function installedVersion(p) {
    try {
        return JSON.parse(readFileSync(join(root, p, "package.json"), "utf8")).version;
    } catch {
        return null;
    }
}

// A C string literal of any bytes, cut into lines: printable ASCII as is
// except \ and ", the rest as three-digit octal escapes (so a digit after one
// is never read as part of it); a '?' after a '?' is escaped so that no
// trigraph forms under -std=c17.
function cLiteral(bytes) {
    const lines = [];
    let line = "";
    let prev = -1;
    for (const b of bytes) {
        const ch = String.fromCharCode(b);
        if (ch === "\\" || ch === '"' || (ch === "?" && prev === 0x3f))
            line += "\\" + ch;
        else if (b >= 0x20 && b < 0x7f)
            line += ch;
        else
            line += "\\" + b.toString(8).padStart(3, "0");
        prev = b;
        if (line.length >= 96 || b === 0x0a) {
            lines.push(line);
            line = "";
        }
    }
    if (line || !lines.length)
        lines.push(line);
    return lines.map((l) => `        "${l}"`).join("\n");
}

function assets() {
    const out = [];
    const web = join(root, "web");
    for (const name of readdirSync(web).sort()) {
        const p = join(web, name);
        if (!statSync(p).isFile())
            throw new Error(`web/${name}: only plain files directly in web/ are served`);
        if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name))
            throw new Error(`web/${name}: a served name is letters, digits, '.', '_' and '-'`);
        out.push([name, p]);
    }
    for (const [name, rel] of FROM_NPM)
        out.push([name, join(root, rel)]);
    return out.map(([name, p]) => {
        const type = TYPES[extname(name)];
        if (!type)
            throw new Error(`${name}: no content type for '${extname(name)}' (add it to TYPES)`);
        const bytes = readFileSync(p);
        const etag = createHash("sha256").update(bytes).digest("hex").slice(0, 24);
        return { name, type, etag, bytes };
    });
}

function main(argv) {
    const stale = lockedPackages().filter(([p, v]) => installedVersion(p) !== v);
    if (argv[0] === "--check")
        return stale.length ? 1 : 0;
    if (argv.length !== 1) {
        console.error("usage: embed-web.mjs OUT.inc | --check");
        return 2;
    }
    for (const [p, v] of stale) {
        console.error(`embed-web: ${p} is ${installedVersion(p) ?? "missing"} but ` +
                      `package-lock.json pins ${v}: run npm ci`);
    }
    if (stale.length)
        return 1;
    const uplot = installedVersion("node_modules/uplot");
    const list = assets();
    if (!list.some((a) => a.name === "index.html"))
        throw new Error("web/index.html is missing");
    const lines = [
        `/* Generated by scripts/embed-web.mjs from web/ and uPlot ${uplot} (npm, MIT):`,
        " * the dashboard's files, sorted by name. Do not edit; not in git. */",
        `#define WEB_UPLOT_VERSION "${uplot}"`,
        "",
        "static const struct web_asset web_assets[] = {",
    ];
    for (const a of list) {
        lines.push(`    {"${a.name}", "${a.type}", "\\"${a.etag}\\"", ${a.bytes.length},`);
        lines.push(cLiteral(a.bytes) + "},");
    }
    lines.push("};", "");
    const out = argv[0];
    mkdirSync(dirname(out), { recursive: true });
    const tmp = `${out}.tmp${process.pid}`;
    writeFileSync(tmp, lines.join("\n"));
    renameSync(tmp, out);
    return 0;
}

process.exitCode = main(process.argv.slice(2));
