//===- KernelTable.cpp - the kernels of a loaded bundle -------------------===//

#include "mla-fp8/Runtime/KernelTable.h"

#include "LaunchShape.h"

#include "mla-fp8/ABI/KernelABI.h"

#include <algorithm>
#include <limits>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;

std::array<uint64_t, 3> KernelEntry::getGrid(int64_t m, int64_t b) const {
  kernel_abi::LaunchShape shape = getLaunchShape(*this);
  if (!shape.isValid())
    return {0, 0, 0};
  std::array<int64_t, 3> grid = kernel_abi::getGrid(shape, m, b);
  return {uint64_t(grid[0]), uint64_t(grid[1]), uint64_t(grid[2])};
}

uint64_t KernelEntry::getWorkspaceBytes(int64_t m, int64_t b) const {
  std::optional<int64_t> bytes = kernel_abi::getWorkspaceBytes(
      getLaunchShape(*this), std::max<int64_t>(m, 0), std::max<int64_t>(b, 0));
  return bytes ? uint64_t(*bytes) : std::numeric_limits<uint64_t>::max();
}

std::string KernelEntry::checkLaunch(int64_t m, int64_t b) const {
  if (m < 0 || b < 0)
    return "M and B must not be negative";
  if (m > kMaxManifestM)
    return "M = " + std::to_string(m) + " is above the largest M a kernel " +
           "indexes, " + std::to_string(kMaxManifestM);
  if (!getLaunchShape(*this).isValid())
    return "kernel '" + symbol + "' has a tile outside the kernel ABI's bounds";
  if (workgroupSize[0] == 0 || workgroupSize[1] == 0 || workgroupSize[2] == 0)
    return "kernel '" + symbol + "' has no workgroup size";
  std::array<uint64_t, 3> dims = getGrid(m, b);
  const char *names[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    // The dispatch packet holds work-items per dimension in 32 bits.
    if (dims[i] > std::numeric_limits<uint32_t>::max() / workgroupSize[i])
      return "grid." + std::string(names[i]) + " = " + std::to_string(dims[i]) +
             " workgroups of " + std::to_string(workgroupSize[i]) +
             " work-items does not fit in 32 bits";
  }
  if (getWorkspaceBytes(m, b) == std::numeric_limits<uint64_t>::max())
    return "the split-K workspace for M = " + std::to_string(m) +
           ", B = " + std::to_string(b) + " does not fit in 64 bits";
  return "";
}

const KernelArg *KernelEntry::findArg(std::string_view name) const {
  for (const KernelArg &arg : args)
    if (arg.name == name)
      return &arg;
  return nullptr;
}

const LoadedChip *LoadedBundle::findChip(std::string_view chip) const {
  for (const LoadedChip &c : chips)
    if (c.chip == chip)
      return &c;
  return nullptr;
}

const KernelEntry *LoadedBundle::findKernel(const KernelQuery &q) const {
  const LoadedChip *chip = findChip(q.chip);
  if (!chip || q.m < 0 || q.batch < 0 || q.m > kMaxManifestM ||
      q.batch > kMaxManifestM)
    return nullptr;
  const KernelEntry *lowest = nullptr;
  kernel_abi::KernelDescription wanted = q;
  for (const KernelEntry &e : chip->kernels) {
    wanted.fp8Type = e.fp8Type;
    if (wanted != e)
      continue;
    if (e.serves(q.m, q.batch))
      return &e;
    if (!lowest || e.minRows < lowest->minRows)
      lowest = &e;
  }
  // M = 0 or B = 0 launches nothing; any kernel of the shape describes that
  // (empty) launch, and a launcher should not mistake it for an unsupported
  // shape.
  return q.m == 0 || q.batch == 0 ? lowest : nullptr;
}

const KernelEntry *LoadedBundle::findKernel(std::string_view chip, int64_t n,
                                            int64_t k, int64_t m, int64_t batch,
                                            std::string_view outType,
                                            std::string_view wScale,
                                            int64_t groupSize) const {
  std::optional<kernel_abi::WeightScaleMode> mode =
      kernel_abi::parseWeightScaleMode(wScale);
  if (!mode)
    return nullptr;
  KernelQuery q;
  q.chip = std::string(chip);
  q.n = n;
  q.k = k;
  q.m = m;
  q.batch = batch;
  q.outType = std::string(outType);
  q.weightScale = *mode;
  q.groupSize = groupSize;
  return findKernel(q);
}

KernelEntry
runtime::makeKernelEntry(const kernel_abi::KernelDescription &description,
                         int64_t minRows, int64_t maxRows,
                         const kernel_abi::LaunchShape &launch,
                         std::shared_ptr<const std::string> codeObject) {
  KernelEntry e;
  static_cast<kernel_abi::KernelDescription &>(e) = description;
  e.symbol = kernel_abi::getKernelSymbol(
      kernel_abi::getNameFields(description, minRows, maxRows));
  e.minRows = minRows;
  e.maxRows = maxRows;
  e.blockM = launch.blockM;
  e.blockN = launch.blockN;
  e.waves = launch.waves;
  e.splitK = launch.splitK;
  std::array<int64_t, 3> block = kernel_abi::getWorkgroupSize(launch);
  e.workgroupSize = {uint32_t(block[0]), uint32_t(block[1]),
                     uint32_t(block[2])};
  e.kernargSize = kernel_abi::kKernargBytes;
  e.workspaceBytesPerBlock =
      kernel_abi::getWorkspaceBytesPerBlock(launch).value_or(0);
  for (const kernel_abi::KernelArg &a : kernel_abi::getKernelArgs()) {
    KernelArg arg;
    arg.offset = a.offset;
    arg.size = a.size;
    arg.kind = kernel_abi::getMetadataValueKind(a.kind).str();
    arg.name = a.name.str();
    e.args.push_back(std::move(arg));
  }
  e.codeObject = std::move(codeObject);
  return e;
}
