// The packed epilogue, in the code object: the weight descale is one scalar
// load issued before the MFMAs; after a DPP transpose inside each quad, each
// lane stores 4 adjacent columns of one row with one 8-byte buffer store whose
// range check masks rows past M: no branch in the epilogue; split-K loads
// every split's partial before it waits.
// RUN: rm -rf %t && mkdir -p %t/gfx942 %t/gfx950
// RUN: mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 dump=%t/gfx942" > /dev/null
// gfx950 takes the same kernels in OCP fp8.
// RUN: sed s/f8E4M3FNUZ/f8E4M3FN/g %s | mla-fp8-opt --mlafp8-to-hsaco="chip=gfx950 dump=%t/gfx950" > /dev/null
// RUN: llvm-objdump -d --mcpu=gfx942 %t/gfx942/kup_kernels.hsaco | FileCheck %s --check-prefix=KUP --implicit-check-not=store_short
// RUN: llvm-objdump -d --mcpu=gfx950 %t/gfx950/kup_kernels.hsaco | FileCheck %s --check-prefix=KUP --implicit-check-not=store_short
// RUN: llvm-objdump -d --mcpu=gfx942 %t/gfx942/wide_kernels.hsaco | FileCheck %s --check-prefix=WIDE --implicit-check-not=store_short
// RUN: llvm-objdump -d --mcpu=gfx950 %t/gfx950/wide_kernels.hsaco | FileCheck %s --check-prefix=WIDE --implicit-check-not=store_short
// RUN: llvm-objdump -d --mcpu=gfx942 %t/gfx942/splitk_kernels.hsaco | FileCheck %s --check-prefix=SPLITK --implicit-check-not=store_short
// RUN: llvm-objdump -d --mcpu=gfx950 %t/gfx950/splitk_kernels.hsaco | FileCheck %s --check-prefix=SPLITK --implicit-check-not=store_short

// One 16x16 tile per wave: 4 accumulators, one run, one store.
// KUP-LABEL: <mla_fp8_n512_k128_g128_bf16_gfx9{{[0-9]+}}_r1_inf>:
// KUP: s_load_dword s{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}], 0x0
// KUP-COUNT-4: v_mfma_f32_16x16x32_fp8_fp8
// KUP-NOT: {{global_load|s_cbranch|_store}}
// KUP: buffer_store_dwordx2
// KUP-NEXT: s_endpgm
func.func @kup(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0,
      block_m = 16, block_n = 16, waves = 1, mfma = m16n16k32, split_k = 1,
      stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// One 32x32 tile per wave, f16 out, per-batch descale (indexed by the
// workgroup's batch: still a scalar load), bias, token-major Y: 16
// accumulators in 4 runs, 4 stores, no branch from the bias load on.
// WIDE-LABEL: <mla_fp8_n128_k512_g128_xf16_f16_pb_bias_gfx9{{[0-9]+}}_r1_inf>:
// WIDE: s_load_dword s{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}], 0x0
// WIDE: v_mfma_f32_32x32x16_fp8_fp8
// WIDE: global_load_ushort
// WIDE-NOT: {{s_cbranch|global_load|_store}}
// WIDE: buffer_store_dwordx2
// WIDE-NOT: {{s_cbranch|global_load}}
// WIDE: buffer_store_dwordx2
// WIDE-NOT: {{s_cbranch|global_load}}
// WIDE: buffer_store_dwordx2
// WIDE-NOT: {{s_cbranch|global_load}}
// WIDE: buffer_store_dwordx2
// WIDE-NOT: {{s_cbranch|_store}}
// WIDE: s_endpgm
func.func @wide(%x: tensor<?x16x512xf16>, %w: tensor<16x128x512xf8E4M3FNUZ>,
                %ws: tensor<16xf32>, %bias: tensor<16x128xf16>) -> tensor<?x16x128xf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws bias %bias {
      w_scale_mode = #mlafp8<weight_scale per_batch>,
      x_layout = #mlafp8<layout mb>, y_layout = #mlafp8<layout mb>,
      tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 64, block_n = 64,
                            waves = 4, mfma = m32n32k16, split_k = 1, stages = 1,
                            occupancy = 2>]}
      : tensor<?x16x512xf16>, tensor<16x128x512xf8E4M3FNUZ>, tensor<16xf32>,
        tensor<16x128xf16> -> tensor<?x16x128xf16>
  return %y : tensor<?x16x128xf16>
}

// Split-K 4 ways: the last arriver issues the 4 partial loads back to back
// (no wait between them), and the descale is long resident (no load after
// the acquire but the partials').
// SPLITK-LABEL: <mla_fp8_n128_k512_g128_bf16_gfx9{{[0-9]+}}_r1_inf>:
// SPLITK: s_load_dword s{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}], 0x0
// SPLITK: buffer_inv sc1
// SPLITK-NEXT: global_load_dwordx4
// SPLITK-NEXT: global_load_dwordx4
// SPLITK-NEXT: global_load_dwordx4
// SPLITK-NEXT: global_load_dwordx4
// SPLITK-NOT: {{global_load|s_cbranch|_store}}
// SPLITK: buffer_store_dwordx2
// SPLITK-NEXT: s_endpgm
func.func @splitk(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FNUZ>,
                  %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0,
      block_m = 16, block_n = 16, waves = 1, mfma = m16n16k32, split_k = 4,
      stages = 1, occupancy = 2>]} : tensor<16x?x512xbf16>,
      tensor<16x128x512xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}
