// SPDX-License-Identifier: MIT
// The independent side of the differential test: postal-mime over a list of
// files.  Usage: node postal.mjs LISTFILE   (paths, one a line, or NUL-separated)
// Prints one JSON line per file, in list order:
//   {"path", "message_id", "from", "to", "cc", "subject", "date",
//    "attachments": [filename or null, ...], "attachment_count", "error"}
// Addresses are the addr-specs of every mailbox, group members flattened in
// order (the comparison is on addresses, not display names).  Values are
// postal-mime's own: no normalisation here (differential.py does it, and
// documents it).  postal-mime's defaults are kept, except that attachment
// content is not needed.
import { readFileSync } from 'node:fs';
import PostalMime from 'postal-mime';

const list = readFileSync(process.argv[2], 'utf8');
const paths = list.split(list.includes('\0') ? '\0' : '\n').filter((p) => p.length);

function addrs(v) {
    if (!v) return [];
    const out = [];
    for (const a of Array.isArray(v) ? v : [v]) {
        if (a.group) for (const m of a.group) out.push(m.address ?? '');
        else out.push(a.address ?? '');
    }
    return out;
}

for (const path of paths) {
    const rec = { path };
    try {
        const e = await PostalMime.parse(readFileSync(path), { attachmentEncoding: 'base64' });
        rec.message_id = e.messageId ?? null;
        rec.from = addrs(e.from);
        rec.to = addrs(e.to);
        rec.cc = addrs(e.cc);
        rec.subject = e.subject ?? null;
        rec.date = e.date ?? null;
        rec.attachments = (e.attachments || []).map((a) => a.filename ?? null);
        rec.attachment_count = (e.attachments || []).length;
    } catch (err) {
        rec.error = String(err && err.message ? err.message : err);
    }
    process.stdout.write(JSON.stringify(rec) + '\n');
}
