//===- Bundle.cpp - ahead-of-time generation of kernel bundles ------------===//

#include "mla-fp8/AOT/Bundle.h"

#include "mla-fp8/AOT/Compile.h"
#include "mla-fp8/Conversion/MLAFP8ToGPU/MLAFP8ToGPU.h"
#include "mla-fp8/Target/Chip.h"
#include "mla-fp8/Target/Serialization.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <mutex>
#include <unistd.h>

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

const std::string &mlir::mlafp8::getCompilerFingerprint() {
  static const std::string fingerprint = [] {
    std::string id = llvm::formatv("mla-fp8 {0}; LLVM {1}",
                                   MLAFP8_VERSION_STRING, LLVM_VERSION_STRING)
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

std::string
mlir::mlafp8::computeChipCacheKey(const std::vector<KernelGroupSpec> &groups,
                                  llvm::StringRef chip) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "fingerprint=" << getCompilerFingerprint() << "\nchip=" << chip << "\n";
  for (const KernelGroupSpec &g : groups)
    if (g.chip == chip)
      os << "group=" << g.getBaseName() << " n=" << g.shape.n
         << " k=" << g.shape.k << " g=" << g.groupSize << " fp8=" << g.fp8Type
         << " in=" << g.inType << " out=" << g.outType
         << " ws=" << static_cast<int>(g.weightScale) << " maxm=" << g.maxM
         << " bias=" << g.hasBias << "\n";
  return sha256Hex(text);
}

/// Writes `contents` to `path` through a temporary file in the same directory
/// and a rename, so readers never see a partial file.
static llvm::Error writeFileAtomically(llvm::StringRef path,
                                       llvm::StringRef contents) {
  llvm::SmallString<256> temp(path);
  temp += ".tmp-%%%%%%";
  int fd;
  llvm::SmallString<256> tempPath;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(temp, fd, tempPath))
    return makeError("cannot create '" + tempPath + "': " + ec.message());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << contents;
    os.close();
    if (os.has_error()) {
      llvm::sys::fs::remove(tempPath);
      return makeError("cannot write '" + tempPath +
                       "': " + os.error().message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tempPath, path)) {
    llvm::sys::fs::remove(tempPath);
    return makeError("cannot rename '" + tempPath + "' to '" + path +
                     "': " + ec.message());
  }
  return llvm::Error::success();
}

static llvm::json::Value tileToJSON(const TileConfig &t) {
  return llvm::json::Object{
      {"min_m", t.minM},         {"max_m", t.maxM},
      {"block_m", t.blockM},     {"block_n", t.blockN},
      {"waves", t.waves},        {"mfma", stringifyMfmaShape(t.mfma)},
      {"split_k", t.splitK},     {"stages", t.stages},
      {"occupancy", t.occupancy}};
}

static std::optional<TileConfig> tileFromJSON(const llvm::json::Object &o) {
  TileConfig t{};
  auto get = [&](llvm::StringRef key, int64_t &out) {
    std::optional<int64_t> v = o.getInteger(key);
    if (v)
      out = *v;
    return v.has_value();
  };
  std::optional<llvm::StringRef> mfma = o.getString("mfma");
  if (!get("min_m", t.minM) || !get("max_m", t.maxM) ||
      !get("block_m", t.blockM) || !get("block_n", t.blockN) ||
      !get("waves", t.waves) || !get("split_k", t.splitK) ||
      !get("stages", t.stages) || !get("occupancy", t.occupancy) || !mfma)
    return std::nullopt;
  std::optional<MfmaShape> shape = symbolizeMfmaShape(*mfma);
  if (!shape)
    return std::nullopt;
  t.mfma = *shape;
  return t;
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

/// Reads a chip bundle from the cache; nullopt when absent or unreadable (a
/// damaged entry is rebuilt, not trusted).
static std::optional<ChipBundle>
readCachedChipBundle(const std::vector<KernelGroupSpec> &groups,
                     llvm::StringRef chip, llvm::StringRef cacheDir,
                     const std::string &key) {
  llvm::SmallString<256> objectPath(cacheDir), indexPath(cacheDir);
  llvm::sys::path::append(objectPath, key + ".hsaco");
  llvm::sys::path::append(indexPath, key + ".json");
  auto object = llvm::MemoryBuffer::getFile(objectPath);
  auto index = llvm::MemoryBuffer::getFile(indexPath);
  if (!object || !index)
    return std::nullopt;
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*index)->getBuffer());
  if (!json) {
    llvm::consumeError(json.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *root = json->getAsObject();
  const llvm::json::Array *kernels = root ? root->getArray("kernels") : nullptr;
  if (!kernels)
    return std::nullopt;
  ChipBundle bundle;
  bundle.chip = chip.str();
  bundle.codeObject = (*object)->getBuffer().str();
  bundle.cacheKey = key;
  bundle.fromCache = true;
  for (const llvm::json::Value &v : *kernels) {
    const llvm::json::Object *k = v.getAsObject();
    if (!k)
      return std::nullopt;
    std::optional<llvm::StringRef> symbol = k->getString("symbol");
    std::optional<llvm::StringRef> base = k->getString("group");
    const llvm::json::Object *tile = k->getObject("tile");
    if (!symbol || !base || !tile)
      return std::nullopt;
    auto group = llvm::find_if(groups, [&](const KernelGroupSpec &g) {
      return g.chip == chip && g.getBaseName() == *base;
    });
    std::optional<TileConfig> tileInfo = tileFromJSON(*tile);
    if (group == groups.end() || !tileInfo)
      return std::nullopt;
    bundle.kernels.push_back({symbol->str(), *group, *tileInfo, {}, {}});
  }
  if (llvm::Error err = describeKernels(bundle)) {
    llvm::consumeError(std::move(err));
    return std::nullopt;
  }
  return bundle;
}

static llvm::Error writeCachedChipBundle(const ChipBundle &bundle,
                                         llvm::StringRef cacheDir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(cacheDir))
    return makeError("cannot create cache directory '" + cacheDir +
                     "': " + ec.message());
  llvm::json::Array kernels;
  for (const BundleKernel &k : bundle.kernels)
    kernels.push_back(llvm::json::Object{{"symbol", k.symbol},
                                         {"group", k.group.getBaseName()},
                                         {"tile", tileToJSON(k.tile)}});
  std::string index;
  llvm::raw_string_ostream os(index);
  os << llvm::json::Value(llvm::json::Object{{"kernels", std::move(kernels)}});
  llvm::SmallString<256> objectPath(cacheDir), indexPath(cacheDir);
  llvm::sys::path::append(objectPath, bundle.cacheKey + ".hsaco");
  llvm::sys::path::append(indexPath, bundle.cacheKey + ".json");
  // The object first: an index without its object is never read as a hit.
  if (llvm::Error err = writeFileAtomically(objectPath, bundle.codeObject))
    return err;
  return writeFileAtomically(indexPath, index);
}

llvm::Expected<ChipBundle> mlir::mlafp8::buildChipBundle(
    const std::vector<KernelGroupSpec> &groups, llvm::StringRef chipName,
    const BundleOptions &options, const BundleStepCallback &onStep,
    llvm::ThreadPoolInterface *pool) {
  const ChipInfo *chip = lookupChip(chipName);
  if (!chip)
    return makeError(describeUnsupportedChip(chipName));
  std::string key = computeChipCacheKey(groups, chipName);
  if (!options.cacheDir.empty())
    if (std::optional<ChipBundle> cached =
            readCachedChipBundle(groups, chipName, options.cacheDir, key)) {
      if (onStep)
        onStep(chipName.str() + " (cached)",
               llvm::count_if(groups,
                              [&](const KernelGroupSpec &g) {
                                return g.chip == chipName;
                              }) +
                   1,
               /*cached=*/true);
      return std::move(*cached);
    }

  ChipBundle bundle;
  bundle.chip = chipName.str();
  bundle.cacheKey = key;

  // Lower the chip's groups concurrently, each in its own contexts, handing
  // the results over as bitcode; link them in group order so that the code
  // object does not depend on which finished first.
  std::vector<const KernelGroupSpec *> chipGroups;
  for (const KernelGroupSpec &group : groups)
    if (group.chip == chipName)
      chipGroups.push_back(&group);
  struct Lowered {
    std::string bitcode, error;
    std::vector<std::pair<std::string, TileConfig>> kernels;
  };
  std::vector<Lowered> lowered(chipGroups.size());
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
      onStep(chipName.str() + " " + group.shape.name +
                 (group.hasBias ? " bias" : ""),
             1, /*cached=*/false);
  };
  if (pool) {
    llvm::ThreadPoolTaskGroup tasks(*pool);
    for (size_t i = 0; i < chipGroups.size(); ++i)
      tasks.async([&lower, i] { lower(i); });
    tasks.wait();
  } else {
    for (size_t i = 0; i < chipGroups.size(); ++i)
      lower(i);
  }

  llvm::LLVMContext llvmContext;
  auto linked =
      std::make_unique<llvm::Module>("mla_fp8_" + bundle.chip, llvmContext);
  llvm::Linker linker(*linked);
  for (size_t i = 0; i < chipGroups.size(); ++i) {
    const KernelGroupSpec &group = *chipGroups[i];
    if (!lowered[i].error.empty())
      return makeError(lowered[i].error);
    llvm::Expected<std::unique_ptr<llvm::Module>> module =
        llvm::parseBitcodeFile(
            llvm::MemoryBufferRef(lowered[i].bitcode, group.getBaseName()),
            llvmContext);
    if (!module)
      return module.takeError();
    if (linker.linkInModule(std::move(*module)))
      return makeError("cannot link the LLVM IR of " + group.getBaseName());
    for (auto &[symbol, tile] : lowered[i].kernels)
      bundle.kernels.push_back({symbol, group, tile, {}, {}});
  }
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
  if (!options.cacheDir.empty())
    if (llvm::Error err = writeCachedChipBundle(bundle, options.cacheDir))
      return std::move(err);
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
      const KernelGroupSpec &g = k.group;
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
          {"projection", g.shape.name},
          {"n", g.shape.n},
          {"k", g.shape.k},
          {"group_size", g.groupSize},
          {"batches", llvm::json::Array(g.shape.batches)},
          {"tp", llvm::json::Array(g.shape.tp)},
          {"in_type", g.inType},
          {"fp8_type", g.fp8Type},
          {"out_type", g.outType},
          {"has_bias", g.hasBias},
          {"w_scale", g.weightScale == WeightScale::PerTensor ? "per_tensor"
                                                              : "per_batch"},
          {"min_m", k.tile.minM},
          {"max_m", k.tile.maxM},
          {"tile", tileToJSON(k.tile)},
          {"workgroup_size", llvm::json::Array{wgSize, 1, 1}},
          {"grid",
           llvm::json::Object{
               {"x",
                llvm::divideCeil(g.shape.n, k.tile.blockN) * k.tile.splitK},
               {"y", llvm::formatv("ceil(M/{0})", k.tile.blockM).str()},
               {"z", "B"}}},
          {"workspace_bytes_per_block",
           getWorkspaceBytesPerBlock(k.tile, g.shape.n)},
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
      const KernelGroupSpec &g = k.group;
      os << llvm::formatv(
          "  {\"{0}\", \"{1}\", \"{2}\", {3}, {4}, {5}, \"{6}\", \"{7}\", "
          "\"{8}\", {9}, {10}, {11}, {12}, {13}, {14}, {15}u, {16}u, "
          "{17}u, {18}},\n",
          chip.chip, k.symbol, g.shape.name, g.shape.n, g.shape.k, g.groupSize,
          g.fp8Type, g.outType,
          g.weightScale == WeightScale::PerTensor ? "per_tensor" : "per_batch",
          k.tile.minM, k.tile.maxM, k.tile.blockM, k.tile.blockN, k.tile.splitK,
          k.tile.waves * 64, k.metadata.groupSegmentFixedSize,
          k.metadata.kernargSegmentSize,
          getWorkspaceBytesPerBlock(k.tile, g.shape.n), g.hasBias ? 1 : 0);
      ++count;
    }
  os << "};\n\nenum { mla_fp8_num_kernels = " << count
     << " };\n\n#endif /* MLA_FP8_KERNELS_H */\n";
  return text;
}

llvm::Error mlir::mlafp8::writeDirectoryAtomically(
    llvm::StringRef dir,
    const std::vector<std::pair<std::string, std::string>> &files,
    const std::function<llvm::Error(llvm::StringRef)> &check) {
  llvm::SmallString<256> target(dir);
  llvm::sys::path::remove_dots(target, /*remove_dot_dot=*/true);
  llvm::StringRef parent = llvm::sys::path::parent_path(target);
  if (parent.empty())
    parent = ".";
  if (std::error_code ec = llvm::sys::fs::create_directories(parent))
    return makeError("cannot create output directory '" + parent +
                     "': " + ec.message());
  llvm::SmallString<256> staging;
  std::string model =
      (parent + "/." + llvm::sys::path::filename(target) + ".tmp-%%%%%%").str();
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(model, staging))
    return makeError("cannot write to output directory '" + parent +
                     "': " + ec.message());
  auto cleanup = [&] { llvm::sys::fs::remove_directories(staging); };
  // Unique directories are created private; a bundle is as readable as any
  // directory the user creates.
  llvm::sys::fs::setPermissions(
      staging, static_cast<llvm::sys::fs::perms>(llvm::sys::fs::all_all &
                                                 ~llvm::sys::fs::getUmask()));
  for (const auto &[name, contents] : files) {
    llvm::SmallString<256> path(staging);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (!ec) {
      os << contents;
      os.close();
      ec = os.error();
    }
    if (ec) {
      cleanup();
      return makeError("cannot write '" + path + "': " + ec.message());
    }
  }
  if (check)
    if (llvm::Error err = check(staging)) {
      cleanup();
      return err;
    }
  // Swap the directories: the old bundle stays whole until the new one is.
  llvm::SmallString<256> old;
  bool hadOld = llvm::sys::fs::exists(target);
  if (hadOld) {
    if (!llvm::sys::fs::is_directory(target)) {
      cleanup();
      return makeError("output path '" + target + "' is not a directory");
    }
    old = staging;
    old += ".old";
    if (std::error_code ec = llvm::sys::fs::rename(target, old)) {
      cleanup();
      return makeError("cannot replace '" + target + "': " + ec.message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(staging, target)) {
    if (hadOld)
      llvm::sys::fs::rename(old, target);
    cleanup();
    return makeError("cannot move the bundle into '" + target +
                     "': " + ec.message());
  }
  if (hadOld)
    llvm::sys::fs::remove_directories(old);
  return llvm::Error::success();
}

llvm::Expected<BundleResult>
mlir::mlafp8::generateBundle(const BundleOptions &options) {
  llvm::Expected<std::vector<KernelGroupSpec>> groups =
      buildKernelSet(options.kernels);
  if (!groups)
    return groups.takeError();

  std::vector<std::string> chipNames;
  for (const KernelGroupSpec &g : *groups)
    if (!llvm::is_contained(chipNames, g.chip))
      chipNames.push_back(g.chip);

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
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(jobs));
    for (size_t i = 0; i < chipNames.size(); ++i)
      pool.async([&, i] {
        results[i].emplace(
            buildChipBundle(*groups, chipNames[i], options, onStep, &pool));
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
  files.emplace_back("manifest.json", result.manifest);
  files.emplace_back("mla_fp8_kernels.h", result.header);
  for (const auto &file : files)
    result.bytesWritten += file.second.size();
  if (llvm::Error err = writeDirectoryAtomically(options.outputDir, files,
                                                 options.checkBeforePublish))
    return std::move(err);
  return result;
}
