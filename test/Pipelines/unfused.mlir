// mlafp8-to-hsaco lowers mlafp8.prequant_bmm only. Unfused mlafp8.group_quant
// and mlafp8.scaled_bmm would leave no kernel and no code object: an error
// that names each op, not exit 0 with nothing written.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 dump=%t" 2>&1 | FileCheck %s
// RUN: ls -A %t | count 0
// Fused first, the same input compiles.
// RUN: mla-fp8-opt %s --mlafp8-fuse-prequant --mlafp8-to-hsaco="chip=gfx942 dump=%t" | FileCheck %s --check-prefix=FUSED
// RUN: ls %t | FileCheck %s --check-prefix=DUMP

// CHECK: error: 'mlafp8.group_quant' was not lowered to a kernel: only mlafp8.prequant_bmm is; fuse mlafp8.group_quant into its mlafp8.scaled_bmm first (mlafp8-fuse-prequant)
// CHECK: error: 'mlafp8.scaled_bmm' was not lowered to a kernel
// FUSED: gpu.binary @kup_kernels
// DUMP: kup_kernels.hsaco

func.func @kup(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %q, %s = mlafp8.group_quant %x : tensor<16x?x128xbf16> -> tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws : tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
