#!/bin/bash
# kill-publish.sh AOT DIR ROUNDS: runs `AOT -o DIR/out` (from a warm cache, so
# that most of a run is publishing) and SIGKILLs it after a random delay,
# ROUNDS times; after every kill DIR/out must hold one complete bundle.
set -u
aot=$1 dir=$2 rounds=$3
here=$(dirname "$0")
# exec: the background job's pid must be the tool's own, for kill.
run() {
  exec "$aot" --chips=gfx942 --max-m=16 --tp=8 --cache-dir="$dir/cache" \
    --quiet -o "$dir/out"
}
# Kill instants spread over one whole run, publishing included.
start=$(date +%s%N)
(run) || exit 1
span_ms=$((($(date +%s%N) - start) / 1000000 + 20))
RANDOM=7
for ((i = 0; i < rounds; ++i)); do
  (run) &
  pid=$!
  delay_ms=$((RANDOM % span_ms))
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if ! bash "$here/check-bundle.sh" "$dir/out"; then
    echo "round $i: $dir/out is not one complete bundle"
    ls -la "$dir" "$dir/out"
    exit 1
  fi
done
echo "$rounds kills: the bundle was complete after each"
