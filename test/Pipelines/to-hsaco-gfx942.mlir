// The default AOT set for DeepSeek-R1 on MI300 (gfx942, FNUZ): K-up and V-up,
// bf16 out, per-tensor descale, every range of rows; compiled and linked
// in-process.
// RUN: rm -rf %t && mkdir -p %t
// RUN: mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 dump=%t" | FileCheck %s --check-prefix=BIN
// RUN: llvm-objdump -d --mcpu=gfx942 %t/kup_kernels.hsaco | FileCheck %s --check-prefixes=ISA,ISAK --implicit-check-not=scratch_ --implicit-check-not=store_short
// RUN: llvm-objdump -d --mcpu=gfx942 %t/vup_kernels.hsaco | FileCheck %s --check-prefixes=ISA,ISAV --implicit-check-not=scratch_ --implicit-check-not=store_short
// RUN: llvm-objdump -d --mcpu=gfx942 %t/vsplit_kernels.hsaco | FileCheck %s --check-prefix=SPLITK
// RUN: llvm-readelf --notes %t/kup_kernels.hsaco | FileCheck %s --check-prefixes=META,METAK --implicit-check-not="spill_count: {{[1-9]}}" --implicit-check-not="private_segment_fixed_size: {{[1-9]}}"
// RUN: llvm-readelf --notes %t/vup_kernels.hsaco | FileCheck %s --check-prefixes=META,METAV --implicit-check-not="spill_count: {{[1-9]}}" --implicit-check-not="private_segment_fixed_size: {{[1-9]}}"
// RUN: mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 format=isa" | FileCheck %s --check-prefix=ASM

// BIN: gpu.binary @kup_kernels  [#gpu.object<#rocdl.target<O = 3, chip = "gfx942">, bin = "\7FELF
// BIN: gpu.binary @vup_kernels  [#gpu.object<#rocdl.target<O = 3, chip = "gfx942">, bin = "\7FELF

// The first range of rows B * M: K-up's is 1-512, V-up's 1-2048; the last
// starts at 8193 (K-up) and 16385 (V-up). Every tile of the table uses the
// 16x16x32 MFMA but K-up's last, 128x256, which uses 32x32x16. Each kernel
// starts with the 256-byte compatibility prologue of kernarg preloading: a
// dispatch that does not preload runs it, and it loads the seven preloaded
// arguments (14 dwords, s[2:15]) from the kernarg segment and branches past
// itself; a preloading dispatch starts 256 bytes in. The fp8 conversions run
// with MODE.FP16_OVFL set (they saturate), and it is cleared before the
// MFMAs: no conversion lies outside the bracket.
// ISA-LABEL: <mla_fp8_n{{[0-9]+}}_k{{[0-9]+}}_g128_bf16_gfx942_r1_{{512|2048}}>:
// ISA-NEXT: s_load_dwordx2 s[2:3], s[0:1], 0x0
// ISA-NEXT: s_load_dwordx8 s[4:11], s[0:1], 0x8
// ISA-NEXT: s_load_dwordx4 s[12:15], s[0:1], 0x28
// ISA-NEXT: s_waitcnt lgkmcnt(0)
// ISA-NEXT: s_branch
// ISA-NOT: v_cvt_pk_fp8_f32
// ISA: global_load_dwordx4
// ISA-NOT: v_cvt_pk_fp8_f32
// ISA: s_setreg_imm32_b32 hwreg(HW_REG_MODE, 23, 1), 1
// ISA: v_cvt_pk_fp8_f32
// ISA: s_setreg_imm32_b32 hwreg(HW_REG_MODE, 23, 1), 0
// ISA-NOT: {{v_cvt_pk_fp8_f32|hwreg\(HW_REG_MODE, 23, 1\), 1}}
// ISA: ds_read_b128
// ISA-NOT: {{v_cvt_pk_fp8_f32|hwreg\(HW_REG_MODE, 23, 1\), 1}}
// ISA: v_mfma_f32_16x16x32_fp8_fp8
// ISA-NOT: {{v_cvt_pk_fp8_f32|hwreg\(HW_REG_MODE, 23, 1\), 1}}
// ISA: s_endpgm
// ISA-LABEL: _gfx942_r{{8193|16385}}_inf>:
// ISA-DAG: global_load_dwordx4
// ISA-DAG: v_cvt_pk_fp8_f32
// ISA-DAG: s_barrier
// ISA-DAG: ds_read_b128
// ISAK-DAG: v_mfma_f32_32x32x16_fp8_fp8
// ISAV-DAG: v_mfma_f32_16x16x32_fp8_fp8
// ISA: s_endpgm

// V-up with an explicit split-K tile at B * M <= 16 (two splits; the table no
// longer splits): the partial is stored, released at agent scope, counted
// with a returning atomic; the last arriver acquires, sums and stores Y.
// SPLITK-LABEL: _gfx942_r1_16>:
// SPLITK: v_mfma_f32_16x16x32_fp8_fp8
// SPLITK: global_store_dwordx4
// SPLITK: buffer_wbl2 sc1
// SPLITK: global_atomic_add {{.*}} sc0
// SPLITK: global_atomic_swap
// SPLITK: buffer_inv sc1
// SPLITK: global_load_dwordx4
// SPLITK: buffer_store_dwordx2
// SPLITK: s_endpgm
// The second tile does not split: no atomics.
// SPLITK-LABEL: _gfx942_r17_inf>:
// SPLITK-NOT: global_atomic
// SPLITK: s_endpgm

// Every kernel: no spills, no scratch, LDS far below 64 KiB (16 rows of A
// take 2112 bytes, K-up's 32-row tile 4224 and its 128-row tile 16896; V-up
// keeps one copy of the A tile per K-group: 4 x 2112 bytes for its 16-row
// tiles up to 4096 rows, 4 x 4224 for its 32-row tile of 8 waves, 4097-8192,
// while its 32-row tile of 4 waves, 8193-16384, keeps a single copy of 4224,
// four groups' A operands being more registers than kMaxUnrolledLoadRegisters
// leaves, and its 64-row tile, from 16385, a single copy of 8448, four being
// more than kMaxBatchedLDSBytes).
// METAK: .group_segment_fixed_size: 2112
// METAV: .group_segment_fixed_size: 8448
// META: .kernarg_segment_size: 88
// METAK: .name: mla_fp8_n512_k128_g128_bf16_gfx942_r1_512
// METAV: .name: mla_fp8_n128_k512_g128_bf16_gfx942_r1_2048
// META: .private_segment_fixed_size: 0
// META: .sgpr_spill_count: 0
// META: .vgpr_spill_count: 0
// METAK: .group_segment_fixed_size: 2112
// METAK: .name: mla_fp8_n512_k128_g128_bf16_gfx942_r513_2048
// METAK: .group_segment_fixed_size: 4224
// METAK: .name: mla_fp8_n512_k128_g128_bf16_gfx942_r2049_8192
// METAV: .group_segment_fixed_size: 8448
// METAV: .name: mla_fp8_n128_k512_g128_bf16_gfx942_r2049_4096
// METAV: .group_segment_fixed_size: 16896
// METAV: .name: mla_fp8_n128_k512_g128_bf16_gfx942_r4097_8192
// METAV: .group_segment_fixed_size: 4224
// METAV: .name: mla_fp8_n128_k512_g128_bf16_gfx942_r8193_16384
// METAK: .group_segment_fixed_size: 16896
// METAV: .group_segment_fixed_size: 8448
// METAK: .name: mla_fp8_n512_k128_g128_bf16_gfx942_r8193_inf
// METAV: .name: mla_fp8_n128_k512_g128_bf16_gfx942_r16385_inf
// META: amdhsa.target: amdgcn-amd-amdhsa--gfx942

// ASM: gpu.binary @kup_kernels  [#gpu.object<#rocdl.target<O = 3, chip = "gfx942">, assembly = "{{.*}}v_mfma_f32_16x16x32_fp8_fp8

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

func.func @vsplit(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FNUZ>,
                  %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [
      #mlafp8.tile<min_rows = 1, max_rows = 16, block_m = 16, block_n = 64, waves = 4,
                   mfma = m16n16k32, split_k = 2, stages = 2, occupancy = 2>,
      #mlafp8.tile<min_rows = 17, max_rows = 0, block_m = 32, block_n = 128, waves = 8,
                   mfma = m16n16k32, split_k = 1, stages = 4, occupancy = 2>]}
      : tensor<16x?x512xbf16>, tensor<16x128x512xf8E4M3FNUZ>, tensor<1xf32>
      -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}
