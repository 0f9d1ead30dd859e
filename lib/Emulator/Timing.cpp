//===- Timing.cpp - The launch half of the timing model
//--------------------===//
//
// From the simulated workgroups to a kernel time (see Timing.h):
//   HBM      unique lines of every buffer / HBM bandwidth. With representative
//            workgroups, each class's lines count once per member and each
//            buffer is capped at its size, which is exact when the launch
//            reads or writes whole buffers.
//   L2       lines each workgroup requests (its distinct lines: reuse within
//            a workgroup hits the CU's L1) / L2 bandwidth.
//   issue    the busiest CU (workgroups dealt round-robin in dispatch
//            order): the most of its SIMDs' issue and matrix-pipe cycles
//            (waves dealt evenly over the SIMDs, no SIMD below its longest
//            wave), its scalar instructions (one per clock), LDS cycles and
//            L1 lines.
//   latency  rounds of resident workgroups x the longest workgroup's
//            timeline, residency from VGPRs, LDS and wave slots (a
//            workgroup's timeline was simulated beside its co-resident
//            copies, Dispatch.cpp).
// kernel time = the dispatch window + the largest term.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Emulator/Timing.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace mlir::mlafp8::emu {

StringRef getStallReasonName(StallReason reason) {
  switch (reason) {
  case StallReason::VmCount:
    return "vmcnt";
  case StallReason::LgkmCount:
    return "lgkmcnt";
  case StallReason::ExpCount:
    return "expcnt";
  case StallReason::Barrier:
    return "barrier";
  case StallReason::MfmaPipe:
    return "mfma-pipe";
  case StallReason::MfmaResult:
    return "mfma-result";
  case StallReason::LdsPipe:
    return "lds-pipe";
  case StallReason::VmemPipe:
    return "vmem-pipe";
  case StallReason::SimdIssue:
    return "simd-issue";
  }
  return "?";
}

std::function<uint64_t(const WorkgroupId &)>
classifyByGridEdges(const WorkgroupId &grid, std::array<bool, 3> exact) {
  return [grid, exact](const WorkgroupId &id) {
    uint64_t key = 0;
    for (unsigned d = 0; d < 3; ++d) {
      uint64_t cls;
      if (exact[d])
        cls = id[d];
      else
        cls = getEdgeClass(id[d], grid[d]);
      key = key * (uint64_t(exact[d] ? grid[d] : 3) + 1) + cls;
    }
    return key;
  };
}

Residency getResidency(const DeviceTiming &device, const ChipInfo &chip,
                       const LaunchShapeInfo &shape, unsigned waves) {
  unsigned simds = chip.simdsPerCU;
  // Workgroups that fit `perSimd` waves on every SIMD: small workgroups
  // share SIMDs, larger ones spread their waves over all of them.
  auto fit = [&](unsigned perSimd) {
    return waves <= simds ? simds * perSimd / waves
                          : perSimd / ((waves + simds - 1) / simds);
  };
  unsigned bySlots = fit(chip.maxWavesPerSimd);
  unsigned byVgprs =
      fit(chip.maxVgprsPerLane / std::max(1u, shape.vgprsPerWave));
  unsigned byLds =
      shape.ldsBytes ? unsigned(device.ldsBytesPerCU / shape.ldsBytes) : ~0u;
  Residency r{bySlots, "waves"};
  if (byVgprs < r.workgroups)
    r = {byVgprs, "vgprs"};
  if (byLds < r.workgroups)
    r = {byLds, "lds"};
  r.workgroups = std::max(1u, r.workgroups);
  return r;
}

unsigned getCoResidentWorkgroups(const DeviceTiming &device,
                                 const ChipInfo &chip,
                                 const LaunchShapeInfo &shape,
                                 uint64_t workgroups) {
  uint64_t items = uint64_t(shape.workgroupSize[0]) * shape.workgroupSize[1] *
                   shape.workgroupSize[2];
  unsigned waves = unsigned(std::max<uint64_t>(1, (items + 63) / 64));
  uint64_t perCU = (workgroups + device.numCUs - 1) / device.numCUs;
  return unsigned(std::max<uint64_t>(
      1, std::min<uint64_t>(getResidency(device, chip, shape, waves).workgroups,
                            perCU)));
}

LaunchTiming computeLaunchTiming(const DeviceTiming &device,
                                 const TimingOptions &options,
                                 const LaunchShapeInfo &shape,
                                 const std::vector<WorkgroupTiming> &simulated,
                                 const std::vector<WorkgroupId> &ids,
                                 const std::vector<uint32_t> &classOf) {
  LaunchTiming out;
  out.device = device.name.str();
  out.kernel = shape.kernel;
  out.grid = shape.grid;
  out.workgroupSize = shape.workgroupSize;
  out.workgroups = classOf.size();
  out.simulatedWorkgroups = simulated.size();
  out.representative = simulated.size() != classOf.size();
  out.launchOverheadMicroseconds = device.launchOverheadMicroseconds;
  out.vgprsPerWave = shape.vgprsPerWave;
  uint64_t items = uint64_t(shape.workgroupSize[0]) * shape.workgroupSize[1] *
                   shape.workgroupSize[2];
  out.wavesPerWorkgroup = unsigned((items + 63) / 64);
  const ChipInfo *chip = lookupChip(device.chip);
  if (!chip || simulated.empty())
    return out;
  Residency res = getResidency(device, *chip, shape, out.wavesPerWorkgroup);
  out.workgroupsPerCU = res.workgroups;
  out.residencyLimit = res.limit;
  out.rounds = (out.workgroups + uint64_t(device.numCUs) * res.workgroups - 1) /
               (uint64_t(device.numCUs) * res.workgroups);
  out.coResidentWorkgroups =
      getCoResidentWorkgroups(device, *chip, shape, out.workgroups);
  for (const WorkgroupTiming &wg : simulated)
    out.coResidentWorkgroups =
        std::min(out.coResidentWorkgroups, wg.coResidentSimulated);

  // Members per class.
  std::vector<uint64_t> members(simulated.size(), 0);
  for (uint32_t c : classOf)
    ++members[c];

  // HBM and L2 bytes.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> perBuffer; // lines, cap
  if (!out.representative) {
    std::map<uint64_t, std::vector<uint64_t>> all;
    for (const WorkgroupTiming &wg : simulated)
      for (const auto &[base, lines] : wg.linesByBuffer)
        all[base].insert(all[base].end(), lines.begin(), lines.end());
    for (auto &[base, lines] : all) {
      llvm::sort(lines);
      perBuffer[base].first =
          std::unique(lines.begin(), lines.end()) - lines.begin();
    }
  } else {
    for (unsigned c = 0; c < simulated.size(); ++c)
      for (const auto &[base, lines] : simulated[c].linesByBuffer)
        perBuffer[base].first += lines.size() * members[c];
    for (const WorkgroupTiming &wg : simulated)
      for (const auto &[base, cap] : wg.bufferLines)
        perBuffer[base].second = cap;
    for (auto &[base, entry] : perBuffer)
      if (entry.second)
        entry.first = std::min(entry.first, entry.second);
  }
  for (const auto &[base, entry] : perBuffer)
    out.hbmBytes += entry.first * device.lineBytes;
  for (unsigned c = 0; c < simulated.size(); ++c) {
    uint64_t lines = 0;
    for (const auto &[base, l] : simulated[c].linesByBuffer)
      lines += l.size();
    out.l2Bytes += lines * device.lineBytes * members[c];
  }

  // The busiest CU's issue time, in cycles.
  struct CUWork {
    uint64_t issue = 0, mfma = 0, longest = 0, scalar = 0, lds = 0, lines = 0;
  };
  std::vector<CUWork> cus(std::min<uint64_t>(device.numCUs, classOf.size()));
  for (uint64_t i = 0; i < classOf.size(); ++i) {
    const WorkgroupTiming &wg = simulated[classOf[i]];
    CUWork &cu = cus[i % cus.size()];
    for (uint64_t c : wg.waveIssueCycles) {
      cu.issue += c;
      cu.longest = std::max(cu.longest, c);
    }
    for (uint64_t c : wg.waveMfmaCycles) {
      cu.mfma += c;
      cu.longest = std::max(cu.longest, c);
    }
    cu.scalar += wg.scalarInstructions;
    cu.lds += wg.ldsCycles;
    cu.lines += wg.vmemLines;
  }
  uint64_t issueCycles = 0;
  for (const CUWork &cu : cus) {
    uint64_t simd = std::max(
        {(cu.issue + chip->simdsPerCU - 1) / chip->simdsPerCU,
         (cu.mfma + chip->simdsPerCU - 1) / chip->simdsPerCU, cu.longest});
    uint64_t l1 =
        (cu.lines * device.lineBytes + device.l1BytesPerClockPerCU - 1) /
        device.l1BytesPerClockPerCU;
    issueCycles = std::max({issueCycles, simd, cu.scalar, cu.lds, l1});
  }

  // The longest workgroup at nominal constants is the critical one.
  unsigned critical = 0;
  for (unsigned c = 1; c < simulated.size(); ++c)
    if (simulated[c].cycles[0] > simulated[critical].cycles[0])
      critical = c;
  out.criticalWorkgroup = ids[critical];
  out.critical = simulated[critical];

  for (unsigned s = 0; s < options.latencyScales.size(); ++s) {
    LaunchEstimate e;
    e.latencyScale = options.latencyScales[s];
    for (const WorkgroupTiming &wg : simulated)
      e.longestWorkgroupCycles =
          std::max(e.longestWorkgroupCycles, wg.cycles[s]);
    e.hbmMicroseconds = double(out.hbmBytes) / device.hbmBytesPerSecond * 1e6;
    e.l2Microseconds = double(out.l2Bytes) / device.l2BytesPerSecond * 1e6;
    e.issueMicroseconds = device.cyclesToMicroseconds(double(issueCycles));
    e.latencyMicroseconds = device.cyclesToMicroseconds(
        double(out.rounds) * double(e.longestWorkgroupCycles));
    std::pair<double, const char *> terms[] = {
        {e.latencyMicroseconds, "latency"},
        {e.issueMicroseconds, "issue"},
        {e.hbmMicroseconds, "hbm"},
        {e.l2Microseconds, "l2"}};
    auto *best = std::max_element(
        std::begin(terms), std::end(terms),
        [](const auto &a, const auto &b) { return a.first < b.first; });
    e.dispatchWindowMicroseconds = device.dispatchWindowMicroseconds;
    e.kernelMicroseconds = e.dispatchWindowMicroseconds + best->first;
    e.limiter = best->second;
    e.lowerBoundMicroseconds =
        e.dispatchWindowMicroseconds +
        std::max(e.hbmMicroseconds, e.issueMicroseconds);
    e.floorMicroseconds = std::max(
        e.lowerBoundMicroseconds,
        e.dispatchWindowMicroseconds +
            device.cyclesToMicroseconds(
                e.latencyScale *
                double(device.vmemLoadLatency + device.vmemStoreLatency)));
    out.estimates.push_back(e);
  }
  return out;
}

static void forEachCount(const WaveCounts &c,
                         function_ref<void(StringRef, uint64_t)> f) {
  f("valu", c.valu);
  f("valu64", c.valu64);
  f("quarter_rate", c.quarterRate);
  f("salu", c.salu);
  f("smem", c.smem);
  f("vmem_load", c.vmemLoad);
  f("vmem_store", c.vmemStore);
  f("lds", c.lds);
  f("lds_conflict_cycles", c.ldsConflictCycles);
  f("waitcnt", c.waitcnt);
  f("nop", c.nop);
  f("barrier", c.barrier);
  f("branch", c.branch);
  for (const auto &[name, count] : c.mfma)
    f(name, count);
}

void printLaunchTiming(raw_ostream &os, const LaunchTiming &t,
                       unsigned stallSites) {
  if (t.estimates.empty()) {
    os << "timing: nothing was simulated\n";
    return;
  }
  const LaunchEstimate &e = t.estimates.front();
  os << "timing model " << kTimingModelVersion << ": " << t.device << ", kernel " << t.kernel << ", grid "
     << t.grid[0] << "x" << t.grid[1] << "x" << t.grid[2] << " ("
     << t.workgroups << " workgroups of " << t.wavesPerWorkgroup << " waves; "
     << t.simulatedWorkgroups << " simulated"
     << (t.representative ? ", one per class" : "") << ")\n";
  os << format("  kernel time   %10.3f us  (limited by %s)\n",
               e.kernelMicroseconds, e.limiter.c_str());
  os << format("  launch        %10.3f us  (not included)\n",
               t.launchOverheadMicroseconds);
  os << format("  lower bound   %10.3f us  window + max(hbm, issue)\n",
               e.lowerBoundMicroseconds);
  os << format("  floor         %10.3f us  max(lower bound, window + load + "
               "store latency)\n",
               e.floorMicroseconds);
  os << format("  window        %10.3f us  dispatch start and end (included)\n",
               e.dispatchWindowMicroseconds);
  os << format("  hbm           %10.3f us  %llu bytes\n", e.hbmMicroseconds,
               (unsigned long long)t.hbmBytes);
  os << format("  l2            %10.3f us  %llu bytes requested\n",
               e.l2Microseconds, (unsigned long long)t.l2Bytes);
  os << format("  issue         %10.3f us  busiest CU\n", e.issueMicroseconds);
  os << format("  latency       %10.3f us  %llu rounds x %llu cycles\n",
               e.latencyMicroseconds, (unsigned long long)t.rounds,
               (unsigned long long)e.longestWorkgroupCycles);
  os << "  residency     " << t.workgroupsPerCU << " workgroups per CU ("
     << t.residencyLimit << "), " << t.vgprsPerWave << " VGPRs per wave; "
     << t.coResidentWorkgroups << " simulated together\n";
  for (const LaunchEstimate &s : ArrayRef(t.estimates).drop_front())
    os << format("  memory latency x%-4g kernel time %.3f us (%s)\n",
                 s.latencyScale, s.kernelMicroseconds, s.limiter.c_str());
  const WorkgroupTiming &c = t.critical;
  os << "critical wave: workgroup (" << t.criticalWorkgroup[0] << ","
     << t.criticalWorkgroup[1] << "," << t.criticalWorkgroup[2] << ") wave "
     << c.criticalWave << ", " << c.cycles.front() << " cycles, "
     << c.criticalCounts.total() << " instructions\n ";
  forEachCount(c.criticalCounts, [&](StringRef name, uint64_t n) {
    if (n)
      os << " " << name << "=" << n;
  });
  os << "\n  stalls:";
  for (unsigned r = 0; r < kNumStallReasons; ++r)
    if (c.criticalStalls[r])
      os << " " << getStallReasonName(StallReason(r)) << "="
         << c.criticalStalls[r];
  os << "\n";
  for (const StallSite &s : ArrayRef(c.criticalSites).take_front(stallSites))
    os << format("  %8llu cycles %6llux %-11s 0x%06llx  %s\n",
                 (unsigned long long)s.cycles, (unsigned long long)s.executions,
                 getStallReasonName(s.reason).str().c_str(),
                 (unsigned long long)s.pc, s.text.c_str());
}

void printLaunchTimingJSON(raw_ostream &os, const LaunchTiming &t,
                           unsigned stallSites) {
  json::OStream j(os, 2);
  auto triple = [&](StringRef key, const WorkgroupId &v) {
    j.attributeArray(key, [&] {
      for (uint32_t x : v)
        j.value(int64_t(x));
    });
  };
  auto estimate = [&](const LaunchEstimate &e) {
    j.attribute("latency_scale", e.latencyScale);
    j.attribute("kernel_us", e.kernelMicroseconds);
    j.attribute("limiter", e.limiter);
    j.attribute("lower_bound_us", e.lowerBoundMicroseconds);
    j.attribute("dispatch_window_us", e.dispatchWindowMicroseconds);
    j.attribute("floor_us", e.floorMicroseconds);
    j.attributeObject("terms_us", [&] {
      j.attribute("hbm", e.hbmMicroseconds);
      j.attribute("l2", e.l2Microseconds);
      j.attribute("issue", e.issueMicroseconds);
      j.attribute("latency", e.latencyMicroseconds);
    });
    j.attribute("longest_workgroup_cycles", int64_t(e.longestWorkgroupCycles));
  };
  j.object([&] {
    j.attribute("model_version", int64_t(kTimingModelVersion));
    j.attribute("device", t.device);
    j.attribute("kernel", t.kernel);
    triple("grid", t.grid);
    triple("workgroup", t.workgroupSize);
    j.attribute("workgroups", int64_t(t.workgroups));
    j.attribute("simulated_workgroups", int64_t(t.simulatedWorkgroups));
    j.attribute("mode", t.representative ? "representative" : "full");
    j.attribute("launch_overhead_us", t.launchOverheadMicroseconds);
    j.attribute("hbm_bytes", int64_t(t.hbmBytes));
    j.attribute("l2_bytes", int64_t(t.l2Bytes));
    j.attributeObject("residency", [&] {
      j.attribute("workgroups_per_cu", int64_t(t.workgroupsPerCU));
      j.attribute("limited_by", t.residencyLimit);
      j.attribute("vgprs_per_wave", int64_t(t.vgprsPerWave));
      j.attribute("waves_per_workgroup", int64_t(t.wavesPerWorkgroup));
      j.attribute("rounds", int64_t(t.rounds));
      j.attribute("simulated_together", int64_t(t.coResidentWorkgroups));
    });
    if (!t.estimates.empty())
      estimate(t.estimates.front());
    j.attributeArray("sensitivity", [&] {
      for (const LaunchEstimate &e : ArrayRef(t.estimates).drop_front())
        j.object([&] { estimate(e); });
    });
    const WorkgroupTiming &c = t.critical;
    j.attributeObject("critical_wave", [&] {
      triple("workgroup", t.criticalWorkgroup);
      j.attribute("wave", int64_t(c.criticalWave));
      j.attribute("cycles", int64_t(c.cycles.empty() ? 0 : c.cycles.front()));
      j.attributeObject("counts", [&] {
        forEachCount(c.criticalCounts, [&](StringRef name, uint64_t n) {
          j.attribute(name, int64_t(n));
        });
      });
      j.attributeObject("stalls", [&] {
        for (unsigned r = 0; r < kNumStallReasons; ++r)
          j.attribute(getStallReasonName(StallReason(r)),
                      int64_t(c.criticalStalls[r]));
      });
      j.attributeArray("stall_sites", [&] {
        for (const StallSite &s :
             ArrayRef(c.criticalSites).take_front(stallSites))
          j.object([&] {
            j.attribute("pc", int64_t(s.pc));
            j.attribute("instruction", s.text);
            j.attribute("reason", getStallReasonName(s.reason));
            j.attribute("executions", int64_t(s.executions));
            j.attribute("cycles", int64_t(s.cycles));
          });
      });
    });
  });
  os << "\n";
}

} // namespace mlir::mlafp8::emu
