//===- Options.cpp - one resolution of the kernel-set options -------------===//

#include "mla-fp8/AOT/Options.h"

#include "mla-fp8/Hardware/Chip.h"
#include "mla-fp8/Runtime/KernelTable.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::mlafp8;

static_assert(kMaxModelDimension <= runtime::kMaxManifestN &&
                  kMaxModelDimension <= runtime::kMaxManifestK,
              "a bundle of the largest model must load");

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Checks 1 <= value <= kMaxModelDimension for a model dimension (or a
/// GEMM's N or K) named `name`.
static llvm::Error checkDimension(const char *name, int64_t value) {
  if (value < 1 || value > kMaxModelDimension)
    return makeError(llvm::formatv("{0} must be between 1 and {1}, got {2}",
                                   name, kMaxModelDimension, value));
  return llvm::Error::success();
}

/// The checks of max_m, the group size and the output type, shared by a
/// kernel set and a single kernel.
static llvm::Error checkKernelFields(int64_t maxM, int64_t groupSize,
                                     const std::string &outType) {
  // The loader refuses a manifest whose M bounds exceed what the kernels
  // index: such a bundle must not be published over a good one.
  if (maxM < 1 || maxM > runtime::kMaxManifestM)
    return makeError(llvm::formatv("max_m must be between 1 and {0}, got {1}",
                                   runtime::kMaxManifestM, maxM));
  // The tile table decides which group sizes a kernel supports (buildKernelSet
  // asks it); this bound keeps its arithmetic and the loader's in range.
  if (groupSize > runtime::kMaxManifestGroupSize)
    return makeError(llvm::formatv("group_size must be at most {0}, got {1}",
                                   runtime::kMaxManifestGroupSize, groupSize));
  if (outType != "bf16" && outType != "f16")
    return makeError("out_type must be bf16 or f16, got '" + outType + "'");
  return llvm::Error::success();
}

/// Checks an activation type, by its manifest key.
static llvm::Error checkInType(const std::string &inType) {
  if (inType != "bf16" && inType != "f16")
    return makeError("in_type must be bf16 or f16, got '" + inType + "'");
  return llvm::Error::success();
}

llvm::Error mlir::mlafp8::checkCodeObjectVersion(int64_t version) {
  if (version != 5 && version != 6)
    return makeError(llvm::formatv("code_object_version must be 5 (ROCm 6.0 "
                                   "and later) or 6 (ROCm 6.3 and later), "
                                   "got {0}",
                                   version));
  return llvm::Error::success();
}

llvm::Error
mlir::mlafp8::checkKernelDescription(const kernel_abi::KernelDescription &d,
                                     int64_t maxM) {
  if (!lookupChip(d.chip))
    return makeError(describeUnsupportedChip(d.chip));
  if (llvm::Error error = checkDimension("n", d.n))
    return error;
  if (llvm::Error error = checkDimension("k", d.k))
    return error;
  if (d.groupSize < 1)
    return makeError(
        llvm::formatv("group_size must be at least 1, got {0}", d.groupSize));
  if (llvm::Error error = checkInType(d.inType))
    return error;
  return checkKernelFields(maxM, d.groupSize, d.outType);
}

llvm::Error mlir::mlafp8::checkKernelSetOptions(const KernelSetOptions &o) {
  const ModelDims &d = o.dims;
  if (llvm::Error error = checkDimension("heads", d.heads))
    return error;
  // A model has the absorb bmms, grouped output projections, or both; each
  // with all of its dimensions.
  const std::pair<const char *, int64_t> absorb[] = {
      {"kv_lora_rank", d.kvLoraRank},
      {"qk_nope_head_dim", d.qkNopeHeadDim},
      {"v_head_dim", d.vHeadDim}};
  const std::pair<const char *, int64_t> output[] = {
      {"o_groups", d.outputGroups},
      {"o_lora_rank", d.outputLoraRank},
      {"head_dim", d.headDim}};
  if (!d.hasAbsorbBmms() && !d.hasOutputGroups())
    return makeError("kv_lora_rank must be between 1 and " +
                     llvm::Twine(kMaxModelDimension) + ", got 0");
  for (auto [name, value] : absorb)
    if (d.hasAbsorbBmms() || value != 0)
      if (llvm::Error error = checkDimension(name, value))
        return error;
  for (auto [name, value] : output)
    if (d.hasOutputGroups() || value != 0)
      if (llvm::Error error = checkDimension(name, value))
        return error;
  if (d.hasOutputGroups()) {
    if (d.heads % d.outputGroups != 0)
      return makeError(llvm::formatv(
          "o_groups {0} does not divide the {1} heads", d.outputGroups,
          d.heads));
    if (llvm::Error error =
            checkDimension("wo_a's K (heads * head_dim / o_groups)",
                           d.heads / d.outputGroups * d.headDim))
      return error;
  }
  if (llvm::Error error = checkKernelFields(o.maxM, o.groupSize, o.outType))
    return error;
  if (o.inTypes.empty())
    return makeError("no in_type given");
  for (const std::string &inType : o.inTypes)
    if (llvm::Error error = checkInType(inType))
      return error;
  if (llvm::Error error = checkCodeObjectVersion(o.codeObjectVersion))
    return error;
  if (o.chips.empty())
    return makeError("no chip given");
  for (const std::string &chip : o.chips)
    if (!lookupChip(chip))
      return makeError(describeUnsupportedChip(chip));
  if (o.tp.empty())
    return makeError("no tensor-parallel degree given");
  // The heads (and the output groups) split over the ranks.
  std::string what = d.hasOutputGroups()
                         ? llvm::formatv("the {0} heads and {1} output groups",
                                         d.heads, d.outputGroups)
                               .str()
                         : llvm::formatv("the {0} heads", d.heads).str();
  bool anyDivides = false;
  for (int64_t tp : o.tp) {
    if (tp < 1)
      return makeError(llvm::formatv(
          "tensor-parallel degree must be at least 1, got {0}", tp));
    if (d.splitsOver(tp))
      anyDivides = true;
    else if (o.tpExplicit)
      return makeError(llvm::formatv(
          "tensor-parallel degree {0} does not divide {1} of {2}", tp, what,
          o.model));
  }
  if (!anyDivides)
    return makeError(llvm::formatv(
        "no tensor-parallel degree divides {0} of {1}", what, o.model));
  return llvm::Error::success();
}

llvm::Expected<KernelSetOptions>
mlir::mlafp8::resolveKernelSetOptions(const KernelSetRequest &request) {
  KernelSetOptions options;
  std::string model = request.model.value_or(options.model);
  const ModelPreset *preset = lookupModelPreset(model);
  if (!preset)
    return makeError(describeUnknownModel(model));
  options.model = model;
  options.dims = preset->dims;
  bool custom = false;
  auto override = [&](const std::optional<int64_t> &value, int64_t &field) {
    if (value) {
      field = *value;
      custom = true;
    }
  };
  override(request.heads, options.dims.heads);
  override(request.kvLoraRank, options.dims.kvLoraRank);
  override(request.qkNopeHeadDim, options.dims.qkNopeHeadDim);
  override(request.vHeadDim, options.dims.vHeadDim);
  if (custom)
    options.model = request.model ? model + "-custom" : "custom";
  if (!request.tp.empty()) {
    options.tp = request.tp;
    options.tpExplicit = true;
  }
  if (!request.chips.empty())
    options.chips = request.chips;
  options.maxM = request.maxM;
  std::optional<kernel_abi::WeightScaleMode> weightScale =
      kernel_abi::parseWeightScaleMode(request.weightScale);
  if (!weightScale)
    return makeError("weight_scale must be per_tensor or per_batch, got '" +
                     request.weightScale + "'");
  options.weightScale = *weightScale;
  options.outType = request.outType;
  if (!request.inTypes.empty())
    options.inTypes = request.inTypes;
  // Checked before narrowing, so that 2^32 + 5 is not taken for 5.
  if (llvm::Error error = checkCodeObjectVersion(request.codeObjectVersion))
    return std::move(error);
  options.codeObjectVersion = unsigned(request.codeObjectVersion);
  options.groupSize = request.groupSize;
  options.bias = request.bias;
  for (const std::string &given : request.tiles) {
    auto [projection, spec] = llvm::StringRef(given).split(':');
    SmallVector<ModelProjection, 3> projections =
        getModelProjections(options.dims);
    if (llvm::none_of(projections, [&](const ModelProjection &p) {
          return p.name == projection;
        })) {
      std::string names;
      for (const ModelProjection &p : projections)
        names += (names.empty() ? "" : " or ") + p.name.str() + ":";
      return makeError("tile '" + given + "' must start with its projection, " +
                       names);
    }
    if (llvm::any_of(options.tiles,
                     [&](const auto &t) { return t.first == projection; }))
      return makeError("more than one tile for " + projection.str());
    llvm::Expected<TileConfig> tile = parseTileSpec(spec);
    if (!tile)
      return tile.takeError();
    options.tiles.emplace_back(projection.str(), *tile);
  }
  if (llvm::Error err = checkKernelSetOptions(options))
    return std::move(err);
  return options;
}
