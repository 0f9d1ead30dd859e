//===- KernelSet.h - the kernels an AOT run generates -----------*- C++ -*-===//
//
// From a model and the deployment options to the list of distinct kernels:
// each projection shape (N, K) of each tensor-parallel degree, per chip. B is a
// kernel argument, so TP degrees with the same (N, K) share kernels.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_KERNELSET_H
#define MLA_FP8_AOT_KERNELSET_H

#include "mla-fp8/ABI/KernelDescription.h"
#include "mla-fp8/AOT/Presets.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"
#include "mla-fp8/Hardware/Chip.h"
#include "mla-fp8/Target/Serialization.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// The chips a kernel set targets by default: every row of the chip table.
inline std::vector<std::string> getDefaultChips() {
  std::vector<std::string> names;
  for (const ChipInfo &chip : getSupportedChips())
    names.push_back(chip.name.str());
  return names;
}

/// Everything that decides which kernels are generated and how, resolved and
/// checked (Options.h resolves a user's request into it).
struct KernelSetOptions {
  /// The preset name, "<preset>-custom" or "custom" for explicit dimensions.
  std::string model = "deepseek-r1";
  ModelDims dims;
  /// Tensor-parallel degrees. When `tpExplicit` is false a degree that does
  /// not divide the heads is skipped; otherwise it is an error.
  std::vector<int64_t> tp = {1, 2, 4, 8};
  bool tpExplicit = false;
  /// Every M from 1 to maxM, at every batch of the set, is served by a kernel
  /// of its own range of rows (B * M); the last range is unbounded, so larger
  /// M still runs.
  int64_t maxM = 1024;
  /// Default: every chip of the chip table.
  std::vector<std::string> chips = getDefaultChips();
  kernel_abi::WeightScaleMode weightScale =
      kernel_abi::WeightScaleMode::PerTensor;
  /// "bf16" or "f16".
  std::string outType = "bf16";
  /// The activation types, each with its own kernels ("bf16", "f16"). Both
  /// by default: a model served in float16 needs the f16 kernels, and they
  /// keep a cold default run under 3 s on a 2-core machine (README).
  std::vector<std::string> inTypes = {"bf16", "f16"};
  int64_t groupSize = 128;
  /// Also generate the kernels that add a (B, N) bias in the output type.
  bool bias = false;
  /// Of every code object: 5 (loads on ROCm 6.0+) or 6 (ROCm 6.3+).
  unsigned codeObjectVersion = kDefaultCodeObjectVersion;
  /// Explicit tiles by projection ("k_up", "v_up", "wo_a"), each serving every launch
  /// of its projection instead of the tile table's ranges.
  std::vector<std::pair<std::string, TileConfig>> tiles;
};

/// One compilation unit: one batched matmul of the model, Y[b] = X[b] W[b]^T,
/// on one chip. It holds one kernel per range of launch rows (B * M).
struct KernelGroupSpec {
  /// "k_up" (q_nope x W_UK), "v_up" (o x W_UV), "wo_a" (the attention
  /// output's groups x their wo_a) or an embedder's name.
  std::string projection;
  /// The batch sizes (heads per rank) and TP degrees the group serves. B is a
  /// run-time value: they do not change the code.
  std::vector<int64_t> batches;
  std::vector<int64_t> tp;
  /// What decides the code of every kernel of the group.
  kernel_abi::KernelDescription kernel;
  /// The ranges of rows are planned up to this M at the largest batch; the
  /// last one is unbounded.
  int64_t maxM = 1024;
  /// Explicit tiles instead of the chip's selection (bench/tile-sweep.cpp
  /// compiles candidates with them); empty: the selection. Bundles never set
  /// them.
  std::vector<TileConfig> tiles;
  /// The code-object version the group is compiled for (5 or 6).
  unsigned codeObjectVersion = kDefaultCodeObjectVersion;

  /// The stable, readable base of the kernel symbols, e.g.
  /// "mla_fp8_k_up_n512_k128_g128_bf16_pt_gfx942" (`_xf16` after the group
  /// size for f16 activations, as in the kernel symbols).
  std::string getBaseName() const;
  /// The rows the ranges are planned for: maxM times the largest batch, or
  /// times kPlanningBatch when the group names none.
  int64_t getPlannedRows() const;
};

/// The batch a group without batches is planned for: the most heads of a
/// served MLA model (DeepSeek-V3/R1, Kimi-K2 at TP 1).
inline constexpr int64_t kPlanningBatch = 128;

/// Parses "BMxBNxWAVES:MFMA[:SPLIT_K[:STAGES]]" (MFMA: an MFMA record's shape
/// name, e.g. m16n16k32) into a tile serving every launch; the tile attribute's
/// verifier checks the combination when the kernel is compiled.
llvm::Expected<TileConfig> parseTileSpec(llvm::StringRef text);

/// Checks every option (the dimensions, max M, group size, types, chips, TP
/// degrees); the error names the option and the value.
llvm::Error checkKernelSetOptions(const KernelSetOptions &options);

/// Checks the options, then resolves the model and TP degrees into the
/// distinct shapes and crosses them with the chips.
llvm::Expected<std::vector<KernelGroupSpec>>
buildKernelSet(const KernelSetOptions &options);

/// The kernels of a group: its explicit tiles, or the chip's tile selection
/// for the shape cut to the ranges that serve some rows up to
/// getPlannedRows(), the last one made unbounded so that every launch finds a
/// kernel.
llvm::Expected<SmallVector<TileConfig>>
getGroupTiles(const KernelGroupSpec &spec);

/// Checks a group's explicit tiles (KernelGroupSpec::tiles, from --tile)
/// with the tile attribute's verifier and the op's, as compiling would, but
/// before anything is compiled; the error is one line.
llvm::Error verifyExplicitTiles(const KernelGroupSpec &spec);

/// Appends `diag` to `text` as one line's part: its location unless unknown,
/// then its message, parts separated by "; ".
void appendDiagnostic(std::string &text, Diagnostic &diag);

/// Builds the module an AOT compilation starts from: one function holding the
/// group's `mlafp8.prequant_bmm` (dynamic B and M, static N and K).
OwningOpRef<ModuleOp> buildKernelGroupModule(MLIRContext &context,
                                             const KernelGroupSpec &spec);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_KERNELSET_H
