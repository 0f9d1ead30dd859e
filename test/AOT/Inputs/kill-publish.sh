#!/bin/bash
# kill-publish.sh AOT DIR ROUNDS: runs `AOT -o DIR/out` (from a warm cache, so
# that most of a run is publishing) and SIGKILLs it after a random delay,
# ROUNDS times; after every kill DIR/out must hold one complete bundle.
set -u
aot=$1 dir=$2 rounds=$3
here=$(dirname "$0")
RANDOM=7
for ((i = 0; i < rounds; ++i)); do
  "$aot" --chips=gfx942 --max-m=16 --tp=8 --cache-dir="$dir/cache" --quiet \
    -o "$dir/out" &
  pid=$!
  sleep "0.$(printf '%03d' $((RANDOM % 400)))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if ! bash "$here/check-bundle.sh" "$dir/out"; then
    echo "round $i: $dir/out is not one complete bundle"
    ls -la "$dir" "$dir/out"
    exit 1
  fi
done
echo "$rounds kills: the bundle was complete after each"
