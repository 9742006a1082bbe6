# SPDX-License-Identifier: MIT
# Generated case: a header block larger than the 2 MiB cap
# (LIMIT_HEADER_BYTES): 40,000 X-Filler fields of 60 bytes, then a Subject
# that lies past the cap.  Fields before the cap are kept; the rest of the
# block is skipped (header-too-large) and the body still follows.
import sys

out = ["From: alice@example.com", "Subject: headers: header too large"]
out += ["X-Filler: %050d" % i for i in range(40000)]
out += ["Subject: past the cap", "", "Body after a huge header block.", ""]
sys.stdout.write("\n".join(out))
