//===- WaveTimeline.h - Per-wave issue timeline of the timing model -*- C++
//-*-//
//
// The per-instruction half of the timing model (mla-fp8/Emulator/Timing.h):
// each executed instruction advances its wave's clock by its issue cost and
// its waits, at every latency scale at once, so one functional run gives the
// nominal answer and its sensitivity.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_LIB_EMULATOR_WAVETIMELINE_H
#define MLA_FP8_LIB_EMULATOR_WAVETIMELINE_H

#include "Internal.h"

#include "mla-fp8/Emulator/Timing.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <memory>

namespace mlir::mlafp8::emu {

/// Fills `inst.timing` from its mnemonic and table row (once, at decode).
void assignTimingKind(Inst &inst, const ChipInfo &chip);

/// What a workgroup's waves share: the CU pipes they load and the lines they
/// touch.
struct WorkgroupAccumulator {
  uint64_t scalarInstructions = 0, ldsCycles = 0, vmemLines = 0;
  llvm::DenseMap<uint64_t, llvm::DenseSet<uint64_t>> linesByBuffer;
  llvm::DenseMap<uint64_t, uint64_t> bufferLines;
};

/// The busy intervals of one pipe that several waves share, on one clock.
/// A reservation takes the earliest free interval at or after the time
/// asked. The timed replay (Dispatch.cpp) asks in time order, the earliest
/// wave first, which is the oldest-first arbitration of the hardware; a
/// workgroup too long to record is timed wave after wave, and then a wave
/// timed later fills the gaps an earlier one left.
class PipeCalendar {
public:
  /// Reserves `length` cycles at the earliest start >= `at` where the pipe
  /// is free, and returns that start.
  uint64_t reserve(uint64_t at, uint64_t length);

private:
  /// Disjoint, non-touching [start, end) intervals by start.
  std::map<uint64_t, uint64_t> busy;
};

/// What the waves resident on one CU share, for each latency scale: each
/// SIMD's VALU issue and matrix core, and the CU's vector-memory (TA) and
/// LDS pipes.
struct SharedCU {
  struct Pipes {
    std::vector<PipeCalendar> valu, matrix;
    PipeCalendar vmem, lds;
  };
  SharedCU(unsigned numScales, unsigned simds);
  std::vector<Pipes> scales;
};

/// What one executed instruction moved, independent of the clocks: the
/// record the timeline replays for a co-resident copy of the workgroup.
struct TimelineStep {
  const Inst *inst = nullptr;
  uint32_t lines = 0;
  uint16_t ldsCycles = 0, ldsPhases = 0;
};

/// One wave's clocks, one per latency scale.
class WaveTimeline {
public:
  /// A wave on SIMD `simd` of a CU whose pipes are `cu`; without `cu` the
  /// wave has a CU of its own.
  WaveTimeline(const DeviceTiming &device, llvm::ArrayRef<double> scales,
               SharedCU *cu = nullptr, unsigned simd = 0);

  /// Accounts `inst`, executed with `accesses` (its memory accesses, in
  /// execution order): account() then advance().
  void step(const Inst &inst, llvm::ArrayRef<MemRecord> accesses,
            WorkgroupAccumulator &group);
  /// Counts `inst` and what it moved (lines, LDS cycles) into the wave's and
  /// the workgroup's totals, without advancing the clocks.
  TimelineStep account(const Inst &inst, llvm::ArrayRef<MemRecord> accesses,
                       WorkgroupAccumulator &group);
  /// Advances the clocks by one instruction.
  void advance(const TimelineStep &step);

  unsigned getNumScales() const { return clocks.size(); }
  uint64_t now(unsigned scale) const { return clocks[scale].t; }
  /// Resumes after a barrier that opened at `t`.
  void leaveBarrier(unsigned scale, uint64_t t);
  /// When the wave's last instruction and its stores are done.
  uint64_t end(unsigned scale) const;

  /// Cycles the wave occupies its SIMD's vector issue (VALU, MFMA issue,
  /// memory instructions); nops, waits and scalar work are not counted.
  uint64_t getIssueCycles() const { return issueCycles; }
  uint64_t getMfmaCycles() const { return mfmaCycles; }
  const WaveCounts &getCounts() const { return counts; }
  const std::array<uint64_t, kNumStallReasons> &getStalls() const {
    return stalls;
  }
  /// Instructions that waited at nominal constants, longest total first.
  std::vector<StallSite> getStallSites() const;

private:
  struct Clock {
    uint64_t t = 0;
    uint64_t mfmaFree = 0, vmemFree = 0;
    uint64_t lastLoad = 0, lastStore = 0, lastLds = 0;
    /// Completion times of the operations each counter still counts.
    std::vector<uint64_t> vm, lgkm, exp;
    /// When each VGPR (0..511) and AGPR (512..767) written by an MFMA is
    /// ready.
    std::vector<uint64_t> ready;
  };

  /// Waits on clock `s` until `until`, charging the wait to `reason`.
  void waitUntil(unsigned s, uint64_t until, StallReason reason,
                 const Inst &inst);
  /// Waits until at most `count` of `pending` are outstanding.
  void waitCounter(unsigned s, std::vector<uint64_t> &pending, int count,
                   StallReason reason, const Inst &inst);
  uint64_t sourcesReady(const Clock &clock, const Inst &inst) const;

  const DeviceTiming &device;
  std::unique_ptr<SharedCU> ownCU;
  SharedCU *cu;
  unsigned simd;
  std::vector<double> scales;
  std::vector<Clock> clocks;
  uint64_t issueCycles = 0, mfmaCycles = 0;
  WaveCounts counts;
  std::array<uint64_t, kNumStallReasons> stalls{};
  llvm::DenseMap<const Inst *, StallSite> sites;
};

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_LIB_EMULATOR_WAVETIMELINE_H
