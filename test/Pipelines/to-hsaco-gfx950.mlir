// The default AOT set for DeepSeek-R1 on MI350 (gfx950, OCP): K-up and V-up,
// bf16 out, per-tensor descale, every range of rows; compiled and linked
// in-process.
// RUN: rm -rf %t && mkdir -p %t
// RUN: mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx950 dump=%t" | FileCheck %s --check-prefix=BIN
// RUN: llvm-objdump -d --mcpu=gfx950 %t/kup_kernels.hsaco | FileCheck %s --check-prefix=ISA --implicit-check-not=scratch_ --implicit-check-not=store_short
// RUN: llvm-objdump -d --mcpu=gfx950 %t/vup_kernels.hsaco | FileCheck %s --check-prefix=ISA --implicit-check-not=scratch_ --implicit-check-not=store_short
// RUN: llvm-objdump -d --mcpu=gfx950 %t/vsplit_kernels.hsaco | FileCheck %s --check-prefix=SPLITK
// RUN: llvm-objdump -d --mcpu=gfx950 %t/kup_kernels.hsaco %t/vup_kernels.hsaco | FileCheck %s --check-prefix=MFMA --implicit-check-not=_fp8_fp8
// RUN: llvm-readelf --notes %t/kup_kernels.hsaco | FileCheck %s --check-prefixes=META,METAK --implicit-check-not="spill_count: {{[1-9]}}" --implicit-check-not="private_segment_fixed_size: {{[1-9]}}"
// RUN: llvm-readelf --notes %t/vup_kernels.hsaco | FileCheck %s --check-prefixes=META,METAV --implicit-check-not="spill_count: {{[1-9]}}" --implicit-check-not="private_segment_fixed_size: {{[1-9]}}"
// RUN: mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx950 format=isa" | FileCheck %s --check-prefix=ASM

// BIN: gpu.binary @kup_kernels  [#gpu.object<#rocdl.target<O = 3, chip = "gfx950">, bin = "\7FELF
// BIN: gpu.binary @vup_kernels  [#gpu.object<#rocdl.target<O = 3, chip = "gfx950">, bin = "\7FELF

// The first range of rows B * M: 1-2048 for both K-up and V-up; the last
// starts at 8193 (both). Each kernel starts with the 256-byte compatibility
// prologue of kernarg preloading: a dispatch that does not preload runs it,
// and it loads the seven preloaded arguments (14 dwords, s[2:15]) from the
// kernarg segment and branches past itself; a preloading dispatch starts 256
// bytes in. The fp8 conversions run with MODE.FP16_OVFL set (they saturate),
// and it is cleared before the MFMAs: no conversion lies outside the bracket.
// ISA-LABEL: <mla_fp8_n{{[0-9]+}}_k{{[0-9]+}}_g128_bf16_gfx950_r1_2048>:
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
// ISA: v_mfma_f32_16x16x128_f8f6f4
// ISA-NOT: {{v_cvt_pk_fp8_f32|hwreg\(HW_REG_MODE, 23, 1\), 1}}
// ISA: s_endpgm
// ISA-LABEL: _gfx950_r8193_inf>:
// ISA-DAG: global_load_dwordx4
// ISA-DAG: v_cvt_pk_fp8_f32
// ISA-DAG: s_barrier
// ISA-DAG: ds_read_b128
// ISA-DAG: v_mfma_f32_{{16x16x128|32x32x64}}_f8f6f4
// ISA: s_endpgm

// The tile table's MFMA per kernel (TileTable.cpp): gfx950's f8f6f4 forms
// everywhere, one 16x16x128 (or two 32x32x64) per group and output block of a
// wave; no 16x16x32 / 32x32x16 left. Waves split N first. K-up, one group:
// the 16x128 tile of 4 waves takes two 16x16 blocks per wave, each one MFMA
// from a zero accumulator, 32x256 of 8 four (2 x 2); 128x256 of 8 waves four
// 32x32 blocks, each two 32x32x64.
// MFMA-LABEL: <mla_fp8_n512_k128_g128_bf16_gfx950_r1_2048>:
// MFMA-COUNT-2: v_mfma_f32_16x16x128_f8f6f4 v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], 0
// MFMA-NOT: v_mfma
// MFMA-LABEL: _gfx950_r2049_8192>:
// MFMA-COUNT-4: v_mfma_f32_16x16x128_f8f6f4
// MFMA-NOT: v_mfma
// MFMA-LABEL: _gfx950_r8193_inf>:
// MFMA-COUNT-8: v_mfma_f32_32x32x64_f8f6f4
// MFMA-NOT: v_mfma
// V-up, four groups: 16x64 (4 waves) one block per wave and group, 16x128
// (4 waves) two, 32x128 of 8 waves two, 64x128 of 8 waves four (4 x 1).
// MFMA-LABEL: <mla_fp8_n128_k512_g128_bf16_gfx950_r1_2048>:
// MFMA-COUNT-4: v_mfma_f32_16x16x128_f8f6f4
// MFMA-NOT: v_mfma
// MFMA-LABEL: _gfx950_r2049_4096>:
// MFMA-COUNT-8: v_mfma_f32_16x16x128_f8f6f4
// MFMA-NOT: v_mfma
// MFMA-LABEL: _gfx950_r4097_8192>:
// MFMA-COUNT-8: v_mfma_f32_16x16x128_f8f6f4
// MFMA-NOT: v_mfma
// MFMA-LABEL: <mla_fp8_n128_k512_g128_bf16_gfx950_r8193_inf>:
// MFMA-COUNT-16: v_mfma_f32_16x16x128_f8f6f4
// MFMA-NOT: v_mfma

// V-up with an explicit split-K tile at B * M <= 16 (two splits; the table no
// longer splits): the partial is stored, released at agent scope, counted
// with a returning atomic; the last arriver acquires, sums and stores Y.
// SPLITK-LABEL: _gfx950_r1_16>:
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
// SPLITK-LABEL: _gfx950_r17_inf>:
// SPLITK-NOT: global_atomic
// SPLITK: s_endpgm

// Every kernel: no spills, no scratch, LDS far below 160 KiB (16 rows of A
// take 2112 bytes, K-up's 32-row tile 4224 and its 128-row tile 16896; V-up
// keeps one copy of the A tile per K-group: 4 x 2112 bytes for its 16-row
// tiles up to 4096 rows, 4 x 4224 for its 32-row tile, while its 64-row tile,
// from 8193, keeps a single copy of 8448, four being more than
// kMaxBatchedLDSBytes).
// METAK: .group_segment_fixed_size: 2112
// METAV: .group_segment_fixed_size: 8448
// META: .kernarg_segment_size: 88
// METAK: .name: mla_fp8_n512_k128_g128_bf16_gfx950_r1_2048
// METAV: .name: mla_fp8_n128_k512_g128_bf16_gfx950_r1_2048
// META: .private_segment_fixed_size: 0
// META: .sgpr_spill_count: 0
// META: .vgpr_spill_count: 0
// METAK: .group_segment_fixed_size: 4224
// METAV: .group_segment_fixed_size: 8448
// METAK: .name: mla_fp8_n512_k128_g128_bf16_gfx950_r2049_8192
// METAV: .name: mla_fp8_n128_k512_g128_bf16_gfx950_r2049_4096
// METAK: .group_segment_fixed_size: 16896
// METAV: .group_segment_fixed_size: 16896
// METAK: .name: mla_fp8_n512_k128_g128_bf16_gfx950_r8193_inf
// METAV: .name: mla_fp8_n128_k512_g128_bf16_gfx950_r4097_8192
// METAV: .group_segment_fixed_size: 8448
// METAV: .name: mla_fp8_n128_k512_g128_bf16_gfx950_r8193_inf
// META: amdhsa.target: amdgcn-amd-amdhsa--gfx950

// ASM: gpu.binary @kup_kernels  [#gpu.object<#rocdl.target<O = 3, chip = "gfx950">, assembly = "{{.*}}v_mfma_f32_16x16x128_f8f6f4

func.func @kup(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FN>,
               %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FN>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

func.func @vup(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FN>,
               %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x512xbf16>,
      tensor<16x128x512xf8E4M3FN>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}

func.func @vsplit(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FN>,
                  %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [
      #mlafp8.tile<min_rows = 1, max_rows = 16, block_m = 16, block_n = 64, waves = 4,
                   mfma = m16n16k32, split_k = 2, stages = 2, occupancy = 2>,
      #mlafp8.tile<min_rows = 17, max_rows = 0, block_m = 32, block_n = 128, waves = 8,
                   mfma = m16n16k32, split_k = 1, stages = 4, occupancy = 2>]}
      : tensor<16x?x512xbf16>, tensor<16x128x512xf8E4M3FN>, tensor<1xf32>
      -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}
