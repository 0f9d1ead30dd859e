//===- KernelDescription.cpp - What decides one kernel's code -------------===//

#include "mla-fp8/ABI/KernelDescription.h"
#include "mla-fp8/ABI/KernelABI.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::kernel_abi;

std::string_view kernel_abi::stringifyWeightScaleMode(WeightScaleMode mode) {
  return mode == WeightScaleMode::PerTensor ? "per_tensor" : "per_batch";
}

std::optional<WeightScaleMode>
kernel_abi::parseWeightScaleMode(std::string_view text) {
  if (text == "per_tensor" || text == "per-tensor")
    return WeightScaleMode::PerTensor;
  if (text == "per_batch" || text == "per-batch")
    return WeightScaleMode::PerBatch;
  return std::nullopt;
}

bool kernel_abi::operator==(const KernelDescription &a,
                            const KernelDescription &b) {
  return std::apply(
      [&](const auto &...field) {
        return ((a.*(field.second) == b.*(field.second)) && ...);
      },
      kKernelDescriptionFields);
}

/// A field as JSON: the enum by its manifest spelling.
template <typename T> static llvm::json::Value toJSON(const T &value) {
  if constexpr (std::is_same_v<T, WeightScaleMode>)
    return llvm::StringRef(stringifyWeightScaleMode(value));
  else
    return value;
}

std::string kernel_abi::serialize(const KernelDescription &description) {
  // llvm::json::Object sorts its keys when printed; the field order is kept
  // by writing the object member by member.
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os);
  json.object([&] {
    forEachField(description, [&](const char *name, const auto &value) {
      json.attribute(name, toJSON(value));
    });
  });
  return text;
}

KernelNameFields kernel_abi::getNameFields(const KernelDescription &d,
                                           int64_t minRows, int64_t maxRows) {
  KernelNameFields fields;
  fields.n = d.n;
  fields.k = d.k;
  fields.groupSize = d.groupSize;
  fields.inType = d.inType;
  fields.outType = d.outType;
  fields.perBatchScale = d.weightScale == WeightScaleMode::PerBatch;
  fields.hasBias = d.hasBias;
  fields.chip = d.chip;
  fields.minRows = minRows;
  fields.maxRows = maxRows;
  return fields;
}
