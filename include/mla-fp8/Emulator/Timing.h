//===- Timing.h - The emulator's timing model --------------------*- C++
//-*-===//
//
// A deterministic model of how long a dispatch takes on a product of the
// device table (mla-fp8/Hardware/DeviceTiming.h), built from what the
// emulator executes:
//   - per wave, an in-order issue timeline, beside the other waves resident
//     on its CU (sharing each SIMD's VALU issue and matrix core and the CU's
//     vector-memory and LDS pipes): every instruction takes its issue slot; loads, stores, SMEM and LDS complete after their latency (LDS plus
//     its bank-conflict cycles) and `s_waitcnt` waits on the vmcnt, lgkmcnt
//     and expcnt counters as the hardware decrements them; MFMAs occupy the
//     wave's matrix pipe for their cycles and their results are ready when
//     they finish; barriers join the waves of a workgroup;
//   - per launch, the unique cache lines (HBM bytes), the lines requested
//     from L2, residency from VGPR, LDS and wave limits, the busiest CU's
//     issue time and the latency rounds, giving
//         kernel time = window + max(HBM, L2, issue, latency rounds)
//     with the limiting term named; the window is the dispatch's start and
//     end that a profiler's kernel time holds. Launch overhead is reported
//     apart.
// Workgroups of one launch differ only at the M/N tails and in split-K
// roles, so a dispatch may simulate one representative workgroup per class
// (TimingOptions::classify) and count the others as copies of it.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_EMULATOR_TIMING_H
#define MLA_FP8_EMULATOR_TIMING_H

#include "mla-fp8/Hardware/DeviceTiming.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mlir::mlafp8::emu {

/// The version of the timing model's rules and constants: every modelled
/// figure the project quotes names it. 1 timed each workgroup alone on its
/// CU with no dispatch window; 2 simulates the co-resident workgroups of a
/// CU together, limits each wave's memory path and adds the dispatch window;
/// 3 replays those waves in time order, so that the shared pipes serve
/// requests in the order they are made (docs/timing-model.md).
inline constexpr unsigned kTimingModelVersion = 3;

using WorkgroupId = std::array<uint32_t, 3>;

/// Dynamic instruction counts of one wave, by timing class.
struct WaveCounts {
  uint64_t valu = 0, valu64 = 0, quarterRate = 0, salu = 0, smem = 0,
           vmemLoad = 0, vmemStore = 0, lds = 0, ldsConflictCycles = 0,
           waitcnt = 0, nop = 0, barrier = 0, branch = 0;
  /// MFMAs by mnemonic.
  std::map<std::string, uint64_t> mfma;
  uint64_t total() const;
};

/// Why a wave waited.
enum class StallReason : uint8_t {
  VmCount,
  LgkmCount,
  ExpCount,
  Barrier,
  MfmaPipe,
  MfmaResult,
  LdsPipe,
  VmemPipe,
  /// Another wave held the SIMD's VALU issue.
  SimdIssue,
};
llvm::StringRef getStallReasonName(StallReason reason);
constexpr unsigned kNumStallReasons = 9;

/// The waits of one instruction of the critical wave: how many times it
/// waited and for how many cycles in all, with the reason of its first wait
/// (an instruction waits for one reason: s_waitcnt on its counters, an MFMA
/// on its pipe...).
struct StallSite {
  uint64_t pc = 0;
  std::string text;
  StallReason reason = StallReason::VmCount;
  uint64_t executions = 0;
  uint64_t cycles = 0;
};

/// What the model needs from one simulated workgroup, for each latency
/// scale (index 0 is the nominal constants).
struct WorkgroupTiming {
  /// Cycles from the first wave's start to the last wave's end.
  std::vector<uint64_t> cycles;
  /// Vector issue cycles (VALU, MFMA issue, memory instructions) and
  /// matrix-pipe cycles of each wave (the same for every scale).
  std::vector<uint64_t> waveIssueCycles, waveMfmaCycles;
  /// SALU/SMEM/branch instructions, LDS cycles and vector-memory lines of
  /// the whole workgroup (what its CU's shared pipes serve).
  uint64_t scalarInstructions = 0, ldsCycles = 0, vmemLines = 0;
  /// Distinct lines the workgroup loads or stores, per buffer base address,
  /// and the buffer's size in lines.
  std::map<uint64_t, std::vector<uint64_t>> linesByBuffer;
  std::map<uint64_t, uint64_t> bufferLines;
  /// The wave with the longest timeline at nominal constants: its counts,
  /// stall totals by reason and its stalling instructions.
  unsigned criticalWave = 0;
  WaveCounts criticalCounts;
  std::array<uint64_t, kNumStallReasons> criticalStalls{};
  std::vector<StallSite> criticalSites;
  /// Copies of the workgroup (itself included) simulated together on its
  /// CU.
  unsigned coResidentSimulated = 1;
};

/// How the timing model runs.
struct TimingOptions {
  const DeviceTiming *device = nullptr;
  /// Multipliers of the global-memory latencies; the first is reported as
  /// the result, the others as its sensitivity.
  std::vector<double> latencyScales = {1.0, 0.5, 2.0};
  /// The class of a workgroup: one workgroup per class (the first in
  /// dispatch order) is simulated and stands for the others. Empty: every
  /// workgroup is simulated. Workgroups that depend on each other (the
  /// splits of one split-K tile) must not share a class.
  std::function<uint64_t(const WorkgroupId &)> classify;
};

/// A position's class along a dimension of `extent`: 0 first, 2 last, 1
/// interior.
inline uint64_t getEdgeClass(uint64_t index, uint64_t extent) {
  return index == 0 ? 0 : index + 1 == extent ? 2 : 1;
}

/// Classes by position along each grid dimension: first, interior, last;
/// dimensions flagged in `exact` keep every index apart.
std::function<uint64_t(const WorkgroupId &)>
classifyByGridEdges(const WorkgroupId &grid, std::array<bool, 3> exact);

/// The model's answer for one dispatch at one latency scale.
struct LaunchEstimate {
  double latencyScale = 1.0;
  double hbmMicroseconds = 0, l2Microseconds = 0, issueMicroseconds = 0,
         latencyMicroseconds = 0;
  /// The dispatch window plus the max of the four terms, and which term it
  /// is ("hbm", "l2", "issue", "latency").
  double kernelMicroseconds = 0;
  std::string limiter;
  /// The dispatch window plus max(HBM, issue): what the launch would take if
  /// every memory wait were hidden behind other waves' work.
  double lowerBoundMicroseconds = 0;
  /// DeviceTiming::dispatchWindowMicroseconds.
  double dispatchWindowMicroseconds = 0;
  /// The physical floor: the lower bound, or the dispatch window plus the
  /// one dependent chain no kernel avoids (a global load's round trip and a
  /// store's, at this scale), whichever is longer.
  double floorMicroseconds = 0;
  uint64_t longestWorkgroupCycles = 0;
};

/// The model of one dispatch.
struct LaunchTiming {
  std::string device, kernel;
  WorkgroupId grid{}, workgroupSize{};
  uint64_t workgroups = 0, simulatedWorkgroups = 0;
  bool representative = false;
  uint64_t hbmBytes = 0, l2Bytes = 0;
  /// Residency: workgroups per CU and what bounds it ("vgprs", "lds",
  /// "waves"), VGPRs (arch + acc) per wave, and the rounds of the grid.
  unsigned workgroupsPerCU = 0;
  std::string residencyLimit;
  unsigned vgprsPerWave = 0, wavesPerWorkgroup = 0;
  uint64_t rounds = 0;
  /// Workgroups simulated together on one CU (getCoResidentWorkgroups; the
  /// fewest of any simulated workgroup, 1 where a record was too long).
  unsigned coResidentWorkgroups = 1;
  double launchOverheadMicroseconds = 0;
  /// One estimate per latency scale, nominal first.
  std::vector<LaunchEstimate> estimates;
  /// The longest workgroup at nominal constants: its id and critical wave.
  WorkgroupId criticalWorkgroup{};
  WorkgroupTiming critical;
};

/// Inputs of the launch model beyond the simulated workgroups.
struct LaunchShapeInfo {
  WorkgroupId grid{}, workgroupSize{};
  unsigned vgprsPerWave = 0;
  uint64_t ldsBytes = 0;
  std::string kernel;
};

/// How many workgroups of `waves` waves one CU holds at once, and what
/// bounds it ("waves", "vgprs", "lds").
struct Residency {
  unsigned workgroups;
  std::string limit;
};
Residency getResidency(const DeviceTiming &device, const ChipInfo &chip,
                       const LaunchShapeInfo &shape, unsigned waves);

/// The workgroups the model simulates together on one CU: as many as are
/// resident at once, but no more than the launch deals to a CU.
unsigned getCoResidentWorkgroups(const DeviceTiming &device,
                                 const ChipInfo &chip,
                                 const LaunchShapeInfo &shape,
                                 uint64_t workgroups);

/// Combines the simulated workgroups into the launch model. `classOf[i]` is
/// the index into `simulated` of workgroup i (dispatch order, x fastest);
/// `ids[j]` is the id of simulated workgroup j.
LaunchTiming computeLaunchTiming(const DeviceTiming &device,
                                 const TimingOptions &options,
                                 const LaunchShapeInfo &shape,
                                 const std::vector<WorkgroupTiming> &simulated,
                                 const std::vector<WorkgroupId> &ids,
                                 const std::vector<uint32_t> &classOf);

/// Prints the model in text: terms, limiter, sensitivity, residency, the
/// critical wave's counts and its `stallSites` longest waits.
void printLaunchTiming(llvm::raw_ostream &os, const LaunchTiming &timing,
                       unsigned stallSites);

/// The same as one JSON object.
void printLaunchTimingJSON(llvm::raw_ostream &os, const LaunchTiming &timing,
                           unsigned stallSites);

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_EMULATOR_TIMING_H
