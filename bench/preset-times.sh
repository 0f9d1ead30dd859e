#!/bin/bash
# Modelled kernel times (timing model, launch overhead excluded) of the newer
# presets' shapes at their decode batch and M = 1 ... 1024, on both chips:
# GLM-5 (TP 8, B = 8), MiniCPM3-4B (TP 1, B = 40), DeepSeek-V4-Pro wo_a
# (TP 8, B = 2). Usage: bench/preset-times.sh [BUILD_DIR] (default build).
set -euo pipefail
BIN=${1:-build}/bin
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$BIN/mla-fp8-aot" --model=glm-5 --tp=8 --in-type=bf16 --no-cache --quiet -o "$WORK/glm"
"$BIN/mla-fp8-aot" --model=minicpm3-4b --tp=1 --in-type=bf16 --no-cache --quiet -o "$WORK/mc"
"$BIN/mla-fp8-aot" --model=deepseek-v4-pro --tp=8 --in-type=bf16 --no-cache --quiet -o "$WORK/v4"
for chip in gfx942 gfx950; do
  for shape in "glm 512 192 8" "glm 256 512 8" "mc 256 64 40" "mc 64 256 40" "v4 1024 4096 2"; do
    read -r bundle n k b <<< "$shape"
    line="$chip $bundle N=$n K=$k B=$b (us):"
    for m in 1 16 64 256 1024; do
      t=$("$BIN/mla-fp8-emu" "$WORK/$bundle" --chip=$chip -N "$n" -K "$k" -B "$b" -M "$m" --timing |
          awk '/^  kernel time/{print $3}')
      line="$line M$m=$t"
    done
    echo "$line"
  done
done
