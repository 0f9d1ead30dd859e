//===- BundleLoader.cpp - load an AOT kernel bundle at run time -----------===//
//
// The loader trusts nothing it reads: the manifest is checked against its
// digest, every field is range-checked, and every fact the code object's own
// metadata states (the symbol, kernarg layout, LDS, scratch, workgroup size)
// or the kernel ABI implies (the symbol's name, grid, workspace) must agree
// with the manifest. docs/manifest.md lists the checks.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Runtime/Bundle.h"

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/CodeObject/File.h"
#include "mla-fp8/CodeObject/Metadata.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <limits>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;
namespace json = llvm::json;

uint64_t GridDim::evaluate(int64_t m, int64_t b) const {
  if (kind == Kind::Constant)
    return static_cast<uint64_t>(std::max<int64_t>(value, 0));
  uint64_t var =
      static_cast<uint64_t>(std::max<int64_t>(kind == Kind::M ? m : b, 0));
  uint64_t divisor = static_cast<uint64_t>(std::max<int64_t>(value, 1));
  // var / divisor rounded up, without forming var + divisor - 1.
  return var / divisor + (var % divisor != 0);
}

std::array<uint64_t, 3> KernelEntry::getGrid(int64_t m, int64_t b) const {
  return {grid[0].evaluate(m, b), grid[1].evaluate(m, b),
          grid[2].evaluate(m, b)};
}

std::string KernelEntry::checkLaunch(int64_t m, int64_t b) const {
  if (m < 0 || b < 0)
    return "M and B must not be negative";
  if (m > kMaxManifestM)
    return "M = " + std::to_string(m) + " is above the largest M a kernel " +
           "indexes, " + std::to_string(kMaxManifestM);
  if (workgroupSize[0] == 0 || workgroupSize[1] == 0 || workgroupSize[2] == 0)
    return "kernel '" + symbol + "' has no workgroup size";
  std::array<uint64_t, 3> dims = getGrid(m, b);
  const char *names[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    // The dispatch packet holds work-items per dimension in 32 bits.
    if (dims[i] > std::numeric_limits<uint32_t>::max() / workgroupSize[i])
      return "grid." + std::string(names[i]) + " = " + std::to_string(dims[i]) +
             " workgroups of " + std::to_string(workgroupSize[i]) +
             " work-items does not fit in 32 bits";
  }
  if (getWorkspaceBytes(m, b) == std::numeric_limits<uint64_t>::max())
    return "the split-K workspace for M = " + std::to_string(m) +
           ", B = " + std::to_string(b) + " does not fit in 64 bits";
  return "";
}

const KernelArg *KernelEntry::findArg(std::string_view name) const {
  for (const KernelArg &arg : args)
    if (arg.name == name)
      return &arg;
  return nullptr;
}

const LoadedChip *LoadedBundle::findChip(std::string_view chip) const {
  for (const LoadedChip &c : chips)
    if (c.chip == chip)
      return &c;
  return nullptr;
}

const KernelEntry *LoadedBundle::findKernel(const KernelQuery &q) const {
  const LoadedChip *chip = findChip(q.chip);
  if (!chip || q.m < 0)
    return nullptr;
  const KernelEntry *lowest = nullptr;
  kernel_abi::KernelDescription wanted = q;
  for (const KernelEntry &e : chip->kernels) {
    wanted.fp8Type = e.fp8Type;
    if (wanted != e)
      continue;
    if (q.m > 0 && e.servesM(q.m))
      return &e;
    if (!lowest || e.minM < lowest->minM)
      lowest = &e;
  }
  // M = 0 launches nothing; any kernel of the shape describes that (empty)
  // launch, and a launcher should not mistake it for an unsupported shape.
  return q.m == 0 ? lowest : nullptr;
}

const KernelEntry *LoadedBundle::findKernel(std::string_view chip, int64_t n,
                                            int64_t k, int64_t m,
                                            std::string_view outType,
                                            std::string_view wScale,
                                            int64_t groupSize) const {
  std::optional<kernel_abi::WeightScaleMode> mode =
      kernel_abi::parseWeightScaleMode(wScale);
  if (!mode)
    return nullptr;
  KernelQuery q;
  q.chip = std::string(chip);
  q.n = n;
  q.k = k;
  q.m = m;
  q.outType = std::string(outType);
  q.weightScale = *mode;
  q.groupSize = groupSize;
  return findKernel(q);
}

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {
/// Reads typed fields out of the manifest and remembers the first error, so
/// that every message names the manifest file and the field's JSON path.
class ManifestReader {
public:
  explicit ManifestReader(llvm::StringRef file) : file(file.str()) {}

  bool failed() const { return !message.empty(); }
  llvm::Error takeError() const { return makeError(file + ": " + message); }
  void fail(const std::string &path, const llvm::Twine &what) {
    if (message.empty())
      message = "field '" + path + "': " + what.str();
  }

  const json::Value *get(const json::Object &o, llvm::StringRef key,
                         const std::string &path) {
    const json::Value *v = o.get(key);
    if (!v)
      fail(join(path, key), "missing");
    return v;
  }
  /// An integer in [min, max].
  int64_t getInt(const json::Object &o, llvm::StringRef key,
                 const std::string &path, int64_t min, int64_t max) {
    const json::Value *v = get(o, key, path);
    if (!v)
      return 0;
    std::optional<int64_t> i = v->getAsInteger();
    if (!i)
      fail(join(path, key), "expected an integer");
    else if (*i < min || *i > max)
      fail(join(path, key),
           llvm::formatv("expected an integer in [{0}, {1}], got {2}", min, max,
                         *i));
    return (i && *i >= min && *i <= max) ? *i : 0;
  }
  std::string getString(const json::Object &o, llvm::StringRef key,
                        const std::string &path) {
    const json::Value *v = get(o, key, path);
    if (!v)
      return "";
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s)
      fail(join(path, key), "expected a string");
    return s ? s->str() : "";
  }
  /// A string that is one of `choices`.
  std::string getChoice(const json::Object &o, llvm::StringRef key,
                        const std::string &path,
                        std::initializer_list<llvm::StringRef> choices) {
    std::string s = getString(o, key, path);
    if (failed() || llvm::is_contained(choices, s))
      return s;
    std::string list;
    for (llvm::StringRef c : choices)
      list += (list.empty() ? "\"" : ", \"") + c.str() + "\"";
    fail(join(path, key), "expected one of " + list + ", got \"" + s + "\"");
    return "";
  }
  bool getBool(const json::Object &o, llvm::StringRef key,
               const std::string &path) {
    const json::Value *v = get(o, key, path);
    std::optional<bool> b = v ? v->getAsBoolean() : std::nullopt;
    if (v && !b)
      fail(join(path, key), "expected true or false");
    return b.value_or(false);
  }
  const json::Object *getObject(const json::Object &o, llvm::StringRef key,
                                const std::string &path) {
    const json::Value *v = get(o, key, path);
    const json::Object *obj = v ? v->getAsObject() : nullptr;
    if (v && !obj)
      fail(join(path, key), "expected an object");
    return obj;
  }
  /// An array of at most `maxSize` elements.
  const json::Array *getArray(const json::Object &o, llvm::StringRef key,
                              const std::string &path, size_t maxSize) {
    const json::Value *v = get(o, key, path);
    const json::Array *arr = v ? v->getAsArray() : nullptr;
    if (v && !arr)
      fail(join(path, key), "expected an array");
    if (arr && arr->size() > maxSize) {
      fail(join(path, key), llvm::formatv("{0} entries, more than the limit "
                                          "of {1}",
                                          arr->size(), maxSize));
      return nullptr;
    }
    return arr;
  }

  static std::string join(const std::string &path, llvm::StringRef key) {
    return path.empty() ? key.str() : path + "." + key.str();
  }
  static std::string index(const std::string &path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

private:
  std::string file;
  std::string message;
};
} // namespace

/// Parses one grid dimension: an integer, "M", "B" or "ceil(M/<n>)" /
/// "ceil(B/<n>)" with 1 <= n < 2^32, constants below 2^32.
static std::optional<GridDim> parseGridDim(const json::Value &v) {
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  if (std::optional<int64_t> i = v.getAsInteger()) {
    if (*i < 0 || *i > kMax)
      return std::nullopt;
    return GridDim{GridDim::Kind::Constant, *i};
  }
  std::optional<llvm::StringRef> s = v.getAsString();
  if (!s)
    return std::nullopt;
  llvm::StringRef text = s->trim();
  auto varKind = [](llvm::StringRef var) -> std::optional<GridDim::Kind> {
    if (var == "M")
      return GridDim::Kind::M;
    if (var == "B")
      return GridDim::Kind::B;
    return std::nullopt;
  };
  if (std::optional<GridDim::Kind> kind = varKind(text))
    return GridDim{*kind, 1};
  if (!text.consume_front("ceil(") || !text.consume_back(")"))
    return std::nullopt;
  auto [var, divisor] = text.split('/');
  std::optional<GridDim::Kind> kind = varKind(var.trim());
  // getAsInteger fails on overflow rather than wrapping.
  uint64_t d;
  if (!kind || divisor.trim().getAsInteger(10, d) || d < 1 ||
      d > uint64_t(kMax))
    return std::nullopt;
  return GridDim{*kind, int64_t(d)};
}

static std::string describeGridDim(const GridDim &d) {
  switch (d.kind) {
  case GridDim::Kind::Constant:
    return std::to_string(d.value);
  case GridDim::Kind::M:
  case GridDim::Kind::B: {
    std::string var = d.kind == GridDim::Kind::M ? "M" : "B";
    return d.value == 1
               ? "\"" + var + "\""
               : "\"ceil(" + var + "/" + std::to_string(d.value) + ")\"";
  }
  }
  return "";
}

namespace {
/// A chip the loader knows: its fp8 format.
struct ChipFacts {
  llvm::StringRef chip;
  llvm::StringRef fp8Type;
};
} // namespace

static const ChipFacts kChips[] = {{"gfx942", "f8E4M3FNUZ"},
                                   {"gfx950", "f8E4M3FN"}};

static const ChipFacts *lookupChip(llvm::StringRef chip) {
  for (const ChipFacts &facts : kChips)
    if (facts.chip == chip)
      return &facts;
  return nullptr;
}

/// Reads every field of one kernel entry, range-checked.
static void readKernel(ManifestReader &r, const json::Object &o,
                       const std::string &path, KernelEntry &e) {
  using R = ManifestReader;
  e.symbol = r.getString(o, "symbol", path);
  e.projection = r.getChoice(o, "projection", path, {"k_up", "v_up"});
  e.n = r.getInt(o, "n", path, 1, kMaxManifestN);
  e.k = r.getInt(o, "k", path, 1, kMaxManifestK);
  e.groupSize = r.getInt(o, "group_size", path, 1, kMaxManifestGroupSize);
  if (!r.failed() && (e.groupSize & (e.groupSize - 1)))
    r.fail(R::join(path, "group_size"),
           llvm::formatv("expected a power of two, got {0}", e.groupSize));
  // The generator emits bf16 activations only, and the symbol does not name
  // the input type: a kernel claiming another would run on the wrong bits.
  e.inType = r.getChoice(o, "in_type", path, {"bf16"});
  e.fp8Type = r.getString(o, "fp8_type", path);
  e.outType = r.getChoice(o, "out_type", path, {"bf16", "f16"});
  e.weightScale =
      kernel_abi::parseWeightScaleMode(
          r.getChoice(o, "w_scale", path, {"per_tensor", "per_batch"}))
          .value_or(kernel_abi::WeightScaleMode::PerTensor);
  e.hasBias = r.getBool(o, "has_bias", path);
  e.minM = r.getInt(o, "min_m", path, 1, kMaxManifestM);
  e.maxM = r.getInt(o, "max_m", path, 0, kMaxManifestM);
  if (!r.failed() && e.maxM != 0 && e.maxM < e.minM)
    r.fail(R::join(path, "max_m"),
           llvm::formatv("{0} is below min_m {1}", e.maxM, e.minM));
  if (const json::Object *tile = r.getObject(o, "tile", path)) {
    std::string tilePath = R::join(path, "tile");
    using kernel_abi::kMaxSplitK;
    using kernel_abi::kMaxTileDim;
    e.blockM = r.getInt(*tile, "block_m", tilePath, 1, kMaxTileDim);
    e.blockN = r.getInt(*tile, "block_n", tilePath, 1, kMaxTileDim);
    e.waves = r.getInt(*tile, "waves", tilePath, 1, kernel_abi::kMaxWaves);
    e.splitK = r.getInt(*tile, "split_k", tilePath, 1, kMaxSplitK);
    r.getInt(*tile, "stages", tilePath, 1, 64);
    r.getInt(*tile, "occupancy", tilePath, 1, 64);
    r.getString(*tile, "mfma", tilePath);
    if (r.getInt(*tile, "min_m", tilePath, 1, kMaxManifestM) != e.minM &&
        !r.failed())
      r.fail(R::join(tilePath, "min_m"), "differs from the kernel's min_m");
    if (r.getInt(*tile, "max_m", tilePath, 0, kMaxManifestM) != e.maxM &&
        !r.failed())
      r.fail(R::join(tilePath, "max_m"), "differs from the kernel's max_m");
  }
  if (const json::Array *wg = r.getArray(o, "workgroup_size", path, 3)) {
    std::string wgPath = R::join(path, "workgroup_size");
    if (wg->size() != 3)
      r.fail(wgPath, "expected 3 integers");
    for (size_t i = 0; i < std::min<size_t>(wg->size(), 3); ++i) {
      std::optional<int64_t> v = (*wg)[i].getAsInteger();
      if (!v || *v < 1 || *v > 1024)
        r.fail(R::index(wgPath, i), "expected an integer in [1, 1024]");
      else
        e.workgroupSize[i] = static_cast<uint32_t>(*v);
    }
  }
  if (const json::Object *grid = r.getObject(o, "grid", path)) {
    std::string gridPath = R::join(path, "grid");
    const char *names[] = {"x", "y", "z"};
    for (int i = 0; i < 3; ++i) {
      const json::Value *v = r.get(*grid, names[i], gridPath);
      if (!v)
        continue;
      std::optional<GridDim> dim = parseGridDim(*v);
      if (!dim)
        r.fail(R::join(gridPath, names[i]),
               "expected an integer below 2^32, \"M\", \"B\" or "
               "\"ceil(M/<n>)\" with 1 <= n < 2^32");
      else
        e.grid[i] = *dim;
    }
  }
  e.kernargSize =
      r.getInt(o, "kernarg_size", path, 1, kMaxManifestKernargBytes);
  e.kernargAlign = r.getInt(o, "kernarg_align", path, 1, 256);
  if (!r.failed() && (e.kernargAlign & (e.kernargAlign - 1)))
    r.fail(R::join(path, "kernarg_align"), "expected a power of two");
  e.ldsBytes = r.getInt(o, "lds_bytes", path, 0, kMaxManifestLdsBytes);
  e.scratchBytes =
      r.getInt(o, "scratch_bytes", path, 0, kMaxManifestScratchBytes);
  // Bounded by what any tile within the limits above implies; checked
  // against the tile below.
  e.workspaceBytesPerBlock =
      r.getInt(o, "workspace_bytes_per_block", path, 0, int64_t(1) << 50);
  const json::Array *args = r.getArray(o, "args", path, kMaxManifestArgs);
  if (!args || r.failed())
    return;
  std::string argsPath = R::join(path, "args");
  size_t explicitCount = 0;
  for (size_t i = 0; i < args->size() && !r.failed(); ++i) {
    std::string argPath = R::index(argsPath, i);
    const json::Object *a = (*args)[i].getAsObject();
    if (!a) {
      r.fail(argPath, "expected an object");
      break;
    }
    KernelArg arg;
    arg.offset = r.getInt(*a, "offset", argPath, 0, kMaxManifestKernargBytes);
    arg.size = r.getInt(*a, "size", argPath, 1, kMaxManifestKernargBytes);
    arg.kind = r.getString(*a, "kind", argPath);
    if (r.failed())
      break;
    if (uint64_t(arg.offset) + arg.size > e.kernargSize) {
      r.fail(argPath, llvm::formatv("ends at {0}, past kernarg_size {1}",
                                    arg.offset + arg.size, e.kernargSize));
      break;
    }
    if (arg.isHidden()) {
      arg.name = arg.kind;
    } else {
      // Explicit arguments come first, in the ABI's order: the position
      // names them; `meaning`, when given, must agree.
      if (explicitCount >= kernel_abi::getKernelArgs().size() ||
          explicitCount != i) {
        r.fail(argPath, "an explicit argument after the kernel ABI's " +
                            std::to_string(kernel_abi::getKernelArgs().size()));
        break;
      }
      const kernel_abi::KernelArg &expected =
          kernel_abi::getKernelArgs()[explicitCount++];
      llvm::StringRef valueKind =
          kernel_abi::getMetadataValueKind(expected.kind);
      arg.name = std::string(expected.name);
      if (arg.offset != expected.offset || arg.size != expected.size ||
          arg.kind != valueKind) {
        r.fail(argPath, llvm::formatv("expected the ABI's '{0}' argument: "
                                      "offset {1}, size {2}, kind {3}",
                                      expected.name, expected.offset,
                                      expected.size, valueKind));
        break;
      }
      if (const json::Value *meaning = a->get("meaning")) {
        std::optional<llvm::StringRef> text = meaning->getAsString();
        if (!text) {
          r.fail(R::join(argPath, "meaning"), "expected a string");
          break;
        }
        arg.meaning = text->str();
        if (text->split(':').first.trim() != arg.name) {
          r.fail(R::join(argPath, "meaning"),
                 "describes another argument than the ABI's '" + arg.name +
                     "'");
          break;
        }
      }
    }
    e.args.push_back(std::move(arg));
  }
  if (!r.failed() && explicitCount != kernel_abi::getKernelArgs().size())
    r.fail(argsPath,
           llvm::formatv("{0} explicit arguments, the kernel ABI "
                         "has {1}",
                         explicitCount, kernel_abi::getKernelArgs().size()));
}

/// Checks what the kernel ABI implies from the entry's own fields: the
/// symbol's name, the grid, the workgroup size and the workspace.
static void checkKernelFields(ManifestReader &r, const std::string &path,
                              const KernelEntry &e) {
  using R = ManifestReader;
  const ChipFacts *chip = lookupChip(e.chip);
  if (chip && e.fp8Type != chip->fp8Type) {
    r.fail(R::join(path, "fp8_type"),
           llvm::formatv("{0} kernels use \"{1}\", got \"{2}\"", e.chip,
                         chip->fp8Type, e.fp8Type));
    return;
  }

  kernel_abi::KernelNameFields name =
      kernel_abi::getNameFields(e, e.minM, e.maxM);
  std::string expected = kernel_abi::getKernelSymbol(name);
  if (e.symbol != expected) {
    // Blame the one field whose other value would name the symbol, if any.
    auto blame = [&](const char *field, auto change) {
      kernel_abi::KernelNameFields other = name;
      change(other);
      if (kernel_abi::getKernelSymbol(other) != e.symbol)
        return false;
      r.fail(R::join(path, field), "contradicts the symbol '" + e.symbol + "'");
      return true;
    };
    if (blame("has_bias", [](auto &f) { f.hasBias = !f.hasBias; }) ||
        blame("w_scale", [](auto &f) { f.perBatchScale = !f.perBatchScale; }) ||
        blame("out_type", [](auto &f) {
          f.outType = f.outType == "bf16" ? "f16" : "bf16";
        }))
      return;
    r.fail(R::join(path, "symbol"),
           "'" + e.symbol + "' is not the kernel the entry's fields name ('" +
               expected + "')");
    return;
  }

  std::array<uint32_t, 3> wg = {uint32_t(e.waves * 64), 1, 1};
  if (e.workgroupSize != wg) {
    r.fail(R::join(path, "workgroup_size"),
           llvm::formatv("expected [{0}, 1, 1] for {1} waves, got [{2}, {3}, "
                         "{4}]",
                         wg[0], e.waves, e.workgroupSize[0], e.workgroupSize[1],
                         e.workgroupSize[2]));
    return;
  }

  GridDim x{GridDim::Kind::Constant,
            (e.n + e.blockN - 1) / e.blockN * e.splitK};
  GridDim y{GridDim::Kind::M, e.blockM};
  GridDim z{GridDim::Kind::B, 1};
  const char *names[] = {"x", "y", "z"};
  const GridDim expectedGrid[] = {x, y, z};
  for (int i = 0; i < 3; ++i) {
    if (e.grid[i].kind == expectedGrid[i].kind &&
        e.grid[i].value == expectedGrid[i].value)
      continue;
    r.fail(R::join(R::join(path, "grid"), names[i]),
           "expected " + describeGridDim(expectedGrid[i]) +
               " (ceil(n/block_n)*split_k, ceil(M/block_m), B), got " +
               describeGridDim(e.grid[i]));
    return;
  }

  std::optional<int64_t> workspace = kernel_abi::getWorkspaceBytesPerBlock(
      {e.n, e.blockM, e.blockN, e.waves, e.splitK});
  if (!workspace || uint64_t(*workspace) != e.workspaceBytesPerBlock)
    r.fail(R::join(path, "workspace_bytes_per_block"),
           llvm::formatv("expected {0} for the tile, got {1}",
                         workspace.value_or(-1), e.workspaceBytesPerBlock));
}

/// Checks the entry against the code object's metadata for its symbol.
static void checkKernelMetadata(ManifestReader &r, const std::string &path,
                                const KernelEntry &e,
                                const CodeObjectMetadata &metadata,
                                llvm::StringRef codeObjectFile) {
  using R = ManifestReader;
  const KernelMetadata *k = metadata.findKernel(e.symbol);
  if (!k || k->symbol != e.symbol + ".kd" ||
      !metadata.definesSymbol(e.symbol + ".kd")) {
    r.fail(R::join(path, "symbol"),
           "no kernel '" + e.symbol + "' in " + codeObjectFile);
    return;
  }
  auto mismatch = [&](const std::string &field, uint64_t manifest,
                      uint64_t object, llvm::StringRef what) {
    r.fail(field, llvm::formatv("{0}, but the code object's {1} is {2}",
                                manifest, what, object));
  };
  if (e.kernargSize != k->kernargSegmentSize)
    return mismatch(R::join(path, "kernarg_size"), e.kernargSize,
                    k->kernargSegmentSize, ".kernarg_segment_size");
  if (e.kernargAlign != k->kernargSegmentAlign)
    return mismatch(R::join(path, "kernarg_align"), e.kernargAlign,
                    k->kernargSegmentAlign, ".kernarg_segment_align");
  if (e.ldsBytes != k->groupSegmentFixedSize)
    return mismatch(R::join(path, "lds_bytes"), e.ldsBytes,
                    k->groupSegmentFixedSize, ".group_segment_fixed_size");
  if (e.scratchBytes != k->privateSegmentFixedSize)
    return mismatch(R::join(path, "scratch_bytes"), e.scratchBytes,
                    k->privateSegmentFixedSize, ".private_segment_fixed_size");
  uint64_t items =
      uint64_t(e.workgroupSize[0]) * e.workgroupSize[1] * e.workgroupSize[2];
  if (k->maxFlatWorkgroupSize && items > k->maxFlatWorkgroupSize)
    return mismatch(R::join(path, "workgroup_size"), items,
                    k->maxFlatWorkgroupSize, ".max_flat_workgroup_size");
  if (k->reqdWorkgroupSize && *k->reqdWorkgroupSize != e.workgroupSize) {
    const std::array<uint32_t, 3> &reqd = *k->reqdWorkgroupSize;
    r.fail(R::join(path, "workgroup_size"),
           llvm::formatv("[{0}, {1}, {2}], but the code object's "
                         ".reqd_workgroup_size is [{3}, {4}, {5}]",
                         e.workgroupSize[0], e.workgroupSize[1],
                         e.workgroupSize[2], reqd[0], reqd[1], reqd[2]));
    return;
  }
  if (k->wavefrontSize && k->wavefrontSize != 64)
    return mismatch(R::join(path, "symbol"), 64, k->wavefrontSize,
                    ".wavefront_size");
  std::string argsPath = R::join(path, "args");
  if (e.args.size() != k->args.size())
    return mismatch(argsPath, e.args.size(), k->args.size(), "argument count");
  for (size_t i = 0; i < e.args.size(); ++i) {
    const KernelArg &a = e.args[i];
    const KernelArgMetadata &m = k->args[i];
    std::string argPath = R::index(argsPath, i);
    if (a.offset != m.offset)
      return mismatch(R::join(argPath, "offset"), a.offset, m.offset,
                      ".offset");
    if (a.size != m.size)
      return mismatch(R::join(argPath, "size"), a.size, m.size, ".size");
    if (a.kind != m.valueKind) {
      r.fail(R::join(argPath, "kind"), "\"" + a.kind +
                                           "\", but the code object's "
                                           ".value_kind is \"" +
                                           m.valueKind + "\"");
      return;
    }
  }
}

/// Two entries of one chip and projection that a lookup could both pick for
/// some M. (Entries of two projections of the same shape compute the same
/// thing, so either may serve a lookup.)
static void checkOverlaps(ManifestReader &r, const std::string &kernelsPath,
                          const std::vector<KernelEntry> &kernels) {
  for (size_t i = 0; i < kernels.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const KernelEntry &a = kernels[i], &b = kernels[j];
      if (static_cast<const kernel_abi::KernelDescription &>(a) != b ||
          a.projection != b.projection || a.symbol == b.symbol)
        continue;
      int64_t aMax = a.maxM ? a.maxM : kMaxManifestM;
      int64_t bMax = b.maxM ? b.maxM : kMaxManifestM;
      if (a.minM <= bMax && b.minM <= aMax) {
        r.fail(ManifestReader::join(ManifestReader::index(kernelsPath, i),
                                    "min_m"),
               llvm::formatv("its M range overlaps that of kernels[{0}] "
                             "('{1}')",
                             j, b.symbol));
        return;
      }
    }
}

/// Reads manifest.sha256 beside the manifest and checks `manifest` against
/// it: one line, 64 lowercase hex digits, two spaces, "manifest.json".
static llvm::Expected<std::string>
checkManifestDigest(llvm::StringRef dir, llvm::StringRef manifest) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "manifest.sha256");
  llvm::Expected<std::string> text = readRegularFile(path, 256);
  if (!text)
    return makeError(llvm::toString(text.takeError()) +
                     " (a schema 2 bundle records the SHA-256 of its "
                     "manifest.json there)");
  llvm::StringRef line = *text;
  llvm::StringRef hex = line.take_front(64);
  if (line.size() != 64 + 2 + 13 + 1 ||
      !llvm::all_of(
          hex,
          [](char c) { return llvm::isDigit(c) || (c >= 'a' && c <= 'f'); }) ||
      line.drop_front(64) != "  manifest.json\n")
    return makeError(path + ": expected one line '<64 lowercase hex digits>  "
                            "manifest.json'");
  std::string digest =
      llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(manifest)),
                  /*LowerCase=*/true);
  if (digest != hex)
    return makeError(llvm::formatv("{0}: manifest.json has SHA-256 {1}, the "
                                   "digest file records {2}: the manifest "
                                   "was changed or damaged",
                                   path, digest, hex));
  return digest;
}

/// Reads, checks and decodes one chip's code object.
static llvm::Error loadCodeObject(ManifestReader &r, llvm::StringRef dir,
                                  llvm::StringRef manifestName,
                                  const std::string &path, int64_t bytes,
                                  LoadedChip &chip,
                                  CodeObjectMetadata &metadata) {
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(file, chip.codeObjectFile);
  llvm::Expected<std::string> data = readRegularFile(file, kMaxCodeObjectBytes);
  if (!data)
    return makeError(llvm::toString(data.takeError()) + " (code object of " +
                     "chip '" + chip.chip + "', " + manifestName + ": " + path +
                     ".code_object)");
  if (static_cast<int64_t>(data->size()) != bytes)
    return makeError(llvm::formatv("{0}: size {1} differs from field "
                                   "'{2}.bytes' = {3} in {4}",
                                   file, data->size(), path, bytes,
                                   manifestName));
  std::string digest =
      llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(*data)),
                  /*LowerCase=*/true);
  if (digest != chip.sha256)
    return makeError(llvm::formatv("{0}: SHA-256 {1} differs from field "
                                   "'{2}.sha256' = {3} in {4}: the file is "
                                   "damaged or from another bundle",
                                   file, digest, path, chip.sha256,
                                   manifestName));
  llvm::Expected<CodeObjectMetadata> read = readCodeObjectMetadata(*data);
  if (!read)
    return makeError(file + ": " + llvm::toString(read.takeError()));
  metadata = std::move(*read);
  if (metadata.processor != chip.chip) {
    r.fail(ManifestReader::join(path, "chip"),
           "'" + chip.chip + "', but " + chip.codeObjectFile + " is for '" +
               metadata.processor + "'");
    return r.takeError();
  }
  chip.codeObject = std::make_shared<const std::string>(std::move(*data));
  return llvm::Error::success();
}

llvm::Expected<LoadedBundle>
mlir::mlafp8::runtime::loadBundleFromManifest(llvm::StringRef dir,
                                              llvm::StringRef manifest,
                                              llvm::StringRef manifestName) {
  ManifestReader r(manifestName);
  if (manifest.size() > kMaxManifestBytes)
    return makeError(llvm::formatv("{0}: {1} bytes, more than the limit of "
                                   "{2}",
                                   manifestName, manifest.size(),
                                   kMaxManifestBytes));
  llvm::Expected<json::Value> parsed =
      parseJSONWithinDepth(manifest, kMaxManifestJSONDepth);
  if (!parsed)
    return makeError(manifestName +
                     ": malformed JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return makeError(manifestName + ": expected a JSON object at the top");

  LoadedBundle bundle;
  bundle.directory = dir.str();
  // The version first: another layout may fail every other check (an older
  // one has no digest file), and its message must say why.
  bundle.schemaVersion = r.getInt(*root, "schema_version", "", 0,
                                  std::numeric_limits<int32_t>::max());
  if (r.failed())
    return r.takeError();
  if (bundle.schemaVersion != kSupportedManifestSchemaVersion)
    return makeError(llvm::formatv(
        "{0}: field 'schema_version': the manifest has schema version {2}; "
        "this loader reads schema version {1} only. Regenerate the bundle "
        "with a matching mla-fp8-aot",
        manifestName, kSupportedManifestSchemaVersion, bundle.schemaVersion));
  llvm::Expected<std::string> digest = checkManifestDigest(dir, manifest);
  if (!digest)
    return digest.takeError();
  bundle.manifestSha256 = std::move(*digest);

  if (r.getString(*root, "compiler", "") != "mla-fp8" && !r.failed())
    r.fail("compiler", "expected \"mla-fp8\"");
  bundle.compilerVersion = r.getString(*root, "compiler_version", "");
  bundle.model = r.getString(*root, "model", "");
  bundle.maxM = r.getInt(*root, "max_m", "", 1, kMaxManifestM);
  const json::Array *chips = r.getArray(*root, "chips", "", kMaxManifestChips);
  if (r.failed())
    return r.takeError();
  for (size_t c = 0; c < chips->size(); ++c) {
    std::string path = ManifestReader::index("chips", c);
    const json::Object *o = (*chips)[c].getAsObject();
    if (!o) {
      r.fail(path, "expected an object");
      return r.takeError();
    }
    LoadedChip chip;
    chip.chip = r.getString(*o, "chip", path);
    chip.codeObjectFile = r.getString(*o, "code_object", path);
    chip.sha256 = r.getString(*o, "sha256", path);
    int64_t bytes = r.getInt(*o, "bytes", path, 1, kMaxCodeObjectBytes);
    const json::Array *kernels =
        r.getArray(*o, "kernels", path, kMaxManifestKernelsPerChip);
    if (r.failed())
      return r.takeError();
    if (!lookupChip(chip.chip)) {
      r.fail(ManifestReader::join(path, "chip"),
             "unsupported chip '" + chip.chip + "' (gfx942, gfx950)");
      return r.takeError();
    }
    if (bundle.findChip(chip.chip)) {
      r.fail(ManifestReader::join(path, "chip"),
             "chip '" + chip.chip + "' is listed twice");
      return r.takeError();
    }
    if (chip.sha256.size() != 64 || !llvm::all_of(chip.sha256, [](char ch) {
          return llvm::isDigit(ch) || (ch >= 'a' && ch <= 'f');
        })) {
      r.fail(ManifestReader::join(path, "sha256"),
             "expected 64 lowercase hex digits");
      return r.takeError();
    }
    // Code object names are plain file names: a manifest must not point
    // outside its bundle.
    if (chip.codeObjectFile.empty() || chip.codeObjectFile == "." ||
        chip.codeObjectFile == ".." ||
        llvm::sys::path::filename(chip.codeObjectFile) != chip.codeObjectFile) {
      r.fail(ManifestReader::join(path, "code_object"),
             "expected a file name inside the bundle, got '" +
                 chip.codeObjectFile + "'");
      return r.takeError();
    }
    CodeObjectMetadata metadata;
    if (llvm::Error error =
            loadCodeObject(r, dir, manifestName, path, bytes, chip, metadata))
      return std::move(error);

    std::string kernelsPath = ManifestReader::join(path, "kernels");
    for (size_t i = 0; i < kernels->size(); ++i) {
      std::string kernelPath = ManifestReader::index(kernelsPath, i);
      const json::Object *k = (*kernels)[i].getAsObject();
      if (!k) {
        r.fail(kernelPath, "expected an object");
        return r.takeError();
      }
      KernelEntry entry;
      entry.chip = chip.chip;
      entry.codeObject = chip.codeObject;
      readKernel(r, *k, kernelPath, entry);
      if (!r.failed())
        checkKernelFields(r, kernelPath, entry);
      if (!r.failed())
        checkKernelMetadata(r, kernelPath, entry, metadata,
                            chip.codeObjectFile);
      if (r.failed())
        return r.takeError();
      chip.kernels.push_back(std::move(entry));
    }
    checkOverlaps(r, kernelsPath, chip.kernels);
    if (r.failed())
      return r.takeError();
    bundle.chips.push_back(std::move(chip));
  }
  return bundle;
}

llvm::Expected<LoadedBundle>
mlir::mlafp8::runtime::loadBundle(llvm::StringRef dir) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "manifest.json");
  llvm::Expected<std::string> text = readRegularFile(path, kMaxManifestBytes);
  if (!text)
    return text.takeError();
  return loadBundleFromManifest(dir, *text, path);
}
