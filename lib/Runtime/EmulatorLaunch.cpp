//===- EmulatorLaunch.cpp - run a bundle's kernel on the emulator ---------===//

#include "mla-fp8/Runtime/EmulatorLaunch.h"

#include "LaunchShape.h"

#include "mla-fp8/ABI/KernelABI.h"

#include "mla-fp8/Emulator/CodeObject.h"
#include "mla-fp8/Emulator/Emulator.h"
#include "mla-fp8/Emulator/Memory.h"
#include "mla-fp8/Runtime/Limits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>
#include <optional>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

EmulatorLauncher::EmulatorLauncher() = default;
EmulatorLauncher::~EmulatorLauncher() = default;

llvm::Expected<emu::Emulator *>
EmulatorLauncher::getEmulator(const KernelEntry &kernel) {
  if (!kernel.codeObject)
    return makeError("kernel '" + kernel.symbol + "' has no code object");
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<emu::Emulator> &slot = emulators[kernel.codeObject.get()];
  if (!slot) {
    const std::string &bytes = *kernel.codeObject;
    auto codeObject = emu::CodeObject::fromBytes(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
    if (!codeObject)
      return codeObject.takeError();
    auto emulator = emu::Emulator::create(
        std::shared_ptr<const emu::CodeObject>(std::move(*codeObject)));
    if (!emulator)
      return emulator.takeError();
    slot = std::move(*emulator);
  }
  return slot.get();
}

EmulatorLauncher::Workspace &
EmulatorLauncher::getWorkspace(const KernelEntry &kernel) {
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Workspace> &slot =
      workspaces[kernel.chip + "/" + kernel.symbol];
  if (!slot)
    slot = std::make_unique<Workspace>();
  return *slot;
}

uint64_t EmulatorLauncher::getWorkspaceSize(const KernelEntry &kernel) {
  Workspace *workspace = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = workspaces.find(kernel.chip + "/" + kernel.symbol);
    if (it == workspaces.end())
      return 0;
    workspace = it->second.get();
  }
  std::lock_guard<std::mutex> lock(workspace->mutex);
  return workspace->bytes.size();
}

/// The most bytes one emulated buffer may take: every size is checked
/// against it before anything is allocated.
static constexpr uint64_t kMaxEmulatorBufferBytes = uint64_t(16) << 30;

std::optional<uint64_t> runtime::getViewBytes(int64_t b, int64_t m,
                                              int64_t cols, int64_t sb,
                                              int64_t sm) {
  if (b < 1 || m < 1 || cols < 1 || sb < 0 || sm < 0)
    return std::nullopt;
  int64_t alongB, alongM, last, bytes;
  if (__builtin_mul_overflow(b - 1, sb, &alongB) ||
      __builtin_mul_overflow(m - 1, sm, &alongM) ||
      __builtin_add_overflow(alongB, alongM, &last) ||
      __builtin_add_overflow(last, cols, &last) ||
      __builtin_mul_overflow(last, int64_t(2), &bytes))
    return std::nullopt;
  return uint64_t(bytes);
}

/// `count` elements of `elementBytes`, or nullopt when that overflows.
static std::optional<uint64_t> bufferBytes(std::initializer_list<int64_t> dims,
                                           uint64_t elementBytes) {
  uint64_t bytes = elementBytes;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(bytes, uint64_t(d), &bytes))
      return std::nullopt;
  return bytes;
}

/// Checks the launch geometry against the code object's metadata for the
/// kernel: the manifest was checked at load, but a KernelEntry is a plain
/// struct that a caller may have built or changed.
static llvm::Error checkGeometry(const KernelEntry &kernel,
                                 const emu::KernelInfo &info, int64_t m,
                                 int64_t b) {
  std::string reason = kernel.checkLaunch(m, b);
  if (!reason.empty())
    return makeError("kernel '" + kernel.symbol + "': " + reason);
  const std::array<uint32_t, 3> &wg = kernel.workgroupSize;
  uint64_t items = uint64_t(wg[0]) * wg[1] * wg[2];
  if (info.reqdWorkgroupSize ? *info.reqdWorkgroupSize != wg
                             : items > info.maxFlatWorkgroupSize)
    return makeError(llvm::formatv(
        "kernel '{0}': workgroup size [{1}, {2}, {3}] is not what the code "
        "object's metadata allows ({4})",
        kernel.symbol, wg[0], wg[1], wg[2],
        info.reqdWorkgroupSize
            ? llvm::formatv(
                  "exactly [{0}, {1}, {2}]", (*info.reqdWorkgroupSize)[0],
                  (*info.reqdWorkgroupSize)[1], (*info.reqdWorkgroupSize)[2])
                  .str()
            : llvm::formatv("at most {0} work-items", info.maxFlatWorkgroupSize)
                  .str()));
  if (kernel.kernargSize != info.kernargSegmentSize)
    return makeError(llvm::formatv("kernel '{0}': kernarg size {1} differs "
                                   "from the code object's {2}",
                                   kernel.symbol, kernel.kernargSize,
                                   info.kernargSegmentSize));
  return llvm::Error::success();
}

/// Every launch must leave the split-K arrival counters at 0 (the zero-once
/// contract in KernelABI.h), or the next launch on the workspace goes wrong.
/// Each block's bytes from its first counter on are counters or padding,
/// which nothing writes.
static llvm::Error checkCountersAreZero(const KernelEntry &kernel,
                                        llvm::ArrayRef<uint8_t> workspace) {
  kernel_abi::LaunchShape shape = getLaunchShape(kernel);
  std::optional<int64_t> blockBytes =
      kernel_abi::getWorkspaceBytesPerBlock(shape);
  std::optional<int64_t> counters =
      kernel_abi::getWorkspaceCountersOffset(shape);
  if (!blockBytes || !counters || *blockBytes == 0)
    return llvm::Error::success();
  for (size_t block = 0; (block + 1) * *blockBytes <= workspace.size();
       ++block) {
    llvm::ArrayRef<uint8_t> tail = workspace.slice(
        block * *blockBytes + *counters, *blockBytes - *counters);
    if (llvm::any_of(tail, [](uint8_t byte) { return byte != 0; }))
      return makeError(llvm::formatv(
          "kernel '{0}' left an arrival counter of split-K workspace block "
          "{1} nonzero: the next launch on this workspace would be wrong",
          kernel.symbol, block));
  }
  return llvm::Error::success();
}

llvm::Expected<emu::ExecStats>
EmulatorLauncher::launch(const KernelEntry &kernel, const PrequantBmmCall &call,
                         unsigned threads) {
  if (call.batch < 0 || call.m < 0)
    return makeError(
        llvm::formatv("invalid launch: B = {0}, M = {1}", call.batch, call.m));
  if (!kernel.serves(call.m, call.batch) && call.m != 0 && call.batch != 0)
    return makeError(llvm::formatv(
        "kernel '{0}' serves the launches of {1} to {2} rows (B * M), not "
        "B = {3}, M = {4}",
        kernel.symbol, kernel.minRows,
        kernel.maxRows ? std::to_string(kernel.maxRows) : std::string("any"),
        call.batch, call.m));
  if (call.xStrideB < 0 || call.xStrideM < 0 || call.yStrideB < 0 ||
      call.yStrideM < 0)
    return makeError("strides must not be negative");
  // Nothing to compute: no launch (a grid with a zero dimension).
  if (call.m == 0 || call.batch == 0)
    return emu::ExecStats();
  if (!call.x || !call.w || !call.wScale || !call.y)
    return makeError("x, w, w_scale and y must not be null");
  if (kernel.hasBias != (call.bias != nullptr))
    return makeError("kernel '" + kernel.symbol + "' " +
                     (kernel.hasBias ? "adds a bias, but none was given"
                                     : "has no bias, but one was given"));

  llvm::Expected<emu::Emulator *> emulator = getEmulator(kernel);
  if (!emulator)
    return emulator.takeError();

  llvm::Expected<const emu::KernelInfo &> info =
      (*emulator)->getCodeObject().getKernel(kernel.symbol);
  if (!info)
    return info.takeError();
  if (llvm::Error err = checkGeometry(kernel, *info, call.m, call.batch))
    return std::move(err);

  int64_t b = call.batch, m = call.m, n = kernel.n, k = kernel.k;
  uint64_t wsCount = kernel.weightScale == kernel_abi::WeightScaleMode::PerBatch
                         ? uint64_t(b)
                         : 1;
  std::optional<uint64_t> xView =
      getViewBytes(b, m, k, call.xStrideB, call.xStrideM);
  std::optional<uint64_t> yView =
      getViewBytes(b, m, n, call.yStrideB, call.yStrideM);
  std::optional<uint64_t> wView = bufferBytes({b, n, k}, 1);
  std::optional<uint64_t> biasView = bufferBytes({b, n}, 2);
  uint64_t workspaceBytes = kernel.getWorkspaceBytes(m, b);
  for (auto [name, bytes] :
       {std::pair<const char *, std::optional<uint64_t>>{"x", xView},
        {"y", yView},
        {"w", wView},
        {"bias", biasView},
        {"workspace", workspaceBytes}})
    if (!bytes || *bytes > kMaxEmulatorBufferBytes)
      return makeError(llvm::formatv("the emulator's '{0}' buffer for B = "
                                     "{1}, M = {2} would exceed {3} bytes",
                                     name, b, m, kMaxEmulatorBufferBytes));
  uint64_t xBytes = *xView, yBytes = *yView, wBytes = *wView;
  int64_t hostBytes =
      getEmulatorHostBytes(b, m, n, k, int64_t(workspaceBytes));
  if (hostBytes > kEmulatorMaxHostBytes)
    return makeError(llvm::formatv(
        "B = {0}, M = {1} of kernel '{2}' need {3} bytes of host memory to "
        "emulate (X, W, Y and the split-K workspace with their copies), more "
        "than the {4} (4 GiB) one emulation takes",
        b, m, kernel.symbol, hostBytes, kEmulatorMaxHostBytes));

  // Device buffers are exactly the caller's extents: any access beyond them
  // stops the emulator with the instruction and address. The inputs are the
  // caller's own memory, mapped read-only (a store to them stops the
  // emulator); Y is a copy, written back only when the launch succeeded.
  emu::DeviceMemory memory;
  auto mapInput = [&](const char *name, const void *data, uint64_t size) {
    return memory.mapNew(
        name,
        llvm::MutableArrayRef<uint8_t>(
            const_cast<uint8_t *>(static_cast<const uint8_t *>(data)), size),
        /*readOnly=*/true);
  };
  uint64_t xAddr = mapInput("x", call.x, xBytes);
  uint64_t wAddr = mapInput("w", call.w, wBytes);
  uint64_t wsAddr = mapInput("w_scale", call.wScale, wsCount * 4);
  uint64_t yAddr = memory.allocate("y", yBytes);
  if (llvm::Error err = memory.write(
          yAddr, llvm::ArrayRef<uint8_t>(
                     reinterpret_cast<const uint8_t *>(call.y), yBytes)))
    return std::move(err);
  uint64_t biasAddr =
      call.bias ? mapInput("bias", call.bias, *biasView) : uint64_t(0);

  // Split-K kernels meet in a workspace that their owner zeroes once and
  // that every launch leaves ready for the next (its counters back at 0).
  // Like a server, keep one per kernel across launches: a kernel that broke
  // the contract would make the next launch wrong, which the checks see.
  uint64_t workspaceAddr = 0;
  std::unique_lock<std::mutex> workspaceLock;
  if (workspaceBytes) {
    Workspace &workspace = getWorkspace(kernel);
    workspaceLock = std::unique_lock<std::mutex>(workspace.mutex);
    if (workspace.bytes.size() < workspaceBytes)
      workspace.bytes.assign(workspaceBytes, 0);
    workspaceAddr = memory.allocate("workspace", workspace.bytes.size());
    if (llvm::Error err = memory.write(workspaceAddr, workspace.bytes))
      return std::move(err);
  }

  // Each of the kernel ABI's arguments, at the offset the manifest gives
  // for its name (the loader checked both against the ABI and the code
  // object; a hand-built entry is checked here).
  std::array<uint64_t, kernel_abi::kNumArgs> values{};
  values[kernel_abi::kArgX] = xAddr;
  values[kernel_abi::kArgW] = wAddr;
  values[kernel_abi::kArgWScale] = wsAddr;
  values[kernel_abi::kArgBias] = biasAddr;
  values[kernel_abi::kArgY] = yAddr;
  values[kernel_abi::kArgM] = uint64_t(m);
  values[kernel_abi::kArgXStrideB] = uint64_t(call.xStrideB);
  values[kernel_abi::kArgXStrideM] = uint64_t(call.xStrideM);
  values[kernel_abi::kArgYStrideB] = uint64_t(call.yStrideB);
  values[kernel_abi::kArgYStrideM] = uint64_t(call.yStrideM);
  values[kernel_abi::kArgWorkspace] = workspaceAddr;
  std::vector<uint8_t> kernargs(kernel.kernargSize, 0);
  for (const kernel_abi::KernelArg &abi : kernel_abi::getKernelArgs()) {
    const KernelArg *arg = kernel.findArg(abi.name);
    if (!arg)
      return makeError("kernel '" + kernel.symbol + "' has no argument '" +
                       abi.name + "'");
    if (uint64_t(arg->offset) + arg->size > kernargs.size() ||
        arg->size != abi.size)
      return makeError("argument '" + abi.name + "' of kernel '" +
                       kernel.symbol + "' is not the kernel ABI's (" +
                       std::to_string(abi.size) +
                       " bytes inside the kernarg segment)");
    std::memcpy(kernargs.data() + arg->offset, &values[abi.index], arg->size);
  }

  emu::DispatchConfig config;
  std::array<uint64_t, 3> grid = kernel.getGrid(m, b);
  for (int i = 0; i < 3; ++i) {
    config.gridWorkgroups[i] = uint32_t(grid[i]);
    config.workgroupSize[i] = kernel.workgroupSize[i];
  }
  config.threads = threads;
  config.maxStepsPerWave = maxStepsPerWave;
  config.traceWave = traceWave;
  emu::TimingOptions timing;
  if (timingDevice) {
    timing.device = timingDevice;
    // The splits of a tile lie along x and meet at a counter: x stays exact.
    if (!fullTiming)
      timing.classify =
          emu::classifyByGridEdges(config.gridWorkgroups, {true, false, false});
    config.timing = &timing;
  }
  llvm::Expected<emu::ExecStats> stats =
      (*emulator)->dispatch(kernel.symbol, config, kernargs, memory);
  if (!stats)
    return stats.takeError();
  if (llvm::Error err =
          memory.read(yAddr, llvm::MutableArrayRef<uint8_t>(
                                 reinterpret_cast<uint8_t *>(call.y), yBytes)))
    return std::move(err);
  if (workspaceBytes) {
    Workspace &workspace = getWorkspace(kernel);
    if (llvm::Error err = memory.read(workspaceAddr, workspace.bytes))
      return std::move(err);
    if (llvm::Error err = checkCountersAreZero(kernel, workspace.bytes))
      return std::move(err);
  }
  return *stats;
}
