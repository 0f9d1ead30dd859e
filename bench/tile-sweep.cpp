//===- tile-sweep.cpp - Modelled kernel time of candidate tiles -----------===//
//
// Compiles one kernel per candidate tile for (chip, N, K) and runs each on
// the emulator's timing model for every (B, M) asked for: how the tile table
// is chosen (lib/Dialect/MLAFP8/Transforms/TileTable.cpp). Prints modelled
// kernel time (us, launch overhead excluded) and the limiting term.
//
//   mla-fp8-tile-sweep --chip gfx942 -N 512 -K 128 --batches 8,16,128 \
//       --ms 16,32 --tile 16x16x1:m16n16k32 --tile 16x64x4:m16n16k32:1:1
//
// A tile is BMxBNxWAVES:MFMA[:SPLIT_K[:STAGES]].
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/AOT/Compile.h"
#include "mla-fp8/Runtime/EmulatorLaunch.h"
#include "mla-fp8/Runtime/Verify.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace mlir::mlafp8;

static cl::OptionCategory category("mla-fp8-tile-sweep options");
static cl::opt<std::string> chipOpt("chip", cl::desc("Chip (default gfx942)"),
                                    cl::init("gfx942"), cl::cat(category));
static cl::opt<int64_t> nOpt("N", cl::desc("Columns (default 512)"),
                             cl::init(512), cl::cat(category));
static cl::opt<int64_t> kOpt("K", cl::desc("Reduction (default 128)"),
                             cl::init(128), cl::cat(category));
static cl::opt<int64_t> groupOpt("group", cl::desc("Group size (default 128)"),
                                 cl::init(128), cl::cat(category));
static cl::list<int64_t>
    batchesOpt("batches", cl::desc("Batch sizes (default 8,16,32,128)"),
               cl::CommaSeparated, cl::cat(category));
static cl::list<int64_t>
    msOpt("ms", cl::desc("Token counts (default 1,16,64,256,1024)"),
          cl::CommaSeparated, cl::cat(category));
static cl::list<std::string> tilesOpt(
    "tile",
    cl::desc("A candidate, BMxBNxWAVES:MFMA[:SPLIT_K[:STAGES]]; MFMA is an "
             "MFMA record's shape (m16n16k32, m32n32k16)"),
    cl::cat(category));
static cl::opt<std::string> deviceOpt("device",
                                      cl::desc("Product (default: the chip's)"),
                                      cl::cat(category));

[[noreturn]] static void die(const Twine &msg) {
  errs() << "mla-fp8-tile-sweep: error: " << msg << "\n";
  exit(1);
}

static TileConfig parseTile(StringRef text) {
  llvm::Expected<TileConfig> tile = parseTileSpec(text);
  if (!tile)
    die("--tile: " + llvm::toString(tile.takeError()));
  return *tile;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "modelled time of candidate tiles");
  const DeviceTiming *device = deviceOpt.empty()
                                   ? getDefaultDeviceTiming(chipOpt)
                                   : lookupDeviceTiming(deviceOpt);
  const ChipInfo *chip = lookupChip(chipOpt);
  if (!chip)
    die(describeUnsupportedChip(chipOpt));
  if (!device)
    die("unknown --device '" + deviceOpt +
        "' (known: " + joinDeviceTimingNames() + ")");
  if (device->chip != chip->name)
    die("--device " + device->name + " is a " + device->chip + ", not a " +
        chip->name);
  for (int64_t v : batchesOpt)
    if (v < 1 || v > 65535)
      die("--batches values must be 1 to 65535");
  for (int64_t v : msOpt)
    if (v < 1 || v > 65536)
      die("--ms values must be 1 to 65536");
  std::vector<int64_t> batches(batchesOpt.begin(), batchesOpt.end());
  std::vector<int64_t> ms(msOpt.begin(), msOpt.end());
  // Copied: compiling resets the command line's options to their defaults.
  std::vector<std::string> tiles(tilesOpt.begin(), tilesOpt.end());
  const std::string chipName = chipOpt;
  const int64_t n = nOpt, k = kOpt, groupSize = groupOpt;
  if (batches.empty())
    batches = {8, 16, 32, 128};
  if (ms.empty())
    ms = {1, 16, 64, 256, 1024};

  outs() << "modelled kernel time (us) on " << device->name << ", N=" << n
         << " K=" << k << "\n";
  outs() << format("%-26s", "tile");
  for (int64_t b : batches)
    for (int64_t m : ms)
      outs() << format(" %14s",
                       ("B" + Twine(b) + " M" + Twine(m)).str().c_str());
  outs() << "\n";
  for (const std::string &text : tiles) {
    KernelGroupSpec spec;
    spec.projection = "sweep";
    spec.kernel.chip = chipName;
    spec.kernel.n = n;
    spec.kernel.k = k;
    spec.kernel.groupSize = groupSize;
    spec.kernel.inType = spec.kernel.outType = "bf16";
    spec.kernel.fp8Type = chip->fp8E4M3TypeName.str();
    spec.tiles = {parseTile(text)};
    Expected<CompiledCodeObject> compiled =
        compileKernelGroupToCodeObject(spec, /*withIsa=*/false);
    if (!compiled) {
      outs() << format("%-26s ", text.c_str()) << "does not compile: "
             << toString(compiled.takeError()).substr(0, 200) << "\n";
      continue;
    }
    const TileConfig &tile = spec.tiles.front();
    runtime::KernelEntry entry = runtime::makeKernelEntry(
        spec.kernel, 1, 0, tile.getLaunchShape(n),
        std::make_shared<const std::string>(compiled->codeObject));
    unsigned vgprs = compiled->metadata.kernels.empty()
                         ? 0
                         : compiled->metadata.kernels.front().vgprCount;
    outs() << format("%-20s v%-4u", text.c_str(), vgprs);
    runtime::EmulatorLauncher launcher;
    launcher.setTiming(device, /*full=*/false);
    for (int64_t b : batches)
      for (int64_t m : ms) {
        runtime::VerifyProblem problem;
        problem.batch = b;
        problem.m = m;
        problem.compare = false;
        problem.threads = 1;
        runtime::VerifyResult r =
            runtime::verifyKernel(launcher, entry, problem);
        if (!r.error.empty() || !r.stats.timing) {
          outs() << format(" %14s", "error");
          errs() << text << " B" << b << " M" << m << ": " << r.error << "\n";
          continue;
        }
        const emu::LaunchEstimate &e = r.stats.timing->estimates.front();
        outs() << format(" %8.3f %-5s", e.kernelMicroseconds,
                         e.limiter.substr(0, 5).c_str());
      }
    outs() << "\n";
  }
  return 0;
}
