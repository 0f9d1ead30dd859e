//===- KernelSet.h - the kernels an AOT run generates -----------*- C++ -*-===//
//
// From a model and the deployment options to the list of distinct kernels:
// each projection shape (N, K) of each tensor-parallel degree, per chip. B is a
// kernel argument, so TP degrees with the same (N, K) share kernels.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_KERNELSET_H
#define MLA_FP8_AOT_KERNELSET_H

#include "mla-fp8/AOT/Presets.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// Everything that decides which kernels are generated and how. Every field
/// goes into the cache key.
struct KernelSetOptions {
  /// The preset name, or "custom" for explicit dimensions.
  std::string model = "deepseek-r1";
  ModelDims dims;
  /// Tensor-parallel degrees. When `tpExplicit` is false a degree that does
  /// not divide the heads is skipped; otherwise it is an error.
  std::vector<int64_t> tp = {1, 2, 4, 8};
  bool tpExplicit = false;
  /// Every M from 1 to maxM is served by a kernel range; the last range is
  /// unbounded, so larger M still runs.
  int64_t maxM = 1024;
  std::vector<std::string> chips = {"gfx942", "gfx950"};
  WeightScale weightScale = WeightScale::PerTensor;
  /// "bf16" or "f16".
  std::string outType = "bf16";
  int64_t groupSize = 128;
  /// Also generate the kernels that add a (B, N) bias in the output type.
  bool bias = false;
};

/// One batched matmul of the model at some TP degrees: Y[b] = X[b] W[b]^T.
struct ProjectionShape {
  /// "k_up" (q_nope x W_UK) or "v_up" (o x W_UV).
  std::string name;
  int64_t n = 0;
  int64_t k = 0;
  /// The batch sizes (heads per rank) this shape is used with.
  std::vector<int64_t> batches;
  std::vector<int64_t> tp;
};

/// One compilation unit: a projection shape on one chip. It holds one kernel
/// per M range.
struct KernelGroupSpec {
  ProjectionShape shape;
  std::string chip;
  /// MLIR spelling of the fp8 type: the chip decides it.
  std::string fp8Type;
  std::string inType = "bf16";
  std::string outType;
  WeightScale weightScale = WeightScale::PerTensor;
  int64_t groupSize = 128;
  int64_t maxM = 1024;
  /// The kernels add a (B, N) bias.
  bool hasBias = false;

  /// The stable, readable base of the kernel symbols, e.g.
  /// "mla_fp8_k_up_n512_k128_g128_bf16_pt_gfx942".
  std::string getBaseName() const;
};

/// Resolves the model and TP degrees into the distinct shapes, then crosses
/// them with the chips. Errors name the problem (unknown chip, a TP degree
/// that does not divide the heads, max M below 1, ...).
llvm::Expected<std::vector<KernelGroupSpec>>
buildKernelSet(const KernelSetOptions &options);

/// The kernels of a group: the chip's tile selection for the shape, cut to
/// the ranges that serve some M up to `maxM`, the last one made unbounded so
/// that every M finds a kernel.
llvm::Expected<SmallVector<TileConfig>>
getGroupTiles(const KernelGroupSpec &spec);

/// Builds the module an AOT compilation starts from: one function holding the
/// group's `mlafp8.prequant_bmm` (dynamic B and M, static N and K).
OwningOpRef<ModuleOp> buildKernelGroupModule(MLIRContext &context,
                                             const KernelGroupSpec &spec);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_KERNELSET_H
