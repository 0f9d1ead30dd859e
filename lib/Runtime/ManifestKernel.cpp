//===- ManifestKernel.cpp - read and check one manifest kernel entry ------===//
//
// Every field of a kernels[] entry, range-checked, then checked against what
// the kernel ABI implies and against the code object's own metadata.
//
//===----------------------------------------------------------------------===//

#include "ManifestReader.h"

#include "LaunchShape.h"

#include "mla-fp8/Hardware/Chip.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;
namespace json = llvm::json;

using kernel_abi::GridDim;

/// Parses one grid dimension: an integer, "M", "B" or "ceil(M/<n>)" /
/// "ceil(B/<n>)" with 1 <= n < 2^32, constants below 2^32.
static std::optional<GridDim> parseGridDim(const json::Value &v) {
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  if (std::optional<int64_t> i = v.getAsInteger()) {
    if (*i < 0 || *i > kMax)
      return std::nullopt;
    return GridDim{GridDim::Var::None, *i};
  }
  std::optional<llvm::StringRef> s = v.getAsString();
  if (!s)
    return std::nullopt;
  llvm::StringRef text = s->trim();
  auto parseVar = [](llvm::StringRef var) -> std::optional<GridDim::Var> {
    if (var == "M")
      return GridDim::Var::M;
    if (var == "B")
      return GridDim::Var::B;
    return std::nullopt;
  };
  if (std::optional<GridDim::Var> var = parseVar(text))
    return GridDim{*var, 1};
  if (!text.consume_front("ceil(") || !text.consume_back(")"))
    return std::nullopt;
  auto [name, divisor] = text.split('/');
  std::optional<GridDim::Var> var = parseVar(name.trim());
  // getAsInteger fails on overflow rather than wrapping.
  uint64_t d;
  if (!var || divisor.trim().getAsInteger(10, d) || d < 1 || d > uint64_t(kMax))
    return std::nullopt;
  return GridDim{*var, int64_t(d)};
}

/// A grid dimension as the manifest writes it: text is quoted.
static std::string quoteGridDim(const GridDim &d) {
  return d.var == GridDim::Var::None ? d.str() : "\"" + d.str() + "\"";
}

void runtime::readKernel(ManifestReader &r, const json::Object &o,
                         const std::string &path, KernelEntry &e,
                         std::array<GridDim, 3> &grid) {
  using R = ManifestReader;
  e.symbol = r.getString(o, "symbol", path);
  e.projection = r.getChoice(o, "projection", path, {"k_up", "v_up", "wo_a"});
  e.n = r.getInt(o, "n", path, 1, kMaxManifestN);
  e.k = r.getInt(o, "k", path, 1, kMaxManifestK);
  e.groupSize = r.getInt(o, "group_size", path, kernel_abi::kMinGroupSize,
                         kMaxManifestGroupSize);
  if (!r.failed() && (e.groupSize & (e.groupSize - 1)))
    r.fail(R::join(path, "group_size"),
           llvm::formatv("expected a power of two, got {0}", e.groupSize));
  // The symbol names the input type (checkKernelFields), so an entry whose
  // in_type contradicts its code is refused there.
  e.inType = r.getChoice(o, "in_type", path, {"bf16", "f16"});
  e.fp8Type = r.getString(o, "fp8_type", path);
  e.outType = r.getChoice(o, "out_type", path, {"bf16", "f16"});
  e.weightScale =
      kernel_abi::parseWeightScaleMode(
          r.getChoice(o, "w_scale", path, {"per_tensor", "per_batch"}))
          .value_or(kernel_abi::WeightScaleMode::PerTensor);
  e.hasBias = r.getBool(o, "has_bias", path);
  e.minRows = r.getInt(o, "min_rows", path, 1, kMaxManifestRows);
  e.maxRows = r.getInt(o, "max_rows", path, 0, kMaxManifestRows);
  if (!r.failed() && e.maxRows != 0 && e.maxRows < e.minRows)
    r.fail(R::join(path, "max_rows"),
           llvm::formatv("{0} is below min_rows {1}", e.maxRows, e.minRows));
  if (const json::Object *tile = r.getObject(o, "tile", path)) {
    std::string tilePath = R::join(path, "tile");
    using kernel_abi::kMaxSplitK;
    using kernel_abi::kMaxTileDim;
    e.blockM = r.getInt(*tile, "block_m", tilePath, 1, kMaxTileDim);
    e.blockN = r.getInt(*tile, "block_n", tilePath, 1, kMaxTileDim);
    e.waves = r.getInt(*tile, "waves", tilePath, 1, kernel_abi::kMaxWaves);
    e.splitK = r.getInt(*tile, "split_k", tilePath, 1, kMaxSplitK);
    // What the tile verifier accepts, so that a bundle never claims a tile
    // the compiler would refuse.
    r.getInt(*tile, "stages", tilePath, 1, kernel_abi::kMaxTileStages);
    r.getInt(*tile, "occupancy", tilePath, kernel_abi::kTileOccupancy,
             kernel_abi::kTileOccupancy);
    std::string mfma = r.getString(*tile, "mfma", tilePath);
    if (!r.failed()) {
      const MfmaLayout *record = lookupMfma(mfma);
      const ChipInfo *chip = lookupChip(e.chip);
      if (!record)
        r.fail(R::join(tilePath, "mfma"),
               "'" + mfma + "' is not an fp8 MFMA shape");
      else if (chip && !chip->hasMfma(*record))
        r.fail(R::join(tilePath, "mfma"),
               e.chip + " has no " + record->mnemonic.str());
      else if (e.blockM % record->m || e.blockN % record->n)
        r.fail(R::join(tilePath, "mfma"),
               llvm::formatv("a {0}x{1} block is not made of {2}x{3} MFMA "
                             "tiles",
                             e.blockM, e.blockN, record->m, record->n));
    }
    if (r.getInt(*tile, "min_rows", tilePath, 1, kMaxManifestRows) !=
            e.minRows &&
        !r.failed())
      r.fail(R::join(tilePath, "min_rows"),
             "differs from the kernel's min_rows");
    if (r.getInt(*tile, "max_rows", tilePath, 0, kMaxManifestRows) !=
            e.maxRows &&
        !r.failed())
      r.fail(R::join(tilePath, "max_rows"),
             "differs from the kernel's max_rows");
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
  if (const json::Object *dims = r.getObject(o, "grid", path)) {
    std::string gridPath = R::join(path, "grid");
    const char *names[] = {"x", "y", "z"};
    for (int i = 0; i < 3; ++i) {
      const json::Value *v = r.get(*dims, names[i], gridPath);
      if (!v)
        continue;
      std::optional<GridDim> dim = parseGridDim(*v);
      if (!dim)
        r.fail(R::join(gridPath, names[i]),
               "expected an integer below 2^32, \"M\", \"B\" or "
               "\"ceil(M/<n>)\" with 1 <= n < 2^32");
      else
        grid[i] = *dim;
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
      // Explicit arguments come first, in the kernel ABI's order. Each is
      // named by its `name`, whose ABI row gives its place, offset, size and
      // kind; `meaning` is for people and never parsed.
      arg.name = r.getString(*a, "name", argPath);
      if (r.failed())
        break;
      const kernel_abi::KernelArg *expected =
          kernel_abi::lookupKernelArg(arg.name);
      if (!expected) {
        r.fail(R::join(argPath, "name"),
               "'" + arg.name + "' is not an argument of the kernel ABI");
        break;
      }
      if (expected->index != i) {
        r.fail(R::join(argPath, "name"),
               llvm::formatv("'{0}' is argument {1} of the kernel ABI, not {2}",
                             arg.name, expected->index, i));
        break;
      }
      llvm::StringRef valueKind =
          kernel_abi::getMetadataValueKind(expected->kind);
      if (arg.offset != expected->offset || arg.size != expected->size ||
          arg.kind != valueKind) {
        r.fail(argPath, llvm::formatv("expected the ABI's '{0}' argument: "
                                      "offset {1}, size {2}, kind {3}",
                                      expected->name, expected->offset,
                                      expected->size, valueKind));
        break;
      }
      if (const json::Value *meaning = a->get("meaning")) {
        std::optional<llvm::StringRef> text = meaning->getAsString();
        if (!text) {
          r.fail(R::join(argPath, "meaning"), "expected a string");
          break;
        }
        arg.meaning = text->str();
      }
      ++explicitCount;
    }
    e.args.push_back(std::move(arg));
  }
  if (!r.failed() && explicitCount != kernel_abi::getKernelArgs().size())
    r.fail(argsPath,
           llvm::formatv("{0} explicit arguments, the kernel ABI "
                         "has {1}",
                         explicitCount, kernel_abi::getKernelArgs().size()));
}

void runtime::checkKernelFields(ManifestReader &r, const std::string &path,
                                const KernelEntry &e,
                                const std::array<GridDim, 3> &grid) {
  using R = ManifestReader;
  // The kernels compute with the chip's E4M3 format.
  const ChipInfo *chip = lookupChip(e.chip);
  if (chip && e.fp8Type != chip->fp8E4M3TypeName) {
    r.fail(R::join(path, "fp8_type"),
           llvm::formatv("{0} kernels use \"{1}\", got \"{2}\"", e.chip,
                         chip->fp8E4M3TypeName, e.fp8Type));
    return;
  }
  if (chip && e.ldsBytes > chip->ldsBytesPerWorkgroup) {
    r.fail(R::join(path, "lds_bytes"),
           llvm::formatv("{0} is more than the {1} bytes a workgroup of {2} "
                         "may allocate",
                         e.ldsBytes, chip->ldsBytesPerWorkgroup, e.chip));
    return;
  }

  kernel_abi::KernelNameFields name =
      kernel_abi::getNameFields(e, e.minRows, e.maxRows);
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
        blame("out_type",
              [](auto &f) {
                f.outType = f.outType == "bf16" ? "f16" : "bf16";
              }) ||
        blame("in_type",
              [](auto &f) { f.inType = f.inType == "bf16" ? "f16" : "bf16"; }))
      return;
    r.fail(R::join(path, "symbol"),
           "'" + e.symbol + "' is not the kernel the entry's fields name ('" +
               expected + "')");
    return;
  }

  kernel_abi::LaunchShape shape = getLaunchShape(e);
  std::array<int64_t, 3> abiWorkgroup = kernel_abi::getWorkgroupSize(shape);
  std::array<uint32_t, 3> wg = {uint32_t(abiWorkgroup[0]),
                                uint32_t(abiWorkgroup[1]),
                                uint32_t(abiWorkgroup[2])};
  if (e.workgroupSize != wg) {
    r.fail(R::join(path, "workgroup_size"),
           llvm::formatv("expected [{0}, {1}, {2}] for {3} waves, got [{4}, "
                         "{5}, {6}]",
                         wg[0], wg[1], wg[2], e.waves, e.workgroupSize[0],
                         e.workgroupSize[1], e.workgroupSize[2]));
    return;
  }

  std::array<GridDim, 3> expectedGrid = kernel_abi::getGridDims(shape);
  const char *names[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == expectedGrid[i])
      continue;
    r.fail(R::join(R::join(path, "grid"), names[i]),
           "expected " + quoteGridDim(expectedGrid[i]) +
               " (the kernel ABI's grid for the tile), got " +
               quoteGridDim(grid[i]));
    return;
  }

  std::optional<int64_t> workspace =
      kernel_abi::getWorkspaceBytesPerBlock(shape);
  if (!workspace || uint64_t(*workspace) != e.workspaceBytesPerBlock)
    r.fail(R::join(path, "workspace_bytes_per_block"),
           llvm::formatv("expected {0} for the tile, got {1}",
                         workspace.value_or(-1), e.workspaceBytesPerBlock));
}

void runtime::checkKernelMetadata(ManifestReader &r, const std::string &path,
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
  if (k->wavefrontSize && k->wavefrontSize != kernel_abi::kWaveSize)
    return mismatch(R::join(path, "symbol"), kernel_abi::kWaveSize,
                    k->wavefrontSize, ".wavefront_size");
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
/// some launch rows B * M. (Entries of two projections of the same shape
/// compute the same thing, so either may serve a lookup.) Reports the first
/// entry that overlaps an earlier one of another symbol, and the first such
/// earlier one, without comparing every pair (4096 entries a chip made that 8
/// million comparisons): within a group of one description and projection,
/// entries of one symbol have one range (the symbol spells it), so the ranges
/// kept, sorted by start, are disjoint until one is not, and only the kept
/// range that starts last at or before a new range's end can overlap it.
void runtime::checkOverlaps(ManifestReader &r, const std::string &kernelsPath,
                            const std::vector<KernelEntry> &kernels) {
  using Key = std::tuple<std::string, int64_t, int64_t, int64_t, std::string,
                         std::string, std::string, int, bool, std::string>;
  struct Kept {
    int64_t end;
    const std::string *symbol;
  };
  std::map<Key, std::map<int64_t, Kept>> groups;
  auto rangeOf = [](const KernelEntry &e) {
    return std::make_pair(e.minRows, e.maxRows ? e.maxRows : kMaxManifestRows);
  };
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelEntry &a = kernels[i];
    std::map<int64_t, Kept> &kept =
        groups[Key(a.chip, a.n, a.k, a.groupSize, a.inType, a.fp8Type,
                   a.outType, int(a.weightScale), a.hasBias, a.projection)];
    auto [low, high] = rangeOf(a);
    auto after = kept.upper_bound(high);
    bool overlaps = false;
    if (after != kept.begin()) {
      auto at = std::prev(after);
      if (at->second.end >= low) {
        if (at->first == low && at->second.end == high &&
            *at->second.symbol == a.symbol)
          continue; // the same kernel listed again
        overlaps = true;
      }
    }
    if (!overlaps) {
      kept.emplace(low, Kept{high, &a.symbol});
      continue;
    }
    for (size_t j = 0; j < i; ++j) {
      const KernelEntry &b = kernels[j];
      if (static_cast<const kernel_abi::KernelDescription &>(a) != b ||
          a.projection != b.projection || a.symbol == b.symbol)
        continue;
      auto [bLow, bHigh] = rangeOf(b);
      if (low <= bHigh && bLow <= high) {
        r.fail(ManifestReader::join(ManifestReader::index(kernelsPath, i),
                                    "min_rows"),
               llvm::formatv("its range of rows overlaps that of kernels[{0}] "
                             "('{1}')",
                             j, b.symbol));
        return;
      }
    }
  }
}
