// SPDX-License-Identifier: MIT
// Peer: postal-mime (npm) on Node.js.  Same contract as py_email.py:
// node postal.mjs LIST            one JSON line per message on stdout
// node postal.mjs --inproc S LIST read first, parse in passes for S seconds,
//                                  JSON summary on stderr
import { readFileSync, writeSync, openSync } from 'node:fs';
import PostalMime from 'postal-mime';

function fields(email) {
  return {
    message_id: email.messageId ?? null,
    from: email.from ?? null,
    to: email.to ?? null,
    subject: email.subject ?? null,
    date: email.date ?? null,
    text: email.text ?? email.html ?? null,
    attachments: (email.attachments || []).map((a) => a.filename ?? null),
  };
}

async function one(buf) {
  try {
    return fields(await PostalMime.parse(buf));
  } catch (e) {
    return { error: String(e).slice(0, 200) };
  }
}

let args = process.argv.slice(2);
let inproc = null;
if (args[0] === '--inproc') { inproc = Number(args[1]); args = args.slice(2); }
const paths = readFileSync(args[0], 'latin1').split('\n').filter((p) => p.length);
let chunks = [];
let pending = 0;
function out(fd, s) {
  chunks.push(s); pending += s.length;
  if (pending > 1 << 20) { writeSync(fd, chunks.join('')); chunks = []; pending = 0; }
}
function flush(fd) { if (chunks.length) writeSync(fd, chunks.join('')); chunks = []; pending = 0; }

if (inproc === null) {
  for (const p of paths) {
    const buf = readFileSync(Buffer.from(p, 'latin1'));
    out(1, JSON.stringify(await one(buf)) + '\n');
  }
  flush(1);
} else {
  const blobs = paths.map((p) => readFileSync(Buffer.from(p, 'latin1')));
  const nbytes = blobs.reduce((a, b) => a + b.length, 0);
  const devnull = openSync('/dev/null', 'w');
  // best_pass_s: the fastest whole pass, as bench/parse_mem.c reports
  // ingest's (the JIT has warmed up by then; slower passes were disturbed)
  let n = 0, passes = 0, el = 0, best = Infinity, firstPassRecords = 0;
  const t0 = process.hrtime.bigint();
  for (;;) {
    const p0 = process.hrtime.bigint();
    let records = 0;
    for (const b of blobs) {
      const rec = JSON.stringify(await one(b));
      if (rec.startsWith('{')) records++;
      out(devnull, rec + '\n');
    }
    if (!passes) firstPassRecords = records;
    best = Math.min(best, Number(process.hrtime.bigint() - p0) / 1e9);
    passes++; n += blobs.length;
    el = Number(process.hrtime.bigint() - t0) / 1e9;
    if (el >= inproc) break;
  }
  flush(devnull);
  // the verification line: records the first pass produced, one per input
  writeSync(1, `${firstPassRecords}\n`);
  process.stderr.write(JSON.stringify({ messages: n, bytes: nbytes * passes, parse_s: el,
                                        pass_messages: blobs.length, best_pass_s: best }) + '\n');
}
