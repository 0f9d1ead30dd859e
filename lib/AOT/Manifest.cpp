//===- Manifest.cpp - a bundle's manifest and C header --------------------===//

#include "mla-fp8/AOT/Manifest.h"

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/Conversion/MLAFP8ToGPU/MLAFP8ToGPU.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::mlafp8;

llvm::json::Value mlir::mlafp8::tileToJSON(const TileConfig &t) {
  return llvm::json::Object{
      {"min_m", t.minM},         {"max_m", t.maxM},
      {"block_m", t.blockM},     {"block_n", t.blockN},
      {"waves", t.waves},        {"mfma", stringifyMfmaShape(t.mfma)},
      {"split_k", t.splitK},     {"stages", t.stages},
      {"occupancy", t.occupancy}};
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
