//===- DescriptionDict.h - a kernel description as dict entries -*- C++ -*-===//
//
// Shared by the serving module (bundle kernels) and the compiler module
// (compile_spec's kernels): the description's fields under their manifest
// keys, from its one field list, so a new field reaches Python by itself.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_PYTHON_DESCRIPTIONDICT_H
#define MLA_FP8_PYTHON_DESCRIPTIONDICT_H

#include "mla-fp8/ABI/KernelDescription.h"

#include <pybind11/pybind11.h>

#include <string>
#include <type_traits>

namespace mla_fp8_python {

/// Adds every field of `description` to `d` under its manifest key.
inline void
addDescription(pybind11::dict &d,
               const mlir::mlafp8::kernel_abi::KernelDescription &description) {
  namespace kernel_abi = mlir::mlafp8::kernel_abi;
  kernel_abi::forEachField(
      description, [&](const char *name, const auto &value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, kernel_abi::WeightScaleMode>)
          d[name] = std::string(kernel_abi::stringifyWeightScaleMode(value));
        else
          d[name] = value;
      });
}

} // namespace mla_fp8_python

#endif // MLA_FP8_PYTHON_DESCRIPTIONDICT_H
