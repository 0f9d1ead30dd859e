//===- PeerLaunch.cpp - run a peer prequant-bmm kernel on the emulator ----===//

#include "mla-fp8/Runtime/PeerLaunch.h"

#include "mla-fp8/Emulator/Memory.h"
#include "mla-fp8/Runtime/EmulatorLaunch.h"

#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<emu::ExecStats>
runtime::launchTritonPeer(emu::Emulator &emulator, llvm::StringRef kernel,
                          int64_t n, int64_t k, const PrequantBmmCall &call,
                          const TritonPeerLaunch &launch, unsigned threads) {
  int64_t b = call.batch, m = call.m;
  if (b < 0 || m < 0 || n < 1 || k < 1 || !launch.tileM || !launch.tileN)
    return makeError(llvm::formatv("invalid peer launch: B = {0}, M = {1}, "
                                   "N = {2}, K = {3}, tile {4}x{5}",
                                   b, m, n, k, launch.tileM, launch.tileN));
  if (m == 0 || b == 0)
    return emu::ExecStats();
  if (call.bias)
    return makeError("the Triton peer kernels take no bias");
  std::optional<uint64_t> xBytes =
      getViewBytes(b, m, k, call.xStrideB, call.xStrideM);
  std::optional<uint64_t> yBytes =
      getViewBytes(b, m, n, call.yStrideB, call.yStrideM);
  // The layout passes sizes and strides as i32.
  constexpr int64_t kMaxI32 = std::numeric_limits<int32_t>::max();
  if (!xBytes || !yBytes ||
      llvm::any_of(std::initializer_list<int64_t>{m, n * k, b * n * k,
                                                  call.xStrideB, call.xStrideM,
                                                  call.yStrideB, call.yStrideM},
                   [](int64_t v) { return v > kMaxI32; }))
    return makeError("the Triton peer layout's i32 sizes and strides cannot "
                     "hold this problem");

  emu::DeviceMemory memory;
  auto upload = [&](llvm::StringRef name, const void *data, uint64_t bytes,
                    bool readOnly) -> llvm::Expected<uint64_t> {
    uint64_t address = memory.allocate(name, bytes, 256);
    if (llvm::Error err = memory.write(
            address,
            llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(data), bytes)))
      return std::move(err);
    memory.lookup(name)->readOnly = readOnly;
    return address;
  };
  llvm::Expected<uint64_t> x = upload("X", call.x, *xBytes, true);
  llvm::Expected<uint64_t> w = upload("W", call.w, uint64_t(b * n * k), true);
  llvm::Expected<uint64_t> ws = upload("ws", call.wScale, 4, true);
  llvm::Expected<uint64_t> y = upload("Y", call.y, *yBytes, false);
  for (llvm::Expected<uint64_t> *address : {&x, &w, &ws, &y})
    if (!*address)
      return address->takeError();

  emu::DispatchConfig config = launch.config;
  config.threads = threads;
  int64_t tiles = (m + launch.tileM - 1) / launch.tileM *
                  ((n + launch.tileN - 1) / launch.tileN);
  config.gridWorkgroups = {uint32_t(b), uint32_t(tiles), 1};
  emu::TimingOptions timing;
  if (launch.timing) {
    timing.device = launch.timing;
    // Tile y is pid_m * nTiles + pid_n.
    uint64_t nTiles = (n + launch.tileN - 1) / launch.tileN;
    uint64_t mTiles = (m + launch.tileM - 1) / launch.tileM;
    if (!launch.fullTiming)
      timing.classify = [=](const emu::WorkgroupId &id) {
        uint64_t pidM = id[1] / nTiles, pidN = id[1] % nTiles;
        return (emu::getEdgeClass(id[0], b) * 3 +
                emu::getEdgeClass(pidM, mTiles)) *
                   nTiles +
               pidN;
      };
    config.timing = &timing;
  }
  std::vector<emu::KernelArg> args = {
      emu::KernelArg::pointer(*x),
      emu::KernelArg::pointer(*w),
      emu::KernelArg::pointer(*y),
      emu::KernelArg::pointer(*ws),
      emu::KernelArg::i32(int32_t(m)),
      emu::KernelArg::i32(int32_t(n)),
      emu::KernelArg::i32(int32_t(k)),
      emu::KernelArg::i32(int32_t(call.xStrideB)),
      emu::KernelArg::i32(int32_t(call.xStrideM)),
      emu::KernelArg::i32(int32_t(n * k)),
      emu::KernelArg::i32(int32_t(k)),
      emu::KernelArg::i32(int32_t(call.yStrideB)),
      emu::KernelArg::i32(int32_t(call.yStrideM)),
      emu::KernelArg::pointer(0),
      emu::KernelArg::pointer(0)};
  llvm::Expected<emu::ExecStats> stats =
      emulator.dispatch(kernel, config, emu::packKernelArgs(args), memory);
  if (!stats)
    return stats.takeError();
  if (llvm::Error err =
          memory.read(*y, llvm::MutableArrayRef<uint8_t>(
                              reinterpret_cast<uint8_t *>(call.y), *yBytes)))
    return std::move(err);
  return *stats;
}
