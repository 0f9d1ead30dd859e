//===- EmulatorFuzzer.cpp - the emulator's decoder and dispatcher ---------===//
//
// Input: a 6-byte header, then machine code. The code becomes the .text of a
// one-kernel image (as the emulator's unit tests build theirs) and runs as
// one workgroup with a step budget. The header varies what the kernel
// descriptor and the launch give the waves:
//   [0] bit 0: the chip table's second chip, gfx950 (else its first, gfx942);
//       bits 1-2: work-item id VGPRs (0..2); bit 3: workgroup ids in SGPRs;
//       bit 4: two preloaded kernarg dwords
//   [1] work-items - 1 (1..256: up to four waves, so barriers matter)
//   [2] static LDS in 256-byte units
//   [3] private (scratch) bytes per lane, a multiple of 4
//   [4] VGPR granules (compute_pgm_rsrc1[5:0]); [5] accum_offset field
// s[0:1] hold the kernarg pointer; the kernargs are the address and size of
// one 4 KiB buffer, so that loads and stores can reach real memory.
// Unknown or unmodelled instructions must stop the dispatch with an error.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include "mla-fp8/Emulator/Emulator.h"

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::emu;

namespace mlir::mlafp8::fuzz {

const char *getHarnessName() { return "emulator"; }

Outcome runInput(llvm::ArrayRef<uint8_t> data) {
  uint8_t header[6] = {0, 63, 0, 0, 63, 0};
  for (size_t i = 0; i < std::size(header) && i < data.size(); ++i)
    header[i] = data[i];
  llvm::ArrayRef<uint8_t> code = data.size() > std::size(header)
                                     ? data.drop_front(std::size(header))
                                     : llvm::ArrayRef<uint8_t>();

  llvm::ArrayRef<ChipInfo> chips = getSupportedChips();
  const ChipInfo &chip = chips[(header[0] & 1) % chips.size()];
  KernelDescriptor kd;
  kd.kernelCodeProperties = 1u << 3; // kernarg segment pointer in s[0:1]
  kd.computePgmRsrc2 = 2u << 1;      // two user SGPRs
  if (header[0] & 8)
    kd.computePgmRsrc2 |= 7u << 7;
  kd.computePgmRsrc2 |= std::min<unsigned>((header[0] >> 1) & 3, 2) << 11;
  if (header[0] & 16)
    kd.kernargPreload = 2;
  // Denormals kept, DX10 clamp, IEEE mode: what LLVM writes.
  kd.computePgmRsrc1 =
      (header[4] & 63u) | (0xfu << 16) | (1u << 21) | (1u << 23);
  kd.computePgmRsrc3 = header[5] & 63u;
  kd.groupSegmentFixedSize = uint32_t(header[2]) * 256;
  kd.privateSegmentFixedSize = header[3] & ~3u;

  std::shared_ptr<const CodeObject> codeObject(
      CodeObject::fromRawCode(code, chip, "fuzz", kd));
  auto emulator = Emulator::create(codeObject);
  if (!emulator)
    return Outcome::reject(llvm::toString(emulator.takeError()));

  DeviceMemory memory;
  const uint64_t bufferBytes = 4096;
  uint64_t buffer = memory.allocate("buffer", bufferBytes);
  std::vector<uint8_t> kernargs = packKernelArgs(
      {KernelArg::pointer(buffer), KernelArg::i64(int64_t(bufferBytes))});

  DispatchConfig config;
  config.workgroupSize = {uint32_t(header[1]) % 256 + 1, 1, 1};
  config.maxStepsPerWave = 4096;
  config.threads = 1;
  llvm::Expected<ExecStats> stats =
      (*emulator)->dispatch("fuzz", config, kernargs, memory);
  if (!stats)
    return Outcome::reject(llvm::toString(stats.takeError()));
  return Outcome::accept();
}

} // namespace mlir::mlafp8::fuzz
