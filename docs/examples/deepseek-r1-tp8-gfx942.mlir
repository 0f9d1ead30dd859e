// The two absorbed batched matmuls of a DeepSeek-R1 decode layer at TP 8
// (B = 16 heads per rank, M tokens at run time), written at graph level: the
// activations are group-quantized, then multiplied with the fp8 weights.
// `mlafp8-fuse-prequant` fuses each pair; `mlafp8-to-hsaco` makes the kernels.

// K-up: q_nope (B, M, P = 128) x W_UK (B, L = 512, P).
func.func @k_up(%q_nope: tensor<16x?x128xbf16>, %w_uk: tensor<16x512x128xf8E4M3FNUZ>,
                %w_scale: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %q, %s = mlafp8.group_quant %q_nope
      : tensor<16x?x128xbf16> -> tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>
  %y = mlafp8.scaled_bmm %q, %s, %w_uk, %w_scale
      : tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>,
        tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// V-up: o (B, M, L = 512) x W_UV (B, V = 128, L), written as (M, B, V).
func.func @v_up(%o: tensor<16x?x512xbf16>, %w_uv: tensor<16x128x512xf8E4M3FNUZ>,
                %w_scale: tensor<1xf32>) -> tensor<?x16x128xbf16> {
  %q, %s = mlafp8.group_quant %o
      : tensor<16x?x512xbf16> -> tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>
  %y = mlafp8.scaled_bmm %q, %s, %w_uv, %w_scale {y_layout = #mlafp8<layout mb>}
      : tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>,
        tensor<16x128x512xf8E4M3FNUZ>, tensor<1xf32> -> tensor<?x16x128xbf16>
  return %y : tensor<?x16x128xbf16>
}
