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

llvm::Error mlir::mlafp8::checkKernelSetOptions(const KernelSetOptions &o) {
  const std::pair<const char *, int64_t> dims[] = {
      {"heads", o.dims.heads},
      {"kv_lora_rank", o.dims.kvLoraRank},
      {"qk_nope_head_dim", o.dims.qkNopeHeadDim},
      {"v_head_dim", o.dims.vHeadDim}};
  for (auto [name, value] : dims)
    if (value < 1 || value > kMaxModelDimension)
      return makeError(llvm::formatv("{0} must be between 1 and {1}, got {2}",
                                     name, kMaxModelDimension, value));
  // The loader refuses a manifest whose M bounds exceed what the kernels
  // index: such a bundle must not be published over a good one.
  if (o.maxM < 1 || o.maxM > runtime::kMaxManifestM)
    return makeError(llvm::formatv("max_m must be between 1 and {0}, got {1}",
                                   runtime::kMaxManifestM, o.maxM));
  // The tile table decides which group sizes a kernel supports (buildKernelSet
  // asks it); this bound keeps its arithmetic and the loader's in range.
  if (o.groupSize > runtime::kMaxManifestGroupSize)
    return makeError(llvm::formatv("group_size must be at most {0}, got {1}",
                                   runtime::kMaxManifestGroupSize,
                                   o.groupSize));
  if (o.outType != "bf16" && o.outType != "f16")
    return makeError("out_type must be bf16 or f16, got '" + o.outType + "'");
  if (o.chips.empty())
    return makeError("no chip given");
  for (const std::string &chip : o.chips)
    if (!lookupChip(chip))
      return makeError(describeUnsupportedChip(chip));
  if (o.tp.empty())
    return makeError("no tensor-parallel degree given");
  bool anyDivides = false;
  for (int64_t tp : o.tp) {
    if (tp < 1)
      return makeError(llvm::formatv(
          "tensor-parallel degree must be at least 1, got {0}", tp));
    if (o.dims.heads % tp == 0)
      anyDivides = true;
    else if (o.tpExplicit)
      return makeError(llvm::formatv(
          "tensor-parallel degree {0} does not divide the {1} heads of {2}", tp,
          o.dims.heads, o.model));
  }
  if (!anyDivides)
    return makeError(
        llvm::formatv("no tensor-parallel degree divides the {0} heads of {1}",
                      o.dims.heads, o.model));
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
  options.groupSize = request.groupSize;
  options.bias = request.bias;
  if (llvm::Error err = checkKernelSetOptions(options))
    return std::move(err);
  return options;
}
