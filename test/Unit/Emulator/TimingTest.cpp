//===- TimingTest.cpp - The timing model on programs with known answers ---===//
//
// Each program's cycle count is worked out by hand from the rules in
// lib/Emulator/WaveTimeline.cpp and the MI300X row of the device table:
// issue slot I = 4 cycles, load latency L = 900, LDS latency 56, and a
// wave's vector-memory path P = 8 cycles for a global_load_dword of 64 lanes
// (256 bytes, two lines, at 32 bytes per clock). Every expectation is
// written as that arithmetic.
//
//===----------------------------------------------------------------------===//

#include "AsmHelper.h"

#include "gtest/gtest.h"

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::emu;
using namespace mlir::mlafp8::emu::test;

namespace {

const DeviceTiming &mi300x() { return *lookupDeviceTiming("MI300X"); }

/// Runs `source` (`workgroups` workgroups, one by default) under the timing
/// model; returns the model.
LaunchTiming runTimed(const std::string &source, DeviceMemory *memory = nullptr,
                      std::function<void(WaveState &)> setup = {},
                      unsigned workItems = 64, uint32_t ldsBytes = 0,
                      unsigned workgroups = 1) {
  TimingOptions options;
  options.device = &mi300x();
  auto r = runAsm(source, setup, memory, "gfx942", workItems, ldsBytes,
                  &options, workgroups);
  EXPECT_TRUE(bool(r)) << llvm::toString(r.takeError());
  if (!r || !r->stats.timing)
    return {};
  return *r->stats.timing;
}

/// A 1 KiB buffer whose dword i holds 4 * i, addressed by s[0:1].
struct Table {
  DeviceMemory mem;
  uint64_t base = 0;
  Table() {
    base = mem.allocate("table", 1024);
    std::vector<uint8_t> bytes(1024);
    for (unsigned i = 0; i < 256; ++i) {
      uint32_t v = 4 * i;
      std::memcpy(&bytes[4 * i], &v, 4);
    }
    EXPECT_FALSE(bool(mem.write(base, bytes)));
  }
  std::function<void(WaveState &)> setup() {
    return [this](WaveState &w) { w.setSgpr64(0, base); };
  }
};

constexpr uint64_t I = 4, L = 900, P = 2 * 128 / 32;

TEST(Timing, IndependentLoadsCostOneLatency) {
  Table t;
  LaunchTiming m = runTimed("v_lshlrev_b32_e32 v0, 2, v0\n"
                            "global_load_dword v1, v0, s[0:1]\n"
                            "global_load_dword v2, v0, s[0:1] offset:256\n"
                            "s_waitcnt vmcnt(0)\n",
                            &t.mem, t.setup());
  // Shift at 0, loads issued at I and, once the wave's memory path is free,
  // at I + P; the second returns at I + P + L; the wait ends there, then the
  // wait's and s_endpgm's slots.
  EXPECT_EQ(m.critical.cycles[0], I + P + L + 2 * I);
  EXPECT_EQ(m.critical.criticalStalls[unsigned(StallReason::VmemPipe)],
            P - I);
  EXPECT_EQ(m.critical.criticalCounts.vmemLoad, 2u);
}

TEST(Timing, DependentLoadsCostTwoLatencies) {
  Table t;
  LaunchTiming m = runTimed("v_lshlrev_b32_e32 v0, 2, v0\n"
                            "global_load_dword v1, v0, s[0:1]\n"
                            "s_waitcnt vmcnt(0)\n"
                            "global_load_dword v2, v1, s[0:1]\n"
                            "s_waitcnt vmcnt(0)\n",
                            &t.mem, t.setup());
  // First load at I returns at I + L; the second issues one slot after the
  // wait, at I + L + I, and returns L later.
  EXPECT_EQ(m.critical.cycles[0], (I + L + I) + L + 2 * I);
  // Both waits are memory waits: about 2L in all.
  uint64_t vm = m.critical.criticalStalls[unsigned(StallReason::VmCount)];
  EXPECT_EQ(vm, (L - I) + (L - I));
}

TEST(Timing, VmcntWaitsForAllButN) {
  Table t;
  LaunchTiming m = runTimed("v_lshlrev_b32_e32 v0, 2, v0\n"
                            "global_load_dword v1, v0, s[0:1]\n"
                            "global_load_dword v2, v0, s[0:1] offset:256\n"
                            "global_load_dword v3, v0, s[0:1] offset:512\n"
                            "s_waitcnt vmcnt(1)\n"
                            "v_mov_b32_e32 v4, v1\n"
                            "s_waitcnt vmcnt(0)\n",
                            &t.mem, t.setup());
  // Loads at I, I + P, I + 2P (each waits P - I for the wave's memory path)
  // return at L + I, L + I + P, L + I + 2P. vmcnt(1) (issued at 2I + 2P)
  // waits for the second: until L + I + P. The v_mov and the vmcnt(0) take
  // two slots, reaching L + 3I + P = L + I + 2P, so the last wait is free.
  EXPECT_EQ(m.critical.cycles[0], L + I + 2 * P + 2 * I);
  ASSERT_FALSE(m.critical.criticalSites.empty());
  const StallSite &site = m.critical.criticalSites.front();
  EXPECT_EQ(site.text, "s_waitcnt vmcnt(1)");
  EXPECT_EQ(site.cycles, (L + I + P) - (2 * I + 2 * P));
  // The two loads that waited for the path, and the vmcnt(1).
  EXPECT_EQ(m.critical.criticalSites.size(), 3u);
  // The sensitivity rows scale L.
  ASSERT_EQ(m.estimates.size(), 3u);
  EXPECT_EQ(m.estimates[1].longestWorkgroupCycles, L / 2 + I + 2 * P + 2 * I);
  EXPECT_EQ(m.estimates[2].longestWorkgroupCycles, 2 * L + I + 2 * P + 2 * I);
}

TEST(Timing, EightWayLdsConflictCostsEightTimes) {
  // ds_write_b64 is served 16 lanes at a time (128 bytes of 32 banks). With a
  // 64-byte lane stride, lane l starts at bank 16 l mod 32: lanes alternate
  // between banks {0,1} and {16,17}, 8 lanes per bank: 8 cycles a phase.
  LaunchTiming conflicted = runTimed("v_lshlrev_b32_e32 v1, 6, v0\n"
                                     "ds_write_b64 v1, v[2:3]\n"
                                     "s_waitcnt lgkmcnt(0)\n",
                                     nullptr, {}, 64, 4096);
  // An 8-byte stride covers the 32 banks once per phase.
  LaunchTiming clean = runTimed("v_lshlrev_b32_e32 v1, 3, v0\n"
                                "ds_write_b64 v1, v[2:3]\n"
                                "s_waitcnt lgkmcnt(0)\n",
                                nullptr, {}, 64, 4096);
  EXPECT_EQ(clean.critical.ldsCycles, 4u);
  EXPECT_EQ(conflicted.critical.ldsCycles, 8 * clean.critical.ldsCycles);
  EXPECT_EQ(clean.critical.criticalCounts.ldsConflictCycles, 0u);
  EXPECT_EQ(conflicted.critical.criticalCounts.ldsConflictCycles, 32u - 4u);
  // The write completes 56 cycles after issue, plus the conflict cycles.
  EXPECT_EQ(clean.critical.cycles[0], I + 56 + 2 * I);
  EXPECT_EQ(conflicted.critical.cycles[0], I + 56 + 28 + 2 * I);
}

TEST(Timing, LdsBroadcastIsNoConflict) {
  // Every lane reads the same dword: one broadcast per phase.
  LaunchTiming m = runTimed("v_mov_b32_e32 v1, 0\n"
                            "ds_read_b32 v2, v1\n"
                            "s_waitcnt lgkmcnt(0)\n",
                            nullptr, {}, 64, 256);
  EXPECT_EQ(m.critical.ldsCycles, 2u);
  EXPECT_EQ(m.critical.criticalCounts.ldsConflictCycles, 0u);
}

TEST(Timing, DependentMfmasWaitForThePipe) {
  LaunchTiming m =
      runTimed("v_mfma_f32_16x16x32_fp8_fp8 v[4:7], v[0:1], v[2:3], 0\n"
               "v_mfma_f32_16x16x32_fp8_fp8 v[4:7], v[0:1], v[2:3], v[4:7]\n"
               "v_mov_b32_e32 v8, v4\n");
  // 16 cycles each (4 passes): the second starts at 16 and ends at 32; the
  // v_mov reads its result, so it issues at 32.
  const auto &stalls = m.critical.criticalStalls;
  EXPECT_EQ(stalls[unsigned(StallReason::MfmaPipe)], 16 - I);
  EXPECT_EQ(stalls[unsigned(StallReason::MfmaResult)], 32 - (16 + I));
  EXPECT_EQ(m.critical.cycles[0], 32 + 2 * I);
  EXPECT_EQ(m.critical.criticalCounts.mfma.at("v_mfma_f32_16x16x32_fp8_fp8"),
            2u);
  EXPECT_EQ(m.critical.waveMfmaCycles.front(), 32u);
}

TEST(Timing, IndependentValuHidesUnderMfma) {
  LaunchTiming m =
      runTimed("v_mfma_f32_16x16x32_fp8_fp8 v[4:7], v[0:1], v[2:3], 0\n"
               "v_add_u32_e32 v9, v0, v0\n"
               "v_add_u32_e32 v10, v0, v0\n"
               "v_add_u32_e32 v11, v0, v0\n");
  // The three VALU slots run while the MFMA holds the matrix pipe (0..16):
  // five slots in all, as if the MFMA took only its issue slot.
  EXPECT_EQ(m.critical.cycles[0], 5 * I);
  EXPECT_EQ(m.critical.criticalCounts.valu, 3u);
}

TEST(Timing, BarrierJoinsTheLatestWave) {
  Table t;
  // Wave 1 loads before the barrier, wave 0 does not.
  LaunchTiming m = runTimed(
      "v_readfirstlane_b32 s2, v0\n"
      "s_cmp_lt_u32 s2, 64\n"
      "s_cbranch_scc1 .Lskip\n"
      "global_load_dword v1, v2, s[0:1]\n"
      "s_waitcnt vmcnt(0)\n"
      ".Lskip:\n"
      "s_barrier\n",
      &t.mem,
      [&](WaveState &w) {
        w.setSgpr64(0, t.base);
        for (unsigned lane = 0; lane < 64; ++lane)
          w.v(2, lane) = 0;
      },
      128);
  // Wave 1: load at 3I returns at 3I + L; wait, barrier: arrives at
  // 3I + L + 2I. Wave 0 arrives at 4I and leaves with wave 1.
  EXPECT_EQ(m.critical.cycles[0], 3 * I + L + 2 * I + I);
  EXPECT_EQ(m.critical.criticalWave, 0u);
  EXPECT_EQ(m.critical.criticalStalls[unsigned(StallReason::Barrier)],
            (3 * I + L + 2 * I) - 4 * I);
}

/// Ten independent VALU instructions.
std::string tenMovs() {
  std::string s;
  for (int i = 0; i < 10; ++i)
    s += "v_mov_b32_e32 v1, v0\n";
  return s;
}

TEST(Timing, WavesOnOneSimdTakeTurnsAtIssue) {
  // Four waves, one per SIMD: each issues its ten VALU slots and s_endpgm.
  LaunchTiming four = runTimed(tenMovs(), nullptr, {}, 256);
  EXPECT_EQ(four.critical.cycles[0], 11 * I);
  // A fifth wave shares SIMD 0 with wave 0, which issued first (oldest
  // first): its VALU waits for wave 0's ten slots.
  LaunchTiming five = runTimed(tenMovs(), nullptr, {}, 320);
  EXPECT_EQ(five.critical.cycles[0], 10 * I + 11 * I);
  EXPECT_EQ(five.critical.criticalWave, 4u);
  EXPECT_EQ(five.critical.criticalStalls[unsigned(StallReason::SimdIssue)],
            10 * I);
}

TEST(Timing, WavesOnOneSimdShareItsMatrixCore) {
  // Two MFMAs of 16 cycles on one SIMD: the second wave's waits for the
  // first's, then takes its VALU slot.
  std::string mfma = "v_mfma_f32_16x16x32_fp8_fp8 v[4:7], v[0:1], v[2:3], 0\n";
  LaunchTiming m = runTimed(mfma, nullptr, {}, 320);
  EXPECT_EQ(m.critical.criticalWave, 4u);
  // Wave 4: the pipe is free at 16; its issue slot, then s_endpgm; the
  // result lands at 32, when the wave ends.
  EXPECT_EQ(m.critical.cycles[0], 16 + 16);
  EXPECT_EQ(m.critical.criticalStalls[unsigned(StallReason::MfmaPipe)], 16u);
}

TEST(Timing, CoResidentWorkgroupsShareTheirCU) {
  unsigned cus = mi300x().numCUs;
  // One 4-wave workgroup per CU: each alone, 11 slots.
  LaunchTiming alone = runTimed(tenMovs(), nullptr, {}, 256, 0, cus);
  EXPECT_EQ(alone.coResidentWorkgroups, 1u);
  EXPECT_EQ(alone.critical.cycles[0], 11 * I);
  // One more workgroup than CUs: a CU holds two at once (residency allows
  // 8), simulated together. The second's waves share the first's SIMDs
  // and wait for their slots; both fit in one round.
  LaunchTiming two = runTimed(tenMovs(), nullptr, {}, 256, 0, cus + 1);
  EXPECT_EQ(two.coResidentWorkgroups, 2u);
  EXPECT_EQ(two.rounds, 1u);
  EXPECT_EQ(two.critical.cycles[0], 10 * I + 11 * I);
  EXPECT_DOUBLE_EQ(two.estimates[0].latencyMicroseconds,
                   mi300x().cyclesToMicroseconds(21.0 * I));
}

TEST(Timing, ResidencyAndRounds) {
  // runAsm's descriptor gives 8 VGPRs per wave, which would allow 64 waves
  // per SIMD: the 8 wave slots of each of the 4 SIMDs bound residency, 32
  // one-wave workgroups per CU, one round.
  LaunchTiming m = runTimed("s_nop 0\n");
  EXPECT_EQ(m.workgroupsPerCU, 32u);
  EXPECT_EQ(m.residencyLimit, "waves");
  EXPECT_EQ(m.rounds, 1u);
  // s_nop 0 is one wait state, one slot; then s_endpgm.
  EXPECT_EQ(m.critical.cycles[0], 2 * I);
  EXPECT_EQ(m.estimates.front().limiter, "latency");
}

TEST(Timing, DeviceTableLookup) {
  EXPECT_EQ(getDefaultDeviceTiming("gfx942")->name, "MI300X");
  EXPECT_EQ(getDefaultDeviceTiming("gfx950")->name, "MI355X");
  ASSERT_NE(lookupDeviceTiming("mi350x"), nullptr);
  EXPECT_EQ(lookupDeviceTiming("mi350x")->chip, "gfx950");
  EXPECT_EQ(lookupDeviceTiming("H100"), nullptr);
  for (const DeviceTiming &d : getDeviceTimings()) {
    EXPECT_NE(lookupChip(d.chip), nullptr) << d.name.str();
    EXPECT_GT(d.clockGHz, 1.0);
  }
}

TEST(Timing, EdgeClasses) {
  auto classify = classifyByGridEdges({4, 5, 1}, {true, false, false});
  // y = 1, 2, 3 are interior: one class; y = 0 and y = 4 are their own.
  EXPECT_EQ(classify({2, 1, 0}), classify({2, 3, 0}));
  EXPECT_NE(classify({2, 0, 0}), classify({2, 1, 0}));
  EXPECT_NE(classify({2, 4, 0}), classify({2, 3, 0}));
  // x is exact.
  EXPECT_NE(classify({1, 2, 0}), classify({2, 2, 0}));
}

} // namespace

namespace {

/// A launch of `count` workgroups of 4 waves built by hand: every term of
/// the launch model has an exact expected value, from the device's
/// constants, so a model that drops a cost (a buffer's lines, a round, a
/// CU's second workgroup) fails here, not only one that adds one.
struct HandLaunch {
  const DeviceTiming &device = *lookupDeviceTiming("MI300X");
  LaunchShapeInfo shape;
  std::vector<WorkgroupTiming> simulated;
  std::vector<WorkgroupId> ids;
  std::vector<uint32_t> classOf;

  HandLaunch(unsigned count, uint64_t cycles, uint64_t issue,
             uint64_t linesEach) {
    shape.grid = {count, 1, 1};
    shape.workgroupSize = {256, 1, 1};
    // 512 VGPRs a wave: one wave per SIMD, one 4-wave workgroup per CU.
    shape.vgprsPerWave = 512;
    shape.kernel = "hand";
    for (unsigned i = 0; i < count; ++i) {
      WorkgroupTiming wg;
      wg.cycles = {cycles, cycles / 2, cycles * 2};
      wg.waveIssueCycles.assign(4, issue);
      wg.waveMfmaCycles.assign(4, 0);
      wg.vmemLines = linesEach;
      // Distinct lines of X (base 1) and Y (base 2); W (base 3) shared by
      // every workgroup, counted once in HBM and once per workgroup in L2.
      for (uint64_t l = 0; l < linesEach; ++l) {
        wg.linesByBuffer[1].push_back(i * linesEach + l);
        wg.linesByBuffer[2].push_back(i * linesEach + l);
      }
      wg.linesByBuffer[3] = {0, 1};
      simulated.push_back(wg);
      ids.push_back({i, 0, 0});
      classOf.push_back(i);
    }
  }
  LaunchTiming run() const {
    TimingOptions options;
    options.device = &device;
    return computeLaunchTiming(device, options, shape, simulated, ids,
                               classOf);
  }
  double us(double cycles) const { return cycles / (device.clockGHz * 1e3); }
};

unsigned h_cus() { return lookupDeviceTiming("MI300X")->numCUs; }

TEST(Timing, EveryTermExactOverTwoRounds) {
  // Two workgroups per CU in sequence: two rounds.
  uint64_t n = 2 * h_cus();
  HandLaunch h(unsigned(n), 10000, 300, 4);
  LaunchTiming t = h.run();
  EXPECT_EQ(t.workgroupsPerCU, 1u);
  EXPECT_EQ(t.residencyLimit, "vgprs");
  EXPECT_EQ(t.rounds, 2u);
  EXPECT_FALSE(t.representative);
  EXPECT_EQ(t.hbmBytes, (2 * n * 4 + 2) * h.device.lineBytes);
  EXPECT_EQ(t.l2Bytes, n * (2 * 4 + 2) * h.device.lineBytes);
  ASSERT_EQ(t.estimates.size(), 3u);
  const LaunchEstimate &e = t.estimates[0];
  EXPECT_DOUBLE_EQ(e.hbmMicroseconds,
                   double(t.hbmBytes) / h.device.hbmBytesPerSecond * 1e6);
  EXPECT_DOUBLE_EQ(e.l2Microseconds,
                   double(t.l2Bytes) / h.device.l2BytesPerSecond * 1e6);
  // A CU runs two workgroups of four 300-cycle waves on its four SIMDs:
  // 600 cycles, more than its L1's 8 lines.
  uint64_t l1 = (8 * h.device.lineBytes + h.device.l1BytesPerClockPerCU - 1) /
                h.device.l1BytesPerClockPerCU;
  EXPECT_DOUBLE_EQ(e.issueMicroseconds, h.us(double(std::max<uint64_t>(
                                            600, l1))));
  EXPECT_DOUBLE_EQ(e.latencyMicroseconds, h.us(2 * 10000.0));
  EXPECT_EQ(e.limiter, "latency");
  // The dispatch window (1.1 us on MI300X) is on top of the limiting term.
  EXPECT_DOUBLE_EQ(e.dispatchWindowMicroseconds, 1.1);
  EXPECT_DOUBLE_EQ(e.kernelMicroseconds, 1.1 + e.latencyMicroseconds);
  EXPECT_DOUBLE_EQ(e.lowerBoundMicroseconds,
                   1.1 + std::max(e.hbmMicroseconds, e.issueMicroseconds));
  // The latency scales: the workgroup's own cycles at each.
  EXPECT_DOUBLE_EQ(t.estimates[1].latencyMicroseconds, h.us(2 * 5000.0));
  EXPECT_DOUBLE_EQ(t.estimates[2].latencyMicroseconds, h.us(2 * 20000.0));
  // One round more than the CUs hold is a round more.
  HandLaunch more(unsigned(n) + 1, 10000, 300, 4);
  EXPECT_EQ(more.run().rounds, 3u);
}

TEST(Timing, HbmAndIssueLimitsExact) {
  // Many lines and short workgroups: HBM limits.
  HandLaunch hbm(h_cus(), 100, 10, 4096);
  LaunchTiming t = hbm.run();
  EXPECT_EQ(t.estimates[0].limiter, "hbm");
  EXPECT_EQ(t.hbmBytes, (2 * uint64_t(h_cus()) * 4096 + 2) *
                            hbm.device.lineBytes);
  EXPECT_DOUBLE_EQ(t.estimates[0].kernelMicroseconds,
                   1.1 + double(t.hbmBytes) / hbm.device.hbmBytesPerSecond *
                             1e6);
  // Long issue and no memory to speak of: the busiest CU's issue limits
  // when it exceeds the workgroup's own cycles (a wave longer than its
  // share: 4 waves of 50000 cycles on 4 SIMDs, one workgroup a CU).
  HandLaunch issue(h_cus(), 1000, 50000, 1);
  LaunchTiming u = issue.run();
  EXPECT_EQ(u.estimates[0].limiter, "issue");
  EXPECT_DOUBLE_EQ(u.estimates[0].issueMicroseconds, issue.us(50000.0));
}

} // namespace
