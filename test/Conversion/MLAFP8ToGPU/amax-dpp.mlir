// The row amax is reduced across the lanes of a row with DPP (max within a
// row of 16 lanes, no LDS): swap neighbours, swap pairs, mirror half-rows,
// mirror rows, each step an unsigned max of the |x| bit patterns.
// RUN: mla-fp8-opt %s -split-input-file --convert-mlafp8-to-gpu=chip=gfx942 --canonicalize --cse | FileCheck %s --implicit-check-not=gpu.shuffle

// G = 128: 16 lanes per row, one DPP row; four steps.
// CHECK-LABEL: gpu.func @mla_fp8_n512_k128_g128_bf16_gfx942_r1_inf(
// CHECK: %[[R:.+]] = vector.reduction <maxui>, %{{.+}} : vector<8xi32> into i32
// CHECK-NEXT: %[[D0:.+]] = amdgpu.dpp %[[R]] %[[R]] quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32]) {bound_ctrl = true} : i32
// CHECK-NEXT: %[[M0:.+]] = arith.maxui %[[R]], %[[D0]] : i32
// CHECK-NEXT: %[[D1:.+]] = amdgpu.dpp %[[M0]] %[[M0]] quad_perm([2 : i32, 3 : i32, 0 : i32, 1 : i32]) {bound_ctrl = true} : i32
// CHECK-NEXT: %[[M1:.+]] = arith.maxui %[[M0]], %[[D1]] : i32
// CHECK-NEXT: %[[D2:.+]] = amdgpu.dpp %[[M1]] %[[M1]] row_half_mirror {bound_ctrl = true} : i32
// CHECK-NEXT: %[[M2:.+]] = arith.maxui %[[M1]], %[[D2]] : i32
// CHECK-NEXT: %[[D3:.+]] = amdgpu.dpp %[[M2]] %[[M2]] row_mirror {bound_ctrl = true} : i32
// CHECK-NEXT: %[[AMAX:.+]] = arith.maxui %[[M2]], %[[D3]] : i32
// NaN and Inf rows: the scale is NaN when the reduced bits exceed FLT_MAX's.
// CHECK-NEXT: arith.bitcast %[[AMAX]] : i32 to f32
// CHECK: arith.cmpi ugt, %[[AMAX]], %c2139095039_i32 : i32
// CHECK: gpu.return
func.func @g128(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
                %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1,
      max_rows = 0, block_m = 16, block_n = 16, waves = 1, mfma = m16n16k32,
      split_k = 1, stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

// G = 64: 8 lanes per row; the half-row mirror completes the reduction.
// CHECK-LABEL: gpu.func @mla_fp8_n64_k128_g64_bf16_gfx942_r1_inf(
// CHECK: %[[R:.+]] = vector.reduction <maxui>, %{{.+}} : vector<8xi32> into i32
// CHECK-NEXT: %[[D0:.+]] = amdgpu.dpp %[[R]] %[[R]] quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32])
// CHECK-NEXT: %[[M0:.+]] = arith.maxui %[[R]], %[[D0]] : i32
// CHECK-NEXT: %[[D1:.+]] = amdgpu.dpp %[[M0]] %[[M0]] quad_perm([2 : i32, 3 : i32, 0 : i32, 1 : i32])
// CHECK-NEXT: %[[M1:.+]] = arith.maxui %[[M0]], %[[D1]] : i32
// CHECK-NEXT: %[[D2:.+]] = amdgpu.dpp %[[M1]] %[[M1]] row_half_mirror
// CHECK-NEXT: %[[AMAX:.+]] = arith.maxui %[[M1]], %[[D2]] : i32
// CHECK-NEXT: arith.bitcast %[[AMAX]] : i32 to f32
// CHECK-NOT: row_mirror
// CHECK: gpu.return
func.func @g64(%x: tensor<4x?x128xbf16>, %w: tensor<4x64x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<4x?x64xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = 64 : i64,
      tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 16,
      waves = 1, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>]}
      : tensor<4x?x128xbf16>, tensor<4x64x128xf8E4M3FNUZ>, tensor<1xf32>
      -> tensor<4x?x64xbf16>
  return %y : tensor<4x?x64xbf16>
}
