func.func @scaled_bmm_mb_bias(%q: tensor<?x16x512xf8E4M3FN>, %s: tensor<?x16x4xf32>, %w: tensor<16x128x512xf8E4M3FN>, %ws: tensor<16xf32>, %b: tensor<16x128xf16>) -> tensor<?x16x128xf16> {
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws bias %b {w_scale_mode = #mlafp8<weight_scale per_batch>, x_layout = #mlafp8<layout mbb>, y_layout = #mlafp8<layout mb>} : tensor<?x16x512xf8E4M3FN>, tensor<?x16x4xf32>, tensor<16x128x512xf8E4M3FN>, tensor<16xf32>, tensor<16x128xf16> -> tensor<?x16x128xf16>
  return %y : tensor<?x16x128xf16>
}
