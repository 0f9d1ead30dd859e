// Group sizes above 128 spread a row over more than one DPP row (16 lanes):
// after the four DPP steps, the amax crosses rows of lanes. On gfx950 LLVM
// lowers those xor shuffles to v_permlane16_swap / v_permlane32_swap (VALU),
// with no ds_bpermute, ds_swizzle or LDS wait in the reduction. G = 512 is 64
// lanes per row: both swaps; G = 256 is 32 lanes: the 16-lane swap only.
// RUN: rm -rf %t && mkdir -p %t
// RUN: mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx950 dump=%t" -o /dev/null
// RUN: llvm-objdump -d --mcpu=gfx950 %t/g512_kernels.hsaco | FileCheck %s --check-prefix=G512 --implicit-check-not=ds_swizzle --implicit-check-not=ds_bpermute
// RUN: llvm-objdump -d --mcpu=gfx950 %t/g256_kernels.hsaco | FileCheck %s --check-prefix=G256 --implicit-check-not=ds_swizzle --implicit-check-not=ds_bpermute --implicit-check-not=v_permlane32
// RUN: llvm-objdump -d --mcpu=gfx950 %t/g256_kernels.hsaco | FileCheck %s --check-prefix=G256MFMA

// G512-LABEL: _g512_bf16_gfx950_r1_inf>:
// G512: v_max_u32_dpp {{.*}}row_mirror row_mask:0xf bank_mask:0xf
// G512-NOT: {{s_waitcnt|ds_}}
// G512: v_permlane16_swap_b32
// G512-NOT: {{s_waitcnt|ds_}}
// G512: v_permlane32_swap_b32
// G512: ds_write_b64
// G512: v_mfma_f32_16x16x128_f8f6f4
// G512: s_endpgm

// G256-LABEL: _g256_bf16_gfx950_r1_inf>:
// G256: v_max_u32_dpp {{.*}}row_mirror row_mask:0xf bank_mask:0xf
// G256-NOT: {{s_waitcnt|ds_}}
// G256: v_permlane16_swap_b32
// G256: ds_write_b64
// G256: s_endpgm
// Its two groups of 32 rows x 256 columns take more registers than straight-
// line code may hold (KernelPlan's kMaxUnrolledLoadRegisters): a loop, whose
// MFMAs the layout places before the quantization.
// G256MFMA-LABEL: _g256_bf16_gfx950_r1_inf>:
// G256MFMA: v_mfma_f32_32x32x64_f8f6f4
// G256MFMA: s_cbranch_vccz
// G256MFMA: s_endpgm

func.func @g512(%x: tensor<16x?x1024xbf16>, %w: tensor<16x512x1024xf8E4M3FN>,
                %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = 512 : i64, tiles = [
      #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 128, waves = 8,
                   mfma = m16n16k128, split_k = 1, stages = 2, occupancy = 2>]}
      : tensor<16x?x1024xbf16>, tensor<16x512x1024xf8E4M3FN>, tensor<1xf32>
      -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

func.func @g256(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FN>,
                %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = 256 : i64, tiles = [
      #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 32, block_n = 64, waves = 2,
                   mfma = m32n32k64, split_k = 1, stages = 2, occupancy = 2>]}
      : tensor<16x?x512xbf16>, tensor<16x128x512xf8E4M3FN>, tensor<1xf32>
      -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}
