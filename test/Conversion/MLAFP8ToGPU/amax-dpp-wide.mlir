// G = 256: a row spans 32 lanes, two DPP rows. The four DPP steps reduce each
// row of 16 lanes; one xor shuffle across rows finishes.
// RUN: mla-fp8-opt %s --convert-mlafp8-to-gpu=chip=gfx942 --canonicalize --cse | FileCheck %s

// CHECK-LABEL: gpu.func @mla_fp8_n64_k256_g256_bf16_gfx942_r1_inf(
// CHECK: %[[R:.+]] = vector.reduction <maxui>, %{{.+}} : vector<8xi32> into i32
// CHECK-NEXT: %[[D0:.+]] = amdgpu.dpp %[[R]] %[[R]] quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32])
// CHECK-NEXT: %[[M0:.+]] = arith.maxui %[[R]], %[[D0]] : i32
// CHECK-NEXT: %[[D1:.+]] = amdgpu.dpp %[[M0]] %[[M0]] quad_perm([2 : i32, 3 : i32, 0 : i32, 1 : i32])
// CHECK-NEXT: %[[M1:.+]] = arith.maxui %[[M0]], %[[D1]] : i32
// CHECK-NEXT: %[[D2:.+]] = amdgpu.dpp %[[M1]] %[[M1]] row_half_mirror
// CHECK-NEXT: %[[M2:.+]] = arith.maxui %[[M1]], %[[D2]] : i32
// CHECK-NEXT: %[[D3:.+]] = amdgpu.dpp %[[M2]] %[[M2]] row_mirror
// CHECK-NEXT: %[[M3:.+]] = arith.maxui %[[M2]], %[[D3]] : i32
// CHECK-NEXT: %[[S:.+]], %{{.+}} = gpu.shuffle  xor %[[M3]], %c16_i32, %c64_i32 : i32
// CHECK-NEXT: %[[AMAX:.+]] = arith.maxui %[[M3]], %[[S]] : i32
// CHECK-NEXT: arith.bitcast %[[AMAX]] : i32 to f32
func.func @g256(%x: tensor<4x?x256xbf16>, %w: tensor<4x64x256xf8E4M3FNUZ>,
                %ws: tensor<1xf32>) -> tensor<4x?x64xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = 256 : i64,
      tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 32, block_n = 32,
      waves = 1, mfma = m32n32k16, split_k = 1, stages = 1, occupancy = 2>]}
      : tensor<4x?x256xbf16>, tensor<4x64x256xf8E4M3FNUZ>, tensor<1xf32>
      -> tensor<4x?x64xbf16>
  return %y : tensor<4x?x64xbf16>
}
