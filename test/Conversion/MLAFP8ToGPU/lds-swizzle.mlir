// The quantized A tile is [mt][unit][slot][16 bytes] with slot = MFMA lane
// XOR key, key = (K slot * rows per store phase) mod 8, K slot = unit *
// lane groups + lane / m, emitted as a lane part XOR a unit part. The 16
// lanes of a ds_write_b64 phase then hit 8 different 16-byte bank groups
// instead of one (8-way conflict); each reader's key is uniform over its lane
// group, so the ds_read_b128s stay conflict-free.
// RUN: mla-fp8-opt %s -split-input-file --convert-mlafp8-to-gpu=chip=gfx942 --canonicalize --cse | FileCheck %s

// G = 128, 16x16x32: two units of four lane groups; a store phase is one row.
// CHECK-LABEL: gpu.func @mla_fp8_n512_k128_g128_bf16_gfx942_r1_inf(
// CHECK-SAME: workgroup(%[[LDSA:[^ ]+]] : memref<2048xi8, #gpu.address_space<workgroup>>
// CHECK: %[[TID:.+]] = gpu.thread_id  x
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %c64 : index
// CHECK: %[[WAVE:.+]] = arith.divui %[[TID]], %c64 : index
// CHECK: %[[GROUP:.+]] = arith.divui %[[LANE]], %c16 : index
// Store: chunk column -> unit, lane group, byte; key = unit * 4 + group.
// CHECK: arith.divf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: %[[MT:.+]] = arith.divui %[[ROW:.+]], %c16 : index
// CHECK-NEXT: %[[RIT:.+]] = arith.remui %[[ROW]], %c16 : index
// CHECK: %[[UNIT:.+]] = arith.divui %[[COL:.+]], %c64 : index
// CHECK-NEXT: %[[WITHIN:.+]] = arith.remui %[[COL]], %c64 : index
// CHECK-NEXT: %[[G:.+]] = arith.divui %[[WITHIN]], %c16 : index
// CHECK-NEXT: %[[BYTE:.+]] = arith.remui %[[WITHIN]], %c16 : index
// CHECK-NEXT: %[[G16:.+]] = arith.muli %[[G]], %c16 : index
// CHECK-NEXT: %[[OLANE:.+]] = arith.addi %[[RIT]], %[[G16]] : index
// CHECK-NEXT: %[[LG:.+]] = arith.divui %[[OLANE]], %c16 : index
// CHECK-NEXT: %[[LKEY:.+]] = arith.remui %[[LG]], %c8 : index
// CHECK-NEXT: %[[U4:.+]] = arith.muli %[[UNIT]], %c4 : index
// CHECK-NEXT: %[[UKEY:.+]] = arith.remui %[[U4]], %c8 : index
// CHECK-NEXT: %[[SLOT:.+]] = arith.xori %[[OLANE]], %[[LKEY]] : index
// CHECK-NEXT: %[[SLOTB:.+]] = arith.muli %[[SLOT]], %c16 : index
// CHECK-NEXT: %[[UKEYB:.+]] = arith.muli %[[UKEY]], %c16 : index
// CHECK-NEXT: %[[SWZ:.+]] = arith.xori %[[SLOTB]], %[[UKEYB]] : index
// CHECK-NEXT: %[[MT2:.+]] = arith.muli %[[MT]], %c2 : index
// CHECK-NEXT: %[[UI:.+]] = arith.addi %[[MT2]], %[[UNIT]] : index
// CHECK-NEXT: %[[UBASE:.+]] = arith.muli %[[UI]], %c1024 : index
// CHECK-NEXT: %[[SB:.+]] = arith.addi %[[UBASE]], %[[SWZ]] : index
// CHECK-NEXT: %[[ST:.+]] = arith.addi %[[SB]], %[[BYTE]] : index
// CHECK-NEXT: vector.store %{{.+}}, %[[LDSA]][%[[ST]]] {alignment = 8 : i64}
// Load: the swizzled lane once (key lane / 16); unit 1's key adds 4, one XOR
// of its byte offset with 64.
// CHECK: gpu.barrier
// CHECK: %[[K0:.+]] = arith.remui %[[GROUP]], %c8 : index
// CHECK-NEXT: %[[S0:.+]] = arith.xori %[[LANE]], %[[K0]] : index
// CHECK-NEXT: %[[B0:.+]] = arith.muli %[[S0]], %c16 : index
// CHECK-NEXT: %[[T0:.+]] = arith.muli %[[WAVE]], %c2048 : index
// CHECK-NEXT: %[[A0:.+]] = arith.addi %[[T0]], %[[B0]] : index
// CHECK-NEXT: vector.load %[[LDSA]][%[[A0]]] {alignment = 16 : i64} : {{.*}}, vector<16xi8>
// CHECK: %[[B1:.+]] = arith.xori %[[B0]], %c64 : index
// CHECK: %[[A1:.+]] = arith.addi %{{.+}}, %[[B1]] : index
// CHECK-NEXT: vector.load %[[LDSA]][%[[A1]]] {alignment = 16 : i64} : {{.*}}, vector<16xi8>
func.func @g128(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
                %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1,
      max_rows = 0, block_m = 16, block_n = 16, waves = 1, mfma = m16n16k32,
      split_k = 1, stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

// G = 64: a store phase holds two rows of four K slots, so the key is doubled
// (the row's low bit and the K slot take different slot bits).
// CHECK-LABEL: gpu.func @mla_fp8_n64_k128_g64_bf16_gfx942_r1_inf(
// CHECK: %[[LANE:.+]] = arith.remui %thread_id_x, %c64 : index
// CHECK: %[[GROUP:.+]] = arith.divui %[[LANE]], %c16 : index
// CHECK: vector.bitcast %{{.+}} : vector<8xf8E4M3FNUZ> to vector<8xi8>
// CHECK: %[[K2:.+]] = arith.muli %{{.+}}, %c2 : index
// CHECK-NEXT: %[[KEY:.+]] = arith.remui %[[K2]], %c8 : index
// CHECK: arith.xori %{{.+}}, %[[KEY]] : index
// CHECK: vector.store
// CHECK: gpu.barrier
// CHECK: %[[R2:.+]] = arith.muli %[[GROUP]], %c2 : index
// CHECK-NEXT: %[[RKEY:.+]] = arith.remui %[[R2]], %c8 : index
// CHECK-NEXT: arith.xori %[[LANE]], %[[RKEY]] : index
func.func @g64(%x: tensor<4x?x128xbf16>, %w: tensor<4x64x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<4x?x64xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = 64 : i64,
      tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 16,
      waves = 1, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>]}
      : tensor<4x?x128xbf16>, tensor<4x64x128xf8E4M3FNUZ>, tensor<1xf32>
      -> tensor<4x?x64xbf16>
  return %y : tensor<4x?x64xbf16>
}
