//===- KernelABI.cpp - The prequant-bmm kernel ABI ------------------------===//

#include "mla-fp8/ABI/KernelABI.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::kernel_abi;

static const KernelArg kArgs[] = {
    {kArgX, "x", ArgKind::Pointer, 0, 8,
     "bf16/f16 activations, element (b, m, k) at b*x_stride_b + m*x_stride_m "
     "+ k"},
    {kArgXStrideB, "x_stride_b", ArgKind::I64, 8, 8, "elements"},
    {kArgXStrideM, "x_stride_m", ArgKind::I64, 16, 8, "elements"},
    {kArgM, "m", ArgKind::I64, 24, 8, "number of tokens"},
    {kArgW, "w", ArgKind::Pointer, 32, 8,
     "fp8 weights (B, N, K), K contiguous"},
    {kArgWScale, "w_scale", ArgKind::Pointer, 40, 8,
     "fp32 weight descale, 1 value (per_tensor) or B (per_batch)"},
    {kArgY, "y", ArgKind::Pointer, 48, 8,
     "output, element (b, m, n) at b*y_stride_b + m*y_stride_m + n"},
    {kArgBias, "bias", ArgKind::Pointer, 56, 8,
     "(B, N) in the output type, or null"},
    {kArgYStrideB, "y_stride_b", ArgKind::I64, 64, 8, "elements"},
    {kArgYStrideM, "y_stride_m", ArgKind::I64, 72, 8, "elements"},
    {kArgWorkspace, "workspace", ArgKind::Pointer, 80, 8,
     "split-K partial sums and arrival counters, workspace_bytes_per_block * "
     "B * ceil(M/block_m) bytes, zeroed once by its owner and left zeroed by "
     "every launch; may be null when workspace_bytes_per_block is 0"},
};
static_assert(sizeof(kArgs) / sizeof(kArgs[0]) == kNumArgs,
              "one row per ArgIndex");

llvm::ArrayRef<KernelArg> kernel_abi::getKernelArgs() { return kArgs; }

const KernelArg *kernel_abi::lookupKernelArg(llvm::StringRef name) {
  for (const KernelArg &arg : kArgs)
    if (arg.name == name)
      return &arg;
  return nullptr;
}

llvm::StringRef kernel_abi::stringifyArgKind(ArgKind kind) {
  switch (kind) {
  case ArgKind::Pointer:
    return "pointer";
  case ArgKind::I64:
    return "i64";
  }
  llvm_unreachable("unknown argument kind");
}

llvm::StringRef kernel_abi::getMetadataValueKind(ArgKind kind) {
  switch (kind) {
  case ArgKind::Pointer:
    return "global_buffer";
  case ArgKind::I64:
    return "by_value";
  }
  llvm_unreachable("unknown argument kind");
}

bool LaunchShape::isValid() const {
  return n >= 1 && n <= kMaxN && blockM >= 1 && blockM <= kMaxTileDim &&
         blockN >= 1 && blockN <= kMaxTileDim && waves >= 1 &&
         waves <= kMaxWaves && splitK >= 1 && splitK <= kMaxSplitK;
}

int64_t GridDim::evaluate(int64_t m, int64_t batch) const {
  if (var == Var::None)
    return value;
  // ceil(v / value) without forming v + value - 1.
  return llvm::divideCeil(std::max<int64_t>(var == Var::M ? m : batch, 0),
                          std::max<int64_t>(value, 1));
}

std::string GridDim::str() const {
  if (var == Var::None)
    return std::to_string(value);
  std::string name = var == Var::M ? "M" : "B";
  if (value == 1)
    return name;
  return "ceil(" + name + "/" + std::to_string(value) + ")";
}

std::array<GridDim, 3> kernel_abi::getGridDims(const LaunchShape &shape) {
  return {
      GridDim{GridDim::Var::None,
              int64_t(llvm::divideCeil(shape.n, shape.blockN)) * shape.splitK},
      GridDim{GridDim::Var::M, shape.blockM}, GridDim{GridDim::Var::B, 1}};
}

std::array<int64_t, 3> kernel_abi::getGrid(const LaunchShape &shape, int64_t m,
                                           int64_t batch) {
  std::array<GridDim, 3> dims = getGridDims(shape);
  return {dims[0].evaluate(m, batch), dims[1].evaluate(m, batch),
          dims[2].evaluate(m, batch)};
}

std::array<int64_t, 3> kernel_abi::getWorkgroupSize(const LaunchShape &shape) {
  return {kWaveSize * shape.waves, 1, 1};
}

std::optional<int64_t>
kernel_abi::getWorkspaceCountersOffset(const LaunchShape &shape) {
  if (!shape.isValid())
    return std::nullopt;
  return llvm::divideCeil(shape.n, shape.blockN) * shape.splitK * shape.blockM *
         shape.blockN * 4;
}

std::optional<int64_t>
kernel_abi::getWorkspaceBytesPerBlock(const LaunchShape &shape) {
  std::optional<int64_t> counters = getWorkspaceCountersOffset(shape);
  if (!counters)
    return std::nullopt;
  if (shape.splitK == 1)
    return 0;
  // One u32 counter per N tile after the partials; blocks start 256 bytes
  // apart so that every partial is 16-byte aligned for vector stores.
  return llvm::alignTo(*counters + 4 * llvm::divideCeil(shape.n, shape.blockN),
                       kWorkspaceAlignment);
}

std::optional<int64_t> kernel_abi::getWorkspaceBytes(const LaunchShape &shape,
                                                     int64_t m, int64_t batch) {
  std::optional<int64_t> perBlock = getWorkspaceBytesPerBlock(shape);
  if (!perBlock || m < 0 || batch < 0)
    return std::nullopt;
  int64_t blocks = 0, bytes = 0;
  if (__builtin_mul_overflow(llvm::divideCeil(m, shape.blockM), batch,
                             &blocks) ||
      __builtin_mul_overflow(blocks, *perBlock, &bytes))
    return std::nullopt;
  return bytes;
}

int64_t kernel_abi::getLDSBytes(int64_t blockM, int64_t groupSize) {
  return blockM * groupSize + 4 * blockM;
}

std::string kernel_abi::getKernelSymbol(const KernelNameFields &f) {
  std::string name = "mla_fp8_n" + std::to_string(f.n) + "_k" +
                     std::to_string(f.k) + "_g" + std::to_string(f.groupSize);
  if (f.inType != "bf16")
    name += "_x" + f.inType;
  name += "_" + f.outType;
  if (f.perBatchScale)
    name += "_pb";
  if (f.hasBias)
    name += "_bias";
  name += "_" + f.chip + "_r" + std::to_string(f.minRows) + "_" +
          (f.maxRows == 0 ? std::string("inf") : std::to_string(f.maxRows));
  return name;
}
