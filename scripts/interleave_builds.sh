#!/bin/bash
# Clean default builds of several checkouts, interleaved (docs/compile.md#cost):
# each round builds every checkout once, in order, into a fresh directory,
# with the bridge cache and ccache off; prints the build command's own figure
# and the CPU of its Ninja steps (the sum of .ninja_log's step times).
#
#   bash scripts/interleave_builds.sh ROUNDS LABEL=CHECKOUT [LABEL=CHECKOUT ...]
#
# e.g. bash scripts/interleave_builds.sh 3 before=/work/wt-base after=.
# Each checkout's own infiniops_codegen builds it (PYTHONPATH). Keep the
# machine otherwise idle: on 2 cores the build is CPU-bound.
set -euo pipefail
rounds=$1
shift
for r in $(seq "$rounds"); do
  for pair in "$@"; do
    label=${pair%%=*}
    checkout=$(cd "${pair#*=}" && pwd)
    dir=$(mktemp -d /tmp/interleave-build-XXXXXX)
    line=$(cd "$checkout" && PYTHONPATH="$checkout" python -m infiniops_codegen.cli build \
      --no-cache --no-ccache --build-dir "$dir" 2>&1 | grep "^built")
    cpu=$(awk -F'\t' '!/^#/ {s += $2 - $1} END {printf "%.1f", s / 1000}' "$dir/.ninja_log")
    echo "round $r  $label  $(grep -o 'in [0-9.]* s' <<<"$line")  ninja CPU $cpu s"
    rm -rf "$dir"
  done
done
