//===- Options.h - one resolution of the kernel-set options ----*- C++ -*-===//
//
// The one resolution of what a user asks for (KernelSetRequest.h), on
// mla-fp8-aot's command line or through the embedding API, into checked
// KernelSetOptions: both entry points accept the same values and reject bad
// ones with the same message.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_OPTIONS_H
#define MLA_FP8_AOT_OPTIONS_H

#include "mla-fp8/AOT/KernelSet.h"
#include "mla-fp8/AOT/KernelSetRequest.h"

#include "llvm/Support/Error.h"

#include <cstdint>

namespace mlir::mlafp8 {

/// The largest number of heads and the largest MLA dimension: heads become a
/// grid dimension and the dimensions a GEMM's N and K, bounded well inside
/// what a launch and a kernel can address (and what a loader accepts).
inline constexpr int64_t kMaxModelDimension = kernel_abi::kMaxKernelDimension;

/// Applies the preset and the overrides, parses the names and checks the
/// result (checkKernelSetOptions); the error is one line naming the option
/// (by its manifest key, e.g. "kv_lora_rank") and the value.
llvm::Expected<KernelSetOptions>
resolveKernelSetOptions(const KernelSetRequest &request);

/// Checks one kernel's description and M bound as the kernel-set options
/// are checked (same bounds, same messages): the chip, N and K, the group
/// size, the output type and max_m. For callers that compile one shape
/// (the embedding API's compileSpec).
llvm::Error checkKernelDescription(const kernel_abi::KernelDescription &kernel,
                                   int64_t maxM);

/// Checks a code-object version: 5 or 6, the versions the serializer emits.
/// The message names the ROCm release that loads each.
llvm::Error checkCodeObjectVersion(int64_t version);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_OPTIONS_H
