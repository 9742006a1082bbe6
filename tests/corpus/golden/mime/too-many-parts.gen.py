# SPDX-License-Identifier: MIT
# Generated case: a multipart/mixed with 10,050 empty text parts, past the
# cap of 10,000 MIME parts per message (src/core/limits.h, LIMIT_MIME_PARTS).
# The top level counts as one part; the walk stops at the cap and the rest
# is opaque (too-many-parts).  Too large to commit as a message (~300 KiB).
import sys

out = ["From: alice@example.com", "Subject: mime: too many parts", "MIME-Version: 1.0",
       'Content-Type: multipart/mixed; boundary="p"', ""]
for i in range(10050):
    out += ["--p", "Content-Type: text/plain", ""]
out += ["--p--", ""]
sys.stdout.write("\n".join(out))
