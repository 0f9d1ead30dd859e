//===- Emulator.h - Functional gfx9 wave64 emulator -------------*- C++ -*-===//
//
// Runs the kernels of AMDGPU code objects on the CPU, for the chips of the chip
// table (mla-fp8/Hardware/Chip.h): the instructions are decoded with LLVM's
// AMDGPU disassembler, looked up in the emulator's instruction table (one row
// per mnemonic, lib/Emulator/InstTable.h) and executed one wave at a time,
// the waves of a workgroup taking turns between barriers.
// Every memory access is checked; anything the emulator does not model stops
// the dispatch with an error naming it.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_EMULATOR_EMULATOR_H
#define MLA_FP8_EMULATOR_EMULATOR_H

#include "mla-fp8/Emulator/CodeObject.h"
#include "mla-fp8/Emulator/Memory.h"
#include "mla-fp8/Emulator/Timing.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir::mlafp8::emu {

/// One kernel argument of a generic argument list. Arguments are packed in
/// order, each aligned to its natural size.
struct KernelArg {
  enum class Kind : uint8_t { Pointer, I32, I64 };
  Kind kind = Kind::I32;
  uint64_t value = 0;

  static KernelArg pointer(uint64_t address) {
    return {Kind::Pointer, address};
  }
  static KernelArg i32(int32_t v) { return {Kind::I32, uint32_t(v)}; }
  static KernelArg i64(int64_t v) { return {Kind::I64, uint64_t(v)}; }
  unsigned getSize() const { return kind == Kind::I32 ? 4 : 8; }
};

/// Packs `args` into kernarg bytes (natural alignment, no hidden arguments).
std::vector<uint8_t> packKernelArgs(llvm::ArrayRef<KernelArg> args);

/// The architectural state of one wave, public so that tests can set it up and
/// inspect it.
struct WaveState {
  /// Scalar registers indexed by their operand encoding: s0..s101, flat_scratch
  /// 102/103, xnack_mask 104/105, vcc 106/107, ttmp0.. 108.., m0 124, exec
  /// 126/127.
  static constexpr unsigned kNumSgprSlots = 128;
  static constexpr unsigned kVcc = 106, kM0 = 124, kExec = 126;
  static constexpr unsigned kNumVgprs = 512, kNumAgprs = 256;

  std::array<uint32_t, kNumSgprSlots> sgpr{};
  /// vgpr[reg * 64 + lane]; agpr likewise.
  std::vector<uint32_t> vgpr = std::vector<uint32_t>(kNumVgprs * 64);
  std::vector<uint32_t> agpr = std::vector<uint32_t>(kNumAgprs * 64);
  bool scc = false;
  uint64_t pc = 0;
  /// The MODE hardware register (FP16_OVFL at bit 23, IEEE at bit 9...).
  uint32_t mode = 0;
  /// Per-lane private (scratch) memory, privateSize bytes per lane.
  std::vector<uint8_t> scratch;
  uint32_t privateSize = 0;
  unsigned waveIdInGroup = 0;
  std::array<uint32_t, 3> workgroupId{};
  bool ended = false;
  bool atBarrier = false;
  uint64_t steps = 0;

  uint32_t &v(unsigned reg, unsigned lane) { return vgpr[reg * 64 + lane]; }
  uint32_t v(unsigned reg, unsigned lane) const {
    return vgpr[reg * 64 + lane];
  }
  uint32_t &a(unsigned reg, unsigned lane) { return agpr[reg * 64 + lane]; }
  uint64_t getSgpr64(unsigned i) const {
    return sgpr[i] | (uint64_t(sgpr[i + 1]) << 32);
  }
  void setSgpr64(unsigned i, uint64_t value) {
    sgpr[i] = uint32_t(value);
    sgpr[i + 1] = uint32_t(value >> 32);
  }
  uint64_t getExec() const { return getSgpr64(kExec); }
  void setExec(uint64_t value) { setSgpr64(kExec, value); }
  uint64_t getVcc() const { return getSgpr64(kVcc); }
  void setVcc(uint64_t value) { setSgpr64(kVcc, value); }
};

/// Dynamic counts of one dispatch.
struct ExecStats {
  uint64_t instructions = 0;
  uint64_t salu = 0, valu = 0, mfma = 0, smem = 0, vmem = 0, lds = 0,
           branch = 0, other = 0;
  uint64_t bytesLoaded = 0, bytesStored = 0;
  uint64_t ldsBytesRead = 0, ldsBytesWritten = 0;
  uint64_t waves = 0, workgroups = 0;
  /// The timing model of the dispatch, when DispatchConfig::timing asked
  /// for it.
  std::shared_ptr<const LaunchTiming> timing;
  /// Adds `other`'s counts (not the timing).
  void merge(const ExecStats &other);
};

/// Workgroups one dispatch may have (the product of the grid's axes): far
/// more than any emulation that fits in host memory runs, and small enough
/// that what the dispatcher keeps per workgroup stays allocatable.
inline constexpr uint64_t kMaxDispatchWorkgroups = uint64_t(1) << 24;
/// Workgroups the timing model simulates in one dispatch: it keeps about
/// 450 bytes for each (every workgroup of a launch without classes, one per
/// class otherwise), so 2^18 is about 120 MB.
inline constexpr uint64_t kMaxTimedWorkgroups = uint64_t(1) << 18;
/// The timing model replays a workgroup's instructions for its co-resident
/// copies (16 bytes each) up to this many; a longer workgroup is timed as if
/// alone on its CU (LaunchTiming::coResidentWorkgroups says so).
inline constexpr uint64_t kMaxReplaySteps = uint64_t(1) << 24;

/// Where and how to launch a kernel.
struct DispatchConfig {
  /// Grid size in workgroups (HIP's gridDim) and workgroup size in work-items.
  std::array<uint32_t, 3> gridWorkgroups = {1, 1, 1};
  std::array<uint32_t, 3> workgroupSize = {64, 1, 1};
  /// Dynamic LDS bytes added after the descriptor's static size.
  uint32_t dynamicLdsBytes = 0;
  /// A wave that executes more instructions stops the dispatch.
  uint64_t maxStepsPerWave = 50'000'000;
  /// Use kernarg preloading when the descriptor asks for it: fill the SGPRs
  /// and start at entry + 256 as the hardware does; otherwise start at the
  /// entry, whose first 256 bytes load the same SGPRs.
  bool preloadKernargs = true;
  /// Fill what the hardware leaves undefined at wave start (VGPRs other than
  /// the work-item ids, AGPRs, SGPRs the descriptor does not initialize, LDS,
  /// scratch) with 0xff bytes instead of zeros, so that a kernel reading
  /// uninitialized state produces NaNs / faults instead of plausible zeros.
  bool poisonUndefined = true;
  /// Worker threads over workgroups (0 = hardware concurrency).
  unsigned threads = 1;
  /// Prints every instruction of wave `traceWave` of workgroup (0,0,0) with
  /// its first result (lanes 0..3) to stderr; -1 = off. With the timing
  /// model on, the timed replay then prints each of its steps again as
  /// `t=<cycle at the nominal latency after it>  <address>  <text>`.
  int traceWave = -1;
  /// Runs the timing model (mla-fp8/Emulator/Timing.h) alongside. With a
  /// `classify` function only one workgroup per class runs, so the outputs
  /// are incomplete.
  const TimingOptions *timing = nullptr;
  /// Called for every wave after its initial state is set (tests use it to
  /// seed registers), and when it ends (to inspect them).
  std::function<void(WaveState &)> onWaveStart;
  std::function<void(const WaveState &)> onWaveEnd;
};

class EmulatorImpl;

/// Executes kernels of one code object.
class Emulator {
public:
  /// Decodes lazily: each instruction is disassembled once, on first use.
  static llvm::Expected<std::unique_ptr<Emulator>>
  create(std::shared_ptr<const CodeObject> codeObject);
  ~Emulator();

  /// Runs `kernel` over the grid. `kernargs` are the explicit argument bytes;
  /// the emulator appends the hidden arguments (block counts, group sizes,
  /// remainders...) at align8(explicit size) and places the segment in its own
  /// read-only buffer. Returns the counts or the first error.
  llvm::Expected<ExecStats> dispatch(llvm::StringRef kernel,
                                     const DispatchConfig &config,
                                     llvm::ArrayRef<uint8_t> kernargs,
                                     DeviceMemory &memory);

  /// Disassembly of the instruction at `address` (for diagnostics/tests).
  llvm::Expected<std::string> disassemble(uint64_t address);

  const CodeObject &getCodeObject() const;

private:
  explicit Emulator(std::unique_ptr<EmulatorImpl> impl);
  std::unique_ptr<EmulatorImpl> impl;
};

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_EMULATOR_EMULATOR_H
