//===- Bundle.h - ahead-of-time generation of kernel bundles ----*- C++ -*-===//
//
// A bundle is a directory: one code object per chip holding every kernel of
// that chip (<chip>.hsaco), manifest.json describing each kernel (symbol,
// shape, range of rows B * M, tile, launch geometry, kernarg layout, resources, hash),
// manifest.sha256 (the manifest's digest, in sha256sum's format) and
// mla_fp8_kernels.h, the same table for C/C++ embedders. docs/manifest.md
// documents the manifest schema; Publish.h how a bundle replaces another.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_BUNDLE_H
#define MLA_FP8_AOT_BUNDLE_H

#include "mla-fp8/AOT/KernelSet.h"
#include "mla-fp8/AOT/Manifest.h"
#include "mla-fp8/AOT/Publish.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"
#include "mla-fp8/Target/CodeObject.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/ThreadPool.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// One kernel of a bundle.
struct BundleKernel {
  std::string symbol;
  KernelGroupSpec group;
  /// The range of rows (B * M) and tiling of this kernel.
  TileConfig tile;
  KernelMetadata metadata;
  KernelInstructionStats stats;
};

/// The code object of one chip and what it holds.
struct ChipBundle {
  std::string chip;
  std::string codeObject;
  std::vector<BundleKernel> kernels;
  /// SHA-256 of the code object, hex.
  std::string contentHash;
  /// The code-object version its ELF header gives (5 or 6).
  unsigned codeObjectVersion = 0;
  /// Key of the cache entry the code object came from or went to, hex.
  std::string cacheKey;
  bool fromCache = false;
};

/// Where a generation stands: `done` of `total` steps. Each kernel group's
/// lowering is a step and each chip's code generation is one; a chip found in
/// the cache completes all its steps at once.
struct BundleProgress {
  unsigned done = 0, total = 0;
  /// What just finished, e.g. "gfx942 v_up" or "gfx942 code object".
  std::string step;
  bool cached = false;
};

/// Reports `steps` finished steps named `step`.
using BundleStepCallback =
    std::function<void(llvm::StringRef step, unsigned steps, bool cached)>;

/// Refuses a cache directory that is `outputDir` or lies below it (through
/// symbolic links too): compiling would write cache entries into the bundle.
llvm::Error checkCacheOutsideOutput(llvm::StringRef cacheDir,
                                    llvm::StringRef outputDir);

struct BundleOptions {
  KernelSetOptions kernels;
  /// Where the bundle goes, relative to the current directory or absolute:
  /// a missing path, an empty directory or an mla-fp8 bundle, replaced as a
  /// whole by one atomic exchange (Publish.h).
  std::string outputDir;
  /// Also replace an mla-fp8 bundle that holds files the bundle format does
  /// not name (they are deleted with it). Never replaces anything else.
  bool force = false;
  /// Cache directory; empty disables caching. Entries are checksummed and
  /// checked against the tile table when read; an unusable entry is removed
  /// and compiled again, and an unwritable cache only costs time.
  std::string cacheDir;
  /// Called with a one-line warning (a damaged cache entry, a cache that
  /// cannot be written), one call at a time; the run goes on.
  std::function<void(llvm::StringRef)> onWarning;
  /// Parallel compilations; 0 means one per core.
  unsigned jobs = 0;
  /// Called after each step (a kernel group lowered, a chip's code object
  /// built or found in the cache), one call at a time, from worker threads.
  std::function<void(const BundleProgress &)> onProgress;
  /// Called with the fully written staging directory before it replaces the
  /// output directory; an error abandons the new bundle (mla-fp8-aot --verify
  /// runs the kernels here).
  std::function<llvm::Error(llvm::StringRef)> checkBeforePublish;
};

struct BundleResult {
  std::vector<ChipBundle> chips;
  std::string manifest;
  std::string header;
  uint64_t bytesWritten = 0;
  /// The absolute directory the bundle was published to.
  std::string outputDir;
};

/// The project version, e.g. "0.1.0".
llvm::StringRef getCompilerVersion();

/// Compiles every kernel of `chip` among `groups` into one code object,
/// consulting and filling the cache of `options`; the groups are lowered on
/// `pool` when one is given. Groups that define the same kernels are
/// compiled once. When writing the cache fails, `cacheUnwritable` (if given)
/// is set, so that runs sharing it warn once and stop trying.
llvm::Expected<ChipBundle>
buildChipBundle(const std::vector<KernelGroupSpec> &groups,
                llvm::StringRef chip, const BundleOptions &options,
                const BundleStepCallback &onStep = nullptr,
                llvm::ThreadPoolInterface *pool = nullptr,
                std::atomic<bool> *cacheUnwritable = nullptr);

/// Checks the output directory and stages beside it, before compiling; then
/// builds every chip's code object (in parallel), writes and syncs the bundle
/// in the staging directory and swaps it in atomically. On any error the
/// previous bundle stays as it was and no staging remains.
llvm::Expected<BundleResult> generateBundle(const BundleOptions &options);

/// SHA-256 of `data` as lower-case hex.
std::string sha256Hex(llvm::StringRef data);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_BUNDLE_H
