func.func @prequant_bmm_tiles(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {
    tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 4294967296, stages = 1, occupancy = 2>]
  } : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
