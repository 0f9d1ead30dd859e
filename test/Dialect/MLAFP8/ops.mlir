// RUN: mla-fp8-opt %s | mla-fp8-opt | FileCheck %s
// RUN: mla-fp8-opt %s --mlir-print-op-generic | mla-fp8-opt | FileCheck %s

// CHECK-LABEL: func.func @group_quant
// CHECK: %{{.+}}, %{{.+}} = mlafp8.group_quant %{{[^ ]+}} : tensor<16x?x512xbf16> -> tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>
func.func @group_quant(%x: tensor<16x?x512xbf16>) -> (tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>) {
  %q, %s = mlafp8.group_quant %x {group_size = 128 : i64} : tensor<16x?x512xbf16> -> tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>
  return %q, %s : tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>
}

// A partial last group: K = 200 with G = 64 is four groups.
// CHECK-LABEL: func.func @group_quant_partial
// CHECK: mlafp8.group_quant %{{.+}} {group_size = 64 : i64} : tensor<2x3x200xf16> -> tensor<2x3x200xf8E4M3FN>, tensor<2x3x4xf32>
func.func @group_quant_partial(%x: tensor<2x3x200xf16>) -> tensor<2x3x4xf32> {
  %q, %s = mlafp8.group_quant %x {group_size = 64 : i64} : tensor<2x3x200xf16> -> tensor<2x3x200xf8E4M3FN>, tensor<2x3x4xf32>
  return %s : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @scaled_bmm
// CHECK: mlafp8.scaled_bmm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
func.func @scaled_bmm(%q: tensor<16x?x128xf8E4M3FNUZ>, %s: tensor<16x?x1xf32>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws : tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// Token-major activations and result, per-batch descale and a bias.
// CHECK-LABEL: func.func @scaled_bmm_mb_bias
// CHECK: mlafp8.scaled_bmm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} bias %{{.+}} {w_scale_mode = #mlafp8<weight_scale per_batch>, x_layout = #mlafp8<layout mb>, y_layout = #mlafp8<layout mb>} : tensor<?x16x512xf8E4M3FN>, tensor<?x16x4xf32>, tensor<16x128x512xf8E4M3FN>, tensor<16xf32>, tensor<16x128xf16> -> tensor<?x16x128xf16>
func.func @scaled_bmm_mb_bias(%q: tensor<?x16x512xf8E4M3FN>, %s: tensor<?x16x4xf32>, %w: tensor<16x128x512xf8E4M3FN>, %ws: tensor<16xf32>, %b: tensor<16x128xf16>) -> tensor<?x16x128xf16> {
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws bias %b {w_scale_mode = #mlafp8<weight_scale per_batch>, x_layout = #mlafp8<layout mb>, y_layout = #mlafp8<layout mb>} : tensor<?x16x512xf8E4M3FN>, tensor<?x16x4xf32>, tensor<16x128x512xf8E4M3FN>, tensor<16xf32>, tensor<16x128xf16> -> tensor<?x16x128xf16>
  return %y : tensor<?x16x128xf16>
}

// Dynamic batch: per-batch descale of dynamic size.
// CHECK-LABEL: func.func @prequant_bmm_dynamic_batch
// CHECK: mlafp8.prequant_bmm %{{.+}}, %{{.+}}, %{{.+}} {w_scale_mode = #mlafp8<weight_scale per_batch>} : tensor<?x?x128xbf16>, tensor<?x512x128xf8E4M3FNUZ>, tensor<?xf32> -> tensor<?x?x512xbf16>
func.func @prequant_bmm_dynamic_batch(%x: tensor<?x?x128xbf16>, %w: tensor<?x512x128xf8E4M3FNUZ>, %ws: tensor<?xf32>) -> tensor<?x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {w_scale_mode = #mlafp8<weight_scale per_batch>} : tensor<?x?x128xbf16>, tensor<?x512x128xf8E4M3FNUZ>, tensor<?xf32> -> tensor<?x?x512xbf16>
  return %y : tensor<?x?x512xbf16>
}

// CHECK-LABEL: func.func @prequant_bmm_tiles
// CHECK: mlafp8.prequant_bmm %{{.+}}, %{{.+}}, %{{.+}} bias %{{.+}} {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 32, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>, #mlafp8.tile<min_rows = 33, max_rows = 0, block_m = 64, block_n = 64, waves = 4, mfma = m32n32k16, split_k = 1, stages = 2, occupancy = 2>], y_layout = #mlafp8<layout mb>} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32>, tensor<16x512xbf16> -> tensor<?x16x512xbf16>
func.func @prequant_bmm_tiles(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>, %b: tensor<16x512xbf16>) -> tensor<?x16x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws bias %b {
    y_layout = #mlafp8<layout mb>,
    tiles = [#mlafp8.tile<min_rows = 1, max_rows = 32, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>,
             #mlafp8.tile<min_rows = 33, max_rows = 0, block_m = 64, block_n = 64, waves = 4, mfma = m32n32k16, split_k = 1, stages = 2, occupancy = 2>]
  } : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32>, tensor<16x512xbf16> -> tensor<?x16x512xbf16>
  return %y : tensor<?x16x512xbf16>
}

// Every MFMA record parses by its shape name, the gfx950 f8f6f4 ones too;
// `kernels` holds one kernel per tile.
// CHECK-LABEL: func.func @prequant_bmm_kernels
// CHECK: mlafp8.prequant_bmm %{{.+}}, %{{.+}}, %{{.+}} {kernels = [@f_kernels::@k0, @f_kernels::@k1], tiles = [#mlafp8.tile<min_rows = 1, max_rows = 32, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k128, split_k = 1, stages = 1, occupancy = 2>, #mlafp8.tile<min_rows = 33, max_rows = 0, block_m = 64, block_n = 64, waves = 4, mfma = m32n32k64, split_k = 1, stages = 1, occupancy = 2>]}
func.func @prequant_bmm_kernels(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FN>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {
    tiles = [#mlafp8.tile<min_rows = 1, max_rows = 32, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k128, split_k = 1, stages = 1, occupancy = 2>,
             #mlafp8.tile<min_rows = 33, max_rows = 0, block_m = 64, block_n = 64, waves = 4, mfma = m32n32k64, split_k = 1, stages = 1, occupancy = 2>],
    kernels = [@f_kernels::@k0, @f_kernels::@k1]
  } : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FN>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
