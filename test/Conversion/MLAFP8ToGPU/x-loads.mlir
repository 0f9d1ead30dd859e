// The global loads of a K-group (every X pass, then W) are issued together,
// unconditionally, before anything waits for them, so that a group costs one
// memory round trip; with stages = s the loads of the next s - 1 groups stay
// in flight while this group is quantized and multiplied.
// The K-up tile of 4 passes (128x256, from 8193 rows on both chips) has its
// IR checked on gfx950.
// RUN: sed 's/E4M3FNUZ/E4M3FN/g' %s | mla-fp8-opt --mlafp8-select-tiles=chip=gfx950 --convert-mlafp8-to-gpu=chip=gfx950 | FileCheck %s --check-prefix=IR
// RUN: rm -rf %t && mkdir -p %t/gfx942 %t/gfx950
// RUN: mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 dump=%t/gfx942" -o /dev/null
// gfx950 takes OCP fp8 weights; the kernels have the same shape.
// RUN: sed 's/E4M3FNUZ/E4M3FN/g' %s | mla-fp8-opt --mlafp8-to-hsaco="chip=gfx950 dump=%t/gfx950" -o /dev/null
// RUN: llvm-objdump -d --mcpu=gfx942 %t/gfx942/kup_kernels.hsaco > %t/gfx942/kup.s
// RUN: llvm-objdump -d --mcpu=gfx942 %t/gfx942/vup_kernels.hsaco > %t/gfx942/vup.s
// RUN: llvm-objdump -d --mcpu=gfx950 %t/gfx950/kup_kernels.hsaco > %t/gfx950/kup.s
// RUN: llvm-objdump -d --mcpu=gfx950 %t/gfx950/vup_kernels.hsaco > %t/gfx950/vup.s
// One group: K-up.
// RUN: FileCheck %s --check-prefix=ONE -DKERNEL=r1_512 < %t/gfx942/kup.s
// RUN: FileCheck %s --check-prefix=ONE -DKERNEL=r513_2048 < %t/gfx942/kup.s
// RUN: FileCheck %s --check-prefix=ONE -DKERNEL=r2049_8192 < %t/gfx942/kup.s
// RUN: FileCheck %s --check-prefix=ONE -DKERNEL=r8193_inf < %t/gfx942/kup.s
// RUN: FileCheck %s --check-prefix=ONE -DKERNEL=r1_2048 < %t/gfx950/kup.s
// RUN: FileCheck %s --check-prefix=ONE -DKERNEL=r2049_8192 < %t/gfx950/kup.s
// RUN: FileCheck %s --check-prefix=ONE -DKERNEL=r8193_inf < %t/gfx950/kup.s
// V-up: four groups as straight-line code, all loaded at once (stages = 4).
// The 64x128 tiles of 8 waves (gfx942 r16385_inf, gfx950 r8193_inf: 512
// lanes, 16 per row) quantize their 64 rows in 2 passes of 32, and the 32x128
// tile of 4 waves of gfx942 (r8193_16384: 256 lanes) its 32 in 2 passes of 16,
// so they load twice the X of the others (TWOX adds their 4 loads); the waves
// of the 16x128 tiles (r2049_4096) and of the 32x128x4 tile hold two N tiles
// of W (TWOW adds their 8). A branch skips the second pass when its rows lie
// past M (the others, of one pass, have no branch at all, which ONEX checks).
// Most tiles quantize every group into its own LDS copy before one barrier
// (BATCHED); the four copies of the 64x128 tile would take more than
// kMaxBatchedLDSBytes, and the A operands of the 32x128x4 tile's four groups
// more registers than kMaxUnrolledLoadRegisters leaves, so these two have one
// copy and a barrier pair per group (PAIRED).
// RUN: FileCheck %s --check-prefixes=UNROLLED,ONEX,BATCHED -DKERNEL=r1_2048 < %t/gfx942/vup.s
// RUN: FileCheck %s --check-prefixes=UNROLLED,ONEX,TWOW,BATCHED -DKERNEL=r2049_4096 < %t/gfx942/vup.s
// RUN: FileCheck %s --check-prefixes=UNROLLED,ONEX,BATCHED -DKERNEL=r4097_8192 < %t/gfx942/vup.s
// RUN: FileCheck %s --check-prefixes=UNROLLED,TWOX,TWOW,PAIRED -DKERNEL=r8193_16384 < %t/gfx942/vup.s
// RUN: FileCheck %s --check-prefixes=UNROLLED,TWOX,PAIRED -DKERNEL=r16385_inf < %t/gfx942/vup.s
// RUN: FileCheck %s --check-prefixes=UNROLLED,ONEX,BATCHED -DKERNEL=r1_2048 < %t/gfx950/vup.s
// RUN: FileCheck %s --check-prefixes=UNROLLED,ONEX,TWOW,BATCHED -DKERNEL=r2049_4096 < %t/gfx950/vup.s
// RUN: FileCheck %s --check-prefixes=UNROLLED,ONEX,BATCHED -DKERNEL=r4097_8192 < %t/gfx950/vup.s
// RUN: FileCheck %s --check-prefixes=UNROLLED,TWOX,PAIRED -DKERNEL=r8193_inf < %t/gfx950/vup.s
// K = 2048 (16 groups, heuristic tiles with stages = 2): a loop.
// RUN: llvm-objdump -d --mcpu=gfx942 %t/gfx942/vlong_kernels.hsaco > %t/gfx942/vlong.s
// RUN: FileCheck %s --check-prefix=LOOP -DKERNEL=r257_512 < %t/gfx942/vlong.s
// RUN: FileCheck %s --check-prefix=LOOP -DKERNEL=r8193_inf < %t/gfx942/vlong.s

// K-up r8193_inf of gfx950 (128x256, 8 waves: 512 lanes, 16 per row)
// quantizes its 128 rows in 4 passes of 32: all four X loads precede the
// first branch and W's load (one 64-byte unit of the m32n32k64 MFMA), a
// fence keeps W's load below them, and a second fence pins both above their
// uses; the next kernel's label (the first V-up kernel's) bounds the matches.
// IR-LABEL: gpu.func @mla_fp8_n512_k128_g128_bf16_gfx950_r8193_inf(
// IR-NOT: {{scf.if|xi8, #gpu.address_space<global>>, vector<64xi8>}}
// IR: memref<2147483647xbf16, #gpu.address_space<global>>, vector<8xbf16>
// IR-NOT: {{scf.if|xi8, #gpu.address_space<global>>, vector<64xi8>}}
// IR: memref<2147483647xbf16, #gpu.address_space<global>>, vector<8xbf16>
// IR-NOT: {{scf.if|xi8, #gpu.address_space<global>>, vector<64xi8>}}
// IR: memref<2147483647xbf16, #gpu.address_space<global>>, vector<8xbf16>
// IR-NOT: {{scf.if|xi8, #gpu.address_space<global>>, vector<64xi8>}}
// IR: memref<2147483647xbf16, #gpu.address_space<global>>, vector<8xbf16>
// IR-NOT: {{scf.if|vector.load}}
// IR: amdgpu.sched_barrier allow = <none>
// IR-NOT: {{scf.if|vector.load}}
// IR: vector.load {{.*}} : memref<2147483647xi8, #gpu.address_space<global>>, vector<64xi8>
// IR-NOT: {{scf.if|vector.load}}
// IR: amdgpu.sched_barrier allow = <none>
// IR-NOT: {{xbf16, #gpu.address_space<global>>, vector<8xbf16>|xi8, #gpu.address_space<global>>, vector<64xi8>}}
// IR: amdgpu.mfma
// IR-LABEL: gpu.func @mla_fp8_n128_k512_g128_bf16_gfx950_r1_2048(

// One group: every load precedes the first wait or branch, and no load
// follows it before the MFMAs. Before, each pass's loads sat in its branch
// and ended in vmcnt(0). (Every match lies within the kernel: none crosses
// its s_endpgm.)
// ONE: _[[KERNEL]]>:
// ONE-NOT: {{s_cbranch|vmcnt|s_endpgm}}
// ONE: s_waitcnt vmcnt(
// ONE-NOT: {{global_load|s_endpgm}}
// ONE: v_mfma

// Straight-line groups: the 12 loads of the four groups (per group, one X
// chunk and two 16-byte W loads per lane; the tiles of two passes take two X
// chunks each, 16 loads, the 16x128 tiles two N tiles of W, 20, and the
// 32x128x4 tile both, 24) are issued before any wait or branch; the first
// wait leaves later groups in flight (a nonzero count); no load follows it
// (a second pass's branch skips its quantization only). Batched (BATCHED), every group is quantized into its
// own LDS copy before the one barrier, and no barrier follows the MFMAs.
// Before, a loop's back-edge copies of the prefetched registers waited for
// them (vmcnt(0)) in every iteration, and each group cost two barriers. In
// pairs (PAIRED), each group's quantization ends in a barrier before its
// MFMAs, and each group but the last is followed by one before the next
// quantization rewrites the copy (seven in all); the MFMAs, which read no
// LDS, may be scheduled past them.
// UNROLLED: _[[KERNEL]]>:
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// UNROLLED-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: global_load_dwordx4
// TWOX-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOX: global_load_dwordx4
// TWOX-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOX: global_load_dwordx4
// TWOX-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOX: global_load_dwordx4
// TWOX-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOX: global_load_dwordx4
// TWOW-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOW: global_load_dwordx4
// TWOW-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOW: global_load_dwordx4
// TWOW-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOW: global_load_dwordx4
// TWOW-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOW: global_load_dwordx4
// TWOW-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOW: global_load_dwordx4
// TWOW-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOW: global_load_dwordx4
// TWOW-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOW: global_load_dwordx4
// TWOW-NOT: {{s_cbranch|vmcnt|s_barrier|s_endpgm}}
// TWOW: global_load_dwordx4
// UNROLLED-NOT: {{global_load|s_cbranch|vmcnt|s_barrier|s_endpgm}}
// UNROLLED: s_waitcnt vmcnt({{[1-9]}}
// ONEX-NOT: {{global_load|s_cbranch|s_barrier|v_mfma|s_endpgm}}
// TWOX-NOT: {{global_load|s_barrier|v_mfma|s_endpgm}}
// UNROLLED: s_barrier
// BATCHED-NOT: {{global_load|s_cbranch|s_barrier|s_endpgm}}
// BATCHED: v_mfma
// BATCHED-NOT: s_barrier
// BATCHED: s_endpgm
// PAIRED-NOT: {{global_load|s_barrier|s_endpgm}}
// PAIRED: v_mfma
// PAIRED-NOT: {{global_load|s_endpgm}}
// PAIRED: s_barrier
// PAIRED-NOT: {{global_load|s_endpgm}}
// PAIRED: s_barrier
// PAIRED-NOT: {{global_load|s_endpgm}}
// PAIRED: s_barrier
// PAIRED-NOT: {{global_load|s_endpgm}}
// PAIRED: s_barrier
// PAIRED-NOT: {{global_load|s_endpgm}}
// PAIRED: s_barrier
// PAIRED-NOT: {{global_load|s_endpgm}}
// PAIRED: s_barrier
// PAIRED-NOT: {{global_load|s_barrier|s_endpgm}}
// PAIRED: v_mfma
// PAIRED-NOT: s_barrier
// PAIRED: s_endpgm

// The loop (more than 8 groups): the prologue's loads are one batch that enters the loop without
// a wait; in the loop, this group's MFMAs are all issued before the only
// vmcnt(0) (the back-edge copies of the next group's registers); the next
// prefetch is one batch, and pass 0 waits for this group's loads only (a
// nonzero count: the prefetch stays in flight); the passes neither load nor
// drain the counter. Before, the passes' loads were under branches and the
// waits reached into the prefetch before the MFMAs.
// LOOP: _[[KERNEL]]>:
// LOOP-NOT: {{s_cbranch|vmcnt|s_endpgm}}
// LOOP: global_load_dwordx4
// LOOP-NOT: {{s_cbranch|vmcnt|s_endpgm}}
// LOOP: s_branch
// LOOP-NOT: {{vmcnt\(0\)|s_endpgm}}
// LOOP: v_mfma
// LOOP-NOT: {{global_load|s_endpgm}}
// LOOP: s_waitcnt vmcnt(0)
// LOOP-NOT: {{v_mfma|vmcnt|s_endpgm}}
// LOOP: s_cbranch_vccz
// LOOP-NOT: {{s_cbranch|vmcnt|s_endpgm}}
// LOOP: global_load_dwordx4
// LOOP-NOT: {{s_cbranch|vmcnt|s_endpgm}}
// LOOP: s_waitcnt vmcnt({{[1-9]}}
// LOOP-NOT: {{global_load|vmcnt\(0\)|s_endpgm}}
// LOOP: {{s_cbranch_vccnz|s_cbranch_execz|s_branch}}

func.func @kup(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

func.func @vup(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x512xbf16>,
      tensor<16x128x512xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}

func.func @vlong(%x: tensor<16x?x2048xbf16>, %w: tensor<16x128x2048xf8E4M3FNUZ>,
                 %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x2048xbf16>,
      tensor<16x128x2048xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}
