//===- AsmHelper.h - Assemble gfx9 text and run it on the emulator -*- C++
//-*-===//

#ifndef MLA_FP8_TEST_UNIT_EMULATOR_ASMHELPER_H
#define MLA_FP8_TEST_UNIT_EMULATOR_ASMHELPER_H

#include "mla-fp8/Emulator/Emulator.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir::mlafp8::emu::test {

/// Assembles `source` for `cpu` with LLVM MC in-process and returns the bytes
/// of its .text section.
llvm::Expected<std::vector<uint8_t>> assemble(const std::string &source,
                                              const std::string &cpu);

/// The result of running one workgroup of assembled code.
struct RunResult {
  std::vector<WaveState> waves;
  ExecStats stats;
};

/// Assembles `source` (s_endpgm appended), runs it as one workgroup of
/// `workItems` lanes on `chip` (a chip table name) with `ldsBytes` of LDS;
/// `setup` seeds each
/// wave's registers. v0 holds the work-item id; MODE has IEEE = 1 and
/// denormals kept, like LLVM's kernels. With `timing`, the timing model runs
/// and its result is in `stats.timing`.
llvm::Expected<RunResult> runAsm(const std::string &source,
                                 std::function<void(WaveState &)> setup = {},
                                 DeviceMemory *memory = nullptr,
                                 llvm::StringRef chip = "gfx942",
                                 unsigned workItems = 64, uint32_t ldsBytes = 0,
                                 const TimingOptions *timing = nullptr,
                                 unsigned workgroups = 1);

} // namespace mlir::mlafp8::emu::test

#endif // MLA_FP8_TEST_UNIT_EMULATOR_ASMHELPER_H
