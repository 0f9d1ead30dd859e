//===- Cache.cpp - the compilation cache of chip code objects -------------===//

#include "mla-fp8/AOT/Cache.h"

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/Publish.h"
#include "mla-fp8/CodeObject/File.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <dlfcn.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::mlafp8;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

const std::string &mlir::mlafp8::getCompilerFingerprint() {
  static const std::string fingerprint = [] {
    std::string id = llvm::formatv("mla-fp8 {0}; LLVM {1}",
                                   getCompilerVersion(), LLVM_VERSION_STRING)
                         .str();
    // The binary (executable or shared library) that holds this function: a
    // rebuilt compiler hashes differently even at the same version.
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&getCompilerFingerprint), &info) &&
        info.dli_fname) {
      auto buffer = llvm::MemoryBuffer::getFile(info.dli_fname);
      if (buffer)
        id += "; binary " + sha256Hex((*buffer)->getBuffer());
    }
    return id;
  }();
  return fingerprint;
}

// Batches and TP degrees are left out on purpose: B is a run-time value, so
// they change neither the code nor the entry's index, except through the
// rows the ranges are planned for (maxM times the largest batch), which
// decide the ranges a group keeps: the key holds the kept tiles instead. A new
// group field must be added to serializeGroupForCache, or here with a reason.
static_assert(kernel_abi::detail::countAggregateFields<KernelGroupSpec>() == 7,
              "a KernelGroupSpec field is new: decide whether it changes the "
              "code and add it to serializeGroupForCache");

std::string mlir::mlafp8::serializeGroupForCache(const KernelGroupSpec &group) {
  std::string text =
      llvm::formatv("projection={0} kernel={1} "
                    "code_object_version={2}",
                    group.projection, kernel_abi::serialize(group.kernel),
                    group.codeObjectVersion)
          .str();
  // The kernels: explicit tiles (--tile) or the table's, cut to the planned
  // rows. A group whose tiles cannot be listed is never compiled (the kernel
  // set checks it first); its key says so.
  llvm::Expected<SmallVector<TileConfig>> tiles = getGroupTiles(group);
  if (!tiles) {
    llvm::consumeError(tiles.takeError());
    return text + " tiles=none";
  }
  for (const TileConfig &t : *tiles)
    text += llvm::formatv(" tile={0}-{1}:{2}x{3}x{4}:{5}:{6}:{7}:{8}",
                          t.minRows, t.maxRows, t.blockM, t.blockN, t.waves,
                          t.mfma->shapeName, t.splitK, t.stages, t.occupancy)
                .str();
  return text;
}

std::string
mlir::mlafp8::computeChipCacheKey(const std::vector<KernelGroupSpec> &groups,
                                  llvm::StringRef chip) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "mla-fp8 cache " << kCacheFormatVersion
     << "\nfingerprint=" << getCompilerFingerprint() << "\nchip=" << chip
     << "\n";
  for (const KernelGroupSpec &group : groups)
    if (group.kernel.chip == chip)
      os << "group " << serializeGroupForCache(group) << "\n";
  return sha256Hex(text);
}

/// A cache entry is one file, replaced by one rename:
///   "mla-fp8 cache entry <kCacheFormatVersion>\n" "sha256 <hex of the rest>\n"
///   "index <bytes>\n" "object <bytes>\n" <index> <code object>
static std::string getCacheMagic() {
  return llvm::formatv("mla-fp8 cache entry {0}\n", kCacheFormatVersion).str();
}

/// The largest cache entry read back; code objects are a few MiB.
static constexpr uint64_t kMaxCacheEntryBytes = 1u << 30;

static std::string getCacheEntryPath(llvm::StringRef cacheDir,
                                     llvm::StringRef key) {
  llvm::SmallString<256> path(cacheDir);
  llvm::sys::path::append(path, key + ".entry");
  return std::string(path);
}

static std::string renderCacheEntry(llvm::StringRef index,
                                    llvm::StringRef object) {
  std::string payload =
      llvm::formatv("index {0}\nobject {1}\n", index.size(), object.size())
          .str();
  payload += index;
  payload += object;
  return getCacheMagic() + "sha256 " + sha256Hex(payload) + "\n" + payload;
}

/// Splits a cache entry into its index and object after checking its
/// checksum and lengths; the error says what is wrong.
static llvm::Error parseCacheEntry(llvm::StringRef entry,
                                   llvm::StringRef &index,
                                   llvm::StringRef &object) {
  if (!entry.consume_front(getCacheMagic()))
    return makeError("bad header");
  if (!entry.consume_front("sha256 ") || entry.size() < 65 || entry[64] != '\n')
    return makeError("no checksum");
  llvm::StringRef checksum = entry.take_front(64);
  llvm::StringRef payload = entry.drop_front(65);
  if (sha256Hex(payload) != checksum)
    return makeError("checksum mismatch");
  uint64_t indexBytes, objectBytes;
  auto [indexLine, rest] = payload.split('\n');
  auto [objectLine, data] = rest.split('\n');
  if (!indexLine.consume_front("index ") ||
      indexLine.getAsInteger(10, indexBytes) ||
      !objectLine.consume_front("object ") ||
      objectLine.getAsInteger(10, objectBytes) || indexBytes > data.size() ||
      objectBytes != data.size() - indexBytes)
    return makeError("bad lengths");
  index = data.take_front(indexBytes);
  object = data.drop_front(indexBytes);
  return llvm::Error::success();
}

void mlir::mlafp8::discardCacheEntry(llvm::StringRef cacheDir,
                                     llvm::StringRef key,
                                     const llvm::Twine &why,
                                     llvm::StringRef chip,
                                     const CacheWarningCallback &warn) {
  std::string path = getCacheEntryPath(cacheDir, key);
  // unlink, not sys::fs::remove, which refuses FIFOs and devices.
  std::string removal = "removed it";
  if (::unlink(path.c_str()) < 0 && errno != ENOENT)
    removal = "cannot remove it (" +
              std::error_code(errno, std::generic_category()).message() + ")";
  if (warn)
    warn(("cache entry '" + path + "' is unusable (" + why + "); " + removal +
          ", compiling " + chip + " instead")
             .str());
}

std::optional<std::string>
mlir::mlafp8::readCacheEntry(llvm::StringRef cacheDir, llvm::StringRef key,
                             llvm::StringRef index, llvm::StringRef chip,
                             const CacheWarningCallback &warn) {
  std::string path = getCacheEntryPath(cacheDir, key);
  if (!llvm::sys::fs::exists(path))
    return std::nullopt;
  auto discard = [&](const llvm::Twine &why) -> std::optional<std::string> {
    discardCacheEntry(cacheDir, key, why, chip, warn);
    return std::nullopt;
  };
  llvm::Expected<std::string> data = readRegularFile(path, kMaxCacheEntryBytes);
  if (!data)
    return discard(llvm::toString(data.takeError()));
  llvm::StringRef entryIndex, object;
  if (llvm::Error err = parseCacheEntry(*data, entryIndex, object))
    return discard(llvm::toString(std::move(err)));
  // The checksum proves the entry is what some run wrote; the kernel list
  // must also be the one these groups ask for.
  if (entryIndex != index)
    return discard("its kernel list differs from the tile table's");
  return object.str();
}

llvm::Error mlir::mlafp8::writeCacheEntry(llvm::StringRef cacheDir,
                                          llvm::StringRef key,
                                          llvm::StringRef index,
                                          llvm::StringRef object) {
  if (std::error_code ec = llvm::sys::fs::create_directories(cacheDir))
    return makeError("cannot create '" + cacheDir + "': " + ec.message());
  return writeFileAtomically(getCacheEntryPath(cacheDir, key),
                             renderCacheEntry(index, object));
}
