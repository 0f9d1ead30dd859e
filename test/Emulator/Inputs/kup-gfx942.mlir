// One projection for gfx942, compiled by tests that need some code object of
// this build (not a foreign one) to feed the emulator.
func.func @kup(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
