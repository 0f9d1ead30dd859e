//===- Quantize.cpp - Row-wise fp8 quantization of X into LDS -------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::mlafp8;

/// Lanes of a DPP row: the span of the row_* and quad_perm patterns.
static constexpr int64_t kDppRowLanes = 16;

/// The unsigned max of `value` over each aligned run of `lanes` lanes, in every
/// lane of the run. Within a DPP row (16 lanes) the steps are DPP moves folded
/// into v_max_u32 (no LDS round trip, no lgkmcnt wait): swap neighbours, swap
/// pairs, then mirror half-rows and rows, which pair each lane with a lane of
/// the other quad (half-row) once every quad (half-row) holds its own max.
/// Full masks with bound_ctrl (a lane without a source reads 0, the identity
/// of the unsigned max) let LLVM fold each move into the max. Runs wider than
/// a row (group sizes above 128) finish with xor shuffles.
static Value reduceRowMax(ImplicitLocOpBuilder &b, Value value, int64_t lanes,
                          int64_t waveSize) {
  auto dppMax = [&](amdgpu::DPPPerm kind, Attribute argument) {
    Value other = amdgpu::DPPOp::create(b, value.getType(), value, value, kind,
                                        argument, /*row_mask=*/0xf,
                                        /*bank_mask=*/0xf, /*bound_ctrl=*/true);
    value = arith::MaxUIOp::create(b, value, other);
  };
  auto quadPerm = [&](ArrayRef<int32_t> order) {
    SmallVector<Attribute> attrs;
    for (int32_t l : order)
      attrs.push_back(b.getI32IntegerAttr(l));
    return b.getArrayAttr(attrs);
  };
  if (lanes > 1)
    dppMax(amdgpu::DPPPerm::quad_perm, quadPerm({1, 0, 3, 2}));
  if (lanes > 2)
    dppMax(amdgpu::DPPPerm::quad_perm, quadPerm({2, 3, 0, 1}));
  if (lanes > 4)
    dppMax(amdgpu::DPPPerm::row_half_mirror, Attribute());
  if (lanes > 8)
    dppMax(amdgpu::DPPPerm::row_mirror, Attribute());
  for (int64_t offset = kDppRowLanes; offset < lanes; offset *= 2) {
    Value other = gpu::ShuffleOp::create(b, value, static_cast<int32_t>(offset),
                                         static_cast<int32_t>(waveSize),
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    value = arith::MaxUIOp::create(b, value, other);
  }
  return value;
}

/// Quantizes the block_m rows x one group of X into LDS: each row's chunks
/// are spread over `lanesPerRow` adjacent lanes, which reduce the row's amax
/// with DPP (reduceRowMax); every lane then scales and converts (saturating)
/// its own chunks and stores them where the MFMA operand read of X finds them.
void KernelEmitter::quantizeRows(ValueRange xChunks) {
  Type f32Type = b.getF32Type();
  Type i8Type = b.getI8Type();
  auto fp8x4 = VectorType::get({4}, p.wType);
  auto f32Chunk = VectorType::get({kChunkColumns}, f32Type);
  Value laneInRow = rem(tid, p.lanesPerRow);
  Value rowInPass = div(tid, p.lanesPerRow);
  float invFmax = 1.0f / p.fmax;
  int64_t blockM = p.tile.getBlockM();

  for (int64_t pass = 0; pass < p.passes; ++pass) {
    auto emitPass = [&] {
      Value row = add(rowInPass, pass * p.rowsPerPass);
      SmallVector<Value> chunks;
      // The amax is reduced on the bit patterns of |x|: for non-negative
      // floats integer order is value order, and NaN and Inf patterns sort
      // above every finite one, so a row holding either is seen (a float
      // maxnum would skip a NaN).
      auto i32Type = b.getI32Type();
      Value amaxBits = arith::ConstantOp::create(b, b.getI32IntegerAttr(0));
      for (int64_t c = 0; c < p.chunksPerLane; ++c) {
        Value v = arith::ExtFOp::create(b, f32Chunk,
                                        xChunks[pass * p.chunksPerLane + c]);
        chunks.push_back(v);
        // |v| by clearing the sign bits.
        auto i32Chunk = VectorType::get({kChunkColumns}, i32Type);
        Value bits = vector::BitCastOp::create(b, i32Chunk, v);
        Value magnitudeMask = arith::ConstantOp::create(
            b, i32Chunk,
            DenseElementsAttr::get(i32Chunk, b.getI32IntegerAttr(0x7fffffff)));
        Value absBits = arith::AndIOp::create(b, bits, magnitudeMask);
        Value chunkMax = vector::ReductionOp::create(
            b, vector::CombiningKind::MAXUI, absBits);
        amaxBits = arith::MaxUIOp::create(b, amaxBits, chunkMax);
      }
      amaxBits = reduceRowMax(b, amaxBits, p.lanesPerRow, p.waveSize);
      Value amax = arith::BitcastOp::create(b, f32Type, amaxBits);
      amax = arith::MaxNumFOp::create(b, amax, f32(1e-10f));
      Value scale = arith::MulFOp::create(b, amax, f32(invFmax));
      // A NaN or Inf in the row makes the row's scale NaN, so every output of
      // the row is NaN, as in the reference; its quantized values then do
      // not matter.
      Value nonFinite = arith::CmpIOp::create(
          b, arith::CmpIPredicate::ugt, amaxBits,
          arith::ConstantOp::create(b, b.getI32IntegerAttr(0x7f7fffff)));
      scale = arith::SelectOp::create(
          b, nonFinite, f32(std::numeric_limits<float>::quiet_NaN()), scale);
      Value inverse = arith::DivFOp::create(b, f32(1.0f), scale);

      auto storeRow = [&]() {
        Value mt = div(row, p.mfma->m);
        Value rowInTile = rem(row, p.mfma->m);
        for (int64_t c = 0; c < p.chunksPerLane; ++c) {
          Value q = arith::MulFOp::create(
              b, chunks[c], vector::BroadcastOp::create(b, f32Chunk, inverse));
          // No clamp to +-fmax: the conversion saturates (MODE.FP16_OVFL is
          // set around the quantization, setSaturatingFp8), which is the
          // reference's clamp; |q| exceeds fmax by a few ulps at most.
          // Two words of 4 fp8 each, packed 2 values at a time.
          SmallVector<Value> words;
          for (int64_t word = 0; word < 2; ++word) {
            Value packed;
            for (int64_t half = 0; half < 2; ++half) {
              Value lo = vector::ExtractOp::create(b, q, 4 * word + 2 * half);
              Value hi =
                  vector::ExtractOp::create(b, q, 4 * word + 2 * half + 1);
              packed = amdgpu::PackedTrunc2xFp8Op::create(
                  b, fp8x4, lo, hi, b.getI32IntegerAttr(half), packed);
            }
            words.push_back(packed);
          }
          Value bytes = vector::BitCastOp::create(
              b, VectorType::get({kChunkColumns}, i8Type),
              concat(words[0], words[1]));
          // Chunk -> (unit, lane group, byte of the unit): the inverse of
          // operandK, the column permutation that W loads use.
          Value chunk = add(laneInRow, c * p.lanesPerRow);
          Value column = mul(chunk, kChunkColumns);
          int64_t unitSpan = p.unitBytes * p.laneGroups;
          Value unit = div(column, unitSpan);
          Value within = rem(column, unitSpan);
          Value group = div(within, p.unitBytes);
          Value byte = rem(within, p.unitBytes);
          Value operandLane = add(rowInTile, mul(group, p.mfma->m));
          Value offset = add(ldsAOffset(mt, unit, operandLane), byte);
          auto store =
              vector::StoreOp::create(b, bytes, ldsA, ValueRange{offset});
          store.setAlignment(uint64_t(kChunkColumns));
        }
        // Every lane of the row stores the row's scale, the same value to
        // the same dword: no branch, which would split the kernel's block
        // and let LLVM sink the scalar loads of late kernel arguments to
        // their uses, behind this LDS wait (in single-pass tiles; tiles with
        // a pass past M branch there anyway).
        memref::StoreOp::create(b, scale, ldsScales, ValueRange{scaleRow(row)});
      };
      if ((pass + 1) * p.rowsPerPass > blockM) {
        emitIf(ult(row, cst(blockM)), storeRow);
      } else {
        storeRow();
      }
    };
    if (pass == 0)
      emitPass();
    else
      emitIf(passActive(pass), emitPass);
  }
}

void KernelEmitter::setSaturatingFp8(bool on) {
  // hwreg(HW_REG_MODE, 23, 1): register id 1, bit offset 23, size 1 (the
  // field is size - 1 at bit 11). In machine code the FP instructions read
  // MODE and the s_setreg writes it, which orders them; earlier, nothing ties
  // the conversions to the call, so test/Pipelines/to-hsaco-*.mlir check in
  // the ISA that every conversion lies between the two. (|x * inverse|
  // exceeds fmax by a few f32 ulps at most, far below fp8's overflow
  // threshold; the mode makes the conversion saturate whatever the hardware
  // counts as out of range, as Triton's kernels do.)
  constexpr int32_t kModeRegister = 1, kFp16OvflBit = 23, kSize = 1;
  constexpr int32_t hwreg =
      kModeRegister | (kFp16OvflBit << 6) | ((kSize - 1) << 11);
  LLVM::CallIntrinsicOp::create(
      b, b.getStringAttr("llvm.amdgcn.s.setreg"),
      ValueRange{
          arith::ConstantOp::create(b, b.getI32IntegerAttr(hwreg)),
          arith::ConstantOp::create(b, b.getI32IntegerAttr(on ? 1 : 0))});
}
