//===- KernelDescriptionFields.h - one field changed at a time --*- C++ -*-===//
//
// Shared by the tests that prove every field of a KernelDescription matters
// (to its serialization, its equality, the cache key): they iterate over the
// fields through forEachField, so a new field is covered without a new test.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_TEST_UNIT_KERNELDESCRIPTIONFIELDS_H
#define MLA_FP8_TEST_UNIT_KERNELDESCRIPTIONFIELDS_H

#include "mla-fp8/ABI/KernelDescription.h"

#include <string>
#include <type_traits>

namespace mlir::mlafp8::test {

/// `description` with field number `index` (in forEachField's order) set to
/// another value; `name` receives the field's name.
inline kernel_abi::KernelDescription
withFieldChanged(kernel_abi::KernelDescription description, size_t index,
                 std::string &name) {
  size_t i = 0;
  kernel_abi::forEachField(description, [&](const char *fieldName,
                                            auto &value) {
    if (i++ != index)
      return;
    name = fieldName;
    using T = std::remove_reference_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::string>)
      value += "x";
    else if constexpr (std::is_same_v<T, bool>)
      value = !value;
    else if constexpr (std::is_same_v<T, kernel_abi::WeightScaleMode>)
      value = value == kernel_abi::WeightScaleMode::PerTensor
                  ? kernel_abi::WeightScaleMode::PerBatch
                  : kernel_abi::WeightScaleMode::PerTensor;
    else if constexpr (std::is_integral_v<T>)
      value += 1;
    else
      static_assert(!sizeof(T), "teach withFieldChanged the new field type");
  });
  return description;
}

} // namespace mlir::mlafp8::test

#endif // MLA_FP8_TEST_UNIT_KERNELDESCRIPTIONFIELDS_H
