#!/bin/sh
# mla-fp8-aot timings on this machine: cold generation of the default set
# (empty cache), warm generation (everything cached), and loading the bundle.
# Usage: bench/aot-bench.sh <build-dir> [runs]
set -e
build=${1:?usage: $0 <build-dir> [runs]}
runs=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
seconds() {
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | awk '{ printf "%.3f\n", $1 - $3 }'
}

cold=""
for i in $(seq "$runs"); do
  rm -rf "$work/cache"
  cold="$cold $(seconds "$build/bin/mla-fp8-aot" -o "$work/out" --cache-dir "$work/cache")"
done
warm=""
for i in $(seq "$runs"); do
  warm="$warm $(seconds "$build/bin/mla-fp8-aot" -o "$work/out" --cache-dir "$work/cache")"
done
echo "cold generation (default set, $runs runs): median $(echo $cold | tr ' ' '\n' | median) s; all:$cold"
echo "warm generation (cached, $runs runs):      median $(echo $warm | tr ' ' '\n' | median) s; all:$warm"
"$build/bin/mla-fp8-bench-load" "$work/out" 50
