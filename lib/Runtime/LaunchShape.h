//===- LaunchShape.h - a bundle kernel's launch shape -----------*- C++ -*-===//
//
// Private to the Runtime libraries: KernelTable.h stays free of LLVM types
// for embedders, so the bridge to the kernel ABI lives here.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_LIB_RUNTIME_LAUNCHSHAPE_H
#define MLA_FP8_LIB_RUNTIME_LAUNCHSHAPE_H

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/Runtime/KernelTable.h"

namespace mlir::mlafp8::runtime {

/// What the kernel ABI's grid, workgroup and workspace formulas take.
inline kernel_abi::LaunchShape getLaunchShape(const KernelEntry &e) {
  return {e.n, e.blockM, e.blockN, e.waves, e.splitK};
}

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_LIB_RUNTIME_LAUNCHSHAPE_H
