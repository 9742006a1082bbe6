# SPDX-License-Identifier: MIT
# Generated case: 70 nested multipart/mixed entities, past the MIME depth
# cap of 64 (LIMIT_MIME_DEPTH).  The top level is depth 0; the entity at
# depth 64 is not entered: its content is opaque (nesting-overflow).  The
# text at the innermost level is therefore not part of the record's text.
import sys

N = 70
out = ["From: alice@example.com", "Subject: mime: nesting overflow", "MIME-Version: 1.0",
       'Content-Type: multipart/mixed; boundary="b0"', ""]
for d in range(1, N):
    out += ["--b%d" % (d - 1), 'Content-Type: multipart/mixed; boundary="b%d"' % d, ""]
out += ["--b%d" % (N - 1), "Content-Type: text/plain", "", "innermost text"]
for d in range(N - 1, -1, -1):
    out += ["--b%d--" % d]
out += [""]
sys.stdout.write("\n".join(out))
