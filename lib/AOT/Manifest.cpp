//===- Manifest.cpp - a bundle's manifest and C header --------------------===//

#include "mla-fp8/AOT/Manifest.h"

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/AOT/Bundle.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>

using namespace mlir;
using namespace mlir::mlafp8;

llvm::json::Value mlir::mlafp8::tileToJSON(const TileConfig &t) {
  return llvm::json::Object{
      {"min_rows", t.minRows},   {"max_rows", t.maxRows},
      {"block_m", t.blockM},     {"block_n", t.blockN},
      {"waves", t.waves},        {"mfma", t.mfma->shapeName},
      {"split_k", t.splitK},     {"stages", t.stages},
      {"occupancy", t.occupancy}};
}

static kernel_abi::LaunchShape getLaunchShape(const BundleKernel &k) {
  return {k.group.kernel.n, k.tile.blockM, k.tile.blockN, k.tile.waves,
          k.tile.splitK};
}

/// TileAttr's verifier bounds every tile, so the ABI's formula accepts every
/// kernel a bundle holds; were it not, -1 makes the loader refuse the
/// manifest.
static int64_t getWorkspaceBytesPerBlock(const BundleKernel &k) {
  std::optional<int64_t> bytes =
      kernel_abi::getWorkspaceBytesPerBlock(getLaunchShape(k));
  assert(bytes && "a tile beyond the kernel ABI's bounds");
  return bytes.value_or(-1);
}

/// The kernel's `args`: the kernel ABI's explicit arguments, then the hidden
/// ones the code object's metadata lists (none today).
static llvm::json::Array renderArguments(const BundleKernel &k) {
  llvm::json::Array args;
  for (const kernel_abi::KernelArg &a : kernel_abi::getKernelArgs())
    args.push_back(
        llvm::json::Object{{"name", a.name},
                           {"offset", a.offset},
                           {"size", a.size},
                           {"kind", kernel_abi::getMetadataValueKind(a.kind)},
                           {"meaning", a.description}});
  for (const KernelArgMetadata &a : k.metadata.args)
    if (llvm::StringRef(a.valueKind).starts_with("hidden_"))
      args.push_back(
          llvm::json::Object{{"offset", static_cast<int64_t>(a.offset)},
                             {"size", static_cast<int64_t>(a.size)},
                             {"kind", a.valueKind}});
  return args;
}

/// The grid as the manifest writes it: constants as integers, formulas of M
/// and B as text.
static llvm::json::Object renderGrid(const BundleKernel &k) {
  llvm::json::Object grid;
  std::array<kernel_abi::GridDim, 3> dims =
      kernel_abi::getGridDims(getLaunchShape(k));
  const char *names[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i)
    grid[names[i]] = dims[i].var == kernel_abi::GridDim::Var::None
                         ? llvm::json::Value(dims[i].value)
                         : llvm::json::Value(dims[i].str());
  return grid;
}

/// Writes every field of the kernel's description under its manifest key,
/// through the description's one field list, so that a new field reaches
/// the manifest without an edit here. The chip is the enclosing chip
/// entry's, not repeated per kernel.
static void writeDescription(const kernel_abi::KernelDescription &d,
                             llvm::json::Object &kernel) {
  auto toJSON = [](const auto &value) -> llvm::json::Value {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, kernel_abi::WeightScaleMode>)
      return llvm::StringRef(kernel_abi::stringifyWeightScaleMode(value));
    else
      return value;
  };
  kernel_abi::forEachField(d, [&](llvm::StringRef key, const auto &value) {
    if (key != "chip")
      kernel[key] = toJSON(value);
  });
}

std::string mlir::mlafp8::renderManifest(const BundleOptions &options,
                                         const std::vector<ChipBundle> &chips) {
  const KernelSetOptions &ks = options.kernels;
  llvm::json::Array chipArray;
  for (const ChipBundle &chip : chips) {
    llvm::json::Array kernels;
    for (const BundleKernel &k : chip.kernels) {
      const kernel_abi::KernelDescription &g = k.group.kernel;
      std::array<int64_t, 3> wg =
          kernel_abi::getWorkgroupSize(getLaunchShape(k));
      llvm::json::Object kernel{
          {"symbol", k.symbol},
          {"projection", k.group.projection},
          {"batches", llvm::json::Array(k.group.batches)},
          {"tp", llvm::json::Array(k.group.tp)},
          {"min_rows", k.tile.minRows},
          {"max_rows", k.tile.maxRows},
          {"tile", tileToJSON(k.tile)},
          {"workgroup_size", llvm::json::Array{wg[0], wg[1], wg[2]}},
          {"grid", renderGrid(k)},
          {"workspace_bytes_per_block", getWorkspaceBytesPerBlock(k)},
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
          {"args", renderArguments(k)}};
      writeDescription(g, kernel);
      kernels.push_back(std::move(kernel));
    }
    chipArray.push_back(llvm::json::Object{
        {"chip", chip.chip},
        {"code_object", chip.chip + ".hsaco"},
        {"sha256", chip.contentHash},
        {"bytes", static_cast<int64_t>(chip.codeObject.size())},
        {"code_object_version", chip.codeObjectVersion},
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
                          {"o_groups", ks.dims.outputGroups},
                          {"o_lora_rank", ks.dims.outputLoraRank},
                          {"head_dim", ks.dims.headDim},
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
        "#include <stdint.h>\n\n";
  // The kernel ABI's argument table, then its offsets as constants.
  os << "/* Kernel arguments, in kernarg order (" << kernel_abi::kKernargBytes
     << " bytes):\n";
  for (const kernel_abi::KernelArg &a : kernel_abi::getKernelArgs()) {
    assert(!a.description.contains("*/") && "would end the C comment");
    os << llvm::formatv("   {0,2} {1,-10} {2,-7} {3}\n", a.offset, a.name,
                        kernel_abi::stringifyArgKind(a.kind), a.description);
  }
  os << "   Grid: (ceil(n/block_n) * split_k, ceil(M/block_m), B); "
        "workgroup: (workgroup_size, 1, 1). */\n"
        "enum {\n";
  for (const kernel_abi::KernelArg &a : kernel_abi::getKernelArgs())
    os << "  mla_fp8_arg_" << a.name << "_offset = " << a.offset << ",\n";
  // The manifest's schema version: the argument offsets above are its; an
  // embedder compares it with the manifest it loads.
  os << "  mla_fp8_kernarg_bytes = " << kernel_abi::kKernargBytes << ",\n"
     << "  mla_fp8_manifest_schema_version = " << kManifestSchemaVersion
     << "\n};\n\n"
        "typedef struct mla_fp8_kernel {\n"
        "  const char *chip;        /* code object: <chip>.hsaco */\n"
        "  const char *symbol;\n"
        "  const char *projection;  /* \"k_up\" or \"v_up\" */\n"
        "  int32_t n, k, group_size;\n"
        "  const char *in_type;     /* activations: \"bf16\" or \"f16\" */\n"
        "  const char *fp8_type, *out_type, *w_scale;\n"
        "  /* serves the launches of min_rows <= B * M <= max_rows; max_rows "
        "0: no upper bound */\n"
        "  int32_t min_rows, max_rows;\n"
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
          "  {\"{0}\", \"{1}\", \"{2}\", {3}, {4}, {5}, \"{19}\", \"{6}\", "
          "\"{7}\", \"{8}\", {9}, {10}, {11}, {12}, {13}, {14}, {15}u, "
          "{16}u, {17}u, {18}},\n",
          chip.chip, k.symbol, k.group.projection, g.n, g.k, g.groupSize,
          g.fp8Type, g.outType,
          llvm::StringRef(kernel_abi::stringifyWeightScaleMode(g.weightScale)),
          k.tile.minRows, k.tile.maxRows, k.tile.blockM, k.tile.blockN,
          k.tile.splitK, kernel_abi::getWorkgroupSize(getLaunchShape(k))[0],
          k.metadata.groupSegmentFixedSize, k.metadata.kernargSegmentSize,
          getWorkspaceBytesPerBlock(k), g.hasBias ? 1 : 0, g.inType);
      ++count;
    }
  os << "};\n\nenum { mla_fp8_num_kernels = " << count
     << " };\n\n#endif /* MLA_FP8_KERNELS_H */\n";
  return text;
}
