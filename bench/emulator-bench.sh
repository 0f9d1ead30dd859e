#!/bin/sh
# Emulator throughput: wave instructions per second and the time of whole
# launches, as mla-fp8-emu reports them. For the peer kernels the time covers
# the launch only; for bundle kernels it also covers generating the inputs and
# the reference check (instructions/s is then a lower bound).
#  - the foreign Triton code objects (shared/peer-kernels), B = 16;
#  - this project's kernels for DeepSeek-R1 at TP 8 (B = 16), both
#    projections, M = 64, on both chips.
# Usage: bench/emulator-bench.sh <build-dir> [threads]
set -e
build=${1:?usage: $0 <build-dir> [threads]}
threads=${2:-1}
here=$(cd "$(dirname "$0")/.." && pwd)
peer="$here/../shared/peer-kernels"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for m in 16 256; do
  "$build/bin/mla-fp8-emu" "$peer/triton_gfx942_N512_K128_BM16_BN128_w8.hsaco" \
    --abi=triton-peer --B=16 --M=$m --lds=18432 --emu-threads="$threads" |
    sed -n "s/^emulation: /peer K-up M=$m: /p"
  "$build/bin/mla-fp8-emu" "$peer/triton_gfx942_N128_K512_BM32_BN64_w8.hsaco" \
    --abi=triton-peer --B=16 --M=$m --lds=12288 --emu-threads="$threads" |
    sed -n "s/^emulation: /peer V-up M=$m: /p"
done

"$build/bin/mla-fp8-aot" --quiet --no-cache -o "$work/bundle"
for chip in gfx942 gfx950; do
  for shape in "512 128 K-up" "128 512 V-up"; do
    set -- $shape
    "$build/bin/mla-fp8-emu" "$work/bundle" --chip=$chip --N=$1 --K=$2 \
      -M 64 -B 16 --emu-threads="$threads" |
      sed -n "s/^emulation: /DeepSeek-R1 TP8 $chip $3 M=64: /p"
  done
done
