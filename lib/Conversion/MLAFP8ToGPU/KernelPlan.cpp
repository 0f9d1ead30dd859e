//===- KernelPlan.cpp - The geometry of one prequant_bmm kernel -----------===//

#include "mla-fp8/Conversion/MLAFP8ToGPU/KernelPlan.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::mlafp8;

llvm::Expected<KernelPlan> mlir::mlafp8::planKernel(PrequantBmmOp op,
                                                    const ChipInfo &chip,
                                                    TileAttr tile) {
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
  p.launch = {p.n, tile.getBlockM(), tile.getBlockN(), tile.getWaves(),
              tile.getSplitK()};

  auto fail = [](const Twine &message) {
    return llvm::createStringError(message);
  };
  // The MFMA records describe their layouts over the ABI's waves.
  static_assert(kMfmaWaveSize == kernel_abi::kWaveSize,
                "the MFMA layouts and the kernel ABI disagree on the wave");
  const MfmaLayout &mfma = *tile.getMfma();
  // What the chip lacks is the first reason, whatever the generator lowers.
  if (!chip.hasMfma(mfma))
    return fail(Twine(chip.name) + " has no " + mfma.mnemonic);
  if (chip.waveSize != kernel_abi::kWaveSize)
    return fail(Twine(chip.name) + " runs waves of " + Twine(chip.waveSize) +
                " lanes; the kernels are written for " +
                Twine(kernel_abi::kWaveSize));
  p.mfma = &mfma;
  p.waveSize = kernel_abi::kWaveSize;
  p.laneGroups = mfma.getLaneGroups();
  p.operandBytes = mfma.getOperandBytesPerLane();
  p.accumulators = mfma.getAccumulatorsPerLane();
  // A lane's accumulators of a transposed tile are one run of the record's
  // rows, which become columns; the A and B operand layouts of the record
  // must match for W and X to trade places.
  p.transposedTile = p.accumulators == mfma.accRowsPerRun && mfma.m == mfma.n;
  if (p.groupSize < mfma.k)
    return fail("group_size " + Twine(p.groupSize) +
                " is smaller than the MFMA's K (" + Twine(mfma.k) + ")");
  // A group's columns are permuted onto (unit, lane group, byte) the same way
  // for A (LDS) and B (W loads), and A's and B's lane groups and bytes pair
  // up in every MFMA here: each product is still q[m, k] * w[n, k], whichever
  // K the instruction gives the byte. So the record's runs (two of 16 bytes
  // for the f8f6f4 shapes) need nothing of their own: a lane's operand is
  // `operandBytes` contiguous bytes. (Which products share one of the
  // instruction's rounding chunks changes, within SPEC's f32 noise.)
  int64_t pairBytes = 2 * p.operandBytes;
  p.unitBytes = p.groupSize % (pairBytes * p.laneGroups) == 0 ? pairBytes
                                                              : p.operandBytes;
  p.stepsPerUnit = p.unitBytes / p.operandBytes;
  p.unitsPerGroup = p.groupSize / (p.unitBytes * p.laneGroups);

  int64_t waves = tile.getWaves();
  int64_t mTiles = tile.getBlockM() / mfma.m;
  int64_t nTiles = tile.getBlockN() / mfma.n;
  p.wavesN = std::min(waves, nTiles);
  p.wavesM = waves / p.wavesN;
  if (nTiles % p.wavesN != 0 || waves % p.wavesN != 0 || mTiles % p.wavesM != 0)
    return fail("the " + Twine(mTiles) + "x" + Twine(nTiles) +
                " MFMA tiles cannot be split among " + Twine(waves) +
                " waves (N first, then M)");
  p.mtPerWave = mTiles / p.wavesM;
  p.ntPerWave = nTiles / p.wavesN;
  p.waveCols = p.ntPerWave * mfma.n;

  p.threads = kernel_abi::getWorkgroupSize(p.launch)[0];
  p.chunksPerRow = p.groupSize / kChunkColumns;
  // The lanes of a row reduce its amax with shuffles: within one wave.
  p.lanesPerRow = std::min(p.chunksPerRow, p.waveSize);
  p.chunksPerLane = p.chunksPerRow / p.lanesPerRow;
  p.rowsPerPass = p.threads / p.lanesPerRow;
  p.passes = llvm::divideCeil(tile.getBlockM(), p.rowsPerPass);
  p.fullGroups = p.k / p.groupSize;
  p.tailColumns = p.k % p.groupSize;
  p.numGroups = p.fullGroups + (p.tailColumns ? 1 : 0);
  if (tile.getSplitK() > p.numGroups)
    return fail("split_k = " + Twine(tile.getSplitK()) + " exceeds the " +
                Twine(p.numGroups) + " K-groups");
  p.maxGroupsPerWorkgroup = llvm::divideCeil(p.numGroups, tile.getSplitK());
  p.nTiles = llvm::divideCeil(p.n, tile.getBlockN());
  std::optional<int64_t> blockBytes =
      kernel_abi::getWorkspaceBytesPerBlock(p.launch);
  if (!blockBytes)
    return fail("N = " + Twine(p.n) + " with a " + Twine(tile.getBlockM()) +
                "x" + Twine(tile.getBlockN()) +
                " tile is beyond the kernel ABI's bounds");
  p.workspaceBlockElements = *blockBytes / 4;
  p.workspaceCountersElement =
      *kernel_abi::getWorkspaceCountersOffset(p.launch) / 4;
  // X rows start at multiples of 8 elements when K is (see the ABI); a W row
  // starts at n * K bytes.
  p.xAlign = p.k % 8 == 0 ? 16 : 2;
  p.wAlign = std::min<int64_t>(p.unitBytes, p.k & -p.k);
  // Splits have a static group count when they divide the groups evenly
  // and there is no partial group (KernelEmitter::emitGroups).
  int64_t splitK = tile.getSplitK();
  int64_t staticGroups = splitK == 1 ? p.fullGroups
                         : p.tailColumns == 0 && p.numGroups % splitK == 0
                             ? p.numGroups / splitK
                             : 0;
  // In straight-line code the scheduler moves work between groups (it may
  // issue any group's loads, LDS reads and conversions early), so the
  // registers of every group's loads (X counted as the f32 values it is
  // widened to) must fit, and with one LDS copy per group also their A
  // operands. Beyond kMaxUnrolledLoadRegisters per lane LLVM spilled: single-
  // wave 64x32 and 128x32 tiles of 8 groups ran at up to twice the loop's
  // time, even with one group in flight. Batching is dropped first, then the
  // unrolling.
  int64_t wRegisters = p.ntPerWave * p.unitsPerGroup * p.unitBytes / 4;
  int64_t aRegisters = p.mtPerWave * p.unitsPerGroup * p.unitBytes / 4;
  int64_t xRegisters = p.passes * p.chunksPerLane * kChunkColumns;
  int64_t unrolledRegisters = staticGroups * (wRegisters + xRegisters);
  int64_t batchedRegisters = unrolledRegisters + staticGroups * aRegisters;
  p.unrolledGroups = staticGroups <= kMaxUnrolledGroups &&
                             unrolledRegisters <= kMaxUnrolledLoadRegisters
                         ? staticGroups
                         : 0;
  p.ldsABytes = tile.getBlockM() * p.groupSize;
  int64_t copyBytes = kernel_abi::getLDSBytes(tile.getBlockM(), p.groupSize);
  p.ldsBuffers = p.unrolledGroups > 1 &&
                         p.unrolledGroups * copyBytes <= kMaxBatchedLDSBytes &&
                         batchedRegisters <= kMaxUnrolledLoadRegisters
                     ? p.unrolledGroups
                     : 1;
  int64_t lds = p.ldsBuffers * copyBytes;
  if (lds > chip.ldsBytesPerWorkgroup)
    return fail("the tile needs " + Twine(lds) +
                " bytes of LDS, more than the " +
                Twine(chip.ldsBytesPerWorkgroup) + " of " + chip.name);
  return p;
}
