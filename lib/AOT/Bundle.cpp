//===- Bundle.cpp - ahead-of-time generation of kernel bundles ------------===//

#include "mla-fp8/AOT/Bundle.h"

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/AOT/Cache.h"
#include "mla-fp8/AOT/Compile.h"
#include "mla-fp8/AOT/Manifest.h"
#include "mla-fp8/Target/Chip.h"
#include "mla-fp8/Target/Serialization.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace mlir;
using namespace mlir::mlafp8;

#ifndef MLAFP8_VERSION_STRING
#define MLAFP8_VERSION_STRING "0.0.0"
#endif

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string mlir::mlafp8::sha256Hex(llvm::StringRef data) {
  std::array<uint8_t, 32> hash = llvm::SHA256::hash(llvm::ArrayRef(
      reinterpret_cast<const uint8_t *>(data.data()), data.size()));
  return llvm::toHex(hash, /*LowerCase=*/true);
}

llvm::StringRef mlir::mlafp8::getCompilerVersion() {
  return MLAFP8_VERSION_STRING;
}

/// Fills each kernel's metadata and instruction statistics from the code
/// object itself, so that cached and fresh bundles are described alike, and
/// checks that its code-object version is the one asked for.
static llvm::Error describeKernels(ChipBundle &bundle,
                                   unsigned codeObjectVersion) {
  llvm::Expected<CodeObjectMetadata> metadata =
      readCodeObjectMetadata(bundle.codeObject);
  if (!metadata)
    return metadata.takeError();
  bundle.codeObjectVersion = metadata->codeObjectVersion;
  if (bundle.codeObjectVersion != codeObjectVersion)
    return makeError(llvm::formatv("code object for {0} is v{1}, v{2} was "
                                   "asked for",
                                   bundle.chip, bundle.codeObjectVersion,
                                   codeObjectVersion));
  for (BundleKernel &kernel : bundle.kernels) {
    const KernelMetadata *md = metadata->findKernel(kernel.symbol);
    if (!md)
      return makeError("code object for " + bundle.chip + " lacks kernel '" +
                       kernel.symbol + "'");
    kernel.metadata = *md;
    llvm::Expected<KernelInstructionStats> stats =
        countKernelInstructions(bundle.codeObject, kernel.symbol);
    if (!stats)
      return stats.takeError();
    kernel.stats = std::move(*stats);
  }
  bundle.contentHash = sha256Hex(bundle.codeObject);
  return llvm::Error::success();
}

/// The kernels of `chip` among `groups`, in bundle order, as the tile table
/// gives them: what a compilation of these groups defines, and what a cache
/// entry must list.
static llvm::Expected<std::vector<BundleKernel>>
planChipKernels(const std::vector<KernelGroupSpec> &groups,
                llvm::StringRef chip) {
  std::vector<BundleKernel> kernels;
  for (const KernelGroupSpec &g : groups) {
    if (g.kernel.chip != chip)
      continue;
    llvm::Expected<SmallVector<TileConfig>> tiles = getGroupTiles(g);
    if (!tiles)
      return tiles.takeError();
    for (const TileConfig &tile : *tiles) {
      std::string symbol = kernel_abi::getKernelSymbol(
          kernel_abi::getNameFields(g.kernel, tile.minRows, tile.maxRows));
      // A symbol names the description and the range, not the tile: two
      // groups of one GEMM (K-up and V-up when the dimensions are equal)
      // tiled differently would define one symbol twice.
      for (const BundleKernel &other : kernels)
        if (other.symbol == symbol &&
            tileToJSON(other.tile) != tileToJSON(tile))
          return makeError(llvm::formatv(
              "{0} and {1} are the same GEMM on {2} but tiled differently "
              "(--tile), so both would define kernel '{3}': give both "
              "projections the same --tile, or neither",
              other.group.projection, g.projection, chip, symbol));
      kernels.push_back({symbol, g, tile, {}, {}});
    }
  }
  return kernels;
}

/// The kernel list of a cache entry: symbol, group and tile of each kernel.
static std::string renderCacheIndex(const std::vector<BundleKernel> &kernels) {
  llvm::json::Array array;
  for (const BundleKernel &k : kernels)
    array.push_back(llvm::json::Object{{"symbol", k.symbol},
                                       {"group", k.group.getBaseName()},
                                       {"tile", tileToJSON(k.tile)}});
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(llvm::json::Object{{"kernels", std::move(array)}});
  return text;
}

llvm::Expected<ChipBundle> mlir::mlafp8::buildChipBundle(
    const std::vector<KernelGroupSpec> &groups, llvm::StringRef chipName,
    const BundleOptions &options, const BundleStepCallback &onStep,
    llvm::ThreadPoolInterface *pool, std::atomic<bool> *cacheUnwritable) {
  const ChipInfo *chip = lookupChip(chipName);
  if (!chip)
    return makeError(describeUnsupportedChip(chipName));
  std::vector<const KernelGroupSpec *> chipGroups;
  for (const KernelGroupSpec &group : groups)
    if (group.kernel.chip == chipName)
      chipGroups.push_back(&group);
  // One code object links every group: they must agree on its version.
  unsigned codeObjectVersion = chipGroups.empty()
                                   ? kDefaultCodeObjectVersion
                                   : chipGroups.front()->codeObjectVersion;
  for (const KernelGroupSpec *group : chipGroups)
    if (group->codeObjectVersion != codeObjectVersion)
      return makeError(llvm::formatv(
          "the kernel groups of {0} ask for code-object versions {1} and {2}; "
          "one code object has one version",
          chipName, codeObjectVersion, group->codeObjectVersion));
  // The kernels the tile table gives: what a cache entry must list and what
  // the compilation must define.
  llvm::Expected<std::vector<BundleKernel>> planned =
      planChipKernels(groups, chipName);
  if (!planned)
    return planned.takeError();
  std::string index = renderCacheIndex(*planned);
  std::string key = computeChipCacheKey(groups, chipName);
  if (!options.cacheDir.empty())
    if (std::optional<std::string> object = readCacheEntry(
            options.cacheDir, key, index, chipName, options.onWarning)) {
      ChipBundle cached;
      cached.chip = chipName.str();
      cached.codeObject = std::move(*object);
      cached.kernels = *planned;
      cached.cacheKey = key;
      cached.fromCache = true;
      if (llvm::Error err = describeKernels(cached, codeObjectVersion)) {
        discardCacheEntry(options.cacheDir, key, llvm::toString(std::move(err)),
                          chipName, options.onWarning);
      } else {
        if (onStep)
          onStep(chipName.str() + " (cached)", chipGroups.size() + 1,
                 /*cached=*/true);
        return cached;
      }
    }

  ChipBundle bundle;
  bundle.chip = chipName.str();
  bundle.cacheKey = key;
  // Groups alike in their kernel description and their tiles (K-up and V-up
  // when kv_lora_rank == qk_nope_head_dim == v_head_dim, unless --tile gives
  // one of them its own) define the same kernels, so only the first of them
  // is compiled. Index of the group whose compilation serves each group:
  std::vector<llvm::json::Value> tilesOf;
  for (const KernelGroupSpec *group : chipGroups) {
    llvm::json::Array tiles;
    if (llvm::Expected<SmallVector<TileConfig>> list = getGroupTiles(*group))
      for (const TileConfig &tile : *list)
        tiles.push_back(tileToJSON(tile));
    else
      llvm::consumeError(list.takeError());
    tilesOf.push_back(std::move(tiles));
  }
  std::vector<size_t> source(chipGroups.size());
  for (size_t i = 0; i < chipGroups.size(); ++i) {
    source[i] = i;
    for (size_t j = 0; j < i; ++j)
      if (chipGroups[j]->kernel == chipGroups[i]->kernel &&
          tilesOf[j] == tilesOf[i]) {
        source[i] = j;
        break;
      }
  }
  struct Lowered {
    std::string bitcode, error;
    std::vector<std::pair<std::string, TileConfig>> kernels;
  };
  std::vector<Lowered> lowered(chipGroups.size());
  auto stepName = [&](const KernelGroupSpec &group) {
    return chipName.str() + " " + group.projection +
           (group.kernel.inType == "bf16" ? "" : " " + group.kernel.inType) +
           (group.kernel.hasBias ? " bias" : "");
  };
  auto lower = [&](size_t i) {
    const KernelGroupSpec &group = *chipGroups[i];
    llvm::LLVMContext context;
    llvm::Expected<CompiledGroup> compiled = compileKernelGroup(group, context);
    if (!compiled) {
      lowered[i].error = llvm::toString(compiled.takeError());
      return;
    }
    llvm::raw_string_ostream os(lowered[i].bitcode);
    llvm::WriteBitcodeToFile(*compiled->module, os);
    lowered[i].kernels = std::move(compiled->kernels);
    if (onStep)
      onStep(stepName(group), 1, /*cached=*/false);
  };
  if (pool) {
    llvm::ThreadPoolTaskGroup tasks(*pool);
    for (size_t i = 0; i < chipGroups.size(); ++i)
      if (source[i] == i)
        tasks.async([&lower, i] { lower(i); });
    tasks.wait();
  } else {
    for (size_t i = 0; i < chipGroups.size(); ++i)
      if (source[i] == i)
        lower(i);
  }

  llvm::LLVMContext llvmContext;
  auto linked =
      std::make_unique<llvm::Module>("mla_fp8_" + bundle.chip, llvmContext);
  llvm::Linker linker(*linked);
  for (size_t i = 0; i < chipGroups.size(); ++i) {
    const KernelGroupSpec &group = *chipGroups[i];
    const Lowered &from = lowered[source[i]];
    if (!from.error.empty())
      return makeError(from.error);
    if (source[i] != i) {
      if (onStep)
        onStep(stepName(group) + " (same kernels as " +
                   chipGroups[source[i]]->projection + ")",
               1, /*cached=*/false);
    } else {
      llvm::Expected<std::unique_ptr<llvm::Module>> module =
          llvm::parseBitcodeFile(
              llvm::MemoryBufferRef(from.bitcode, group.getBaseName()),
              llvmContext);
      if (!module)
        return module.takeError();
      if (linker.linkInModule(std::move(*module)))
        return makeError("cannot link the LLVM IR of " + group.getBaseName());
    }
    for (auto &[symbol, tile] : from.kernels)
      bundle.kernels.push_back({symbol, group, tile, {}, {}});
  }
  // The cache re-derives the kernel list from the tile table; a compiled
  // bundle must agree with it, or cached bundles would differ from fresh ones.
  if (index != renderCacheIndex(bundle.kernels))
    return makeError("the kernels compiled for " + chipName +
                     " differ from the tile table's");
  llvm::Expected<std::string> object = emitObject(*linked, *chip);
  if (!object)
    return object.takeError();
  llvm::Expected<std::string> codeObject = linkCodeObject(*object);
  if (!codeObject)
    return codeObject.takeError();
  bundle.codeObject = std::move(*codeObject);
  if (onStep)
    onStep(chipName.str() + " code object", 1, /*cached=*/false);
  if (llvm::Error err = describeKernels(bundle, codeObjectVersion))
    return std::move(err);
  // A cache that cannot be written costs speed, not the run: warn once.
  if (!options.cacheDir.empty() &&
      !(cacheUnwritable && cacheUnwritable->load()))
    if (llvm::Error err =
            writeCacheEntry(options.cacheDir, key, index, bundle.codeObject)) {
      bool first = !cacheUnwritable || !cacheUnwritable->exchange(true);
      std::string message = llvm::toString(std::move(err));
      if (first && options.onWarning)
        options.onWarning("cannot write the cache in '" + options.cacheDir +
                          "' (" + message + "); continuing without it");
    }
  return bundle;
}

/// `path` as the file system resolves it when the cache opens it: made
/// absolute, its longest existing prefix resolved by realpath (symbolic links
/// and `..` after them as the kernel follows them), the rest appended with
/// its dots removed (nothing there exists to follow).
static std::string resolveExistingPrefix(llvm::StringRef path) {
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/false);
  llvm::SmallString<256> prefix(absolute), rest;
  while (!prefix.empty()) {
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(prefix, real)) {
      if (!rest.empty())
        llvm::sys::path::append(real, rest);
      llvm::sys::path::remove_dots(real, /*remove_dot_dot=*/true);
      return std::string(real);
    }
    // Copies: both name parts of `prefix`'s own storage.
    std::string name = llvm::sys::path::filename(prefix).str();
    std::string parent = llvm::sys::path::parent_path(prefix).str();
    if (parent.empty() || parent == prefix.str() || name.empty())
      break;
    llvm::SmallString<256> joined(name);
    if (!rest.empty())
      llvm::sys::path::append(joined, rest);
    rest = joined;
    prefix = parent;
  }
  return std::string(absolute);
}

llvm::Error mlir::mlafp8::checkCacheOutsideOutput(llvm::StringRef cacheDir,
                                                  llvm::StringRef outputDir) {
  // The output as publishing resolves it (resolveOutputPath), the cache as
  // the file system does when the cache writes.
  std::string cache = resolveExistingPrefix(cacheDir);
  llvm::Expected<std::string> resolved = resolveOutputPath(outputDir);
  if (!resolved)
    return resolved.takeError();
  std::string output = *resolved;
  llvm::StringRef c(cache);
  if (c == output || (c.starts_with(output) && c.size() > output.size() &&
                      llvm::sys::path::is_separator(c[output.size()])))
    return makeError("the cache directory '" + cacheDir +
                     "' is inside the output bundle '" + outputDir +
                     "': cache entries would be written into the bundle, "
                     "which publishing refuses; give a cache directory "
                     "outside it");
  return llvm::Error::success();
}

llvm::Expected<BundleResult>
mlir::mlafp8::generateBundle(const BundleOptions &options) {
  llvm::Expected<std::vector<KernelGroupSpec>> groups =
      buildKernelSet(options.kernels);
  if (!groups)
    return groups.takeError();

  // The cache must not be the bundle or lie inside it: its entries would
  // land in the bundle, which publishing then refuses for its extra files,
  // and so every later run to it.
  if (!options.cacheDir.empty())
    if (llvm::Error error =
            checkCacheOutsideOutput(options.cacheDir, options.outputDir))
      return std::move(error);

  // Before anything is compiled: the output must be replaceable, and the
  // staging directory beside it is created (so an unwritable place fails
  // now, not after minutes of compiling).
  llvm::Expected<std::unique_ptr<StagedDirectory>> staged =
      StagedDirectory::create(options.outputDir, options.force);
  if (!staged)
    return staged.takeError();

  std::vector<std::string> chipNames;
  for (const KernelGroupSpec &g : *groups)
    if (!llvm::is_contained(chipNames, g.kernel.chip))
      chipNames.push_back(g.kernel.chip);

  initializeAMDGPUTarget();
  // More threads than the machine has would only wait on each other.
  unsigned cores = llvm::hardware_concurrency().compute_thread_count();
  unsigned jobs = options.jobs ? std::min(options.jobs, cores) : cores;
  std::vector<std::optional<llvm::Expected<ChipBundle>>> results(
      chipNames.size());
  std::mutex progressMutex;
  BundleProgress progress;
  progress.total = groups->size() + chipNames.size();
  BundleStepCallback onStep = [&](llvm::StringRef step, unsigned steps,
                                  bool cached) {
    if (!options.onProgress)
      return;
    std::lock_guard<std::mutex> lock(progressMutex);
    progress.done += steps;
    progress.step = step.str();
    progress.cached = cached;
    options.onProgress(progress);
  };
  // Warnings come from worker threads; the callback sees one at a time.
  std::mutex warningMutex;
  BundleOptions chipOptions = options;
  if (options.onWarning)
    chipOptions.onWarning = [&](llvm::StringRef message) {
      std::lock_guard<std::mutex> lock(warningMutex);
      options.onWarning(message);
    };
  std::atomic<bool> cacheUnwritable{false};
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(jobs));
    for (size_t i = 0; i < chipNames.size(); ++i)
      pool.async([&, i] {
        results[i].emplace(buildChipBundle(*groups, chipNames[i], chipOptions,
                                           onStep, &pool, &cacheUnwritable));
      });
    pool.wait();
  }

  BundleResult result;
  for (size_t i = 0; i < chipNames.size(); ++i) {
    llvm::Expected<ChipBundle> &bundle = *results[i];
    if (!bundle) {
      llvm::Error err = bundle.takeError();
      // Drain the other results so every Expected is checked.
      for (size_t j = i + 1; j < chipNames.size(); ++j)
        if (!*results[j])
          llvm::consumeError(results[j]->takeError());
      return std::move(err);
    }
    result.chips.push_back(std::move(*bundle));
  }

  result.manifest = renderManifest(options, result.chips);
  result.header = renderHeader(result.chips);
  std::vector<std::pair<std::string, std::string>> files;
  for (const ChipBundle &chip : result.chips)
    files.emplace_back(chip.chip + ".hsaco", chip.codeObject);
  files.emplace_back(kManifestFileName, result.manifest);
  files.emplace_back(kManifestDigestFileName,
                     renderManifestDigest(result.manifest));
  files.emplace_back(kHeaderFileName, result.header);
  for (const auto &[name, contents] : files) {
    result.bytesWritten += contents.size();
    if (llvm::Error err = (*staged)->writeFile(name, contents))
      return std::move(err);
  }
  if (options.checkBeforePublish)
    if (llvm::Error err = options.checkBeforePublish((*staged)->getPath()))
      return std::move(err);
  if (llvm::Error err = (*staged)->publish())
    return std::move(err);
  result.outputDir = (*staged)->getTarget().str();
  return result;
}
