#!/bin/sh
# Emulator throughput on the foreign Triton code objects: wave instructions
# per second, as mla-fp8-emu reports it (the time includes input generation
# and the reference computation).
# Usage: bench/emulator-bench.sh <build-dir> [threads]
set -e
build=${1:?usage: $0 <build-dir> [threads]}
threads=${2:-1}
here=$(cd "$(dirname "$0")/.." && pwd)
peer="$here/../shared/peer-kernels"
for m in 16 256; do
  "$build/bin/mla-fp8-emu" "$peer/triton_gfx942_N512_K128_BM16_BN128_w8.hsaco" \
    --abi=triton-peer --B=16 --M=$m --lds=18432 --emu-threads="$threads" |
    sed -n "s/^emulation: /K-up   M=$m: /p"
  "$build/bin/mla-fp8-emu" "$peer/triton_gfx942_N128_K512_BM32_BN64_w8.hsaco" \
    --abi=triton-peer --B=16 --M=$m --lds=12288 --emu-threads="$threads" |
    sed -n "s/^emulation: /V-up   M=$m: /p"
done
