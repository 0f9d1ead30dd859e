// RUN: mla-fp8-opt %s --mlafp8-fuse-prequant --split-input-file | FileCheck %s

// The quantized activations exist only for the matmul: fused.
// CHECK-LABEL: func.func @fuse
// CHECK-SAME: (%[[X:.+]]: tensor<16x?x128xbf16>, %[[W:.+]]: tensor<16x512x128xf8E4M3FNUZ>, %[[WS:.+]]: tensor<1xf32>)
// CHECK-NOT: mlafp8.group_quant
// CHECK: %[[Y:.+]] = mlafp8.prequant_bmm %[[X]], %[[W]], %[[WS]] : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
// CHECK-NOT: mlafp8.scaled_bmm
// CHECK: return %[[Y]]
func.func @fuse(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %q, %s = mlafp8.group_quant %x : tensor<16x?x128xbf16> -> tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws : tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

// Attributes, bias and layouts carry over to the fused op.
// CHECK-LABEL: func.func @fuse_keeps_attributes
// CHECK-SAME: (%[[X:.+]]: tensor<?x16x512xf16>, %[[W:.+]]: tensor<16x128x512xf8E4M3FN>, %[[WS:.+]]: tensor<16xf32>, %[[B:.+]]: tensor<16x128xf16>)
// CHECK: mlafp8.prequant_bmm %[[X]], %[[W]], %[[WS]] bias %[[B]] {group_size = 64 : i64, w_scale_mode = #mlafp8<weight_scale per_batch>, x_layout = #mlafp8<layout mb>, y_layout = #mlafp8<layout mb>}
func.func @fuse_keeps_attributes(%x: tensor<?x16x512xf16>, %w: tensor<16x128x512xf8E4M3FN>, %ws: tensor<16xf32>, %b: tensor<16x128xf16>) -> tensor<?x16x128xf16> {
  %q, %s = mlafp8.group_quant %x {group_size = 64 : i64} : tensor<?x16x512xf16> -> tensor<?x16x512xf8E4M3FN>, tensor<?x16x8xf32>
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws bias %b {group_size = 64 : i64, w_scale_mode = #mlafp8<weight_scale per_batch>, x_layout = #mlafp8<layout mb>, y_layout = #mlafp8<layout mb>} : tensor<?x16x512xf8E4M3FN>, tensor<?x16x8xf32>, tensor<16x128x512xf8E4M3FN>, tensor<16xf32>, tensor<16x128xf16> -> tensor<?x16x128xf16>
  return %y : tensor<?x16x128xf16>
}

// -----

// The fp8 activations are also returned: fusing would have to quantize twice.
// CHECK-LABEL: func.func @no_fuse_other_use
// CHECK: mlafp8.group_quant
// CHECK: mlafp8.scaled_bmm
// CHECK-NOT: mlafp8.prequant_bmm
func.func @no_fuse_other_use(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> (tensor<16x?x512xbf16>, tensor<16x?x128xf8E4M3FNUZ>) {
  %q, %s = mlafp8.group_quant %x : tensor<16x?x128xbf16> -> tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws : tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y, %q : tensor<16x?x512xbf16>, tensor<16x?x128xf8E4M3FNUZ>
}

// -----

// The scales are used elsewhere too.
// CHECK-LABEL: func.func @no_fuse_scales_used
// CHECK: mlafp8.group_quant
// CHECK: mlafp8.scaled_bmm
// CHECK-NOT: mlafp8.prequant_bmm
func.func @no_fuse_scales_used(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> (tensor<16x?x512xbf16>, tensor<16x?x1xf32>) {
  %q, %s = mlafp8.group_quant %x : tensor<16x?x128xbf16> -> tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws : tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y, %s : tensor<16x?x512xbf16>, tensor<16x?x1xf32>
}

// -----

// Group sizes differ. (With K = 64 both describe one group per row, but the
// pattern only fuses what it can prove identical by attribute.)
// CHECK-LABEL: func.func @no_fuse_group_mismatch
// CHECK: mlafp8.group_quant
// CHECK: mlafp8.scaled_bmm
// CHECK-NOT: mlafp8.prequant_bmm
func.func @no_fuse_group_mismatch(%x: tensor<16x?x64xbf16>, %w: tensor<16x512x64xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %q, %s = mlafp8.group_quant %x {group_size = 64 : i64} : tensor<16x?x64xbf16> -> tensor<16x?x64xf8E4M3FNUZ>, tensor<16x?x1xf32>
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws : tensor<16x?x64xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x64xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
