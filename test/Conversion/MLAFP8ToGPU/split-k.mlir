// RUN: mla-fp8-opt %s -split-input-file --convert-mlafp8-to-gpu=chip=gfx942 --canonicalize --cse | FileCheck %s

// V-up split 4 ways over its 4 K-groups: one group per workgroup, the partial
// through the workspace (arg 10), an agent-scope arrival counter, and the
// last arriver's reduction in split order 0..3.
// CHECK-LABEL: gpu.func @mla_fp8_n128_k512_g128_bf16_gfx942_r1_inf(
// CHECK-SAME: %{{[^:]+}}: i64 {llvm.inreg}, %{{[^:]+}}: i64 {llvm.inreg}, %[[M:[^:]+]]: i64 {llvm.inreg},
// CHECK-SAME: %[[Y:[^:]+]]: memref<2147483647xbf16, #gpu.address_space<global>> {llvm.inreg},
// CHECK-SAME: %{{[^:]+}}: memref<2147483647xbf16, #gpu.address_space<global>>, %{{[^:]+}}: i64, %{{[^:]+}}: i64,
// CHECK-SAME: %[[WSP:[^:]+]]: memref<2147483647xf32, #gpu.address_space<global>>)
// CHECK-SAME: workgroup(%{{.+}} : memref<2048xi8, #gpu.address_space<workgroup>>, %[[LDSS:.+]] : memref<16xf32, #gpu.address_space<workgroup>>)
// Workgroup x = N tile * 4 + split.
// CHECK: %[[BX:.+]] = gpu.block_id  x
// CHECK: %[[NT:.+]] = arith.divui %[[BX]], %c4 : index
// CHECK: %[[S:.+]] = arith.remui %[[BX]], %c4 : index
// Split s runs group s only: no loop over groups.
// CHECK-NOT: scf.for
// CHECK: amdgpu.mfma 16x16x32
// CHECK-COUNT-3: amdgpu.mfma 16x16x32
// CHECK: %[[ACC:.+]] = arith.addf %{{.+}}, %{{.+}} : vector<4xf32>
// Block of (batch, M tile): 8 N tiles x 4 splits x 256 f32 + 8 counters,
// padded to 8256 elements (33024 bytes).
// CHECK: %[[BLK:.+]] = arith.muli %{{.+}}, %c8256 : index
// CHECK: vector.store %[[ACC]], %[[WSP]][%{{.+}}] {alignment = 16 : i64} : memref<2147483647xf32, #gpu.address_space<global>>, vector<4xf32>
// CHECK-NEXT: llvm.fence syncscope("agent") release
// CHECK-NEXT: gpu.barrier
// The counters follow the 8192 partial elements.
// CHECK: %[[CB:.+]] = arith.addi %[[BLK]], %c8192 : index
// CHECK: %[[CI:.+]] = arith.addi %[[CB]], %[[NT]] : index
// CHECK: scf.if
// CHECK: memref.extract_aligned_pointer_as_index %[[WSP]]
// CHECK: %[[PTR:.+]] = llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK: %[[OLD:.+]] = llvm.atomicrmw add %[[PTR]], %c1_i32 syncscope("agent") monotonic : !llvm.ptr<1>, i32
// CHECK: %[[LAST:.+]] = arith.cmpi eq, %[[OLD]], %c3_i32 : i32
// CHECK: scf.if %[[LAST]] {
// CHECK-NEXT: llvm.atomicrmw xchg %[[PTR]], %c0_i32 syncscope("agent") monotonic
// CHECK: memref.store %{{.+}}, %[[LDSS]][%c0]
// CHECK: gpu.barrier
// CHECK: %[[FLAG:.+]] = memref.load %[[LDSS]][%c0]
// CHECK: %[[ISLAST:.+]] = arith.cmpf oeq, %[[FLAG]]
// CHECK: scf.if %[[ISLAST]] {
// CHECK-NEXT: llvm.fence syncscope("agent") acquire
// The partials of splits 0, 1, 2, 3 (this workgroup's own read back too)
// are all loaded before the first sum, then added in that order.
// CHECK-NOT: scf.if
// CHECK: %[[P0:.+]] = vector.load %[[WSP]]
// CHECK-NOT: arith.addf
// CHECK: %[[P1:.+]] = vector.load %[[WSP]]
// CHECK-NOT: arith.addf
// CHECK: %[[P2:.+]] = vector.load %[[WSP]]
// CHECK-NOT: arith.addf
// CHECK: %[[P3:.+]] = vector.load %[[WSP]]
// CHECK-NEXT: %[[T1:.+]] = arith.addf %[[P0]], %[[P1]] : vector<4xf32>
// CHECK-NEXT: %[[T2:.+]] = arith.addf %[[T1]], %[[P2]] : vector<4xf32>
// CHECK-NEXT: %[[T3:.+]] = arith.addf %[[T2]], %[[P3]] : vector<4xf32>
// Then the usual epilogue: descale, round once, store with the M mask.
// CHECK: arith.mulf %[[T3]], %{{.+}} : vector<4xf32>
// CHECK: arith.truncf
// CHECK: amdgpu.raw_buffer_store %{{.+}} -> %[[Y]]
// CHECK: gpu.return
func.func @vup(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0,
      block_m = 16, block_n = 16, waves = 1, mfma = m16n16k32, split_k = 4,
      stages = 1, occupancy = 2>]} : tensor<16x?x512xbf16>,
      tensor<16x128x512xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}

// -----

// K = 456 (three full groups and a 72-column tail) split 2 ways: split s runs
// the full groups [2 s, min(2 s + 2, 3)) in a loop with dynamic bounds (the
// next group prefetched), and only the last split runs the partial group.
// CHECK-LABEL: gpu.func @mla_fp8_n96_k456_g128_bf16_gfx942_r1_inf(
// CHECK: %[[BX:.+]] = gpu.block_id  x
// CHECK: %[[S:.+]] = arith.remui %[[BX]], %c2 : index
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c128 iter_args(
// CHECK: amdgpu.mfma
// CHECK: scf.yield
// CHECK: %[[LASTS:.+]] = arith.cmpi eq, %[[S]], %c1 : index
// CHECK: scf.if %[[LASTS]] -> (vector<4xf32>)
// CHECK: vector.maskedload
// CHECK: amdgpu.mfma
// CHECK: llvm.fence syncscope("agent") release
// CHECK: llvm.atomicrmw add %{{.+}}, %c1_i32 syncscope("agent") monotonic
// CHECK: arith.cmpi eq, %{{.+}}, %c1_i32 : i32
// CHECK: llvm.fence syncscope("agent") acquire
func.func @uneven(%x: tensor<4x?x456xbf16>, %w: tensor<4x96x456xf8E4M3FNUZ>,
                  %ws: tensor<1xf32>) -> tensor<4x?x96xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0,
      block_m = 16, block_n = 32, waves = 2, mfma = m16n16k32, split_k = 2,
      stages = 2, occupancy = 2>]} : tensor<4x?x456xbf16>,
      tensor<4x96x456xf8E4M3FNUZ>, tensor<1xf32> -> tensor<4x?x96xbf16>
  return %y : tensor<4x?x96xbf16>
}
