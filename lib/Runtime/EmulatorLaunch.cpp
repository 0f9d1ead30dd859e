//===- EmulatorLaunch.cpp - run a bundle's kernel on the emulator ---------===//

#include "mla-fp8/Runtime/EmulatorLaunch.h"

#include "mla-fp8/Emulator/CodeObject.h"
#include "mla-fp8/Emulator/Emulator.h"
#include "mla-fp8/Emulator/Memory.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

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

/// Bytes from the first to one past the last element a (B, M, cols) view with
/// element strides (sb, sm, 1) touches, for 2-byte elements.
static uint64_t viewBytes(int64_t b, int64_t m, int64_t cols, int64_t sb,
                          int64_t sm) {
  return uint64_t((b - 1) * sb + (m - 1) * sm + cols) * 2;
}

llvm::Expected<emu::ExecStats>
EmulatorLauncher::launch(const KernelEntry &kernel, const PrequantBmmCall &call,
                         unsigned threads) {
  if (call.batch < 0 || call.m < 0)
    return makeError(
        llvm::formatv("invalid launch: B = {0}, M = {1}", call.batch, call.m));
  if (!kernel.servesM(call.m) && call.m != 0)
    return makeError(llvm::formatv("kernel '{0}' serves M in [{1}, {2}], not "
                                   "{3}",
                                   kernel.symbol, kernel.minM, kernel.maxM,
                                   call.m));
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

  int64_t b = call.batch, m = call.m, n = kernel.n, k = kernel.k;
  uint64_t xBytes = viewBytes(b, m, k, call.xStrideB, call.xStrideM);
  uint64_t yBytes = viewBytes(b, m, n, call.yStrideB, call.yStrideM);
  uint64_t wBytes = uint64_t(b * n * k);
  uint64_t wsCount = kernel.wScale == "per_batch" ? uint64_t(b) : 1;

  // Device buffers are exactly the caller's extents: any access beyond them
  // stops the emulator with the instruction and address.
  emu::DeviceMemory memory;
  uint64_t xAddr = memory.allocate("x", xBytes);
  uint64_t wAddr = memory.allocate("w", wBytes);
  uint64_t wsAddr = memory.allocate("w_scale", wsCount * 4);
  uint64_t yAddr = memory.allocate("y", yBytes);
  uint64_t biasAddr = 0;
  auto upload = [&](uint64_t addr, const void *data, uint64_t size) {
    return memory.write(addr, llvm::ArrayRef<uint8_t>(
                                  static_cast<const uint8_t *>(data), size));
  };
  if (llvm::Error err = upload(xAddr, call.x, xBytes))
    return std::move(err);
  if (llvm::Error err = upload(wAddr, call.w, wBytes))
    return std::move(err);
  if (llvm::Error err = upload(wsAddr, call.wScale, wsCount * 4))
    return std::move(err);
  if (llvm::Error err = upload(yAddr, call.y, yBytes))
    return std::move(err);
  if (call.bias) {
    biasAddr = memory.allocate("bias", uint64_t(b * n) * 2);
    if (llvm::Error err = upload(biasAddr, call.bias, uint64_t(b * n) * 2))
      return std::move(err);
  }

  // Split-K kernels meet in a workspace that their owner zeroes once and
  // that every launch leaves ready for the next (its counters back at 0).
  // Like a server, keep one per kernel across launches: a kernel that broke
  // the contract would make the next launch wrong, which the checks see.
  uint64_t workspaceBytes = kernel.getWorkspaceBytes(m, b);
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

  // Kernel arguments at the offsets the manifest gives, by name.
  std::vector<uint8_t> kernargs(kernel.kernargSize, 0);
  auto put = [&](std::string_view name, uint64_t value) -> llvm::Error {
    const KernelArg *arg = kernel.findArg(name);
    if (!arg)
      return makeError("kernel '" + kernel.symbol + "' has no argument '" +
                       std::string(name) + "'");
    if (arg->offset + arg->size > kernargs.size() || arg->size > 8)
      return makeError("argument '" + std::string(name) +
                       "' lies outside the kernarg segment");
    std::memcpy(kernargs.data() + arg->offset, &value, arg->size);
    return llvm::Error::success();
  };
  for (auto [name, value] : {std::pair<std::string_view, uint64_t>{"x", xAddr},
                             {"w", wAddr},
                             {"w_scale", wsAddr},
                             {"bias", biasAddr},
                             {"y", yAddr},
                             {"m", uint64_t(m)},
                             {"x_stride_b", uint64_t(call.xStrideB)},
                             {"x_stride_m", uint64_t(call.xStrideM)},
                             {"y_stride_b", uint64_t(call.yStrideB)},
                             {"y_stride_m", uint64_t(call.yStrideM)}})
    if (llvm::Error err = put(name, value))
      return std::move(err);
  if (kernel.findArg("workspace"))
    if (llvm::Error err = put("workspace", workspaceAddr))
      return std::move(err);

  emu::DispatchConfig config;
  std::array<uint64_t, 3> grid = kernel.getGrid(m, b);
  for (int i = 0; i < 3; ++i) {
    config.gridWorkgroups[i] = uint32_t(grid[i]);
    config.workgroupSize[i] = kernel.workgroupSize[i];
  }
  config.threads = threads;
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
  }
  return *stats;
}
