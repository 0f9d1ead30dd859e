//===- Cache.h - the compilation cache of chip code objects -----*- C++ -*-===//
//
// A chip's code object is cached under a key that hashes the compiler's
// identity, the chip and the full serialization of every kernel group of the
// chip. An entry is one checksummed file (docs/manifest.md, "The cache");
// nothing read back is trusted.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_CACHE_H
#define MLA_FP8_AOT_CACHE_H

#include "mla-fp8/AOT/KernelSet.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// The version of the cache's key and entry layout: bumping it makes every
/// older entry a miss, so it is recompiled, never misread.
inline constexpr int kCacheFormatVersion = 2;

/// The identity of this compiler build: the project version, the LLVM version
/// and a hash of the binary that holds this code. Part of every cache key, so a
/// rebuilt compiler never reuses entries of an older one.
const std::string &getCompilerFingerprint();

/// What of a group the cache key hashes: its projection, the M it is planned
/// for and the serialization of its kernel description (everything of a group
/// that changes the code object or its index).
std::string serializeGroupForCache(const KernelGroupSpec &group);

/// The cache key of `chip`'s code object: a hash of the cache format, the
/// compiler fingerprint, the chip and each of the chip's groups as
/// serializeGroupForCache() writes it.
std::string computeChipCacheKey(const std::vector<KernelGroupSpec> &groups,
                                llvm::StringRef chip);

/// Called with a one-line warning.
using CacheWarningCallback = std::function<void(llvm::StringRef)>;

/// The code object cached in `cacheDir` under `key`, or nullopt when there is
/// none. An entry that is damaged, unreadable or whose kernel index is not
/// `index` is removed, reported through `warn` and not used.
std::optional<std::string> readCacheEntry(llvm::StringRef cacheDir,
                                          llvm::StringRef key,
                                          llvm::StringRef index,
                                          llvm::StringRef chip,
                                          const CacheWarningCallback &warn);

/// Removes the entry of `key` that turned out unusable for `why`, with a
/// warning through `warn`.
void discardCacheEntry(llvm::StringRef cacheDir, llvm::StringRef key,
                       const llvm::Twine &why, llvm::StringRef chip,
                       const CacheWarningCallback &warn);

/// Writes (atomically replaces) the entry of `key` in `cacheDir`, creating
/// the directory.
llvm::Error writeCacheEntry(llvm::StringRef cacheDir, llvm::StringRef key,
                            llvm::StringRef index, llvm::StringRef object);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_CACHE_H
