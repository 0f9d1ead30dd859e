//===- WaveTimeline.cpp - Per-wave issue timeline of the timing model -----===//
//
// The rules, per instruction (constants from the device table):
//   - Every instruction takes one issue slot (issueCycles); a quarter-rate
//     VALU instruction takes quarterRateCycles; s_nop N takes N + 1 slots
//     (one wait state is one issue slot, the unit of LLVM's hazard counts).
//   - VALU instructions and MFMA issues take the SIMD's VALU issue, which
//     the SIMD's other waves share (SharedCU; a wave waits while another
//     holds it).
//   - Sources written by an MFMA are read once that MFMA has finished.
//   - An MFMA starts when its SIMD's matrix core is free (shared by the
//     SIMD's waves; a wave's own MFMAs stay in order) and its A/B sources are
//     ready, holds the core for its cycles and writes its result at the end;
//     the wave issues on meanwhile (VALU work hides under it).
//   - A vector load completes vmemLoadLatency after issue, and no earlier
//     than the load before it (loads return in order); stores likewise with
//     vmemStoreLatency; both count in vmcnt, stores also in expcnt. The
//     wave's own vector-memory path moves waveVmemBytesPerClock and the
//     CU's, shared by its resident waves, l1BytesPerClockPerCU, so an
//     instruction touching many lines holds them longer.
//   - SMEM completes after smemLatency, out of order; LDS in order after
//     ldsLatency plus its bank-conflict cycles, holding the CU's LDS pipe;
//     both count in lgkmcnt.
//   - s_waitcnt X(n) waits until at most n operations of counter X are
//     outstanding.
//   - Barriers are joined by the workgroup (Dispatch.cpp).
//
//===----------------------------------------------------------------------===//

#include "WaveTimeline.h"
#include "InstTable.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

#include <algorithm>

using namespace llvm;

namespace mlir::mlafp8::emu {

static bool isQuarterRate(StringRef m) {
  for (StringRef p :
       {"v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_",
        "v_mul_lo_u32", "v_mul_hi_u32", "v_mul_hi_i32", "v_mul_lo_i32",
        "v_mad_u64_u32", "v_mad_i64_i32"})
    if (m.starts_with(p))
      return true;
  return false;
}

static bool isValu64(const Inst &inst) {
  StringRef m = inst.mnemonic;
  if (m.contains("_f64") || m.contains("_b64") || m.contains("_u64") ||
      m.contains("_i64"))
    return true;
  return inst.numDefs && !inst.ops.empty() && inst.ops[0].isVector() &&
         inst.ops[0].width == 2;
}

/// The matrix-pipe cycles of an MFMA: its record's, else by its M.
static unsigned getMfmaCycles(StringRef m, const ChipInfo &chip) {
  for (const MfmaLayout *layout : chip.getMfmas()) {
    std::string shape = ("_" + Twine(layout->m) + "x" + Twine(layout->n) + "x" +
                         Twine(layout->k) + "_")
                            .str();
    if (m.contains(shape) && m.contains("f8f6f4") == layout->f8f6f4)
      return layout->cycles;
  }
  if (m.contains("_32x32x"))
    return 32;
  if (m.contains("_16x16x"))
    return 16;
  return 8;
}

void assignTimingKind(Inst &inst, const ChipInfo &chip) {
  StringRef m = inst.mnemonic;
  TimingKind &k = inst.timing;
  switch (inst.cls) {
  case InstClass::MFMA:
    k = TimingKind::Mfma;
    inst.mfmaCycles = getMfmaCycles(m, chip);
    return;
  case InstClass::SMEM:
    k = TimingKind::Smem;
    return;
  case InstClass::VMEM: {
    const MemAccess &a = inst.def->access;
    bool atomic = m.contains("atomic");
    if (atomic)
      k = a.returnsPrior ? TimingKind::VmemLoad : TimingKind::VmemStore;
    else
      k = a.store ? TimingKind::VmemStore : TimingKind::VmemLoad;
    return;
  }
  case InstClass::LDS:
    k = m == "ds_swizzle_b32" || m == "ds_permute_b32" || m == "ds_bpermute_b32"
            ? TimingKind::LdsCrossLane
            : TimingKind::Lds;
    return;
  case InstClass::VALU:
    k = isQuarterRate(m) ? TimingKind::QuarterRate
        : isValu64(inst) ? TimingKind::Valu64
                         : TimingKind::Valu;
    return;
  case InstClass::SALU:
  case InstClass::Branch:
    k = TimingKind::Issue;
    return;
  case InstClass::Other:
    k = m == "s_nop"               ? TimingKind::Nop
        : m == "s_waitcnt"         ? TimingKind::Waitcnt
        : m == "s_barrier"         ? TimingKind::Barrier
        : m == "s_endpgm"          ? TimingKind::End
        : m.starts_with("buffer_") ? TimingKind::CacheControl
                                   : TimingKind::Issue;
    return;
  }
}

uint64_t WaveCounts::total() const {
  uint64_t n = valu + valu64 + quarterRate + salu + smem + vmemLoad +
               vmemStore + lds + waitcnt + nop + barrier + branch;
  for (const auto &[name, count] : mfma)
    n += count;
  return n;
}

WaveTimeline::WaveTimeline(const DeviceTiming &device, ArrayRef<double> scales,
                           SharedCU *shared, unsigned simd)
    : device(device), cu(shared), simd(simd),
      scales(scales.begin(), scales.end()), clocks(scales.size()) {
  if (!cu) {
    const ChipInfo *chip = lookupChip(device.chip);
    unsigned simds = chip ? chip->simdsPerCU : 4;
    ownCU = std::make_unique<SharedCU>(scales.size(), simds);
    cu = ownCU.get();
    this->simd = 0;
  }
  for (Clock &c : clocks)
    c.ready.assign(WaveState::kNumVgprs + WaveState::kNumAgprs, 0);
}

void WaveTimeline::waitUntil(unsigned s, uint64_t until, StallReason reason,
                             const Inst &inst) {
  Clock &c = clocks[s];
  if (until <= c.t)
    return;
  if (s == 0) {
    uint64_t cycles = until - c.t;
    stalls[unsigned(reason)] += cycles;
    StallSite &site = sites[&inst];
    if (!site.executions) {
      site.pc = inst.pc;
      site.text = inst.text;
      site.reason = reason;
    }
    site.cycles += cycles;
    ++site.executions;
  }
  c.t = until;
}

void WaveTimeline::waitCounter(unsigned s, std::vector<uint64_t> &pending,
                               int count, StallReason reason,
                               const Inst &inst) {
  if (count < 0 || pending.size() <= size_t(count))
    return;
  // The counter reaches `count` when all but `count` operations are done:
  // at the (size - count)-th earliest completion.
  std::sort(pending.begin(), pending.end());
  uint64_t until = pending[pending.size() - count - 1];
  waitUntil(s, until, reason, inst);
  uint64_t t = clocks[s].t;
  llvm::erase_if(pending, [&](uint64_t done) { return done <= t; });
}

uint64_t WaveTimeline::sourcesReady(const Clock &c, const Inst &inst) const {
  uint64_t ready = 0;
  // An MFMA's accumulator input waits in the pipe (below), not here.
  unsigned e = inst.timing == TimingKind::Mfma
                   ? std::min<unsigned>(inst.ops.size(), inst.numDefs + 2)
                   : inst.ops.size();
  for (unsigned i = inst.numDefs; i < e; ++i) {
    const Operand &op = inst.ops[i];
    if (!op.isVector())
      continue;
    unsigned base = op.kind == OpKind::Agpr ? WaveState::kNumVgprs : 0;
    for (unsigned r = 0; r < op.width; ++r) {
      unsigned idx = base + op.reg + r;
      if (idx < c.ready.size())
        ready = std::max(ready, c.ready[idx]);
    }
  }
  return ready;
}

/// LDS cycles of one instruction: per phase of lanes (128 bytes of a
/// 32-bank LDS, 256 of a 64-bank one), the most distinct dwords any bank
/// serves; the same dword read by several lanes is one broadcast.
/// Returns the cycles and the phases (the cycles without conflicts).
static std::pair<uint64_t, uint64_t> getLdsCycles(ArrayRef<MemRecord> accesses,
                                                  unsigned banks) {
  if (accesses.empty())
    return {1, 1};
  // Split into rounds: ds_read2/ds_write2 give each lane two accesses.
  std::array<uint8_t, 64> seen{};
  SmallVector<SmallVector<const MemRecord *, 64>, 2> rounds;
  for (const MemRecord &r : accesses) {
    unsigned round = seen[r.lane & 63]++;
    if (rounds.size() <= round)
      rounds.resize(round + 1);
    rounds[round].push_back(&r);
  }
  uint64_t cycles = 0, phases = 0;
  for (auto &round : rounds) {
    unsigned bytes = std::max<unsigned>(4, round.front()->size);
    unsigned lanesPerPhase = std::max(1u, banks * 4 / bytes);
    // Phases by lane number: lanes [p * lanesPerPhase, (p+1) * lanesPerPhase).
    SmallVector<SmallVector<uint32_t, 8>, 64> dwordsByBank(banks);
    unsigned phase = ~0u;
    auto flush = [&] {
      uint64_t worst = 0;
      for (auto &dwords : dwordsByBank) {
        llvm::sort(dwords);
        worst = std::max<uint64_t>(
            worst, std::unique(dwords.begin(), dwords.end()) - dwords.begin());
        dwords.clear();
      }
      cycles += worst;
      ++phases;
    };
    for (const MemRecord *r : round) {
      unsigned p = r->lane / lanesPerPhase;
      if (p != phase && phase != ~0u)
        flush();
      phase = p;
      for (uint64_t d = r->addr / 4; d <= (r->addr + r->size - 1) / 4; ++d)
        dwordsByBank[d % banks].push_back(uint32_t(d));
    }
    flush();
  }
  return {cycles, phases};
}

uint64_t PipeCalendar::reserve(uint64_t at, uint64_t length) {
  if (!length)
    return at;
  // The first interval that ends after `at`, then past every interval that
  // overlaps [start, start + length).
  auto it = busy.upper_bound(at);
  if (it != busy.begin() && std::prev(it)->second > at)
    --it;
  uint64_t start = at;
  for (; it != busy.end() && it->first < start + length; ++it)
    start = std::max(start, it->second);
  uint64_t end = start + length;
  // Insert [start, end), merged with the intervals it touches.
  auto next = busy.lower_bound(start);
  if (next != busy.end() && next->first == end) {
    end = next->second;
    next = busy.erase(next);
  }
  if (next != busy.begin()) {
    auto prev = std::prev(next);
    if (prev->second == start) {
      prev->second = end;
      return start;
    }
  }
  busy.emplace_hint(next, start, end);
  return start;
}

SharedCU::SharedCU(unsigned numScales, unsigned simds) : scales(numScales) {
  for (Pipes &p : scales) {
    p.valu.resize(simds);
    p.matrix.resize(simds);
  }
}

TimelineStep WaveTimeline::account(const Inst &inst,
                                   ArrayRef<MemRecord> accesses,
                                   WorkgroupAccumulator &group) {
  const unsigned issue = device.issueCycles;
  // What the instruction moves, the same at every scale.
  uint64_t lines = 0, ldsCycles = 0, ldsPhases = 0;
  switch (inst.timing) {
  case TimingKind::VmemLoad:
  case TimingKind::VmemStore: {
    SmallVector<uint64_t, 64> ids;
    for (const MemRecord &r : accesses) {
      if (r.lds)
        continue;
      uint64_t first = r.addr / device.lineBytes;
      uint64_t last = (r.addr + r.size - 1) / device.lineBytes;
      auto &set = group.linesByBuffer[r.bufferBase];
      group.bufferLines[r.bufferBase] =
          (r.bufferSize + device.lineBytes - 1) / device.lineBytes;
      for (uint64_t l = first; l <= last; ++l) {
        ids.push_back(l);
        set.insert(l);
      }
    }
    llvm::sort(ids);
    lines = std::unique(ids.begin(), ids.end()) - ids.begin();
    group.vmemLines += lines;
    break;
  }
  case TimingKind::Lds: {
    bool store = !accesses.empty() && accesses.front().store;
    std::tie(ldsCycles, ldsPhases) = getLdsCycles(
        accesses, store ? device.ldsWriteBanks : device.ldsReadBanks);
    counts.ldsConflictCycles += ldsCycles - ldsPhases;
    group.ldsCycles += ldsCycles;
    break;
  }
  case TimingKind::LdsCrossLane:
    ldsCycles = ldsPhases = 2;
    group.ldsCycles += ldsCycles;
    break;
  default:
    break;
  }

  uint64_t cost = issue;
  switch (inst.timing) {
  case TimingKind::Valu:
    ++counts.valu;
    break;
  case TimingKind::Valu64:
    ++counts.valu64;
    break;
  case TimingKind::QuarterRate:
    ++counts.quarterRate;
    cost = device.quarterRateCycles;
    break;
  case TimingKind::Nop:
    ++counts.nop;
    cost = issue * (inst.ops.empty() ? 1 : (inst.ops[0].imm & 15) + 1);
    break;
  case TimingKind::Waitcnt:
    ++counts.waitcnt;
    break;
  case TimingKind::Barrier:
    ++counts.barrier;
    break;
  case TimingKind::Mfma:
    ++counts.mfma[inst.mnemonic];
    mfmaCycles += inst.mfmaCycles;
    break;
  case TimingKind::Smem:
    ++counts.smem;
    ++group.scalarInstructions;
    break;
  case TimingKind::VmemLoad:
    ++counts.vmemLoad;
    break;
  case TimingKind::VmemStore:
  case TimingKind::CacheControl:
    ++counts.vmemStore;
    break;
  case TimingKind::Lds:
  case TimingKind::LdsCrossLane:
    ++counts.lds;
    break;
  case TimingKind::Issue:
  case TimingKind::End:
    if (inst.cls == InstClass::Branch)
      ++counts.branch;
    else
      ++counts.salu;
    ++group.scalarInstructions;
    break;
  }
  // The SIMD's shared issue time counts what occupies its vector issue:
  // VALU, MFMA and memory instructions. SALU and branches issue through the
  // CU's scalar port (group.scalarInstructions); a wave's nops, waits and
  // barriers let the SIMD's other waves issue.
  switch (inst.timing) {
  case TimingKind::Valu:
  case TimingKind::Valu64:
  case TimingKind::QuarterRate:
  case TimingKind::VmemLoad:
  case TimingKind::VmemStore:
  case TimingKind::CacheControl:
  case TimingKind::Lds:
  case TimingKind::LdsCrossLane:
    issueCycles += cost;
    break;
  case TimingKind::Mfma:
    issueCycles += issue;
    break;
  default:
    break;
  }

  TimelineStep step;
  step.inst = &inst;
  step.lines = uint32_t(std::min<uint64_t>(lines, UINT32_MAX));
  step.ldsCycles = uint16_t(std::min<uint64_t>(ldsCycles, UINT16_MAX));
  step.ldsPhases = uint16_t(std::min<uint64_t>(ldsPhases, step.ldsCycles));
  return step;
}

/// The issue cycles an instruction takes on its wave's clock.
static uint64_t getIssueCost(const Inst &inst, const DeviceTiming &device) {
  switch (inst.timing) {
  case TimingKind::QuarterRate:
    return device.quarterRateCycles;
  case TimingKind::Nop:
    return device.issueCycles *
           (inst.ops.empty() ? 1 : (inst.ops[0].imm & 15) + 1);
  default:
    return device.issueCycles;
  }
}

void WaveTimeline::step(const Inst &inst, ArrayRef<MemRecord> accesses,
                        WorkgroupAccumulator &group) {
  advance(account(inst, accesses, group));
}

void WaveTimeline::advance(const TimelineStep &step) {
  const Inst &inst = *step.inst;
  const uint64_t cost = getIssueCost(inst, device);
  const uint64_t lines = step.lines, ldsCycles = step.ldsCycles,
                 ldsPhases = step.ldsPhases;
  auto divUp = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
  for (unsigned s = 0; s < clocks.size(); ++s) {
    Clock &c = clocks[s];
    SharedCU::Pipes &pipes = cu->scales[s];
    uint64_t loadLatency = uint64_t(device.vmemLoadLatency * scales[s] + 0.5);
    uint64_t storeLatency = uint64_t(device.vmemStoreLatency * scales[s] + 0.5);
    if (inst.timing != TimingKind::Waitcnt)
      waitUntil(s, sourcesReady(c, inst), StallReason::MfmaResult, inst);
    switch (inst.timing) {
    case TimingKind::Waitcnt:
      waitCounter(s, c.vm, inst.waitVm, StallReason::VmCount, inst);
      waitCounter(s, c.lgkm, inst.waitLgkm, StallReason::LgkmCount, inst);
      waitCounter(s, c.exp, inst.waitExp, StallReason::ExpCount, inst);
      c.t += cost;
      break;
    case TimingKind::Valu:
    case TimingKind::Valu64:
    case TimingKind::QuarterRate:
      waitUntil(s, pipes.valu[simd].reserve(c.t, cost), StallReason::SimdIssue,
                inst);
      c.t += cost;
      break;
    case TimingKind::Mfma: {
      // The wave's MFMAs run in order on its SIMD's matrix core, which the
      // SIMD's other waves share; the issue takes a VALU slot.
      waitUntil(s, c.mfmaFree, StallReason::MfmaPipe, inst);
      uint64_t start = pipes.matrix[simd].reserve(c.t, inst.mfmaCycles);
      waitUntil(s, start, StallReason::MfmaPipe, inst);
      waitUntil(s, pipes.valu[simd].reserve(c.t, cost), StallReason::SimdIssue,
                inst);
      c.mfmaFree = start + inst.mfmaCycles;
      const Operand &d = inst.ops[0];
      unsigned base = d.kind == OpKind::Agpr ? WaveState::kNumVgprs : 0;
      for (unsigned r = 0; r < d.width; ++r)
        if (base + d.reg + r < c.ready.size())
          c.ready[base + d.reg + r] = c.mfmaFree;
      c.t += cost;
      break;
    }
    case TimingKind::VmemLoad:
    case TimingKind::VmemStore:
    case TimingKind::CacheControl: {
      // A wave's own requests go out at waveVmemBytesPerClock; the CU's
      // path, which every resident wave shares, at l1BytesPerClockPerCU.
      waitUntil(s, c.vmemFree, StallReason::VmemPipe, inst);
      uint64_t bytes = lines * device.lineBytes;
      uint64_t at = pipes.vmem.reserve(
          c.t, divUp(bytes, device.l1BytesPerClockPerCU));
      waitUntil(s, at, StallReason::VmemPipe, inst);
      uint64_t busy =
          std::max<uint64_t>(cost, divUp(bytes, device.waveVmemBytesPerClock));
      c.vmemFree = at + busy;
      if (inst.timing == TimingKind::VmemLoad) {
        c.lastLoad = std::max(at + loadLatency, c.lastLoad);
        c.vm.push_back(c.lastLoad);
      } else {
        c.lastStore = std::max(at + storeLatency, c.lastStore);
        c.vm.push_back(c.lastStore);
        if (inst.timing == TimingKind::VmemStore)
          c.exp.push_back(at + busy);
      }
      c.t += cost;
      break;
    }
    case TimingKind::Smem:
      c.lgkm.push_back(c.t + device.smemLatency);
      c.t += cost;
      break;
    case TimingKind::Lds:
    case TimingKind::LdsCrossLane: {
      uint64_t at = pipes.lds.reserve(c.t, ldsCycles);
      waitUntil(s, at, StallReason::LdsPipe, inst);
      c.lastLds =
          std::max(at + device.ldsLatency + (ldsCycles - ldsPhases), c.lastLds);
      c.lgkm.push_back(c.lastLds);
      c.t += cost;
      break;
    }
    default:
      c.t += cost;
      break;
    }
  }
}

void WaveTimeline::leaveBarrier(unsigned scale, uint64_t t) {
  Clock &c = clocks[scale];
  if (t > c.t && scale == 0)
    stalls[unsigned(StallReason::Barrier)] += t - c.t;
  c.t = std::max(c.t, t);
}

uint64_t WaveTimeline::end(unsigned scale) const {
  const Clock &c = clocks[scale];
  uint64_t t = c.t;
  for (uint64_t done : c.vm)
    t = std::max(t, done);
  return std::max(t, c.mfmaFree);
}

std::vector<StallSite> WaveTimeline::getStallSites() const {
  std::vector<StallSite> out;
  for (const auto &[inst, site] : sites)
    out.push_back(site);
  llvm::sort(out, [](const StallSite &a, const StallSite &b) {
    return a.cycles != b.cycles ? a.cycles > b.cycles : a.pc < b.pc;
  });
  return out;
}

} // namespace mlir::mlafp8::emu
