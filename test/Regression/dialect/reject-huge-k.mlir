func.func @scaled_bmm(%q: tensor<16x?x9223372036854775807xf8E4M3FNUZ>, %s: tensor<16x?x1xf32>, %w: tensor<16x512x9223372036854775807xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws : tensor<16x?x9223372036854775807xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x9223372036854775807xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
