// RUN: mla-fp8-opt %s -split-input-file --convert-mlafp8-to-gpu=chip=gfx942 --canonicalize --cse | FileCheck %s

// K-up, one K-group, one 16x16 tile per single-wave workgroup.
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @kup
// CHECK: mlafp8.prequant_bmm
// CHECK-SAME: kernels = [@kup_kernels::@mla_fp8_n512_k128_g128_bf16_gfx942_r1_inf]
// CHECK: gpu.module @kup_kernels
// CHECK: gpu.func @mla_fp8_n512_k128_g128_bf16_gfx942_r1_inf(
// The kernel ABI's order; the first seven arguments are preloaded (inreg).
// CHECK-SAME: %[[X:[^:]+]]: memref<2147483647xbf16, #gpu.address_space<global>> {llvm.inreg},
// CHECK-SAME: %{{[^:]+}}: i64 {llvm.inreg}, %{{[^:]+}}: i64 {llvm.inreg}, %[[M:[^:]+]]: i64 {llvm.inreg},
// CHECK-SAME: %[[W:[^:]+]]: memref<2147483647xi8, #gpu.address_space<global>> {llvm.inreg},
// CHECK-SAME: %[[WS:[^:]+]]: memref<2147483647xf32, #gpu.address_space<global>> {llvm.inreg},
// CHECK-SAME: %[[Y:[^:]+]]: memref<2147483647xbf16, #gpu.address_space<global>> {llvm.inreg},
// CHECK-SAME: %[[BIAS:[^:]+]]: memref<2147483647xbf16, #gpu.address_space<global>>,
// CHECK-SAME: %{{[^:]+}}: i64, %{{[^:]+}}: i64,
// CHECK-SAME: %{{[^:]+}}: memref<2147483647xf32, #gpu.address_space<global>>)
// CHECK-SAME: workgroup(%[[LDSA:.+]] : memref<2048xi8, #gpu.address_space<workgroup>>, %[[LDSS:.+]] : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// The weight descale is loaded first, before any store (a scalar load).
// CHECK: %[[DS:.+]] = memref.load %[[WS]][%c0]
// All global loads of the group are issued first, X's before W's (X's round
// trip is the critical one), a fence between them and after them.
// CHECK: %[[XV:.+]] = vector.load %[[X]][%{{.+}}] {alignment = 16 : i64} : {{.*}} vector<8xbf16>
// CHECK-COUNT-3: vector.load %[[X]][%{{.+}}] {alignment = 16 : i64} : {{.*}} vector<8xbf16>
// CHECK-NOT: vector.load %[[W]]
// CHECK: amdgpu.sched_barrier allow = <none>
// W: 16-byte loads straight into MFMA A operands (two units per lane).
// CHECK: %[[W0:.+]] = vector.load %[[W]][%{{.+}}] {alignment = 16 : i64} : {{.*}} vector<16xi8>
// CHECK: %[[W1:.+]] = vector.load %[[W]][%{{.+}}] {alignment = 16 : i64} : {{.*}} vector<16xi8>
// CHECK: amdgpu.sched_barrier allow = <none>
// The quantization runs with MODE.FP16_OVFL set (hwreg(MODE, 23, 1) = 1473):
// the fp8 conversion then saturates, which is the reference's clamp.
// CHECK: llvm.call_intrinsic "llvm.amdgcn.s.setreg"(%c1473_i32, %c1_i32)
// Quantization: 8 bf16 per lane, |x| max, then across the 16 lanes of a row.
// CHECK: %[[XF:.+]] = arith.extf %[[XV]] : vector<8xbf16> to vector<8xf32>
// The amax is an unsigned max of the |x| bit patterns (NaN and Inf sort
// above every finite value); a non-finite row gets a NaN scale.
// CHECK: arith.andi
// CHECK: vector.reduction <maxui>
// CHECK: amdgpu.dpp {{.+}} quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32])
// CHECK: amdgpu.dpp {{.+}} quad_perm([2 : i32, 3 : i32, 0 : i32, 1 : i32])
// CHECK: amdgpu.dpp {{.+}} row_half_mirror
// CHECK: amdgpu.dpp {{.+}} row_mirror
// CHECK: %[[BITS:.+]] = arith.maxui %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: %[[ABS:.+]] = arith.bitcast %[[BITS]] : i32 to f32
// CHECK: %[[AMAX:.+]] = arith.maxnumf %[[ABS]], %cst{{.*}} : f32
// CHECK: %[[S0:.+]] = arith.mulf %[[AMAX]], %cst{{.*}} : f32
// CHECK: %[[NF:.+]] = arith.cmpi ugt, %[[BITS]], %c2139095039_i32 : i32
// CHECK: %[[S:.+]] = arith.select %[[NF]], %cst{{.*}}, %[[S0]] : f32
// CHECK: %[[INV:.+]] = arith.divf %cst{{.*}}, %[[S]] : f32
// CHECK: %[[INVV:.+]] = vector.broadcast %[[INV]] : f32 to vector<8xf32>
// CHECK: %[[Q:.+]] = arith.mulf %[[XF]], %[[INVV]] : vector<8xf32>
// No clamp before the conversion.
// CHECK-NOT: {{arith.maxnumf|arith.minnumf}}
// CHECK: vector.extract %[[Q]][0]
// CHECK-NOT: {{arith.maxnumf|arith.minnumf}}
// CHECK: amdgpu.packed_trunc_2xfp8 %{{.+}}, %{{.+}} into undef[word 0] : f32 to vector<4xf8E4M3FNUZ>
// CHECK: amdgpu.packed_trunc_2xfp8 %{{.+}}, %{{.+}} into %{{.+}}[word 1]
// CHECK: amdgpu.packed_trunc_2xfp8 %{{.+}}, %{{.+}} into undef[word 0]
// CHECK: amdgpu.packed_trunc_2xfp8 %{{.+}}, %{{.+}} into %{{.+}}[word 1]
// Every lane of the row stores the row's scale (the same value to the same
// dword), with no branch around the store.
// CHECK: vector.store %{{.+}}, %[[LDSA]][%{{.+}}] {alignment = 8 : i64} : memref<2048xi8, #gpu.address_space<workgroup>>, vector<8xi8>
// CHECK-NEXT: memref.store %[[S]], %[[LDSS]]
// Cleared before the barrier: the epilogue's f16 rounding overflows to Inf.
// CHECK: llvm.call_intrinsic "llvm.amdgcn.s.setreg"(%c1473_i32, %c0_i32)
// CHECK-NEXT: gpu.barrier
// CHECK: %[[WF0:.+]] = vector.bitcast %[[W0]] : vector<16xi8> to vector<16xf8E4M3FNUZ>
// CHECK: vector.bitcast %[[W1]] : vector<16xi8> to vector<16xf8E4M3FNUZ>
// MFMAs, computed transposed (16x16: Y^T = W X^T): W is the A operand, the
// quantized X from LDS the B operand (one 16-byte read feeds two MFMAs). A
// lane's accumulators are then 4 columns of one row: one row scale per lane.
// CHECK: %[[A0:.+]] = vector.load %[[LDSA]][%{{.+}}] {alignment = 16 : i64} : memref<2048xi8, #gpu.address_space<workgroup>>, vector<16xi8>
// CHECK: %[[SC:.+]] = memref.load %[[LDSS]][%{{.+}}] : memref<16xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[SCV:.+]] = vector.broadcast %[[SC]] : f32 to vector<4xf32>
// CHECK: %[[WA:.+]] = vector.shuffle %[[WF0]], %[[WF0]] [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK-NEXT: %[[P0:.+]] = amdgpu.mfma 16x16x32 %[[WA]] * %{{.+}} + %[[ZERO:.+]] blgp =  none : vector<8xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>, vector<4xf32>
// CHECK: %[[P1:.+]] = amdgpu.mfma 16x16x32 %{{.+}} * %{{.+}} + %[[P0]]
// CHECK: %[[P2:.+]] = amdgpu.mfma 16x16x32 %{{.+}} * %{{.+}} + %[[P1]]
// CHECK: %[[P3:.+]] = amdgpu.mfma 16x16x32 %{{.+}} * %{{.+}} + %[[P2]]
// The per-group partial times the row's scale, added to the accumulator.
// CHECK: %[[PS:.+]] = arith.mulf %[[P3]], %[[SCV]] : vector<4xf32>
// CHECK: %[[ACC:.+]] = arith.addf %[[PS]], %[[ZERO]] : vector<4xf32>
// Epilogue: per-tensor descale on each run of 4 accumulators (packed f32),
// rounded to bf16 and stored as they are (4 adjacent columns of one row, no
// transpose): one buffer store per lane, rows past M sent past Y's extent
// (the range check drops them), no branch.
// CHECK: %[[DSV:.+]] = vector.broadcast %[[DS]] : f32 to vector<4xf32>
// CHECK: %[[V:.+]] = arith.mulf %[[ACC]], %[[DSV]] : vector<4xf32>
// CHECK: %[[ROW:.+]] = arith.truncf %[[V]] : vector<4xf32> to vector<4xbf16>
// CHECK-NOT: amdgpu.dpp
// CHECK: %[[OFF:.+]] = arith.select %{{.+}}, %{{.+}}, %c2147483647_i32 : i32
// CHECK-NEXT: amdgpu.raw_buffer_store %[[ROW]] -> %[[Y]][%[[OFF]]] : vector<4xbf16>
// CHECK-NOT: memref.store
// CHECK-NOT: scf.if
// CHECK: gpu.return
func.func @kup(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0,
      block_m = 16, block_n = 16, waves = 1, mfma = m16n16k32, split_k = 1,
      stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

// V-up: four K-groups as straight-line code, each quantized into its own LDS
// copy (4 x 16 x 128 bytes, 4 x 16 scales), then one barrier, then each
// group's MFMAs with a fresh partial, in group order; two ranges of rows
// give two kernels; per-batch descale indexed by the batch (block z); bias; f16; Y in
// (M, B, N) order (only the runtime strides differ: same kernel code).
// CHECK-LABEL: func.func @vup
// CHECK: kernels = [@vup_kernels::@mla_fp8_n128_k512_g128_xf16_f16_pb_bias_gfx942_r1_16, @vup_kernels::@mla_fp8_n128_k512_g128_xf16_f16_pb_bias_gfx942_r17_inf]
// CHECK: gpu.func @mla_fp8_n128_k512_g128_xf16_f16_pb_bias_gfx942_r1_16(
// CHECK-SAME: %[[WS:[^:]+]]: memref<2147483647xf32, #gpu.address_space<global>> {llvm.inreg}, %[[Y:[^:]+]]: memref<2147483647xf16, #gpu.address_space<global>> {llvm.inreg}, %[[BIAS:[^:]+]]: memref<2147483647xf16, #gpu.address_space<global>>,
// CHECK-SAME: workgroup(%[[LDSA:.+]] : memref<8192xi8, #gpu.address_space<workgroup>>, %[[LDSS:.+]] : memref<64xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: %[[BZ:.+]] = gpu.block_id  z
// CHECK: %[[DS:.+]] = memref.load %[[WS]][%[[BZ]]]
// CHECK-NOT: {{scf.for|gpu.barrier|amdgpu.mfma}}
// CHECK-COUNT-4: vector.store %{{.+}}, %[[LDSA]]
// CHECK-NOT: {{scf.for|gpu.barrier|amdgpu.mfma}}
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: %[[P:.+]] = amdgpu.mfma 16x16x32 %{{.+}} * %{{.+}} + %[[FRESH:cst[_0-9]*]]
// CHECK: amdgpu.mfma
// CHECK: amdgpu.mfma
// CHECK: %[[P3:.+]] = amdgpu.mfma
// CHECK: arith.mulf %[[P3]], %{{.+}} : vector<4xf32>
// CHECK-COUNT-3: amdgpu.mfma 16x16x32 %{{.+}} * %{{.+}} + %[[FRESH]]
// CHECK-NOT: {{gpu.barrier|scf.for}}
// The bias of a lane's 4 columns (its accumulators of the transposed tile).
// CHECK: %[[BV:.+]] = memref.load %[[BIAS]][%{{.+}}]
// CHECK: arith.extf %[[BV]] : f16 to f32
// CHECK-COUNT-3: memref.load %[[BIAS]]
// CHECK: %[[BFV:.+]] = vector.from_elements %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : vector<4xf32>
// CHECK: %[[VB:.+]] = arith.addf %{{.+}}, %[[BFV]] : vector<4xf32>
// CHECK: arith.truncf %[[VB]] : vector<4xf32> to vector<4xf16>
// CHECK: amdgpu.raw_buffer_store %{{.+}} -> %[[Y]][%{{.+}}] : vector<4xf16>
// CHECK: gpu.func @mla_fp8_n128_k512_g128_xf16_f16_pb_bias_gfx942_r17_inf(
func.func @vup(%x: tensor<?x16x512xf16>, %w: tensor<16x128x512xf8E4M3FNUZ>,
               %ws: tensor<16xf32>, %bias: tensor<16x128xf16>) -> tensor<?x16x128xf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws bias %bias {
      w_scale_mode = #mlafp8<weight_scale per_batch>,
      x_layout = #mlafp8<layout mb>, y_layout = #mlafp8<layout mb>,
      tiles = [#mlafp8.tile<min_rows = 1, max_rows = 16, block_m = 16, block_n = 32,
                            waves = 2, mfma = m16n16k32, split_k = 1, stages = 1,
                            occupancy = 2>,
               #mlafp8.tile<min_rows = 17, max_rows = 0, block_m = 64, block_n = 64,
                            waves = 4, mfma = m32n32k16, split_k = 1, stages = 1,
                            occupancy = 2>]}
      : tensor<?x16x512xf16>, tensor<16x128x512xf8E4M3FNUZ>, tensor<16xf32>,
        tensor<16x128xf16> -> tensor<?x16x128xf16>
  return %y : tensor<?x16x128xf16>
}

// -----

// A partial last K-group (K = 200 = 128 + 72): the loads read zeros past K
// for X (amax and sum over existing columns only) and for W. N = 40 is not a
// multiple of block_n: W rows are clamped and stores masked by column too.
// CHECK-LABEL: gpu.func @mla_fp8_n40_k200_g128_bf16_gfx942_r1_inf
// CHECK-NOT: vector.maskedload
// CHECK: vector.load %{{.+}} {alignment = 8 : i64} : memref<2147483647xi8, {{.*}}>, vector<16xi8>
// CHECK-NOT: vector.maskedload
// CHECK: gpu.barrier
// CHECK: amdgpu.mfma 32x32x16
// X's chunks of 8 columns lie wholly before or wholly past the 72-column
// tail: each is one unconditional load (a chunk past the tail reads the
// group's first chunk) and a select of zeros, no masked load.
// CHECK: %[[XIN:.+]] = arith.cmpi ult, %{{.+}}, %c72 : index
// CHECK: %[[XCOL:.+]] = arith.select %[[XIN]], %{{.+}}, %c0 : index
// CHECK: %[[XOFF:.+]] = arith.addi %{{.+}}, %[[XCOL]] : index
// CHECK: %[[XV:.+]] = vector.load %{{.+}}[%[[XOFF]]] {{.*}} : memref<2147483647xbf16, {{.*}}>, vector<8xbf16>
// CHECK: arith.select %[[XIN]], %[[XV]], %{{.+}} : vector<8xbf16>
// W's 16-byte units straddle it (72 = 4.5 units): masked loads.
// CHECK-NOT: vector.maskedload {{.*}} vector<8xbf16>
// CHECK: %[[WM:.+]] = arith.cmpi sgt, %{{.+}}, %{{.+}} : vector<16xi32>
// CHECK: vector.maskedload %{{.+}}[%{{.+}}], %[[WM]], %{{.+}} : memref<2147483647xi8, {{.*}}>, vector<16xi1>, vector<16xi8> into vector<16xi8>
// CHECK: amdgpu.mfma 32x32x16
// CHECK: %[[COL:.+]] = arith.cmpi ult, %{{.+}}, %c40 : index
// CHECK: %[[ROWOK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : i32
// CHECK: %[[BOTH:.+]] = arith.andi %[[ROWOK]], %[[COL]] : i1
// CHECK: %[[OFF:.+]] = arith.select %[[BOTH]], %{{.+}}, %c2147483647_i32 : i32
// CHECK-NEXT: amdgpu.raw_buffer_store %{{.+}} -> %{{.+}}[%[[OFF]]] : vector<4xbf16>
func.func @tail(%x: tensor<2x?x200xbf16>, %w: tensor<2x40x200xf8E4M3FNUZ>,
                %ws: tensor<1xf32>) -> tensor<2x?x40xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0,
      block_m = 32, block_n = 32, waves = 1, mfma = m32n32k16, split_k = 1,
      stages = 1, occupancy = 2>]} : tensor<2x?x200xbf16>,
      tensor<2x40x200xf8E4M3FNUZ>, tensor<1xf32> -> tensor<2x?x40xbf16>
  return %y : tensor<2x?x40xbf16>
}

// -----

// More than 8 groups (K = 2048) are a loop. With stages = 2 the loads of the
// first group are issued before the loop, and each iteration loads group
// g + 1 (clamped to the last group) before it computes group g from the loads
// carried in iter_args.
// CHECK-LABEL: gpu.func @mla_fp8_n128_k2048_g128_bf16_gfx942_r1_inf
// CHECK: %[[PX:.+]] = vector.load %{{.+}} : memref<2147483647xbf16, {{.*}}>, vector<8xbf16>
// CHECK: %[[PW:.+]] = vector.load %{{.+}} : memref<2147483647xi8, {{.*}}>, vector<16xi8>
// CHECK: scf.for %[[K0:.+]] = %c0 to %c2048 step %c128 iter_args(%{{.+}} = %{{.+}}, %[[CX:.+]] = %[[PX]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %[[CW:.+]] = %[[PW]], {{.*}}) -> (vector<4xf32>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<16xi8>
// CHECK: %[[NEXT:.+]] = arith.addi %[[K0]], %c128 : index
// CHECK: arith.minui %[[NEXT]], %c1920 : index
// CHECK: vector.load
// CHECK: arith.extf %[[CX]] : vector<8xbf16> to vector<8xf32>
// CHECK: gpu.barrier
// CHECK: vector.bitcast %[[CW]] : vector<16xi8> to vector<16xf8E4M3FNUZ>
// CHECK: amdgpu.mfma 16x16x32
// CHECK: scf.yield
func.func @prefetch(%x: tensor<16x?x2048xbf16>, %w: tensor<16x128x2048xf8E4M3FNUZ>,
                    %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0,
      block_m = 16, block_n = 16, waves = 1, mfma = m16n16k32, split_k = 1,
      stages = 2, occupancy = 2>]} : tensor<16x?x2048xbf16>,
      tensor<16x128x2048xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}
