//===- MLAFP8ToGPU.cpp - prequant_bmm to gpu.func kernels -----------------===//

#include "mla-fp8/Conversion/MLAFP8ToGPU/MLAFP8ToGPU.h"
#include "mla-fp8/Conversion/Passes.h"

#include "mla-fp8/ABI/KernelABI.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"
#include "mla-fp8/Target/Chip.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::mlafp8 {
#define GEN_PASS_DEF_CONVERTMLAFP8TOGPUPASS
#include "mla-fp8/Conversion/Passes.h.inc"
} // namespace mlir::mlafp8

using namespace mlir;
using namespace mlir::mlafp8;

std::string mlir::mlafp8::getKernelName(const KernelShape &shape,
                                        StringRef chip,
                                        const TileConfig &tile) {
  std::string name = "mla_fp8_n" + std::to_string(shape.n) + "_k" +
                     std::to_string(shape.k) + "_g" +
                     std::to_string(shape.groupSize) + "_" + shape.outType;
  if (shape.perBatchScale)
    name += "_pb";
  if (shape.hasBias)
    name += "_bias";
  name += "_" + chip.str() + "_m" + std::to_string(tile.minM) + "_" +
          (tile.maxM == 0 ? std::string("inf") : std::to_string(tile.maxM));
  return name;
}

ArrayRef<KernelArgument> mlir::mlafp8::getKernelArguments() {
  static const KernelArgument arguments[] = {
      {"x", 0, 8, "pointer",
       "activations, bf16/f16, (b, m, k) at "
       "b * x_stride_b + m * x_stride_m + k"},
      {"w", 8, 8, "pointer", "weights, fp8, (B, N, K) row-major"},
      {"ws", 16, 8, "pointer", "f32 weight descale: 1 value or B values"},
      {"bias", 24, 8, "pointer",
       "(B, N) in the output type, or null when the kernel has no bias"},
      {"y", 32, 8, "pointer",
       "output, bf16/f16, (b, m, n) at "
       "b * y_stride_b + m * y_stride_m + n"},
      {"m", 40, 8, "i64", "M, the number of tokens"},
      {"x_stride_b", 48, 8, "i64", "X stride along b, in elements"},
      {"x_stride_m", 56, 8, "i64", "X stride along m, in elements"},
      {"y_stride_b", 64, 8, "i64", "Y stride along b, in elements"},
      {"y_stride_m", 72, 8, "i64", "Y stride along m, in elements"},
      {"workspace", 80, 8, "pointer",
       "split-K partial sums and arrival counters, zeroed once by the caller "
       "(getWorkspaceBytesPerBlock); may be null when split_k = 1"},
  };
  return arguments;
}

std::array<int64_t, 3> mlir::mlafp8::getGridSize(const TileConfig &tile,
                                                 int64_t n, int64_t m,
                                                 int64_t batch) {
  return {static_cast<int64_t>(llvm::divideCeil(n, tile.blockN)) * tile.splitK,
          static_cast<int64_t>(llvm::divideCeil(m, tile.blockM)), batch};
}

int64_t mlir::mlafp8::getWorkspaceBytesPerBlock(const TileConfig &tile,
                                                int64_t n) {
  if (tile.splitK <= 1)
    return 0;
  int64_t nTiles = llvm::divideCeil(n, tile.blockN);
  int64_t partials = nTiles * tile.splitK * tile.blockM * tile.blockN * 4;
  // One u32 counter per N tile after the partials; blocks start 256 bytes
  // apart so that every partial is 16-byte aligned for vector stores.
  return llvm::alignTo(partials + 4 * nTiles, kWorkspaceAlignment);
}

std::array<int64_t, 3> mlir::mlafp8::getWorkgroupSize(const TileConfig &tile) {
  return {64 * tile.waves, 1, 1};
}

/// Elements of the flat memrefs that stand for the kernels' bare pointers. The
/// bare-pointer calling convention needs a static shape; nothing is sized by
/// it (loads and stores are plain global accesses).
static constexpr int64_t kUnboundedElements = 2147483647;

namespace {
/// The compile-time facts of one kernel, and the geometry derived from them.
struct KernelPlan {
  int64_t n, k, groupSize;
  Type xType, wType, yType;
  bool perBatchScale, hasBias;
  float fmax;
  TileConfig tile;

  // MFMA: dim x dim output, mfmaK deep; 64 / dim lane groups along K.
  int64_t dim, mfmaK, laneGroups;
  // Each lane's operand bytes for one MFMA is 8; a "unit" is what one lane
  // loads at once: 16 bytes (two MFMA steps) or 8 when the group is too short.
  int64_t unitBytes, unitsPerGroup, stepsPerUnit;
  // Waves split N first (each wave its own W columns), then M.
  int64_t wavesN, wavesM, waveRows, waveCols, mtPerWave, ntPerWave;
  // Quantization: lanesPerRow lanes share a row, chunksPerLane chunks of 8
  // columns each; rowsPerPass rows per pass over the workgroup.
  int64_t threads, chunksPerRow, lanesPerRow, chunksPerLane, rowsPerPass,
      passes;
  int64_t fullGroups, tailColumns, numGroups;
  // The most K-groups one workgroup runs: ceil(numGroups / split_k).
  int64_t maxGroupsPerWorkgroup;
  // Split-K: N tiles, and f32 elements of one (batch, M tile) workspace block.
  int64_t nTiles, workspaceBlockElements;
  int64_t xAlign, wAlign;
  int64_t ldsABytes;
};
} // namespace

/// Derives the geometry of a kernel, or a message saying why it cannot be
/// built.
static FailureOr<KernelPlan> planKernel(PrequantBmmOp op, const ChipInfo &chip,
                                        const TileConfig &tile,
                                        std::string &error) {
  KernelPlan p;
  p.n = op.getN();
  p.k = op.getK();
  p.groupSize = op.getGroupSize();
  p.xType = op.getX().getType().getElementType();
  p.wType = op.getW().getType().getElementType();
  p.yType = op.getY().getType().getElementType();
  p.perBatchScale = op.getWScaleMode() == WeightScale::PerBatch;
  p.hasBias = static_cast<bool>(op.getBias());
  p.fmax = static_cast<float>(*getFP8MaxFinite(p.wType));
  p.tile = tile;

  auto fail = [&](const Twine &message) -> FailureOr<KernelPlan> {
    error = message.str();
    return failure();
  };
  const MfmaLayout &mfma = *tile.mfma;
  // The f8f6f4 MFMAs take 32 operand bytes per lane in two runs; the loads
  // and the LDS layout below assume one run of 8.
  if (mfma.f8f6f4)
    return fail("the generator does not lower " + mfma.mnemonic +
                " (mfma = " + mfma.shapeName + ") yet");
  if (!chip.hasMfma(mfma))
    return fail(Twine(chip.name) + " has no " + mfma.mnemonic);
  p.dim = mfma.m;
  p.mfmaK = mfma.k;
  p.laneGroups = 64 / p.dim;
  if (p.groupSize < p.mfmaK)
    return fail("group_size " + Twine(p.groupSize) +
                " is smaller than the MFMA's K (" + Twine(p.mfmaK) + ")");
  p.unitBytes = p.groupSize % (16 * p.laneGroups) == 0 ? 16 : 8;
  p.stepsPerUnit = p.unitBytes / 8;
  p.unitsPerGroup = p.groupSize / (p.unitBytes * p.laneGroups);

  int64_t mTiles = tile.blockM / p.dim, nTiles = tile.blockN / p.dim;
  p.wavesN = std::min(tile.waves, nTiles);
  p.wavesM = tile.waves / p.wavesN;
  if (nTiles % p.wavesN != 0 || tile.waves % p.wavesN != 0 ||
      mTiles % p.wavesM != 0)
    return fail("the " + Twine(mTiles) + "x" + Twine(nTiles) +
                " MFMA tiles cannot be split among " + Twine(tile.waves) +
                " waves (N first, then M)");
  p.mtPerWave = mTiles / p.wavesM;
  p.ntPerWave = nTiles / p.wavesN;
  p.waveRows = p.mtPerWave * p.dim;
  p.waveCols = p.ntPerWave * p.dim;

  p.threads = 64 * tile.waves;
  p.chunksPerRow = p.groupSize / 8;
  p.lanesPerRow = std::min<int64_t>(p.chunksPerRow, 64);
  p.chunksPerLane = p.chunksPerRow / p.lanesPerRow;
  p.rowsPerPass = p.threads / p.lanesPerRow;
  p.passes = llvm::divideCeil(tile.blockM, p.rowsPerPass);
  p.fullGroups = p.k / p.groupSize;
  p.tailColumns = p.k % p.groupSize;
  p.numGroups = p.fullGroups + (p.tailColumns ? 1 : 0);
  if (tile.splitK > p.numGroups)
    return fail("split_k = " + Twine(tile.splitK) + " exceeds the " +
                Twine(p.numGroups) + " K-groups");
  p.maxGroupsPerWorkgroup = llvm::divideCeil(p.numGroups, tile.splitK);
  p.nTiles = llvm::divideCeil(p.n, tile.blockN);
  p.workspaceBlockElements = getWorkspaceBytesPerBlock(tile, p.n) / 4;
  // X rows start at multiples of 8 elements when K is (see the ABI); a W row
  // starts at n * K bytes.
  p.xAlign = p.k % 8 == 0 ? 16 : 2;
  p.wAlign = std::min<int64_t>(p.unitBytes, p.k & -p.k);
  p.ldsABytes = tile.blockM * p.groupSize;
  int64_t lds = kernel_abi::getLDSBytes(tile.blockM, p.groupSize);
  if (lds > chip.ldsBytesPerWorkgroup)
    return fail("the tile needs " + Twine(lds) +
                " bytes of LDS, more than the " +
                Twine(chip.ldsBytesPerWorkgroup) + " of " + chip.name);
  return p;
}

namespace {
/// Emits the body of one kernel. Index arithmetic is on `index`; values that
/// are compile-time constants fold away.
class KernelEmitter {
public:
  KernelEmitter(ImplicitLocOpBuilder &b, const KernelPlan &p) : b(b), p(p) {}

  void emit(gpu::GPUFuncOp func);

private:
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32(float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value add(Value x, int64_t y) { return y == 0 ? x : add(x, cst(y)); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value mul(Value x, int64_t y) { return y == 1 ? x : mul(x, cst(y)); }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, x, cst(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, x, cst(y)); }
  Value minIdx(Value x, Value y) { return arith::MinUIOp::create(b, x, y); }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }
  /// Whether pass `pass` of the quantization holds any row below M: a
  /// workgroup-uniform condition. Passes past M are skipped entirely; the LDS
  /// rows they would write only feed accumulator rows that are never stored
  /// (an MFMA output row depends on its own A row only).
  Value passActive(int64_t pass) {
    return ult(add(m0, pass * p.rowsPerPass), m);
  }
  /// Emits `body` under `scf.if cond`.
  void emitIf(Value cond, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    body();
  }

  /// Loads `count` elements at `memref[offset]`; with `valid` (the number of
  /// leading elements that exist, clamped to [0, count]), a masked load that
  /// reads zeros for the rest.
  Value loadVector(Value memref, Value offset, int64_t count, Type elementType,
                   int64_t align, Value valid = {});
  /// Concatenates vectors or picks `[start, start + size)` of one.
  Value slice(Value v, int64_t start, int64_t size);
  Value concat(Value x, Value y);

  /// One K-group starting at column `k0`: loads W, quantizes X into LDS, runs
  /// the MFMAs and returns the updated accumulators.
  SmallVector<Value> emitGroup(ValueRange loads, ValueRange accs);
  /// The global loads of one K-group starting at column `k0`: the W units
  /// ([N tile][unit]) followed by the raw X chunks ([pass][chunk]). Issued
  /// one group ahead when the tile has stages > 1.
  SmallVector<Value> loadGroup(Value k0, bool partial);
  void quantizeRows(ValueRange xChunks);
  /// The K-groups of this workgroup (all of them, or its split's share).
  SmallVector<Value> emitGroups(SmallVector<Value> accs);
  void emitEpilogue(ValueRange accs);
  /// Split-K: stores this workgroup's partial, counts arrivals, and lets the
  /// last arriver reduce the partials in split order and run the epilogue.
  void emitSplitEpilogue(ValueRange accs);
  /// An !llvm.ptr<1> to u32 element `index` of the workspace.
  Value workspaceCounter(Value index);

  ImplicitLocOpBuilder &b;
  const KernelPlan &p;
  // Kernel arguments and workgroup memory.
  Value x, w, ws, bias, y, m, xStrideB, xStrideM, yStrideB, yStrideM;
  Value workspace;
  Value ldsA, ldsScales;
  // Ids; `split` is the split-K index (0 without split-K).
  Value tid, lane, wave, waveN, waveM, batch, mTile, nTile, split, m0, n0;
  VectorType accType;
};
} // namespace

Value KernelEmitter::loadVector(Value memref, Value offset, int64_t count,
                                Type elementType, int64_t align, Value valid) {
  auto type = VectorType::get({count}, elementType);
  if (!valid) {
    auto load = vector::LoadOp::create(b, type, memref, ValueRange{offset});
    load.setAlignment(uint64_t(align));
    return load;
  }
  // lane i of the mask is `i < valid`; built from a constant step vector
  // (vector.create_mask has no lowering in convert-gpu-to-rocdl).
  auto i32s = VectorType::get({count}, b.getI32Type());
  SmallVector<int32_t> steps;
  for (int64_t i = 0; i < count; ++i)
    steps.push_back(static_cast<int32_t>(i));
  Value step = arith::ConstantOp::create(
      b, i32s, DenseElementsAttr::get(i32s, ArrayRef<int32_t>(steps)));
  Value bound = vector::BroadcastOp::create(
      b, i32s, arith::IndexCastOp::create(b, b.getI32Type(), valid));
  Value mask = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, step, bound);
  Value zero = arith::ConstantOp::create(
      b, type, DenseElementsAttr::get(type, b.getZeroAttr(elementType)));
  return vector::MaskedLoadOp::create(b, type, memref, ValueRange{offset}, mask,
                                      zero);
}

Value KernelEmitter::slice(Value v, int64_t start, int64_t size) {
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < size; ++i)
    positions.push_back(start + i);
  return vector::ShuffleOp::create(b, v, v, positions);
}

Value KernelEmitter::concat(Value x, Value y) {
  int64_t size = cast<VectorType>(x.getType()).getNumElements() +
                 cast<VectorType>(y.getType()).getNumElements();
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < size; ++i)
    positions.push_back(i);
  return vector::ShuffleOp::create(b, x, y, positions);
}

/// Quantizes the block_m rows x one group of X into LDS: each row's chunks of
/// 8 columns are spread over `lanesPerRow` adjacent lanes, which reduce the
/// row's amax with xor shuffles; every lane then scales, clamps and converts
/// its own chunks and stores them where the MFMA A operand reads them.
void KernelEmitter::quantizeRows(ValueRange xChunks) {
  Type f32Type = b.getF32Type();
  Type i8Type = b.getI8Type();
  auto fp8x4 = VectorType::get({4}, p.wType);
  Value laneInRow = rem(tid, p.lanesPerRow);
  Value rowInPass = div(tid, p.lanesPerRow);
  float invFmax = 1.0f / p.fmax;

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
        auto f32x8 = VectorType::get({8}, f32Type);
        Value v = arith::ExtFOp::create(b, f32x8,
                                        xChunks[pass * p.chunksPerLane + c]);
        chunks.push_back(v);
        // |v| by clearing the sign bits.
        auto i32x8 = VectorType::get({8}, i32Type);
        Value bits = vector::BitCastOp::create(b, i32x8, v);
        Value magnitudeMask = arith::ConstantOp::create(
            b, i32x8,
            DenseElementsAttr::get(i32x8, b.getI32IntegerAttr(0x7fffffff)));
        Value absBits = arith::AndIOp::create(b, bits, magnitudeMask);
        Value chunkMax = vector::ReductionOp::create(
            b, vector::CombiningKind::MAXUI, absBits);
        amaxBits = arith::MaxUIOp::create(b, amaxBits, chunkMax);
      }
      for (int64_t offset = 1; offset < p.lanesPerRow; offset *= 2) {
        Value other =
            gpu::ShuffleOp::create(b, amaxBits, static_cast<int32_t>(offset),
                                   64, gpu::ShuffleMode::XOR)
                .getShuffleResult();
        amaxBits = arith::MaxUIOp::create(b, amaxBits, other);
      }
      Value amax = arith::BitcastOp::create(b, f32Type, amaxBits);
      amax = arith::MaxNumFOp::create(b, amax, f32(1e-10f));
      Value scale = arith::MulFOp::create(b, amax, f32(invFmax));
      // A NaN or Inf in the row makes the row's scale NaN, so every output of
      // the row is NaN, as in the reference; its quantized values (clamped,
      // finite) then do not matter.
      Value nonFinite = arith::CmpIOp::create(
          b, arith::CmpIPredicate::ugt, amaxBits,
          arith::ConstantOp::create(b, b.getI32IntegerAttr(0x7f7fffff)));
      scale = arith::SelectOp::create(
          b, nonFinite, f32(std::numeric_limits<float>::quiet_NaN()), scale);
      Value inverse = arith::DivFOp::create(b, f32(1.0f), scale);

      auto storeRow = [&]() {
        Value mt = div(row, p.dim);
        Value rowInTile = rem(row, p.dim);
        for (int64_t c = 0; c < p.chunksPerLane; ++c) {
          auto f32x8 = VectorType::get({8}, f32Type);
          Value q = arith::MulFOp::create(
              b, chunks[c], vector::BroadcastOp::create(b, f32x8, inverse));
          q = arith::MaxNumFOp::create(
              b, q, vector::BroadcastOp::create(b, f32x8, f32(-p.fmax)));
          q = arith::MinNumFOp::create(
              b, q, vector::BroadcastOp::create(b, f32x8, f32(p.fmax)));
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
              b, VectorType::get({8}, i8Type), concat(words[0], words[1]));
          // Chunk -> (unit, lane group, half of the unit): the inverse of the
          // column permutation that W loads use.
          Value chunk = add(laneInRow, c * p.lanesPerRow);
          Value column = mul(chunk, 8);
          int64_t unitSpan = p.unitBytes * p.laneGroups;
          Value unit = div(column, unitSpan);
          Value within = rem(column, unitSpan);
          Value group = div(within, p.unitBytes);
          Value half = rem(within, p.unitBytes);
          Value operandLane = add(rowInTile, mul(group, p.dim));
          Value slot = add(mul(mt, p.unitsPerGroup), unit);
          Value offset =
              add(mul(add(mul(slot, 64), operandLane), p.unitBytes), half);
          auto store =
              vector::StoreOp::create(b, bytes, ldsA, ValueRange{offset});
          store.setAlignment(uint64_t(8));
        }
        Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                            laneInRow, cst(0));
        emitIf(first, [&] {
          memref::StoreOp::create(b, scale, ldsScales, ValueRange{row});
        });
      };
      if ((pass + 1) * p.rowsPerPass > p.tile.blockM) {
        emitIf(ult(row, cst(p.tile.blockM)), storeRow);
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

SmallVector<Value> KernelEmitter::loadGroup(Value k0, bool partial) {
  Type i8Type = b.getI8Type();
  Value laneGroup = div(lane, p.dim);
  Value laneInGroup = rem(lane, p.dim);
  SmallVector<Value> loads;
  // W: one unit per lane per (N tile, unit) holds the B operands of
  // `stepsPerUnit` MFMAs.
  for (int64_t nt = 0; nt < p.ntPerWave; ++nt) {
    Value column =
        add(add(n0, mul(waveN, p.waveCols)), add(laneInGroup, nt * p.dim));
    if (p.n % p.tile.blockN != 0)
      column = minIdx(column, cst(p.n - 1));
    Value rowStart = mul(add(mul(batch, p.n), column), p.k);
    for (int64_t u = 0; u < p.unitsPerGroup; ++u) {
      Value kInGroup =
          add(mul(laneGroup, p.unitBytes), u * p.unitBytes * p.laneGroups);
      Value valid;
      if (partial) {
        Value left = arith::SubIOp::create(b, cst(p.tailColumns), kInGroup);
        left = arith::MaxSIOp::create(b, left, cst(0));
        valid = arith::MinSIOp::create(b, left, cst(p.unitBytes));
      }
      loads.push_back(loadVector(w, add(add(rowStart, k0), kInGroup),
                                 p.unitBytes, i8Type, p.wAlign, valid));
    }
  }
  // X: `lanesPerRow` adjacent lanes share a row, 8 columns per chunk. Rows
  // past M read row M - 1 (always valid: a workgroup exists only for m0 < M);
  // their results are never stored.
  Value laneInRow = rem(tid, p.lanesPerRow);
  Value rowInPass = div(tid, p.lanesPerRow);
  Value lastRow = arith::SubIOp::create(b, m, cst(1));
  for (int64_t pass = 0; pass < p.passes; ++pass) {
    Value row = add(rowInPass, pass * p.rowsPerPass);
    Value globalRow = minIdx(add(m0, row), lastRow);
    Value rowOffset =
        add(add(mul(batch, xStrideB), mul(globalRow, xStrideM)), k0);
    auto loadChunks = [&] {
      SmallVector<Value> chunks;
      for (int64_t c = 0; c < p.chunksPerLane; ++c) {
        Value column = mul(add(laneInRow, c * p.lanesPerRow), 8);
        Value valid;
        if (partial) {
          // Columns past K read as zero: max(0, min(8, tail - column)).
          Value left = arith::SubIOp::create(b, cst(p.tailColumns), column);
          left = arith::MaxSIOp::create(b, left, cst(0));
          valid = arith::MinSIOp::create(b, left, cst(8));
        }
        chunks.push_back(
            loadVector(x, add(rowOffset, column), 8, p.xType, p.xAlign, valid));
      }
      return chunks;
    };
    if (pass == 0) {
      loads.append(loadChunks());
      continue;
    }
    // Passes past M load nothing (see passActive).
    auto chunkType = VectorType::get({8}, p.xType);
    SmallVector<Type> types(p.chunksPerLane, chunkType);
    auto ifOp = scf::IfOp::create(b, types, passActive(pass),
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(ifOp.thenBlock());
      scf::YieldOp::create(b, loadChunks());
      b.setInsertionPointToEnd(ifOp.elseBlock());
      Value zero = arith::ConstantOp::create(
          b, chunkType,
          DenseElementsAttr::get(chunkType, b.getZeroAttr(p.xType)));
      scf::YieldOp::create(b, SmallVector<Value>(p.chunksPerLane, zero));
    }
    loads.append(ifOp.getResults().begin(), ifOp.getResults().end());
  }
  return loads;
}

SmallVector<Value> KernelEmitter::emitGroup(ValueRange loads, ValueRange accs) {
  Type i8Type = b.getI8Type();
  auto unitI8 = VectorType::get({p.unitBytes}, i8Type);
  auto unitFp8 = VectorType::get({p.unitBytes}, p.wType);
  SmallVector<SmallVector<Value>> wUnits(p.ntPerWave);
  for (int64_t nt = 0; nt < p.ntPerWave; ++nt)
    for (int64_t u = 0; u < p.unitsPerGroup; ++u)
      wUnits[nt].push_back(vector::BitCastOp::create(
          b, unitFp8, loads[nt * p.unitsPerGroup + u]));

  quantizeRows(loads.drop_front(p.ntPerWave * p.unitsPerGroup));
  gpu::BarrierOp::create(b);

  auto accElems = VectorType::get({p.dim == 16 ? 4 : 16}, b.getF32Type());
  Value zero = arith::ConstantOp::create(
      b, accElems, DenseElementsAttr::get(accElems, b.getF32FloatAttr(0.0f)));
  auto f32x4 = VectorType::get({4}, b.getF32Type());
  SmallVector<Value> results;
  for (int64_t mtw = 0; mtw < p.mtPerWave; ++mtw) {
    Value mt = add(mul(waveM, p.mtPerWave), mtw);
    SmallVector<Value> aUnits;
    for (int64_t u = 0; u < p.unitsPerGroup; ++u) {
      Value offset = mul(add(mul(add(mul(mt, p.unitsPerGroup), u), 64), lane),
                         p.unitBytes);
      auto load = vector::LoadOp::create(b, unitI8, ldsA, ValueRange{offset});
      load.setAlignment(uint64_t(p.unitBytes));
      aUnits.push_back(vector::BitCastOp::create(b, unitFp8, load));
    }
    // The row scales of this lane's accumulator elements (SPEC.md s[b,m,g]):
    // 16x16: rows 4 * (lane / 16) + r; 32x32: rows 8 * (r / 4) +
    // 4 * (lane / 32) + r % 4.
    Value scales;
    Value laneRows = mul(div(lane, p.dim), 4);
    for (int64_t block = 0; block < (p.dim == 16 ? 1 : 4); ++block) {
      Value offset = add(add(mul(mt, p.dim), laneRows), 8 * block);
      auto load =
          vector::LoadOp::create(b, f32x4, ldsScales, ValueRange{offset});
      load.setAlignment(uint64_t(16));
      scales = scales ? concat(scales, load) : Value(load);
    }
    for (int64_t nt = 0; nt < p.ntPerWave; ++nt) {
      Value partialSum = zero;
      for (int64_t u = 0; u < p.unitsPerGroup; ++u)
        for (int64_t s = 0; s < p.stepsPerUnit; ++s) {
          Value a =
              p.stepsPerUnit == 1 ? aUnits[u] : slice(aUnits[u], 8 * s, 8);
          Value bOp = p.stepsPerUnit == 1 ? wUnits[nt][u]
                                          : slice(wUnits[nt][u], 8 * s, 8);
          partialSum = amdgpu::MFMAOp::create(
              b, accElems, static_cast<uint32_t>(p.dim),
              static_cast<uint32_t>(p.dim), static_cast<uint32_t>(p.mfmaK), 1u,
              a, bOp, partialSum);
        }
      Value acc = accs[mtw * p.ntPerWave + nt];
      Value scaled = arith::MulFOp::create(b, partialSum, scales);
      results.push_back(arith::AddFOp::create(b, acc, scaled));
    }
  }
  if (p.maxGroupsPerWorkgroup > 1)
    gpu::BarrierOp::create(b);
  return results;
}

void KernelEmitter::emitEpilogue(ValueRange accs) {
  Type f32Type = b.getF32Type();
  Value descale = memref::LoadOp::create(
      b, ws, ValueRange{p.perBatchScale ? batch : cst(0)});
  Value laneGroup = div(lane, p.dim);
  Value laneInGroup = rem(lane, p.dim);
  int64_t elements = p.dim == 16 ? 4 : 16;
  for (int64_t mtw = 0; mtw < p.mtPerWave; ++mtw) {
    Value rowBase = add(m0, mul(add(mul(waveM, p.mtPerWave), mtw), p.dim));
    for (int64_t nt = 0; nt < p.ntPerWave; ++nt) {
      Value acc = accs[mtw * p.ntPerWave + nt];
      Value column =
          add(add(n0, mul(waveN, p.waveCols)), add(laneInGroup, nt * p.dim));
      Value columnOk;
      if (p.n % p.tile.blockN != 0)
        columnOk = ult(column, cst(p.n));
      Value biasValue;
      if (p.hasBias) {
        Value biasColumn = columnOk ? minIdx(column, cst(p.n - 1)) : column;
        biasValue = memref::LoadOp::create(
            b, bias, ValueRange{add(mul(batch, p.n), biasColumn)});
        biasValue = arith::ExtFOp::create(b, f32Type, biasValue);
      }
      for (int64_t r = 0; r < elements; ++r) {
        // Row of accumulator element r in this lane (ISA-NOTES.md §4).
        Value row = p.dim == 16 ? add(mul(laneGroup, 4), r)
                                : add(mul(laneGroup, 4), 8 * (r / 4) + r % 4);
        row = add(rowBase, row);
        Value value = vector::ExtractOp::create(b, acc, r);
        value = arith::MulFOp::create(b, value, descale);
        if (biasValue)
          value = arith::AddFOp::create(b, value, biasValue);
        value = arith::TruncFOp::create(b, p.yType, value);
        Value inBounds = ult(row, m);
        if (columnOk)
          inBounds = arith::AndIOp::create(b, inBounds, columnOk);
        emitIf(inBounds, [&] {
          Value offset =
              add(add(mul(batch, yStrideB), mul(row, yStrideM)), column);
          memref::StoreOp::create(b, value, y, ValueRange{offset});
        });
      }
    }
  }
}

void KernelEmitter::emit(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  auto toIndex = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  };
  x = entry.getArgument(0);
  w = entry.getArgument(1);
  ws = entry.getArgument(2);
  bias = entry.getArgument(3);
  y = entry.getArgument(4);
  m = toIndex(entry.getArgument(5));
  xStrideB = toIndex(entry.getArgument(6));
  xStrideM = toIndex(entry.getArgument(7));
  yStrideB = toIndex(entry.getArgument(8));
  yStrideM = toIndex(entry.getArgument(9));
  workspace = entry.getArgument(10);
  ldsA = func.getWorkgroupAttributions()[0];
  ldsScales = func.getWorkgroupAttributions()[1];

  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane = rem(tid, 64);
  wave = div(tid, 64);
  waveN = rem(wave, p.wavesN);
  waveM = div(wave, p.wavesN);
  // The splits of one output tile are adjacent along x (x = tile * split_k +
  // split), so they are dispatched close together.
  Value blockX = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  nTile = p.tile.splitK == 1 ? blockX : div(blockX, p.tile.splitK);
  split = p.tile.splitK == 1 ? Value() : rem(blockX, p.tile.splitK);
  n0 = mul(nTile, p.tile.blockN);
  mTile = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  m0 = mul(mTile, p.tile.blockM);
  batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);

  accType = VectorType::get({p.dim == 16 ? 4 : 16}, b.getF32Type());
  Value zero = arith::ConstantOp::create(
      b, accType, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));
  SmallVector<Value> accs =
      emitGroups(SmallVector<Value>(p.mtPerWave * p.ntPerWave, zero));
  if (p.tile.splitK == 1)
    emitEpilogue(accs);
  else
    emitSplitEpilogue(accs);
  gpu::ReturnOp::create(b);
}

SmallVector<Value> KernelEmitter::emitGroups(SmallVector<Value> accs) {
  // Split s runs groups [s * numGroups / split_k, (s + 1) * numGroups /
  // split_k): every split gets at least one group (split_k <= numGroups). A
  // partial last group belongs to the last split.
  Value kBegin = cst(0), kEnd = cst(p.fullGroups * p.groupSize);
  std::optional<int64_t> count = p.fullGroups;
  if (split) {
    Value gBegin = div(mul(split, p.numGroups), p.tile.splitK);
    Value gEnd = div(mul(add(split, 1), p.numGroups), p.tile.splitK);
    if (p.tailColumns != 0)
      gEnd = minIdx(gEnd, cst(p.fullGroups));
    kBegin = mul(gBegin, p.groupSize);
    kEnd = mul(gEnd, p.groupSize);
    count = std::nullopt;
    if (p.tailColumns == 0 && p.numGroups % p.tile.splitK == 0)
      count = p.numGroups / p.tile.splitK;
  }

  if (count == 1) {
    accs = emitGroup(loadGroup(kBegin, /*partial=*/false), accs);
  } else if (count != 0 && p.fullGroups > 0) {
    // With stages > 1 the loads of group g + 1 are issued before group g is
    // computed (clamped to the last full group, which the last iteration
    // loads again: in bounds and unused; also when a split has no full group
    // and the loop runs zero times).
    bool prefetch = p.tile.stages > 1;
    int64_t lastK0 = (p.fullGroups - 1) * p.groupSize;
    SmallVector<Value> init(accs);
    if (prefetch) {
      Value firstK0 = split ? minIdx(kBegin, cst(lastK0)) : kBegin;
      SmallVector<Value> first = loadGroup(firstK0, /*partial=*/false);
      init.append(first);
    }
    auto loop = scf::ForOp::create(b, kBegin, kEnd, cst(p.groupSize), init);
    {
      OpBuilder::InsertionGuard guard(b);
      Block *body = loop.getBody();
      if (!body->empty() && body->mightHaveTerminator())
        body->getTerminator()->erase();
      b.setInsertionPointToEnd(body);
      ValueRange iterArgs = loop.getRegionIterArgs();
      ValueRange current = iterArgs.take_front(accs.size());
      SmallVector<Value> next;
      SmallVector<Value> loads;
      if (prefetch) {
        Value nextK0 =
            minIdx(add(loop.getInductionVar(), p.groupSize), cst(lastK0));
        next = loadGroup(nextK0, /*partial=*/false);
        loads.assign(iterArgs.begin() + accs.size(), iterArgs.end());
      } else {
        loads = loadGroup(loop.getInductionVar(), /*partial=*/false);
      }
      SmallVector<Value> yielded = emitGroup(loads, current);
      yielded.append(next);
      scf::YieldOp::create(b, yielded);
    }
    accs = SmallVector<Value>(loop.getResults().take_front(accs.size()));
  }
  if (p.tailColumns == 0)
    return accs;
  auto tailGroup = [&](ValueRange current) {
    return emitGroup(
        loadGroup(cst(p.fullGroups * p.groupSize), /*partial=*/true), current);
  };
  if (!split)
    return tailGroup(accs);
  // Only the last split runs the partial group (a workgroup-uniform branch).
  Value isLastSplit = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, split,
                                            cst(p.tile.splitK - 1));
  SmallVector<Type> types(accs.size(), accType);
  auto ifOp = scf::IfOp::create(b, types, isLastSplit, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(ifOp.thenBlock());
    scf::YieldOp::create(b, tailGroup(accs));
    b.setInsertionPointToEnd(ifOp.elseBlock());
    scf::YieldOp::create(b, accs);
  }
  return SmallVector<Value>(ifOp.getResults());
}

Value KernelEmitter::workspaceCounter(Value index) {
  // memref.atomic_rmw has no memory scope (it would be system-wide, writing
  // back the whole L2): the counter is updated with an agent-scope LLVM
  // atomic on the workspace's raw pointer.
  MLIRContext *context = b.getContext();
  Type i64Type = b.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(context, 1);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, workspace);
  base = arith::IndexCastOp::create(b, i64Type, base);
  base = LLVM::IntToPtrOp::create(b, ptrType, base);
  Value offset = arith::IndexCastOp::create(b, i64Type, index);
  return LLVM::GEPOp::create(b, ptrType, b.getI32Type(), base,
                             ValueRange{offset});
}

void KernelEmitter::emitSplitEpilogue(ValueRange accs) {
  int64_t elements = p.dim == 16 ? 4 : 16;
  int64_t tileElements = p.tile.blockM * p.tile.blockN;
  int64_t splitK = p.tile.splitK;
  // Workspace block of (batch, M tile): [N tile][split][tile] f32 partials,
  // then one u32 counter per N tile (MLAFP8ToGPU.h). Inside a partial tile,
  // each lane's accumulators lie contiguously in register order: [wave]
  // [accumulator][lane][element], one 16-byte access per 4 elements.
  Value mTiles = div(add(m, p.tile.blockM - 1), p.tile.blockM);
  Value blockBase =
      mul(add(mul(batch, mTiles), mTile), p.workspaceBlockElements);
  Value tilesBase = add(blockBase, mul(nTile, splitK * tileElements));
  Value laneOffset =
      add(mul(wave, int64_t(accs.size()) * 64 * elements), mul(lane, elements));
  auto partialOffset = [&](Value s, int64_t acc) {
    return add(add(tilesBase, mul(s, tileElements)),
               add(laneOffset, acc * 64 * elements));
  };
  for (auto [index, acc] : llvm::enumerate(accs)) {
    auto store = vector::StoreOp::create(
        b, acc, workspace, ValueRange{partialOffset(split, index)});
    store.setAlignment(uint64_t(16));
  }
  // Every lane's partial is visible device-wide before the workgroup counts
  // itself in.
  LLVM::FenceOp::create(b, LLVM::AtomicOrdering::release, "agent");
  gpu::BarrierOp::create(b);

  // One lane counts the arrival; the last of the split_k arrivals resets the
  // counter (the workspace is reusable without re-zeroing) and tells the
  // workgroup through LDS (ldsScales is free: every wave has passed the
  // barrier above, after its last read of the scales).
  Value counterIndex =
      add(add(blockBase, p.nTiles * splitK * tileElements), nTile);
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, cst(0));
  emitIf(first, [&] {
    Value counter = workspaceCounter(counterIndex);
    Value one = arith::ConstantOp::create(b, b.getI32IntegerAttr(1));
    Value old =
        LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::add, counter, one,
                                  LLVM::AtomicOrdering::monotonic, "agent");
    Value last = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq, old,
        arith::ConstantOp::create(b, b.getI32IntegerAttr(splitK - 1)));
    emitIf(last, [&] {
      Value zero = arith::ConstantOp::create(b, b.getI32IntegerAttr(0));
      LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::xchg, counter, zero,
                                LLVM::AtomicOrdering::monotonic, "agent");
    });
    Value flag = arith::SelectOp::create(b, last, f32(1.0f), f32(0.0f));
    memref::StoreOp::create(b, flag, ldsScales, ValueRange{cst(0)});
  });
  gpu::BarrierOp::create(b);
  Value flag = memref::LoadOp::create(b, ldsScales, ValueRange{cst(0)});
  Value isLast =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, flag, f32(1.0f));
  emitIf(isLast, [&] {
    // The other splits' partials, released before their counts.
    LLVM::FenceOp::create(b, LLVM::AtomicOrdering::acquire, "agent");
    // Sum in split order 0, 1, ..., split_k - 1 whatever the arrival order:
    // the same bits every run. This workgroup's own partial comes from its
    // registers, at its place in that order.
    SmallVector<Value> totals;
    for (auto [index, acc] : llvm::enumerate(accs)) {
      Value total;
      for (int64_t s = 0; s < splitK; ++s) {
        Value mine =
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, split, cst(s));
        auto ifOp = scf::IfOp::create(b, TypeRange{accType}, mine,
                                      /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToEnd(ifOp.thenBlock());
          scf::YieldOp::create(b, acc);
          b.setInsertionPointToEnd(ifOp.elseBlock());
          auto load = vector::LoadOp::create(
              b, accType, workspace, ValueRange{partialOffset(cst(s), index)});
          load.setAlignment(uint64_t(16));
          scf::YieldOp::create(b, load.getResult());
        }
        Value part = ifOp.getResult(0);
        total =
            total ? arith::AddFOp::create(b, total, part).getResult() : part;
      }
      totals.push_back(total);
    }
    emitEpilogue(totals);
  });
}

/// Creates the kernel of `plan` named `name` at the end of `module`.
static gpu::GPUFuncOp buildKernel(gpu::GPUModuleOp module, Location loc,
                                  StringRef name, const KernelPlan &plan) {
  MLIRContext *context = module.getContext();
  auto global = gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Global);
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  auto flat = [&](Type element) {
    return MemRefType::get({kUnboundedElements}, element,
                           MemRefLayoutAttrInterface(), global);
  };
  Type i8Type = IntegerType::get(context, 8);
  Type i64Type = IntegerType::get(context, 64);
  Type f32Type = Float32Type::get(context);
  SmallVector<Type> inputs = {flat(plan.xType), flat(i8Type), flat(f32Type),
                              flat(plan.yType), flat(plan.yType)};
  inputs.append(5, i64Type);
  inputs.push_back(flat(f32Type));
  auto type = FunctionType::get(context, inputs, {});
  SmallVector<Type> lds = {
      MemRefType::get({plan.ldsABytes}, i8Type, MemRefLayoutAttrInterface(),
                      workgroup),
      MemRefType::get({plan.tile.blockM}, f32Type, MemRefLayoutAttrInterface(),
                      workgroup)};

  ImplicitLocOpBuilder b(loc, context);
  b.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(b, name, type, lds, TypeRange());
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(plan.threads), 1, 1}));
  KernelEmitter(b, plan).emit(func);
  return func;
}

namespace {
struct ConvertMLAFP8ToGPUPass
    : mlafp8::impl::ConvertMLAFP8ToGPUPassBase<ConvertMLAFP8ToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const ChipInfo *chipInfo = lookupChip(chip);
    if (!chipInfo) {
      emitError(module.getLoc()) << describeUnsupportedChip(chip);
      return signalPassFailure();
    }
    SmallVector<PrequantBmmOp> ops;
    module.walk([&](PrequantBmmOp op) { ops.push_back(op); });
    if (ops.empty())
      return;
    SymbolTable symbols(module);
    for (PrequantBmmOp op : ops)
      if (failed(convert(op, *chipInfo, symbols)))
        return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(module.getContext()));
  }

  LogicalResult convert(PrequantBmmOp op, const ChipInfo &chipInfo,
                        SymbolTable &symbols) {
    if (std::optional<std::string> message = checkFP8FormatForChip(
            chipInfo, op.getW().getType().getElementType()))
      return op.emitOpError() << *message;
    std::optional<ArrayAttr> tiles = op.getTiles();
    if (!tiles)
      return op.emitOpError(
          "has no tiles; run mlafp8-select-tiles before convert-mlafp8-to-gpu");

    std::string base = "mlafp8";
    if (auto func = op->getParentOfType<FunctionOpInterface>())
      base = func.getName().str();
    OpBuilder builder(op.getContext());
    builder.setInsertionPointToEnd(getOperation().getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(builder, op.getLoc(), base + "_kernels");
    symbols.insert(gpuModule);

    KernelShape shape{op.getN(),
                      op.getK(),
                      static_cast<int64_t>(op.getGroupSize()),
                      op.getY().getType().getElementType().isBF16() ? "bf16"
                                                                    : "f16",
                      op.getWScaleMode() == WeightScale::PerBatch,
                      static_cast<bool>(op.getBias())};
    SmallVector<Attribute> kernels;
    for (auto [index, attr] : llvm::enumerate(*tiles)) {
      TileConfig tile = TileConfig::fromAttr(cast<TileAttr>(attr));
      std::string error;
      FailureOr<KernelPlan> plan = planKernel(op, chipInfo, tile, error);
      if (failed(plan))
        return op.emitOpError() << "tile " << index << ": " << error;
      std::string name = getKernelName(shape, chipInfo.name, tile);
      gpu::GPUFuncOp func = buildKernel(gpuModule, op.getLoc(), name, *plan);
      kernels.push_back(
          SymbolRefAttr::get(gpuModule.getSymNameAttr(),
                             {FlatSymbolRefAttr::get(func.getNameAttr())}));
    }
    op->setAttr("kernels", ArrayAttr::get(op.getContext(), kernels));
    return success();
  }
};
} // namespace
