#!/usr/bin/env node
// gen-isbot.mjs - writes the isbot package's bot patterns as a C array for
// src/clicks/classify.c, so the maintained list is compiled in and never copied into
// the repository. The version comes from package-lock.json (npm ci installs
// exactly it); the list is what the package exports as `list`, the same
// strings its own isBot() joins with "|" into one case-insensitive RegExp.
//
//   node scripts/gen-isbot.mjs OUT.inc   write OUT.inc (atomically)
//   node scripts/gen-isbot.mjs --check   exit 1 unless node_modules/isbot is
//                                        installed at the locked version
//
// The patterns are JavaScript regular expressions; PCRE2 reads nearly all of
// them the same way. The differences that matter are rewritten here (see
// toPcre2): a '-' next to a class escape inside [...] is a literal in
// JavaScript but an error in PCRE2, and \uXXXX is spelled \x{XXXX} in PCRE2.
// classify.c compiles them with PCRE2_CASELESS | PCRE2_DOLLAR_ENDONLY, which
// matches the JavaScript 'i' flag and '$' semantics.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "package.json"));

function lockedVersion() {
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
    const entry = lock.packages && lock.packages["node_modules/isbot"];
    if (!entry || !entry.version)
        throw new Error("package-lock.json does not pin isbot");
    return entry.version;
}

function installedVersion() {
    try {
        return JSON.parse(readFileSync(require.resolve("isbot/package.json"), "utf8")).version;
    } catch {
        return null;
    }
}

const CLASS_ESCAPES = new Set(["d", "D", "w", "W", "s", "S"]);

// Rewrites one JavaScript pattern into PCRE2 syntax with the same meaning.
function toPcre2(src) {
    let out = "";
    let inClass = false;
    let prevWasClassEscape = false; // inside [...]: the previous item was \d, \w, ...
    for (let i = 0; i < src.length; i++) {
        const c = src[i];
        if (c === "\\") {
            const e = src[i + 1];
            if (e === undefined)
                throw new Error(`trailing backslash in ${JSON.stringify(src)}`);
            if (e === "u" && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 2, i + 6))) {
                out += `\\x{${src.slice(i + 2, i + 6)}}`;
                i += 5;
                prevWasClassEscape = false;
                continue;
            }
            out += c + e;
            i++;
            prevWasClassEscape = inClass && CLASS_ESCAPES.has(e);
            continue;
        }
        if (inClass) {
            if (c === "]") {
                inClass = false;
            } else if (c === "-") {
                const next = src[i + 1];
                const nextIsClassEscape = next === "\\" && CLASS_ESCAPES.has(src[i + 2]);
                // In JavaScript a '-' beside a class escape is a literal
                // hyphen, never a range; PCRE2 rejects it, so escape it.
                if (prevWasClassEscape || nextIsClassEscape) {
                    out += "\\-";
                    prevWasClassEscape = false;
                    continue;
                }
            }
            out += c;
            prevWasClassEscape = false;
            continue;
        }
        if (c === "[") {
            inClass = true;
            out += c;
            // A leading '^' or ']' belongs to the class syntax, not a range.
            if (src[i + 1] === "^") {
                out += "^";
                i++;
            }
            prevWasClassEscape = false;
            continue;
        }
        out += c;
    }
    if (inClass)
        throw new Error(`unterminated character class in ${JSON.stringify(src)}`);
    return out;
}

// A C string literal: printable ASCII as is except \ and ", the rest in octal.
// A '?' after a '?' is escaped so that no "??x" trigraph forms under -std=c17.
function cString(s) {
    let out = '"';
    let prev = "";
    for (const byte of Buffer.from(s, "utf8")) {
        const ch = String.fromCharCode(byte);
        if (ch === "\\" || ch === '"' || (ch === "?" && prev === "?"))
            out += "\\" + ch;
        else if (byte >= 0x20 && byte < 0x7f)
            out += ch;
        else
            out += "\\" + byte.toString(8).padStart(3, "0");
        prev = ch;
    }
    return out + '"';
}

function main(argv) {
    const want = lockedVersion();
    const have = installedVersion();
    if (argv[0] === "--check")
        return have === want ? 0 : 1;
    if (argv.length !== 1) {
        console.error("usage: gen-isbot.mjs OUT.inc | --check");
        return 2;
    }
    if (have !== want) {
        console.error(`gen-isbot: node_modules/isbot is ${have ?? "missing"} but ` +
                      `package-lock.json pins ${want}: run npm ci`);
        return 1;
    }
    const { list } = require("isbot");
    if (!Array.isArray(list) || list.length === 0 || !list.every((p) => typeof p === "string"))
        throw new Error("isbot no longer exports `list` as an array of strings");

    const lines = [
        `/* Generated by scripts/gen-isbot.mjs from isbot ${want} (npm, Unlicense):`,
        " * its bot patterns, rewritten for PCRE2. Do not edit; not in git. */",
        `#define ISBOT_VERSION "${want}"`,
        "",
        "static const char *const isbot_patterns[] = {",
        ...list.map((p) => `    ${cString(toPcre2(p))},`),
        "};",
        "",
    ];
    const out = argv[0];
    mkdirSync(dirname(out), { recursive: true });
    const tmp = `${out}.tmp${process.pid}`;
    writeFileSync(tmp, lines.join("\n"));
    renameSync(tmp, out);
    return 0;
}

process.exitCode = main(process.argv.slice(2));
