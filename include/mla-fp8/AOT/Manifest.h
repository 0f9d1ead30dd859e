//===- Manifest.h - a bundle's manifest and C header ------------*- C++ -*-===//
//
// What a bundle says about its kernels, for launchers: manifest.json (the
// schema is docs/manifest.md) and mla_fp8_kernels.h, the same table for C and
// C++ embedders. The run-time loader (Runtime/Bundle.h) reads the manifest
// back and checks it.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_MANIFEST_H
#define MLA_FP8_AOT_MANIFEST_H

#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"

#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace mlir::mlafp8 {

struct BundleOptions;
struct ChipBundle;

/// Version of the manifest.json layout; bump on any incompatible change.
/// Version 2 added manifest.sha256 beside the manifest; version 3 names each
/// explicit argument (`name`, from the kernel ABI) instead of leaving the
/// name to the prose of `meaning`; version 4 keys each kernel by the rows of
/// a launch, B * M (`min_rows`, `max_rows`), instead of by M alone.
inline constexpr int kManifestSchemaVersion = 5;

/// The manifest's `tile` object of a kernel (also the cache index's).
llvm::json::Value tileToJSON(const TileConfig &tile);

/// The manifest and the C header of a set of chip bundles.
std::string renderManifest(const BundleOptions &options,
                           const std::vector<ChipBundle> &chips);
std::string renderHeader(const std::vector<ChipBundle> &chips);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_MANIFEST_H
