//===- mla-fp8-aot.cpp - ahead-of-time kernel generator -------------------===//
//
// Generates every MLA fp8 batched-matmul kernel of a model for the chips of a
// deployment: one code object per chip, manifest.json and a C header.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/Options.h"
#include "mla-fp8/AOT/Presets.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"
#include "mla-fp8/Runtime/Bundle.h"
#include "mla-fp8/Runtime/Verify.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>

using namespace mlir;
using namespace mlir::mlafp8;
namespace cl = llvm::cl;

static cl::OptionCategory category("mla-fp8-aot options");

// The description names the presets; main() sets it from the preset table
// (another file's static data, not yet initialized here).
static cl::opt<std::string> modelName("model", cl::init("deepseek-r1"),
                                      cl::cat(category));
static cl::opt<int64_t>
    heads("heads", cl::desc("Attention heads (overrides the preset)"),
          cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    kvLoraRank("kv-lora-rank",
               cl::desc("kv_lora_rank L (overrides the preset)"), cl::init(0),
               cl::cat(category));
static cl::opt<int64_t>
    qkNopeHeadDim("qk-nope-head-dim",
                  cl::desc("qk_nope_head_dim P (overrides the preset)"),
                  cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    vHeadDim("v-head-dim", cl::desc("v_head_dim V (overrides the preset)"),
             cl::init(0), cl::cat(category));
static cl::list<int64_t>
    tpDegrees("tp",
              cl::desc("Tensor-parallel degrees (default 1,2,4,8; defaults "
                       "that do not divide the heads, or a DeepSeek-V4 "
                       "preset's output groups, are skipped)"),
              cl::CommaSeparated, cl::cat(category));
static cl::opt<int64_t>
    maxM("max-m",
         cl::desc("Largest token count the kernels' ranges of rows (B * M) "
                  "are planned for, at the largest batch; larger M runs on "
                  "the last range (default 1024)"),
         cl::init(1024), cl::cat(category));
// Initialized before `chips` (same file, earlier); the chip table is
// constant, so its names exist already.
static const std::string chipsHelp =
    "Target chips (default " + joinChipNames(",") + ")";
static cl::list<std::string> chips("chips", cl::desc(chipsHelp),
                                   cl::CommaSeparated, cl::cat(category));
static cl::opt<std::string>
    weightScale("weight-scale",
                cl::desc("Weight descale: per-tensor (default) or per-batch"),
                cl::init("per-tensor"), cl::cat(category));
static cl::opt<std::string>
    outType("out-type", cl::desc("Output type: bf16 (default), f16"),
            cl::init("bf16"), cl::cat(category));
static cl::list<std::string>
    inTypes("in-type",
            cl::desc("Activation (X) types to generate kernels for, each "
                     "its own set: bf16, f16 (default both: a model served "
                     "in float16 passes f16 activations)"),
            cl::CommaSeparated, cl::cat(category));
static cl::opt<int64_t> codeObjectVersion(
    "code-object-version",
    cl::desc("Code-object version: 5 (default; ROCm 6.0 and later load it) "
             "or 6 (ROCm 6.3 and later)"),
    cl::init(5), cl::cat(category));
static cl::opt<int64_t>
    groupSize("group-size",
              cl::desc("K elements per activation scale: a power of two, at "
                       "least 16, whose K-group fits the chip's LDS "
                       "(default 128)"),
              cl::init(128), cl::cat(category));
static cl::list<std::string>
    tiles("tile",
          cl::desc("Explicit tile instead of the tile table, for tuning: "
                   "PROJECTION:BMxBNxWAVES:MFMA[:SPLIT_K[:STAGES]] (projection "
                   "k_up, v_up, or wo_a for a DeepSeek-V4 preset; MFMA e.g. "
                   "m16n16k32); one kernel then serves every launch (any "
                   "B * M) of that projection. Repeat for each projection"),
          cl::cat(category));
static cl::opt<bool> bias("bias",
                          cl::desc("Also generate the kernels that add a "
                                   "(B, N) bias in the output type"),
                          cl::cat(category));
static cl::opt<std::string> outputDir("output",
                                      cl::desc("Bundle directory to write "
                                               "(default mla-fp8-bundle; -o "
                                               "is the same)"),
                                      cl::init("mla-fp8-bundle"),
                                      cl::cat(category));
static cl::alias outputDirShort("o", cl::desc("Alias for --output"),
                                cl::aliasopt(outputDir), cl::cat(category));
static cl::opt<bool>
    force("force",
          cl::desc("Replace an existing mla-fp8 bundle even when it holds "
                   "files that the bundle format does not name (they are "
                   "deleted with it); never replaces a directory that is not "
                   "a bundle"),
          cl::cat(category));
static cl::opt<unsigned> jobs("jobs",
                              cl::desc("Parallel compilations (default: all "
                                       "cores)"),
                              cl::init(0), cl::cat(category));
static cl::opt<bool> listOnly("list",
                              cl::desc("Print the kernels that would be "
                                       "generated; generate nothing"),
                              cl::cat(category));
static cl::opt<bool>
    listModels("list-models",
               cl::desc("Print every model preset (heads, kv_lora_rank, "
                        "qk_nope_head_dim, v_head_dim, its projections' "
                        "shapes: K-up and V-up (N, K), wo_a (o_groups, N, "
                        "K); activation type, usual TP degrees, source "
                        "config); generate nothing"),
               cl::cat(category));
static cl::opt<std::string>
    cacheDir("cache-dir",
             cl::desc("Compilation cache (default $XDG_CACHE_HOME/mla-fp8 or "
                      "~/.cache/mla-fp8)"),
             cl::cat(category));
static cl::opt<bool> noCache("no-cache",
                             cl::desc("Neither read nor fill the "
                                      "cache"),
                             cl::cat(category));
static cl::opt<bool>
    verify("verify",
           cl::desc("Before publishing the bundle, run every kernel on the "
                    "gfx9 emulator at the edges and middle of its range of "
                    "rows (B * M, B = 4, 2 or 1) and compare with the exact "
                    "reference; a "
                    "mismatch fails the run and keeps the previous bundle"),
           cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print only errors"),
                           cl::cat(category));

/// Prints one error line and returns the tool's failure exit code.
static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mla-fp8-aot") << message << "\n";
  return 1;
}

static std::string defaultCacheDir() {
  llvm::SmallString<256> dir;
  if (std::optional<std::string> xdg =
          llvm::sys::Process::GetEnv("XDG_CACHE_HOME");
      xdg && !xdg->empty())
    dir = *xdg;
  else if (!llvm::sys::path::cache_directory(dir))
    return "";
  llvm::sys::path::append(dir, "mla-fp8");
  return std::string(dir);
}

/// The command line as a kernel-set request: a flag not given keeps the
/// request's default (the preset's dimensions, the default TP degrees, ...).
static KernelSetRequest getKernelSetRequest() {
  KernelSetRequest request;
  if (modelName.getNumOccurrences())
    request.model = modelName;
  auto override = [](cl::opt<int64_t> &flag, std::optional<int64_t> &field) {
    if (flag.getNumOccurrences())
      field = flag;
  };
  override(heads, request.heads);
  override(kvLoraRank, request.kvLoraRank);
  override(qkNopeHeadDim, request.qkNopeHeadDim);
  override(vHeadDim, request.vHeadDim);
  request.tp.assign(tpDegrees.begin(), tpDegrees.end());
  request.chips.assign(chips.begin(), chips.end());
  request.maxM = maxM;
  request.weightScale = weightScale;
  request.outType = outType;
  request.inTypes.assign(inTypes.begin(), inTypes.end());
  request.codeObjectVersion = codeObjectVersion;
  request.groupSize = groupSize;
  request.bias = bias;
  request.tiles.assign(tiles.begin(), tiles.end());
  return request;
}

/// Runs every kernel of the staged bundle in `dir` on the emulator.
static llvm::Error verifyBundle(llvm::StringRef dir, bool quietRun) {
  llvm::Expected<runtime::LoadedBundle> bundle = runtime::loadBundle(dir);
  if (!bundle)
    return bundle.takeError();
  runtime::EmulatorLauncher launcher;
  unsigned runs = 0;
  double worstUlp = 0;
  size_t total = 0, done = 0;
  for (const runtime::LoadedChip &chip : bundle->chips)
    total += chip.kernels.size();
  for (const runtime::LoadedChip &chip : bundle->chips)
    for (const runtime::KernelEntry &kernel : chip.kernels) {
      // One line per kernel: a default set takes most of a minute.
      if (!quietRun)
        llvm::errs() << llvm::formatv("[verify {0}/{1}] {2}\n", ++done, total,
                                      kernel.symbol);
      // The first, middle and last rows of the kernel's range (63 past its
      // start when unbounded), each exactly, as B * M with the largest B of
      // 4, 2, 1 that divides it.
      int64_t lo = kernel.minRows;
      int64_t hi = kernel.maxRows ? kernel.maxRows : lo + 63;
      std::vector<std::pair<int64_t, int64_t>> launches;
      for (int64_t rows : {lo, lo + (hi - lo) / 2, hi})
        for (int64_t b : {4, 2, 1})
          if (rows % b == 0) {
            if (!llvm::is_contained(launches, std::make_pair(b, rows / b)))
              launches.push_back({b, rows / b});
            break;
          }
      for (auto [b, m] : launches) {
        runtime::VerifyProblem problem;
        problem.batch = b;
        problem.m = m;
        problem.seed = uint64_t(m);
        runtime::VerifyResult result =
            runtime::verifyKernel(launcher, kernel, problem);
        if (!result.passed())
          return llvm::createStringError(
              llvm::formatv(
                  "verification failed for {0} at B = {3}, M = {1}: {2}",
                  kernel.symbol, m,
                  result.error.empty() ? result.message : result.error, b)
                  .str());
        worstUlp = std::max(worstUlp, result.maxUlp);
        ++runs;
      }
    }
  if (!quietRun)
    llvm::errs() << llvm::formatv("verified {0} kernel runs on the emulator: "
                                  "all within tolerance (max {1:f2} ulp)\n",
                                  runs, worstUlp);
  return llvm::Error::success();
}

static int listKernels(const std::vector<KernelGroupSpec> &groups) {
  for (const KernelGroupSpec &g : groups) {
    llvm::Expected<SmallVector<TileConfig>> tiles = getGroupTiles(g);
    if (!tiles)
      return fail(llvm::toString(tiles.takeError()));
    const kernel_abi::KernelDescription &d = g.kernel;
    llvm::outs() << llvm::formatv(
        "{0}  {1}  N={2} K={3} G={4}  {9} -> {5} -> {6}  batches {7:$[,]}  "
        "{8} kernels\n",
        d.chip, g.projection, d.n, d.k, d.groupSize, d.fp8Type, d.outType,
        llvm::make_range(g.batches.begin(), g.batches.end()), tiles->size(),
        d.inType);
    for (const TileConfig &t : *tiles) {
      std::string range =
          t.maxRows == 0
              ? llvm::formatv("B*M >= {0}", t.minRows).str()
              : llvm::formatv("B*M {0}-{1}", t.minRows, t.maxRows).str();
      llvm::outs() << llvm::formatv(
          "    {0,-16} block {1}x{2}  waves {3}  {4}  split_k {5}\n", range,
          t.blockM, t.blockN, t.waves, t.mfma->shapeName, t.splitK);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // A file-size limit (ulimit -f) is a write error like a full disk: it must
  // fail the write with EFBIG, which is reported, not kill the process.
  ::signal(SIGXFSZ, SIG_IGN);
  cl::HideUnrelatedOptions(category);
  const std::string modelHelp =
      "Model preset, with the activation type it is usually served in: " +
      describeModelPresets() +
      " (default deepseek-r1; --list-models gives "
      "their dimensions and sources)";
  modelName.setDescription(modelHelp);
  cl::ParseCommandLineOptions(
      argc, argv,
      "mla-fp8-aot: generates the fp8 MLA batched-matmul kernels of a model "
      "ahead of time\n\n"
      "Writes <output>/<chip>.hsaco (every kernel of the chip), "
      "<output>/manifest.json,\n<output>/manifest.sha256 and "
      "<output>/mla_fp8_kernels.h. The output must be missing, an\nempty "
      "directory or an mla-fp8 bundle; it is checked before compiling and "
      "replaced\nby one atomic exchange, so readers see the old or the new "
      "bundle.\n");

  if (listModels) {
    llvm::outs() << formatModelPresetTable();
    return 0;
  }

  // Linking with the lld library resets LLVM's command-line options to their
  // defaults: read every flag needed after compiling now.
  const bool quietRun = quiet;

  llvm::Expected<KernelSetOptions> kernelOptions =
      resolveKernelSetOptions(getKernelSetRequest());
  if (!kernelOptions)
    return fail(llvm::toString(kernelOptions.takeError()));
  llvm::Expected<std::vector<KernelGroupSpec>> groups =
      buildKernelSet(*kernelOptions);
  if (!groups)
    return fail(llvm::toString(groups.takeError()));
  if (listOnly)
    return listKernels(*groups);

  if (outputDir.empty())
    return fail("--output must name a directory");

  BundleOptions options;
  options.kernels = *kernelOptions;
  options.outputDir = outputDir;
  options.force = force;
  options.jobs = jobs;
  options.onWarning = [](llvm::StringRef message) {
    llvm::WithColor::warning(llvm::errs(), "mla-fp8-aot") << message << "\n";
  };
  if (!noCache)
    options.cacheDir =
        cacheDir.getNumOccurrences() ? cacheDir.getValue() : defaultCacheDir();
  bool terminal = llvm::sys::Process::StandardErrIsDisplayed();
  if (!quietRun)
    options.onProgress = [terminal](const BundleProgress &p) {
      if (!terminal) {
        llvm::errs() << llvm::formatv("[{0}/{1}] {2}\n", p.done, p.total,
                                      p.step);
        return;
      }
      // A bar redrawn in place; the line is cleared before the summary.
      constexpr unsigned width = 30;
      unsigned filled = p.total ? width * p.done / p.total : width;
      llvm::errs() << "\r[" << std::string(filled, '#')
                   << std::string(width - filled, '.') << "] "
                   << llvm::formatv("{0}/{1} {2,-28}", p.done, p.total, p.step);
      if (p.done == p.total)
        llvm::errs() << "\n";
    };

  if (verify)
    options.checkBeforePublish = [quietRun](llvm::StringRef dir) {
      return verifyBundle(dir, quietRun);
    };

  auto start = std::chrono::steady_clock::now();
  llvm::Expected<BundleResult> result = generateBundle(options);
  if (!result)
    return fail(llvm::toString(result.takeError()));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (quietRun)
    return 0;

  llvm::outs() << llvm::formatv(
      "{0,-8} {1,8} {2,9} {3,9} {4,9} {5,10} {6,10}  {7}\n", "chip", "kernels",
      "max VGPR", "max AGPR", "max SGPR", "max LDS", "bytes", "source");
  for (const ChipBundle &chip : result->chips) {
    unsigned vgpr = 0, agpr = 0, sgpr = 0;
    uint64_t lds = 0;
    for (const BundleKernel &k : chip.kernels) {
      vgpr = std::max(vgpr, k.metadata.vgprCount);
      agpr = std::max(agpr, k.metadata.agprCount);
      sgpr = std::max(sgpr, k.metadata.sgprCount);
      lds = std::max(lds, k.metadata.groupSegmentFixedSize);
    }
    llvm::outs() << llvm::formatv(
        "{0,-8} {1,8} {2,9} {3,9} {4,9} {5,10} {6,10}  {7}\n", chip.chip,
        chip.kernels.size(), vgpr, agpr, sgpr, lds, chip.codeObject.size(),
        chip.fromCache ? "cache" : "compiled");
  }
  llvm::outs() << llvm::formatv("wrote {0} bytes to {1} in {2:f2} s\n",
                                result->bytesWritten, result->outputDir,
                                seconds);
  return 0;
}
