#!/usr/bin/env bash
# Prints the sha256 of every code object of the default bundle and of the variant
# bundles (per-batch descale, f16 output, bias, kimi-k2), one "<variant>/<file> <hex>"
# line each. A restructuring must leave this output unchanged: run it on a build of
# the commit before and on the new build, then diff the two outputs.
#   bench/hsaco-digests.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
AOT=${1:-build}/bin/mla-fp8-aot
[ -x "$AOT" ] || { echo "hsaco-digests: $AOT is not built" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
gen() {
  local name=$1; shift
  "$AOT" --quiet --no-cache -o "$WORK/$name" "$@"
  for f in "$WORK/$name"/*.hsaco; do
    echo "$name/$(basename "$f") $(sha256sum "$f" | cut -d' ' -f1)"
  done
}
gen default
gen per-batch --weight-scale=per-batch
gen f16 --out-type=f16
gen bias --bias
gen kimi-k2 --model=kimi-k2
