// The N tail of the packed epilogue, run on the emulator against the exact
// reference. N = 42 is not a multiple of 4: the quad holding columns 40..43
// straddles N and stores its columns below N one at a time; the other quads
// of the last N tile store all 4 columns or none (offset selects, no branch).
// The ranges are planned for M = 32 at B = 16 (128 heads at TP 8), 512 rows:
// two kernels, rows 1-256 (16x16) and 257 up (32x16). At B = 16 the M below
// are at the edges of both ranges (M = 16 is 256 rows, M = 17 is 272) and of
// both tiles' block_m, on both chips.
// RUN: rm -rf %t && mla-fp8-aot -o %t --v-head-dim=42 --max-m=32 --tp=8 --no-cache --quiet
// RUN: llvm-objdump -d --mcpu=gfx942 %t/gfx942.hsaco | FileCheck %s
// RUN: for chip in gfx942 gfx950; do for m in 1 15 16 17 31 32 33; do \
// RUN:   mla-fp8-emu %t --chip $chip -N 42 -K 512 -B 16 -M $m; done; done \
// RUN:   | FileCheck %s --check-prefix=EMU --implicit-check-not=FAIL

// CHECK-LABEL: <mla_fp8_n42_k512_g128_bf16_gfx942_r1_256>:
// CHECK: buffer_store_dwordx2
// CHECK-NOT: s_cbranch
// CHECK: buffer_store_short
// CHECK-NOT: s_cbranch
// CHECK: s_endpgm

// EMU-COUNT-14: PASS
