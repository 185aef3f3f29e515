// c-literal.mjs - bytes as a C string literal, for the generators that
// compile files into shortd (embed-web.mjs, build-site-script.mjs).

// A C string literal of any bytes, cut into lines: printable ASCII as is
// except \ and ", the rest as three-digit octal escapes (so a digit after one
// is never read as part of it); a '?' after a '?' is escaped so that no
// trigraph forms under -std=c17.
export function cLiteral(bytes) {
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
