#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mkcorpus-deterministic: tools/mkcorpus must give byte-identical output
# (names, contents, mtimes) for the same seed, under different hash seeds,
# and different output for another seed.  Its own --selftest does the work.
# usage: test-mkcorpus.sh PATH/TO/tools/mkcorpus
set -euo pipefail
mkcorpus=${1:?usage: test-mkcorpus.sh PATH/TO/mkcorpus}
if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 not found" >&2
    exit 1
fi
exec python3 "$mkcorpus" --selftest
