//===- Bundle.cpp - ahead-of-time generation of kernel bundles ------------===//

#include "mla-fp8/AOT/Bundle.h"

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/AOT/Cache.h"
#include "mla-fp8/AOT/Compile.h"
#include "mla-fp8/Conversion/MLAFP8ToGPU/MLAFP8ToGPU.h"
#include "mla-fp8/Target/Chip.h"
#include "mla-fp8/Target/Serialization.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
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

static llvm::json::Value tileToJSON(const TileConfig &t) {
  return llvm::json::Object{
      {"min_m", t.minM},         {"max_m", t.maxM},
      {"block_m", t.blockM},     {"block_n", t.blockN},
      {"waves", t.waves},        {"mfma", stringifyMfmaShape(t.mfma)},
      {"split_k", t.splitK},     {"stages", t.stages},
      {"occupancy", t.occupancy}};
}

/// Fills each kernel's metadata and instruction statistics from the code
/// object itself, so that cached and fresh bundles are described alike.
static llvm::Error describeKernels(ChipBundle &bundle) {
  llvm::Expected<CodeObjectMetadata> metadata =
      readCodeObjectMetadata(bundle.codeObject);
  if (!metadata)
    return metadata.takeError();
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
          kernel_abi::getNameFields(g.kernel, tile.minM, tile.maxM));
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
      if (llvm::Error err = describeKernels(cached)) {
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
  // Groups alike in their kernel description and planned M (K-up and V-up
  // when kv_lora_rank == qk_nope_head_dim == v_head_dim) define the same
  // kernels, so only the first of them is compiled. Index of the group whose
  // compilation serves each group:
  std::vector<size_t> source(chipGroups.size());
  for (size_t i = 0; i < chipGroups.size(); ++i) {
    source[i] = i;
    for (size_t j = 0; j < i; ++j)
      if (chipGroups[j]->kernel == chipGroups[i]->kernel &&
          chipGroups[j]->maxM == chipGroups[i]->maxM) {
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
  if (llvm::Error err = describeKernels(bundle))
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

/// The kernarg meaning of each explicit argument, by position (DESIGN.md's
/// bare-pointer ABI).
static llvm::StringRef describeArgument(size_t index) {
  static const char *const kMeanings[] = {
      "x: bf16/f16 activations, element (b, m, k) at b*x_stride_b + "
      "m*x_stride_m + k",
      "w: fp8 weights (B, N, K), K contiguous",
      "w_scale: fp32 weight descale, 1 value (per_tensor) or B (per_batch)",
      "bias: (B, N) in the output type, or null",
      "y: output, element (b, m, n) at b*y_stride_b + m*y_stride_m + n",
      "m: number of tokens",
      "x_stride_b: elements",
      "x_stride_m: elements",
      "y_stride_b: elements",
      "y_stride_m: elements",
      "workspace: split-K partial sums and arrival counters, "
      "workspace_bytes_per_block * B * ceil(M/block_m) bytes, zeroed once by "
      "its owner and left zeroed by every launch; may be null when "
      "workspace_bytes_per_block is 0"};
  return index < std::size(kMeanings) ? kMeanings[index] : "";
}

std::string mlir::mlafp8::renderManifest(const BundleOptions &options,
                                         const std::vector<ChipBundle> &chips) {
  const KernelSetOptions &ks = options.kernels;
  llvm::json::Array chipArray;
  for (const ChipBundle &chip : chips) {
    llvm::json::Array kernels;
    for (const BundleKernel &k : chip.kernels) {
      const kernel_abi::KernelDescription &g = k.group.kernel;
      llvm::json::Array args;
      size_t explicitIndex = 0;
      for (const KernelArgMetadata &a : k.metadata.args) {
        bool hidden = llvm::StringRef(a.valueKind).starts_with("hidden_");
        llvm::json::Object arg{{"offset", static_cast<int64_t>(a.offset)},
                               {"size", static_cast<int64_t>(a.size)},
                               {"kind", a.valueKind}};
        if (!hidden)
          arg["meaning"] = describeArgument(explicitIndex++);
        args.push_back(std::move(arg));
      }
      int64_t wgSize = k.tile.waves * 64;
      kernels.push_back(llvm::json::Object{
          {"symbol", k.symbol},
          {"projection", k.group.projection},
          {"n", g.n},
          {"k", g.k},
          {"group_size", g.groupSize},
          {"batches", llvm::json::Array(k.group.batches)},
          {"tp", llvm::json::Array(k.group.tp)},
          {"in_type", g.inType},
          {"fp8_type", g.fp8Type},
          {"out_type", g.outType},
          {"has_bias", g.hasBias},
          {"w_scale", llvm::StringRef(
                          kernel_abi::stringifyWeightScaleMode(g.weightScale))},
          {"min_m", k.tile.minM},
          {"max_m", k.tile.maxM},
          {"tile", tileToJSON(k.tile)},
          {"workgroup_size", llvm::json::Array{wgSize, 1, 1}},
          {"grid",
           llvm::json::Object{
               {"x", llvm::divideCeil(g.n, k.tile.blockN) * k.tile.splitK},
               {"y", llvm::formatv("ceil(M/{0})", k.tile.blockM).str()},
               {"z", "B"}}},
          {"workspace_bytes_per_block", getWorkspaceBytesPerBlock(k.tile, g.n)},
          {"lds_bytes", static_cast<int64_t>(k.metadata.groupSegmentFixedSize)},
          {"scratch_bytes",
           static_cast<int64_t>(k.metadata.privateSegmentFixedSize)},
          {"vgprs", k.metadata.vgprCount},
          {"agprs", k.metadata.agprCount},
          {"sgprs", k.metadata.sgprCount},
          {"vgpr_spills", k.metadata.vgprSpillCount},
          {"sgpr_spills", k.metadata.sgprSpillCount},
          {"instructions", k.stats.numInstructions},
          {"mfma_instructions", k.stats.numMfma},
          {"kernarg_size", static_cast<int64_t>(k.metadata.kernargSegmentSize)},
          {"kernarg_align",
           static_cast<int64_t>(k.metadata.kernargSegmentAlign)},
          {"args", std::move(args)}});
    }
    chipArray.push_back(llvm::json::Object{
        {"chip", chip.chip},
        {"code_object", chip.chip + ".hsaco"},
        {"sha256", chip.contentHash},
        {"bytes", static_cast<int64_t>(chip.codeObject.size())},
        {"kernels", std::move(kernels)}});
  }
  llvm::json::Object root{{"schema_version", kManifestSchemaVersion},
                          {"compiler", "mla-fp8"},
                          {"compiler_version", getCompilerVersion()},
                          {"model", ks.model},
                          {"heads", ks.dims.heads},
                          {"kv_lora_rank", ks.dims.kvLoraRank},
                          {"qk_nope_head_dim", ks.dims.qkNopeHeadDim},
                          {"v_head_dim", ks.dims.vHeadDim},
                          {"max_m", ks.maxM},
                          {"chips", std::move(chipArray)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return text;
}

std::string mlir::mlafp8::renderHeader(const std::vector<ChipBundle> &chips) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "/* Generated by mla-fp8-aot " << getCompilerVersion()
     << ". Do not edit. */\n"
        "#ifndef MLA_FP8_KERNELS_H\n#define MLA_FP8_KERNELS_H\n\n"
        "#include <stdint.h>\n\n"
        "/* Kernel arguments, in kernarg order: x, w, w_scale, bias (or null), "
        "y (pointers),\n   then m, x_stride_b, x_stride_m, y_stride_b, "
        "y_stride_m, workspace (see manifest.json\n   for offsets). Grid: "
        "(ceil(n/block_n) * split_k, ceil(M/block_m), B). */\n"
        "typedef struct mla_fp8_kernel {\n"
        "  const char *chip;        /* code object: <chip>.hsaco */\n"
        "  const char *symbol;\n"
        "  const char *projection;  /* \"k_up\" or \"v_up\" */\n"
        "  int32_t n, k, group_size;\n"
        "  const char *fp8_type, *out_type, *w_scale;\n"
        "  int32_t min_m, max_m;    /* max_m 0: no upper bound */\n"
        "  int32_t block_m, block_n, split_k, workgroup_size;\n"
        "  uint32_t lds_bytes, kernarg_size;\n"
        "  /* split-K workspace: this many bytes per (batch, M tile), zeroed "
        "once, 0 = none */\n"
        "  uint32_t workspace_bytes_per_block;\n"
        "  int32_t has_bias;        /* adds the (B, N) bias argument */\n"
        "} mla_fp8_kernel;\n\n"
        "static const mla_fp8_kernel mla_fp8_kernels[] = {\n";
  size_t count = 0;
  for (const ChipBundle &chip : chips)
    for (const BundleKernel &k : chip.kernels) {
      const kernel_abi::KernelDescription &g = k.group.kernel;
      os << llvm::formatv(
          "  {\"{0}\", \"{1}\", \"{2}\", {3}, {4}, {5}, \"{6}\", \"{7}\", "
          "\"{8}\", {9}, {10}, {11}, {12}, {13}, {14}, {15}u, {16}u, "
          "{17}u, {18}},\n",
          chip.chip, k.symbol, k.group.projection, g.n, g.k, g.groupSize,
          g.fp8Type, g.outType,
          llvm::StringRef(kernel_abi::stringifyWeightScaleMode(g.weightScale)),
          k.tile.minM, k.tile.maxM, k.tile.blockM, k.tile.blockN, k.tile.splitK,
          k.tile.waves * 64, k.metadata.groupSegmentFixedSize,
          k.metadata.kernargSegmentSize, getWorkspaceBytesPerBlock(k.tile, g.n),
          g.hasBias ? 1 : 0);
      ++count;
    }
  os << "};\n\nenum { mla_fp8_num_kernels = " << count
     << " };\n\n#endif /* MLA_FP8_KERNELS_H */\n";
  return text;
}

llvm::Expected<BundleResult>
mlir::mlafp8::generateBundle(const BundleOptions &options) {
  llvm::Expected<std::vector<KernelGroupSpec>> groups =
      buildKernelSet(options.kernels);
  if (!groups)
    return groups.takeError();

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
