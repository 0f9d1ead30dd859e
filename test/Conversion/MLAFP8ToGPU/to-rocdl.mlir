// The whole kernel lowers to the LLVM and ROCDL dialects: nothing of the
// kernel-level dialects is left in the gpu.module.
// RUN: mla-fp8-opt %s --mlafp8-to-rocdl=chip=gfx942 | FileCheck %s --implicit-check-not=" amdgpu." --implicit-check-not=" vector." --implicit-check-not=" scf." --implicit-check-not=" memref." --implicit-check-not=gpu.func --implicit-check-not=gpu.shuffle --implicit-check-not=unrealized_conversion_cast --implicit-check-not=" arith."

// CHECK-LABEL: func.func @vup
// CHECK: mlafp8.prequant_bmm
// CHECK-LABEL: func.func @vsplit
// CHECK: gpu.module @vup_kernels
// The kernel ABI's order (x, its strides, m, w, w_scale, y, bias, Y's
// strides, workspace); the first seven are preloaded (inreg).
// CHECK: llvm.func @mla_fp8_n128_k512_g128_bf16_gfx942_r1_2048(%{{.+}}: !llvm.ptr<1> {llvm.inreg}, %{{.+}}: i64 {llvm.inreg}, %{{.+}}: i64 {llvm.inreg}, %{{.+}}: i64 {llvm.inreg}, %{{.+}}: !llvm.ptr<1> {llvm.inreg}, %{{.+}}: !llvm.ptr<1> {llvm.inreg}, %{{.+}}: !llvm.ptr<1> {llvm.inreg}, %{{.+}}: !llvm.ptr<1>, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: !llvm.ptr<1>)
// CHECK-SAME: gpu.kernel
// CHECK-SAME: rocdl.kernel
// CHECK-SAME: rocdl.reqd_work_group_size = array<i32: 256, 1, 1>
// The quantization's MODE writes (saturating fp8 conversion) stay intrinsic
// calls.
// CHECK: llvm.call_intrinsic "llvm.amdgcn.s.setreg"
// CHECK: rocdl.cvt.pk.fp8.f32
// CHECK: llvm.call_intrinsic "llvm.amdgcn.s.setreg"
// CHECK-NEXT: rocdl.barrier
// CHECK: rocdl.mfma.f32.16x16x32.fp8.fp8
// CHECK: llvm.func @mla_fp8_n128_k512_g128_bf16_gfx942_r16385_inf
// CHECK: rocdl.mfma.f32.16x16x32.fp8.fp8
// Split-K (an explicit tile): agent-scope fences and counter.
// CHECK: gpu.module @vsplit_kernels
// CHECK: llvm.func @mla_fp8_n128_k512_g128_bf16_gfx942_r1_inf
// CHECK: rocdl.mfma.f32.16x16x32.fp8.fp8
// CHECK: llvm.fence syncscope("agent") release
// CHECK: llvm.atomicrmw add %{{.+}}, %{{.+}} syncscope("agent") monotonic
// CHECK: llvm.fence syncscope("agent") acquire
func.func @vup(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x512xbf16>,
      tensor<16x128x512xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}

func.func @vsplit(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FNUZ>,
                  %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1,
      max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32,
      split_k = 2, stages = 2, occupancy = 2>]} : tensor<16x?x512xbf16>,
      tensor<16x128x512xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}
