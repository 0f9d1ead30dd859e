//===- mla-fp8-emu.cpp - Run a code object's kernel on the CPU ------------===//

#include "mla-fp8/Emulator/Emulator.h"
#include "mla-fp8/Hardware/Chip.h"
#include "mla-fp8/Reference/Formats.h"
#include "mla-fp8/Runtime/Bundle.h"
#include "mla-fp8/Runtime/ForeignLaunch.h"
#include "mla-fp8/Runtime/Limits.h"
#include "mla-fp8/Runtime/PeerLaunch.h"
#include "mla-fp8/Runtime/Verify.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <optional>
#include <random>

using namespace llvm;
using namespace mlir::mlafp8;
using namespace mlir::mlafp8::emu;

static cl::OptionCategory category("mla-fp8-emu options");
static cl::opt<std::string>
    inputFile(cl::Positional, cl::Optional,
              cl::desc("<code object (.hsaco) or bundle directory>"),
              cl::cat(category));
static cl::opt<std::string> foreignOpt(
    "foreign",
    cl::desc("Foreign mode: a kernels.json describing code objects beside it "
             "(shared/calibration, shared/peer-kernels/aiter); runs --file's "
             "kernel on real inputs at -B/-M/-N/-K (default: the record's "
             "first case), checks Y against the reference and prints PASS or "
             "FAIL; with --timing also times it at that shape, after checking "
             "Y at a smaller B (and M) where the full shape would take long"),
    cl::value_desc("KERNELS_JSON"), cl::cat(category));
static cl::opt<std::string> fileOpt(
    "file", cl::desc("Foreign mode: the record's code object file name"),
    cl::value_desc("NAME"), cl::cat(category));
static cl::opt<bool> aiterBiasOpt(
    "aiter-bias-rounding",
    cl::desc("Foreign mode: the reference rounds to bf16 before it adds the "
             "bias, as AITER's prequant and int8 kernels do"),
    cl::cat(category));
static cl::opt<bool> checkBundleOpt(
    "check-bundle",
    cl::desc("Verify the bundle directory given as input, as a server would "
             "load it (manifest digest, code-object hashes, every manifest "
             "field against the code objects' metadata), print one OK line "
             "and exit; exit non-zero with the error otherwise"),
    cl::cat(category));
static cl::opt<std::string> chipOpt(
    "chip",
    cl::desc("Bundle mode: the chip whose kernel runs (default gfx942)"),
    cl::init("gfx942"), cl::cat(category));
static cl::opt<std::string> inTypeOpt(
    "in-type",
    cl::desc("Bundle mode: the activation type whose kernel runs, bf16 or "
             "f16 (default bf16)"),
    cl::init("bf16"), cl::cat(category));
static cl::opt<bool> stridedXOpt(
    "strided-x",
    cl::desc("Bundle mode: read X as the K-up view of q_nope, (M, B, K + 64) "
             "storage"),
    cl::cat(category));
static cl::opt<std::string>
    kernelName("kernel", cl::desc("Kernel symbol (default: the only kernel)"),
               cl::cat(category));
static cl::opt<std::string>
    gridOpt("grid", cl::desc("Grid size in workgroups: x[,y[,z]]"),
            cl::cat(category));
static cl::opt<std::string>
    blockOpt("block",
             cl::desc("Workgroup size in work-items: x[,y[,z]] (default: "
                      "the size the kernel's metadata says it was compiled "
                      "for, else 64; a smaller one is refused)"),
             cl::cat(category));
static cl::opt<unsigned> ldsOpt("lds", cl::desc("Dynamic LDS bytes"),
                                cl::init(0), cl::cat(category));
static cl::list<std::string> argsOpt(
    "arg",
    cl::desc("Kernel argument, in order (generic mode): i32:<v>, i64:<v>, "
             "null, or buf:<name>:<bytes>[:zero|rand] (a fresh buffer)"),
    cl::cat(category));
static cl::opt<std::string> abiOpt(
    "abi",
    cl::desc("Run a prequant-bmm kernel on random inputs with this argument "
             "layout and compare with the reference: triton-peer (this "
             "project's kernels: pass their bundle directory instead)"),
    cl::cat(category));
static cl::opt<int64_t> bOpt("B", cl::desc("Batch (prequant-bmm)"), cl::init(1),
                             cl::cat(category));
static cl::opt<int64_t> mOpt("M", cl::desc("Rows (prequant-bmm)"), cl::init(16),
                             cl::cat(category));
static cl::opt<int64_t>
    nOpt("N", cl::desc("Columns (prequant-bmm; default from the file name)"),
         cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    kOpt("K", cl::desc("Reduction (prequant-bmm; default from the file name)"),
         cl::init(0), cl::cat(category));
static cl::opt<unsigned>
    tileMOpt("tile-m", cl::desc("Tile rows (default from the file name BM..)"),
             cl::init(0), cl::cat(category));
static cl::opt<unsigned>
    tileNOpt("tile-n",
             cl::desc("Tile columns (default from the file name BN..)"),
             cl::init(0), cl::cat(category));
static cl::opt<int64_t> groupOpt("group", cl::desc("Quantization group size"),
                                 cl::init(128), cl::cat(category));
static cl::opt<uint64_t> seedOpt("seed", cl::desc("Random seed"), cl::init(1),
                                 cl::cat(category));
static cl::opt<bool> transposeYOpt("transpose-y",
                                   cl::desc("Write Y as (M, B, N)"),
                                   cl::cat(category));
static cl::opt<unsigned> threadsOpt("emu-threads",
                                    cl::desc("Worker threads (0 = all cores)"),
                                    cl::init(1), cl::cat(category));
static cl::opt<uint64_t> maxStepsOpt("emu-max-steps",
                                     cl::desc("Per-wave instruction limit"),
                                     cl::init(50'000'000), cl::cat(category));
static cl::opt<int>
    traceOpt("trace-wave",
             cl::desc("Trace wave N of workgroup (0,0,0) to stderr (-1 = "
                      "off); with --timing, then also the timed replay's "
                      "steps, each as t=CYCLE ADDRESS TEXT"),
             cl::init(-1), cl::cat(category));
static cl::opt<bool> noPreload(
    "no-kernarg-preload",
    cl::desc("Start at the entry even when the kernel preloads kernargs"),
    cl::cat(category));

static cl::OptionCategory timingCategory(
    "timing model (mla-fp8/Emulator/Timing.h; constants and their sources "
    "in lib/Hardware/DeviceTiming.cpp)");
static cl::opt<bool> timingOpt(
    "timing",
    cl::desc("Model the launch's kernel time on --device. In bundle and --abi "
             "modes one workgroup per class runs (tails and splits apart) and "
             "Y is not checked; add --full to run and check every workgroup"),
    cl::cat(timingCategory));
static cl::opt<bool>
    fullOpt("full",
            cl::desc("With --timing: simulate every workgroup and check Y"),
            cl::cat(timingCategory));
static cl::opt<std::string> deviceOpt(
    "device",
    cl::desc("With --timing: the product whose constants the model uses "
             "(default: MI300X for gfx942, MI355X for gfx950)"),
    cl::cat(timingCategory));
static cl::opt<bool>
    jsonOpt("json",
            cl::desc("With --timing: print the model as one JSON object"),
            cl::cat(timingCategory));
static cl::opt<unsigned> stallSitesOpt(
    "stall-sites",
    cl::desc("With --timing: how many of the critical wave's longest waits "
             "to list (default 12)"),
    cl::init(12), cl::cat(timingCategory));

/// Prints one error line and exits non-zero.
[[noreturn]] static void die(const Twine &msg) {
  errs() << "mla-fp8-emu: error: " << msg << "\n";
  exit(1);
}

static std::array<uint32_t, 3> parseDims(StringRef s, StringRef what) {
  std::array<uint32_t, 3> d = {1, 1, 1};
  SmallVector<StringRef, 3> parts;
  s.split(parts, ',');
  if (parts.empty() || parts.size() > 3)
    die("--" + what + " expects x[,y[,z]], got '" + s + "'");
  for (unsigned i = 0; i < parts.size(); ++i)
    if (parts[i].trim().getAsInteger(10, d[i]) || d[i] == 0)
      die("--" + what + " expects positive integers, got '" + s + "'");
  return d;
}

static double gSeconds = 0;

static void printStats(const ExecStats &s) {
  outs() << "dynamic counts: " << s.instructions << " instructions (VALU "
         << s.valu << ", SALU " << s.salu << ", MFMA " << s.mfma << ", SMEM "
         << s.smem << ", VMEM " << s.vmem << ", LDS " << s.lds << ", branch "
         << s.branch << ", other " << s.other << ")\n"
         << "memory: " << s.bytesLoaded << " bytes loaded, " << s.bytesStored
         << " bytes stored; LDS " << s.ldsBytesRead << " bytes read, "
         << s.ldsBytesWritten << " bytes written\n"
         << "waves: " << s.waves << " in " << s.workgroups << " workgroups\n"
         << format("emulation: %.3f s, %.2f M instructions/s\n", gSeconds,
                   gSeconds > 0 ? s.instructions / gSeconds / 1e6 : 0.0);
}

/// The largest buffer --arg may ask for, and all of them together: sizes are
/// checked before anything is allocated.
static constexpr uint64_t kMaxArgBufferBytes = uint64_t(1) << 30;
static constexpr uint64_t kMaxArgBytesTotal = uint64_t(4) << 30;

/// Dies unless -B and -M with N, K and a split-K workspace of
/// `workspaceBytes` fit the emulator's host-memory bound (Limits.h).
static void checkHostBytes(int64_t n, int64_t k, int64_t workspaceBytes) {
  int64_t hostBytes =
      runtime::getEmulatorHostBytes(bOpt, mOpt, n, k, workspaceBytes);
  if (hostBytes > runtime::kEmulatorMaxHostBytes)
    die(formatv("-B, -M, -N and -K need {0} bytes of host memory to emulate "
                "(X, W and Y with their copies{1}), more than the {2} (4 GiB) "
                "one emulation takes; emulate a smaller problem",
                hostBytes,
                workspaceBytes ? " and the split-K workspace" : "",
                runtime::kEmulatorMaxHostBytes)
            .str());
}

/// The product --timing models on `chip`, or null without --timing.
static const DeviceTiming *getTimingDevice(StringRef chip) {
  if (!timingOpt) {
    if (fullOpt || jsonOpt || !deviceOpt.empty() ||
        stallSitesOpt.getNumOccurrences())
      die("--full, --json, --device and --stall-sites go with --timing");
    return nullptr;
  }
  const DeviceTiming *device = deviceOpt.empty()
                                   ? getDefaultDeviceTiming(chip)
                                   : lookupDeviceTiming(deviceOpt);
  if (!device)
    die("unknown --device '" + deviceOpt +
        "' (known: " + joinDeviceTimingNames() + ")");
  if (device->chip != chip)
    die("--device " + device->name + " is a " + device->chip +
        ", but the kernel is for " + chip);
  return device;
}

/// Prints the timing model of a run; returns the exit code. A launch of no
/// workgroups (M = 0) takes no kernel time.
static int reportTiming(const ExecStats &stats) {
  LaunchTiming empty;
  empty.estimates.push_back({});
  empty.estimates.front().limiter = "none";
  const LaunchTiming &timing = stats.timing ? *stats.timing : empty;
  if (jsonOpt)
    printLaunchTimingJSON(outs(), timing, stallSitesOpt);
  else if (!stats.timing)
    outs() << "timing model " << kTimingModelVersion
           << ": no workgroups to launch: 0 us\n";
  else
    printLaunchTiming(outs(), timing, stallSitesOpt);
  return 0;
}

/// Prints what the reference check found; returns the exit code.
static int reportVerification(const runtime::KernelEntry &kernel,
                              const runtime::VerifyResult &result) {
  if (!result.error.empty())
    die(kernel.symbol + ": " + result.error);
  // The representative timing run leaves Y incomplete: nothing to check.
  if (timingOpt && !fullOpt)
    return reportTiming(result.stats);
  if (timingOpt && jsonOpt) {
    if (!result.passed())
      die(kernel.symbol + ": Y differs from the reference: " + result.message);
    return reportTiming(result.stats);
  }
  outs() << format("vs f64 reference: max abs error %.3g, max %.3g ulp (%s)\n",
                   result.maxAbsError, result.maxUlp, kernel.outType.c_str());
  if (!result.note.empty())
    outs() << result.note << "\n";
  printStats(result.stats);
  if (!result.passed()) {
    outs() << "FAIL: " << result.failures << " elements outside tolerance, "
           << result.unwritten << " never written, " << result.outside
           << " written outside Y; " << result.message << "\n";
    return 1;
  }
  outs() << "PASS\n";
  if (timingOpt)
    return reportTiming(result.stats);
  return 0;
}

/// --check-bundle: loads the bundle with every check the loader makes.
static int checkBundle() {
  auto bundle = runtime::loadBundle(inputFile);
  if (!bundle)
    die(toString(bundle.takeError()));
  size_t kernels = 0;
  std::string chips;
  for (const runtime::LoadedChip &chip : bundle->chips) {
    kernels += chip.kernels.size();
    chips += (chips.empty() ? "" : ", ") + chip.chip;
  }
  outs() << inputFile << ": OK: schema " << bundle->schemaVersion << ", "
         << "chips " << chips << ", " << kernels << " kernels, manifest sha256 "
         << bundle->manifestSha256 << "\n";
  return 0;
}

/// Bundle mode: the kernel a server would pick for (chip, N, K, M) from an
/// mla-fp8-aot bundle, launched as the manifest says, checked against the
/// reference.
static int runBundle() {
  auto bundle = runtime::loadBundle(inputFile);
  if (!bundle)
    die(toString(bundle.takeError()));
  int64_t n = nOpt ? nOpt : 512, k = kOpt ? kOpt : 128;
  // The first kernel for (chip, N, K, G, in type, M), whatever its output
  // type, descale mode or bias.
  if (!lookupChip(chipOpt))
    die(describeUnsupportedChip(chipOpt));
  if (inTypeOpt != "bf16" && inTypeOpt != "f16")
    die("--in-type must be bf16 or f16, got '" + inTypeOpt + "'");
  const runtime::KernelEntry *kernel = nullptr;
  for (const char *outType : {"bf16", "f16"})
    for (kernel_abi::WeightScaleMode wScale :
         {kernel_abi::WeightScaleMode::PerTensor,
          kernel_abi::WeightScaleMode::PerBatch})
      for (bool hasBias : {false, true}) {
        runtime::KernelQuery query;
        query.chip = chipOpt;
        query.n = n;
        query.k = k;
        query.m = mOpt;
        query.batch = bOpt;
        query.inType = inTypeOpt;
        query.outType = outType;
        query.weightScale = wScale;
        query.groupSize = groupOpt;
        query.hasBias = hasBias;
        if (!kernel)
          kernel = bundle->findKernel(query);
      }
  // The miss names a command that generates a bundle holding the kernel:
  // its (N, K) as K-up's (kv_lora_rank, qk_nope_head_dim), planned for B * M
  // rows (the second projection it adds, (K, N), does no harm).
  if (!kernel)
    die(formatv("bundle has no {0} kernel for N={1} K={2} G={3} B={6} M={4} "
                "with {5} activations; generate one with: mla-fp8-aot "
                "--heads={6} --kv-lora-rank={1} --qk-nope-head-dim={2} "
                "--v-head-dim={2} --tp=1 --max-m={4} --group-size={3} "
                "--in-type={5} --chips={0} -o DIR",
                chipOpt.getValue(), n, k, groupOpt.getValue(), mOpt.getValue(),
                inTypeOpt.getValue(), bOpt.getValue())
            .str());
  checkHostBytes(n, k, int64_t(kernel->getWorkspaceBytes(mOpt, bOpt)));
  runtime::EmulatorLauncher launcher;
  launcher.setMaxStepsPerWave(maxStepsOpt);
  launcher.setTraceWave(traceOpt);
  launcher.setTiming(getTimingDevice(chipOpt), fullOpt);
  runtime::VerifyProblem problem;
  problem.compare = !timingOpt || fullOpt;
  problem.batch = bOpt;
  problem.m = mOpt;
  problem.seed = seedOpt;
  if (stridedXOpt)
    problem.x = runtime::kQNopeLayout;
  if (transposeYOpt)
    problem.y = runtime::kWideTokenMajorLayout;
  problem.threads = threadsOpt;
  auto start = std::chrono::steady_clock::now();
  runtime::VerifyResult result =
      runtime::verifyKernel(launcher, *kernel, problem);
  gSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!jsonOpt)
    outs() << "kernel " << kernel->symbol << " (" << kernel->chip
           << "): B=" << bOpt << " M=" << mOpt << " N=" << n << " K=" << k
           << ", workgroup " << kernel->workgroupSize[0] << "\n";
  return reportVerification(*kernel, result);
}

/// Foreign mode: a record of --foreign's kernels.json, run on real inputs
/// and checked, then timed at the same shape.
static int runForeign() {
  if (fileOpt.empty())
    die("--foreign needs --file NAME (a record's code object)");
  if (!inputFile.empty())
    die("--foreign takes no positional input; the code object is --file's, "
        "beside the kernels.json");
  auto records = runtime::readForeignKernels(foreignOpt);
  if (!records)
    die(toString(records.takeError()));
  const runtime::ForeignKernel *record = nullptr;
  const runtime::ForeignCase *useCase = nullptr;
  for (const runtime::ForeignKernel &r : *records) {
    if (r.file != fileOpt)
      continue;
    if (!record)
      record = &r;
    for (const runtime::ForeignCase &c : r.cases) {
      bool matches =
          (!bOpt.getNumOccurrences() || c.b == bOpt) &&
          (!mOpt.getNumOccurrences() || c.m == mOpt) &&
          (!nOpt.getNumOccurrences() || c.n == nOpt) &&
          (!kOpt.getNumOccurrences() || c.k == kOpt);
      if (matches && !useCase) {
        record = &r;
        useCase = &c;
      }
    }
  }
  if (!record)
    die("no record of " + foreignOpt + " is for file '" + fileOpt + "'");
  // No case has the given sizes: the record's first case gives the others
  // (and the layout).
  if (!useCase && !record->cases.empty())
    useCase = &record->cases.front();
  runtime::ForeignRunOptions options;
  if (useCase) {
    options.b = useCase->b;
    options.m = useCase->m;
    options.n = useCase->n;
    options.k = useCase->k;
    options.tokenMajorX = useCase->tokenMajorX;
    options.tokenMajorY = useCase->tokenMajorY;
  } else {
    options.n = record->n;
    options.k = record->k;
  }
  if (bOpt.getNumOccurrences() || !useCase)
    options.b = bOpt;
  // -B, -M, -N and -K override the case's sizes.
  if (mOpt.getNumOccurrences() || !useCase)
    options.m = mOpt;
  if (nOpt.getNumOccurrences())
    options.n = nOpt;
  if (kOpt.getNumOccurrences())
    options.k = kOpt;
  if (options.n < 1 || options.k < 1)
    die("the record gives no N and K: pass -N and -K");
  options.aiterBiasRounding = aiterBiasOpt;
  options.seed = seedOpt;
  options.threads = threadsOpt;

  SmallString<256> path(sys::path::parent_path(foreignOpt));
  sys::path::append(path, record->file);
  auto co = CodeObject::fromFile(path);
  if (!co)
    die(toString(co.takeError()));
  if ((*co)->getChip().name != record->chip)
    die(path + " is for " + (*co)->getChip().name + ", the record says " +
        record->chip);
  auto emulator = Emulator::create(std::move(*co));
  if (!emulator)
    die(toString(emulator.takeError()));
  const DeviceTiming *device = getTimingDevice(record->chip);

  // Y is checked first, at the shape itself or, where that would take long,
  // at a smaller B and then M (the same code object, M kept a multiple of
  // the tile plus the shape's own remainder).
  constexpr double kCheckBudget = double(int64_t(1) << 28); // multiply-adds
  runtime::ForeignRunOptions check = options;
  auto cost = [&](const runtime::ForeignRunOptions &x) {
    return double(x.b) * std::max<int64_t>(x.m, 1) * x.n * x.k;
  };
  if (device) {
    while (check.b > 1 && cost(check) > kCheckBudget)
      check.b = std::max<int64_t>(1, check.b / 2);
    int64_t tile = std::max<int64_t>(record->blockM, 1);
    while (check.m > tile && cost(check) > kCheckBudget)
      check.m = std::max<int64_t>(
          tile, (check.m / 2) / tile * tile + check.m % tile);
  }
  auto start = std::chrono::steady_clock::now();
  auto checked = runtime::runForeignKernel(**emulator, *record, check);
  if (!checked)
    die(toString(checked.takeError()));
  gSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string shape = formatv("B={0} M={1} N={2} K={3}", check.b, check.m,
                              check.n, check.k);
  if (!checked->passed()) {
    outs() << "FAIL: " << record->file << " at " << shape << ": "
           << checked->failures << " of " << checked->elements
           << " elements outside tolerance; " << checked->message << "\n";
    return 1;
  }
  if (!jsonOpt) {
    outs() << "kernel " << record->symbol << " (" << record->file << ", "
           << record->chip << "): grid " << checked->grid[0] << "x"
           << checked->grid[1] << "x" << checked->grid[2] << ", workgroup "
           << record->workgroupSize << ", dynamic LDS "
           << record->dynamicLdsBytes << " bytes\n";
    printStats(checked->stats);
    outs() << format("PASS: Y at %s within tolerance of the reference (max "
                     "error %.3g of max |Y|)\n",
                     shape.c_str(), checked->maxRelativeError);
  }
  if (!device)
    return 0;
  options.timing = device;
  auto timed = runtime::runForeignKernel(**emulator, *record, options);
  if (!timed)
    die(toString(timed.takeError()));
  if (!jsonOpt)
    outs() << formatv("timed at B={0} M={1} N={2} K={3}\n", options.b,
                      options.m, options.n, options.k);
  return reportTiming(timed->stats);
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&category, &timingCategory});
  std::string overview =
      "mla-fp8-emu: runs a kernel of an AMDGPU code "
      "object (" +
      joinChipNames() +
      ") on the CPU emulator\n\n"
      "Generic mode: --kernel, --grid, --block, --lds and --arg describe the "
      "launch.\nPrequant-bmm mode (--abi): random inputs for B, M, N, K, run, "
      "and a comparison with the reference.\nBundle mode (the input is an "
      "mla-fp8-aot bundle directory): the kernel the\nmanifest picks for "
      "--chip, --N, --K (default 512, 128) and the rows -B x -M, on random "
      "inputs,\n"
      "compared with the reference.\nBundle check (--check-bundle DIR): "
      "verifies a copied or downloaded bundle with every\ncheck the loader "
      "makes and prints one OK line, or the error (exit 1).\nForeign mode "
      "(--foreign KERNELS_JSON --file NAME): a code object described by a "
      "record\n(arguments, grid, workgroup, dynamic LDS) on real inputs, Y "
      "checked, PASS or FAIL,\nand with --timing its modelled time.\n";
  cl::ParseCommandLineOptions(argc, argv, overview);

  if (!foreignOpt.empty())
    return runForeign();
  if (!fileOpt.empty() || aiterBiasOpt)
    die("--file and --aiter-bias-rounding go with --foreign");
  if (inputFile.empty())
    die("give a code object (.hsaco) or a bundle directory, or --foreign "
        "KERNELS_JSON --file NAME");

  if (checkBundleOpt) {
    if (!sys::fs::is_directory(inputFile))
      die("--check-bundle expects a bundle directory, got '" + inputFile + "'");
    return checkBundle();
  }

  // Sizes the launch and the inputs: bounded so that buffers stay allocatable
  // and the grid fits the hardware's limits.
  if (bOpt < 1 || bOpt > runtime::kEmulatorMaxBatch)
    die(formatv("-B must be between 1 and {0}, got {1}",
                runtime::kEmulatorMaxBatch, bOpt.getValue())
            .str());
  if (mOpt < 0 || mOpt > runtime::kEmulatorMaxM)
    die(formatv("-M must be between 0 and {0}, got {1}", runtime::kEmulatorMaxM,
                mOpt.getValue())
            .str());
  for (auto *dim : {&nOpt, &kOpt})
    if (*dim < 0 || *dim > runtime::kEmulatorMaxDim)
      die(formatv("-{0} must be between 1 and {1}, got {2}", dim->ArgStr,
                  runtime::kEmulatorMaxDim, dim->getValue())
              .str());
  // A bundle's kernel has N = 512, K = 128 unless -N and -K say otherwise;
  // the modes that learn N, K or a workspace later check again.
  checkHostBytes(nOpt ? nOpt : 512, kOpt ? kOpt : 128, 0);

  if (sys::fs::is_directory(inputFile))
    return runBundle();

  auto coOr = CodeObject::fromFile(inputFile);
  if (!coOr)
    die(toString(coOr.takeError()));
  std::shared_ptr<const CodeObject> co = std::move(*coOr);
  std::string kernel = kernelName;
  if (kernel.empty()) {
    if (co->getKernels().size() != 1)
      die("the code object has " + Twine(co->getKernels().size()) +
          " kernels; choose one with --kernel");
    kernel = co->getKernels()[0].name;
  }
  auto kOr = co->getKernel(kernel);
  if (!kOr)
    die(toString(kOr.takeError()));
  auto emuOr = Emulator::create(co);
  if (!emuOr)
    die(toString(emuOr.takeError()));
  Emulator &emu = **emuOr;

  DispatchConfig cfg;
  cfg.dynamicLdsBytes = ldsOpt;
  cfg.threads = threadsOpt;
  cfg.maxStepsPerWave = maxStepsOpt;
  cfg.preloadKernargs = !noPreload;
  cfg.traceWave = traceOpt;
  // The workgroup size the kernel was compiled for: .reqd_workgroup_size, or
  // else a .max_flat_workgroup_size its compiler set below LLVM's default of
  // 1024 (Triton sets it to num_warps * 64). A kernel run with fewer
  // work-items computes only part of its output, so a smaller --block is
  // refused rather than returning partial results.
  constexpr uint32_t kDefaultMaxFlatWorkgroupSize = 1024;
  std::optional<std::array<uint32_t, 3>> compiledFor = kOr->reqdWorkgroupSize;
  if (!compiledFor && kOr->maxFlatWorkgroupSize < kDefaultMaxFlatWorkgroupSize)
    compiledFor = {kOr->maxFlatWorkgroupSize, 1, 1};
  if (!blockOpt.empty())
    cfg.workgroupSize = parseDims(blockOpt, "block");
  else if (compiledFor)
    cfg.workgroupSize = *compiledFor;
  if (!blockOpt.empty() && kOr->reqdWorkgroupSize &&
      cfg.workgroupSize != *kOr->reqdWorkgroupSize)
    die(formatv("--block {0},{1},{2} differs from the workgroup size kernel "
                "'{3}' was compiled for ({4},{5},{6}, .reqd_workgroup_size)",
                cfg.workgroupSize[0], cfg.workgroupSize[1],
                cfg.workgroupSize[2], kernel, (*compiledFor)[0],
                (*compiledFor)[1], (*compiledFor)[2])
            .str());
  uint64_t blockItems = uint64_t(cfg.workgroupSize[0]) * cfg.workgroupSize[1] *
                        cfg.workgroupSize[2];
  if (!blockOpt.empty() && compiledFor && blockItems < (*compiledFor)[0])
    die(formatv("--block {0},{1},{2} has fewer work-items than kernel '{3}' "
                "was compiled for ({4}, .max_flat_workgroup_size)",
                cfg.workgroupSize[0], cfg.workgroupSize[1],
                cfg.workgroupSize[2], kernel, (*compiledFor)[0])
            .str());

  if (!abiOpt.empty()) {
    if (abiOpt != "triton-peer")
      die("unknown --abi '" + abiOpt + "' (supported: triton-peer)");
    if (!argsOpt.empty() || !gridOpt.empty())
      die("--abi computes the arguments and the grid; drop --arg/--grid");
    // What the reference check generates inputs for: the peer kernels take
    // bf16 activations and a per-tensor descale, and give bf16.
    runtime::KernelEntry peer;
    peer.symbol = kernel;
    peer.chip = co->getChip().name.str();
    peer.n = nOpt;
    peer.k = kOpt;
    peer.groupSize = groupOpt;
    peer.inType = peer.outType = "bf16";
    peer.fp8Type = co->getChip().fp8E4M3TypeName.str();
    peer.weightScale = kernel_abi::WeightScaleMode::PerTensor;
    runtime::TritonPeerLaunch launch;
    unsigned &tm = launch.tileM, &tn = launch.tileN;
    tm = tileMOpt;
    tn = tileNOpt;
    // Triton peer objects are named ..._N<n>_K<k>_BM<m>_BN<n>_...
    SmallVector<StringRef, 5> mt;
    Regex re("N([0-9]+)_K([0-9]+)_BM([0-9]+)_BN([0-9]+)");
    if (re.match(sys::path::filename(inputFile), &mt)) {
      // The name is data: its numbers are bounded like the flags they
      // stand for.
      auto fromName = [&](StringRef digits, const char *what, int64_t max) {
        int64_t v;
        if (digits.getAsInteger(10, v) || v < 1 || v > max)
          die(formatv("the file name's {0} = {1} is not in [1, {2}]; pass "
                      "it as a flag",
                      what, digits, max)
                  .str());
        return v;
      };
      if (!peer.n)
        peer.n = fromName(mt[1], "N", runtime::kEmulatorMaxDim);
      if (!peer.k)
        peer.k = fromName(mt[2], "K", runtime::kEmulatorMaxDim);
      if (!tm)
        tm = unsigned(fromName(mt[3], "BM", 1024));
      if (!tn)
        tn = unsigned(fromName(mt[4], "BN", 1024));
    }
    if (!peer.n || !peer.k || !tm || !tn)
      die("--abi=" + abiOpt +
          " needs --N, --K, --tile-m and --tile-n (not derivable from the "
          "file name)");
    checkHostBytes(peer.n, peer.k, 0);
    if (blockOpt.empty() && !compiledFor)
      cfg.workgroupSize = {kOr->maxFlatWorkgroupSize, 1, 1};
    launch.config = cfg;
    launch.timing = getTimingDevice(co->getChip().name);
    launch.fullTiming = fullOpt;
    runtime::VerifyProblem problem;
    problem.compare = !timingOpt || fullOpt;
    problem.batch = bOpt;
    problem.m = mOpt;
    problem.seed = seedOpt;
    problem.threads = threadsOpt;
    // The peer kernels write Y through its strides: (M, B, N), unpadded.
    problem.y.tokenMajor = transposeYOpt;
    auto start = std::chrono::steady_clock::now();
    runtime::VerifyResult result = runtime::verifyPrequantBmm(
        peer, problem,
        [&](const runtime::PrequantBmmCall &call, unsigned threads) {
          return runtime::launchTritonPeer(emu, kernel, peer.n, peer.k, call,
                                           launch, threads);
        });
    gSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!jsonOpt)
      outs() << "kernel " << kernel << " (" << peer.chip << "): B=" << bOpt
             << " M=" << mOpt << " N=" << peer.n << " K=" << peer.k << " tile "
             << tm << "x" << tn << ", workgroup " << cfg.workgroupSize[0]
             << ", dynamic LDS " << cfg.dynamicLdsBytes << "\n";
    return reportVerification(peer, result);
  }

  // Generic mode.
  if (gridOpt.empty())
    die("generic mode needs --grid (or use --abi)");
  cfg.gridWorkgroups = parseDims(gridOpt, "grid");
  DeviceMemory mem;
  std::vector<KernelArg> kargs;
  std::mt19937_64 rng(seedOpt);
  uint64_t argBytes = 0;
  for (StringRef a : argsOpt) {
    SmallVector<StringRef, 4> f;
    a.split(f, ':');
    int64_t v;
    if (f[0] == "null" && f.size() == 1) {
      kargs.push_back(KernelArg::pointer(0));
    } else if ((f[0] == "i32" || f[0] == "i64") && f.size() == 2 &&
               !f[1].getAsInteger(0, v)) {
      kargs.push_back(f[0] == "i32" ? KernelArg::i32(int32_t(v))
                                    : KernelArg::i64(v));
    } else if (f[0] == "buf" && (f.size() == 3 || f.size() == 4) &&
               !f[2].getAsInteger(0, v) && v >= 0) {
      if (uint64_t(v) > kMaxArgBufferBytes ||
          argBytes + uint64_t(v) > kMaxArgBytesTotal)
        die(formatv("--arg '{0}': {1} bytes is more than the emulator's "
                    "limit of {2} per buffer and {3} in all",
                    a, v, kMaxArgBufferBytes, kMaxArgBytesTotal)
                .str());
      argBytes += uint64_t(v);
      uint64_t addr = mem.allocate(f[1], uint64_t(v));
      if (f.size() == 4 && f[3] == "rand") {
        Buffer *b = mem.lookup(f[1]);
        for (int64_t i = 0; i < v; ++i)
          b->data[i] = uint8_t(rng());
      } else if (f.size() == 4 && f[3] != "zero") {
        die("bad --arg '" + a + "': fill must be zero or rand");
      }
      kargs.push_back(KernelArg::pointer(addr));
    } else {
      die("bad --arg '" + a +
          "' (expected i32:<v>, i64:<v>, null or buf:<name>:<bytes>[:fill])");
    }
  }
  // Generic mode knows nothing of the kernel's workgroup classes: every
  // workgroup runs.
  if (fullOpt)
    die("--full applies to bundle and --abi modes; generic mode simulates "
        "every workgroup anyway");
  TimingOptions timing;
  timing.device = getTimingDevice(co->getChip().name);
  if (timing.device)
    cfg.timing = &timing;
  auto start = std::chrono::steady_clock::now();
  auto stats = emu.dispatch(kernel, cfg, packKernelArgs(kargs), mem);
  gSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!stats)
    die(toString(stats.takeError()));
  if (timingOpt && jsonOpt)
    return reportTiming(*stats);
  outs() << "kernel " << kernel << " (" << co->getChip().name
         << ") completed\n";
  printStats(*stats);
  if (timingOpt)
    return reportTiming(*stats);
  return 0;
}
