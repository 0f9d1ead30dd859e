func.func @group_quant(%x: tensor<16x?x512xbf16>) -> (tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>) {
  %q, %s = mlafp8.group_quant %x {group_size = 0 : i64} : tensor<16x?x512xbf16> -> tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>
  return %q, %s : tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>
}
