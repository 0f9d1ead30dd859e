// The N tail of the packed epilogue, run on the emulator against the exact
// reference. N = 42 is not a multiple of 4: the quad holding columns 40..43
// straddles N and stores its columns below N one at a time; the other quads
// of the last N tile store all 4 columns or none (offset selects, no branch). M at the edges of both M
// ranges, on both chips.
// RUN: rm -rf %t && mla-fp8-aot -o %t --v-head-dim=42 --max-m=32 --no-cache --quiet
// RUN: llvm-objdump -d --mcpu=gfx942 %t/gfx942.hsaco | FileCheck %s
// RUN: for chip in gfx942 gfx950; do for m in 1 15 16 17 31 32 33; do \
// RUN:   mla-fp8-emu %t --chip $chip -N 42 -K 512 -B 2 -M $m; done; done \
// RUN:   | FileCheck %s --check-prefix=EMU --implicit-check-not=FAIL

// CHECK-LABEL: <mla_fp8_n42_k512_g128_bf16_gfx942_m1_16>:
// CHECK: buffer_store_dwordx2
// CHECK-NOT: s_cbranch
// CHECK: buffer_store_short
// CHECK-NOT: s_cbranch
// CHECK: s_endpgm

// EMU-COUNT-14: PASS
