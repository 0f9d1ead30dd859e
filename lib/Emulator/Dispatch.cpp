//===- Dispatch.cpp - Grid launch, wave scheduling and initial state ------===//

#include "Decoder.h"
#include "Internal.h"
#include "WaveTimeline.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <optional>
#include <limits>
#include <thread>

using namespace llvm;

namespace mlir::mlafp8::emu {

void ExecStats::merge(const ExecStats &o) {
  instructions += o.instructions;
  salu += o.salu;
  valu += o.valu;
  mfma += o.mfma;
  smem += o.smem;
  vmem += o.vmem;
  lds += o.lds;
  branch += o.branch;
  other += o.other;
  bytesLoaded += o.bytesLoaded;
  bytesStored += o.bytesStored;
  ldsBytesRead += o.ldsBytesRead;
  ldsBytesWritten += o.ldsBytesWritten;
  waves += o.waves;
  workgroups += o.workgroups;
}

std::vector<uint8_t> packKernelArgs(ArrayRef<KernelArg> args) {
  std::vector<uint8_t> out;
  for (const KernelArg &a : args) {
    unsigned size = a.getSize();
    out.resize((out.size() + size - 1) / size * size);
    for (unsigned i = 0; i < size; ++i)
      out.push_back(uint8_t(a.value >> (8 * i)));
  }
  return out;
}

class EmulatorImpl {
public:
  std::shared_ptr<const CodeObject> co;
  std::unique_ptr<InstCache> cache;

  Error runWorkgroup(const KernelInfo &k, const DispatchConfig &cfg,
                     std::array<uint32_t, 3> wg, uint64_t kernargAddr,
                     uint64_t dispatchPtr, uint64_t queuePtr,
                     ArrayRef<uint8_t> kernargBytes, DeviceMemory &mem,
                     std::vector<uint8_t> &lds, ExecStats &stats,
                     WorkgroupTiming *timing, unsigned coResident);
  Error runWave(ExecContext &ctx, uint64_t maxSteps, bool trace,
                WaveTimeline *timeline, WorkgroupAccumulator *group,
                std::vector<TimelineStep> *record);
};

/// Prints `inst` and its first result operand after execution.
static void traceInst(ExecContext &ctx, const Inst &inst) {
  raw_ostream &os = errs();
  os << format_hex(inst.pc, 8) << "  " << inst.text;
  if (!inst.ops.empty() && inst.numDefs) {
    const Operand &d = inst.ops[0];
    os << "\n      =";
    if (d.isVector()) {
      for (unsigned lane = 0; lane < 4; ++lane) {
        os << " [" << lane << "]";
        for (unsigned i = 0; i < std::min<unsigned>(d.width, 4); ++i)
          os << " " << format_hex_no_prefix(ctx.vreg(d, lane, i), 8);
      }
    } else if (d.kind == OpKind::Sgpr) {
      for (unsigned i = 0; i < std::min<unsigned>(d.width, 4); ++i)
        os << " " << format_hex_no_prefix(ctx.w.sgpr[d.reg + i], 8);
    }
  }
  os << "   scc=" << ctx.w.scc << " exec=" << format_hex(ctx.w.getExec(), 18)
     << "\n";
}

Error EmulatorImpl::runWave(ExecContext &ctx, uint64_t maxSteps, bool trace,
                            WaveTimeline *timeline, WorkgroupAccumulator *group,
                            std::vector<TimelineStep> *record) {
  WaveState &w = ctx.w;
  ExecStats &st = ctx.stats;
  while (!w.ended && !w.atBarrier) {
    Expected<const Inst *> instOr = cache->get(w.pc);
    if (!instOr)
      return createStringError("workgroup (%u,%u,%u) wave %u: %s",
                               w.workgroupId[0], w.workgroupId[1],
                               w.workgroupId[2], w.waveIdInGroup,
                               toString(instOr.takeError()).c_str());
    const Inst &inst = **instOr;
    ctx.nextPc = w.pc + inst.size;
    if (Error e = inst.handler(ctx, inst))
      return e;
    if (timeline) {
      TimelineStep step = timeline->account(inst, *ctx.accesses, *group);
      timeline->advance(step);
      if (record)
        record->push_back(step);
      ctx.accesses->clear();
    }
    if (trace)
      traceInst(ctx, inst);
    ++st.instructions;
    switch (inst.cls) {
    case InstClass::SALU:
      ++st.salu;
      break;
    case InstClass::VALU:
      ++st.valu;
      break;
    case InstClass::MFMA:
      ++st.mfma;
      break;
    case InstClass::SMEM:
      ++st.smem;
      break;
    case InstClass::VMEM:
      ++st.vmem;
      break;
    case InstClass::LDS:
      ++st.lds;
      break;
    case InstClass::Branch:
      ++st.branch;
      break;
    case InstClass::Other:
      ++st.other;
      break;
    }
    w.pc = ctx.nextPc;
    if (++w.steps > maxSteps)
      return ctx.fail(inst, "wave exceeded the step limit of " +
                                Twine(maxSteps) + " instructions");
  }
  return Error::success();
}

/// The workgroup's share of the launch model, from its waves' timelines:
/// `timelines` ran the workgroup (and counted its instructions and issue
/// cycles), `timed` holds the clocks: the workgroup's waves first, then
/// those of its co-resident copies (`timed` may be `timelines` itself).
static void summarizeWorkgroup(
    const std::vector<std::unique_ptr<WaveTimeline>> &timelines,
    const std::vector<std::unique_ptr<WaveTimeline>> &timed,
    const WorkgroupAccumulator &group, WorkgroupTiming &out) {
  unsigned scales = timelines.front()->getNumScales();
  unsigned numWaves = timelines.size();
  out.cycles.assign(scales, 0);
  const WaveTimeline *critical = timed.front().get();
  for (unsigned wi = 0; wi < numWaves; ++wi) {
    out.waveIssueCycles.push_back(timelines[wi]->getIssueCycles());
    out.waveMfmaCycles.push_back(timelines[wi]->getMfmaCycles());
  }
  for (unsigned i = 0; i < timed.size(); ++i) {
    const WaveTimeline &t = *timed[i];
    for (unsigned s = 0; s < scales; ++s)
      out.cycles[s] = std::max(out.cycles[s], t.end(s));
    if (t.end(0) > critical->end(0)) {
      critical = &t;
      out.criticalWave = i % numWaves;
    }
  }
  out.criticalCounts = timelines[out.criticalWave]->getCounts();
  out.criticalStalls = critical->getStalls();
  out.criticalSites = critical->getStallSites();
  out.scalarInstructions = group.scalarInstructions;
  out.ldsCycles = group.ldsCycles;
  out.vmemLines = group.vmemLines;
  for (const auto &[base, lines] : group.linesByBuffer)
    out.linesByBuffer[base].assign(lines.begin(), lines.end());
  for (const auto &[base, cap] : group.bufferLines)
    out.bufferLines[base] = cap;
}

/// Times `copies` copies of a workgroup whose waves executed `records` on
/// one CU whose pipes they share, the workgroup itself among them: copy c's
/// wave i runs on SIMD (c * waves + i) mod `simds`. The waves advance in
/// time order: the next step is always that of the wave whose clock
/// (nominal latency) stands earliest, the oldest wave first on a tie, so a
/// shared pipe serves requests in the order they are made, as the CU's
/// oldest-first arbitration does. (Timed one wave after another, a wave
/// timed earlier would take the pipe for requests it makes long after a
/// later-timed wave's.) A copy's barrier opens when all of its running
/// waves have reached it, at the latest arrival. Wave `traceWave` of the
/// first copy (-1: none) prints each step with the cycle its clock stands at
/// after it.
static std::vector<std::unique_ptr<WaveTimeline>>
replayTogether(const DeviceTiming &device, ArrayRef<double> latencyScales,
               unsigned simds,
               const std::vector<std::vector<TimelineStep>> &records,
               unsigned copies, SharedCU &cu, int traceWave) {
  unsigned numWaves = records.size();
  unsigned total = copies * numWaves;
  std::vector<std::unique_ptr<WaveTimeline>> waves;
  for (unsigned i = 0; i < total; ++i)
    waves.push_back(
        std::make_unique<WaveTimeline>(device, latencyScales, &cu, i % simds));
  std::vector<size_t> next(total, 0);
  std::vector<bool> atBarrier(total, false);
  auto running = [&](unsigned i) {
    return next[i] < records[i % numWaves].size();
  };
  // Opens the barrier of the copy whose first wave is `first`: its waiting
  // waves leave together, at the latest arrival on each clock.
  auto openBarrier = [&](unsigned first) {
    bool any = false;
    for (unsigned s = 0; s < waves[0]->getNumScales(); ++s) {
      uint64_t open = 0;
      for (unsigned w = first; w < first + numWaves; ++w)
        if (atBarrier[w])
          open = std::max(open, waves[w]->now(s));
      for (unsigned w = first; w < first + numWaves; ++w)
        if (atBarrier[w])
          waves[w]->leaveBarrier(s, open);
    }
    for (unsigned w = first; w < first + numWaves; ++w) {
      any |= atBarrier[w];
      atBarrier[w] = false;
    }
    return any;
  };
  while (true) {
    std::optional<unsigned> earliest;
    for (unsigned i = 0; i < total; ++i)
      if (running(i) && !atBarrier[i] &&
          (!earliest || waves[i]->now(0) < waves[*earliest]->now(0)))
        earliest = i;
    if (!earliest) {
      // Every running wave waits at a barrier (or none runs): open them.
      bool any = false;
      for (unsigned c = 0; c < copies; ++c)
        any |= openBarrier(c * numWaves);
      if (!any)
        break;
      continue;
    }
    unsigned i = *earliest;
    const TimelineStep &step = records[i % numWaves][next[i]++];
    waves[i]->advance(step);
    if (int(i) == traceWave)
      errs() << "t=" << waves[i]->now(0) << "  "
             << format_hex(step.inst->pc, 8) << "  " << step.inst->text
             << "\n";
    if (step.inst->timing == TimingKind::Barrier)
      atBarrier[i] = true;
    if (atBarrier[i] || !running(i)) {
      // A barrier opens as soon as the copy's other running waves are
      // there too (a wave that ends leaves it), while the waves of other
      // copies go on.
      unsigned first = i / numWaves * numWaves;
      bool all = true;
      bool waiting = false;
      for (unsigned w = first; w < first + numWaves; ++w) {
        all &= atBarrier[w] || !running(w);
        waiting |= atBarrier[w];
      }
      if (all && waiting)
        openBarrier(first);
    }
  }
  return waves;
}

Error EmulatorImpl::runWorkgroup(const KernelInfo &k, const DispatchConfig &cfg,
                                 std::array<uint32_t, 3> wg,
                                 uint64_t kernargAddr, uint64_t dispatchPtr,
                                 uint64_t queuePtr,
                                 ArrayRef<uint8_t> kernargBytes,
                                 DeviceMemory &mem, std::vector<uint8_t> &lds,
                                 ExecStats &stats, WorkgroupTiming *timing,
                                 unsigned coResident) {
  const KernelDescriptor &kd = k.descriptor;
  const auto &ws = cfg.workgroupSize;
  uint32_t items = ws[0] * ws[1] * ws[2];
  unsigned numWaves = (items + 63) / 64;
  uint8_t fillByte = cfg.poisonUndefined ? 0xff : 0;
  std::fill(lds.begin(), lds.end(), fillByte);
  std::vector<WaveState> waves(numWaves);
  unsigned idDims = kd.getWorkitemIdVgprs();
  bool preload = cfg.preloadKernargs && kd.getKernargPreloadDwords() > 0;
  for (unsigned wi = 0; wi < numWaves; ++wi) {
    WaveState &w = waves[wi];
    w.waveIdInGroup = wi;
    w.workgroupId = wg;
    w.pc = k.entryAddress + (preload ? 256 : 0);
    w.privateSize = kd.privateSegmentFixedSize;
    w.scratch.assign(size_t(w.privateSize) * 64, fillByte);
    if (cfg.poisonUndefined) {
      uint32_t poison = 0xffffffffu;
      std::fill(w.vgpr.begin(), w.vgpr.end(), poison);
      std::fill(w.agpr.begin(), w.agpr.end(), poison);
      // s0..s101 and ttmps; VCC, M0, EXEC and flat_scratch stay zero.
      std::fill(w.sgpr.begin(), w.sgpr.begin() + 102, poison);
      std::fill(w.sgpr.begin() + 108, w.sgpr.begin() + 124, poison);
    }
    // MODE from compute_pgm_rsrc1.
    uint32_t r1 = kd.computePgmRsrc1;
    w.mode = ((r1 >> 12) & 0xf) | (((r1 >> 16) & 0xf) << 4) |
             (((r1 >> 21) & 1) << 8) | (((r1 >> 23) & 1) << 9) |
             (((r1 >> 26) & 1) << 23);
    unsigned s = 0;
    if (kd.hasCodeProperty(0))
      s += 4; // private segment buffer: unused on gfx942/gfx950
    if (kd.hasCodeProperty(1)) {
      w.setSgpr64(s, dispatchPtr);
      s += 2;
    }
    if (kd.hasCodeProperty(2)) {
      w.setSgpr64(s, queuePtr);
      s += 2;
    }
    if (kd.hasCodeProperty(3)) {
      w.setSgpr64(s, kernargAddr);
      s += 2;
    }
    if (kd.hasCodeProperty(4)) {
      w.setSgpr64(s, 0);
      s += 2;
    }
    if (kd.hasCodeProperty(5))
      s += 2;
    if (kd.hasCodeProperty(6))
      w.sgpr[s++] = kd.privateSegmentFixedSize;
    if (preload) {
      unsigned off = kd.getKernargPreloadOffsetDwords();
      for (unsigned d = 0; d < kd.getKernargPreloadDwords(); ++d) {
        uint32_t v = 0;
        size_t byte = size_t(off + d) * 4;
        if (byte + 4 <= kernargBytes.size())
          std::memcpy(&v, kernargBytes.data() + byte, 4);
        w.sgpr[s++] = v;
      }
    }
    s = kd.getUserSgprCount();
    for (unsigned d = 0; d < 3; ++d)
      if (kd.enablesWorkgroupId(d))
        w.sgpr[s++] = wg[d];
    if (kd.enablesWorkgroupInfo())
      w.sgpr[s++] = 0;
    uint64_t exec = 0;
    for (unsigned lane = 0; lane < 64; ++lane) {
      uint32_t flatId = wi * 64 + lane;
      if (flatId >= items)
        continue;
      exec |= 1ull << lane;
      uint32_t x = flatId % ws[0];
      uint32_t y = (flatId / ws[0]) % ws[1];
      uint32_t z = flatId / (ws[0] * ws[1]);
      w.v(0, lane) =
          x | (idDims >= 1 ? y << 10 : 0) | (idDims >= 2 ? z << 20 : 0);
    }
    w.setExec(exec);
    if (cfg.onWaveStart)
      cfg.onWaveStart(w);
  }
  stats.waves += numWaves;
  ++stats.workgroups;
  std::vector<std::unique_ptr<ExecContext>> ctxs;
  for (WaveState &w : waves)
    ctxs.push_back(std::make_unique<ExecContext>(
        w, mem, lds.data(), uint32_t(lds.size()), stats, co->getChip()));
  // The timing model: the workgroup's waves share a CU, a SIMD for every
  // fourth wave, with the co-resident copies of the workgroup the launch
  // puts beside it. Those copies replay what its waves executed, as long as
  // the record stays within kMaxReplaySteps.
  std::vector<std::unique_ptr<WaveTimeline>> timelines;
  std::vector<std::vector<MemRecord>> accesses(timing ? numWaves : 0);
  std::vector<std::vector<TimelineStep>> records(timing ? numWaves : 0);
  WorkgroupAccumulator group;
  const ChipInfo &chip = co->getChip();
  std::optional<SharedCU> cu;
  if (timing) {
    cu.emplace(cfg.timing->latencyScales.size(), chip.simdsPerCU);
    for (unsigned wi = 0; wi < numWaves; ++wi) {
      timelines.push_back(std::make_unique<WaveTimeline>(
          *cfg.timing->device, cfg.timing->latencyScales, &*cu,
          wi % chip.simdsPerCU));
      ctxs[wi]->accesses = &accesses[wi];
    }
  }
  uint64_t recorded = 0;
  // Waves take turns: each runs until it ends or reaches a barrier; the
  // barrier opens once every wave still running has reached it, at the
  // latest arrival's time.
  while (true) {
    bool anyRunning = false;
    for (unsigned wi = 0; wi < numWaves; ++wi) {
      ExecContext &ctx = *ctxs[wi];
      if (ctx.w.ended)
        continue;
      bool trace = cfg.traceWave == int(ctx.w.waveIdInGroup) && wg[0] == 0 &&
                   wg[1] == 0 && wg[2] == 0;
      std::vector<TimelineStep> *record =
          records.empty() ? nullptr : &records[wi];
      size_t before = record ? record->size() : 0;
      if (Error e = runWave(ctx, cfg.maxStepsPerWave, trace,
                            timing ? timelines[wi].get() : nullptr, &group,
                            record))
        return e;
      if (record) {
        recorded += record->size() - before;
        if (recorded > kMaxReplaySteps) {
          // Too long to keep: the copies are not simulated.
          records.clear();
          records.shrink_to_fit();
        }
      }
      anyRunning |= !ctx.w.ended;
    }
    if (!anyRunning)
      break;
    if (!timelines.empty())
      for (unsigned scale = 0; scale < timelines[0]->getNumScales(); ++scale) {
        uint64_t open = 0;
        for (unsigned wi = 0; wi < numWaves; ++wi)
          if (ctxs[wi]->w.atBarrier)
            open = std::max(open, timelines[wi]->now(scale));
        for (unsigned wi = 0; wi < numWaves; ++wi)
          if (ctxs[wi]->w.atBarrier)
            timelines[wi]->leaveBarrier(scale, open);
      }
    for (auto &ctx : ctxs)
      ctx->w.atBarrier = false;
  }
  if (timing) {
    // The clocks of the run above took the shared pipes wave after wave;
    // the replay takes them in time order, with the co-resident copies.
    if (records.empty()) {
      summarizeWorkgroup(timelines, timelines, group, *timing);
    } else {
      SharedCU together(cfg.timing->latencyScales.size(), chip.simdsPerCU);
      summarizeWorkgroup(timelines,
                         replayTogether(*cfg.timing->device,
                                        cfg.timing->latencyScales,
                                        chip.simdsPerCU, records,
                                        std::max(coResident, 1u), together,
                                        wg == std::array<uint32_t, 3>{} &&
                                                cfg.traceWave < int(numWaves)
                                            ? cfg.traceWave
                                            : -1),
                         group, *timing);
    }
    timing->coResidentSimulated = records.empty() ? 1 : coResident;
  }
  if (cfg.onWaveEnd)
    for (WaveState &w : waves)
      cfg.onWaveEnd(w);
  return Error::success();
}

Emulator::Emulator(std::unique_ptr<EmulatorImpl> impl)
    : impl(std::move(impl)) {}
Emulator::~Emulator() = default;

Expected<std::unique_ptr<Emulator>>
Emulator::create(std::shared_ptr<const CodeObject> codeObject) {
  auto impl = std::make_unique<EmulatorImpl>();
  auto cache = InstCache::create(codeObject->getImage(), codeObject->getChip());
  if (!cache)
    return cache.takeError();
  impl->cache = std::move(*cache);
  impl->co = std::move(codeObject);
  return std::unique_ptr<Emulator>(new Emulator(std::move(impl)));
}

const CodeObject &Emulator::getCodeObject() const { return *impl->co; }

Expected<std::string> Emulator::disassemble(uint64_t address) {
  return impl->cache->disassemble(address);
}

/// Writes `v` as `size` little-endian bytes at `off` if it fits.
static void put(std::vector<uint8_t> &buf, size_t off, uint64_t v,
                unsigned size) {
  if (off + size > buf.size())
    return;
  for (unsigned i = 0; i < size; ++i)
    buf[off + i] = uint8_t(v >> (8 * i));
}

Expected<ExecStats> Emulator::dispatch(StringRef kernel,
                                       const DispatchConfig &cfg,
                                       ArrayRef<uint8_t> kernargs,
                                       DeviceMemory &memory) {
  auto kOr = impl->co->getKernel(kernel);
  if (!kOr)
    return kOr.takeError();
  const KernelInfo &k = *kOr;
  const KernelDescriptor &kd = k.descriptor;
  const auto &ws = cfg.workgroupSize;
  const auto &grid = cfg.gridWorkgroups;
  uint64_t items = uint64_t(ws[0]) * ws[1] * ws[2];
  if (items == 0 || items > 1024)
    return createStringError("workgroup size %ux%ux%u must hold 1..1024 "
                             "work-items",
                             ws[0], ws[1], ws[2]);
  if (items > k.maxFlatWorkgroupSize)
    return createStringError("workgroup size %llu exceeds the kernel's "
                             ".max_flat_workgroup_size %u",
                             (unsigned long long)items, k.maxFlatWorkgroupSize);
  if (ws[1] > 1 && kd.getWorkitemIdVgprs() < 1)
    return createStringError("kernel reads only the x work-item id but the "
                             "workgroup has y extent %u",
                             ws[1]);
  if (ws[2] > 1 && kd.getWorkitemIdVgprs() < 2)
    return createStringError("kernel does not read the z work-item id but the "
                             "workgroup has z extent %u",
                             ws[2]);
  uint32_t ldsLimit = impl->co->getChip().ldsBytesPerWorkgroup;
  uint64_t ldsBytes = uint64_t(kd.groupSegmentFixedSize) + cfg.dynamicLdsBytes;
  if (ldsBytes > ldsLimit)
    return createStringError("LDS of %llu bytes exceeds the %u bytes of %s",
                             (unsigned long long)ldsBytes, ldsLimit,
                             impl->co->getChip().name.str().c_str());
  if (k.usesDynamicStack)
    return createStringError("kernels with a dynamic stack are not supported");

  // Kernarg segment: explicit bytes, then the hidden arguments.
  bool hasHiddenMeta = llvm::any_of(k.args, [](const KernelArgInfo &a) {
    return StringRef(a.valueKind).starts_with("hidden_");
  });
  size_t hiddenBase = (kernargs.size() + 7) / 8 * 8;
  size_t segSize = std::max<size_t>(k.kernargSegmentSize, kernargs.size());
  if (!hasHiddenMeta)
    segSize = std::max<size_t>(segSize, hiddenBase + 256);
  std::vector<uint8_t> seg(segSize, 0);
  std::copy(kernargs.begin(), kernargs.end(), seg.begin());
  auto hiddenValue = [&](StringRef kind, uint64_t &v) -> bool {
    for (unsigned d = 0; d < 3; ++d) {
      char c = "xyz"[d];
      if (kind == (Twine("hidden_block_count_") + Twine(c)).str()) {
        v = grid[d];
        return true;
      }
      if (kind == (Twine("hidden_group_size_") + Twine(c)).str()) {
        v = ws[d];
        return true;
      }
      if (kind == (Twine("hidden_remainder_") + Twine(c)).str() ||
          kind == (Twine("hidden_global_offset_") + Twine(c)).str()) {
        v = 0;
        return true;
      }
    }
    if (kind == "hidden_grid_dims") {
      v = grid[2] > 1 ? 3 : grid[1] > 1 ? 2 : 1;
      return true;
    }
    if (kind == "hidden_dynamic_lds_size") {
      v = cfg.dynamicLdsBytes;
      return true;
    }
    return false;
  };
  if (hasHiddenMeta) {
    for (const KernelArgInfo &a : k.args) {
      uint64_t v;
      if (hiddenValue(a.valueKind, v))
        put(seg, a.offset, v, a.size);
    }
  } else {
    for (unsigned d = 0; d < 3; ++d) {
      put(seg, hiddenBase + 4 * d, grid[d], 4);
      put(seg, hiddenBase + 12 + 2 * d, ws[d], 2);
      put(seg, hiddenBase + 18 + 2 * d, 0, 2);
    }
    put(seg, hiddenBase + 64, grid[2] > 1 ? 3 : grid[1] > 1 ? 2 : 1, 2);
    put(seg, hiddenBase + 120, cfg.dynamicLdsBytes, 4);
  }

  uint64_t kernargAddr = memory.allocate("kernarg segment", seg.size(), 256);
  uint64_t packetAddr = memory.allocate("dispatch packet", 64, 64);
  uint64_t queueAddr = memory.allocate("queue", 256, 64);
  auto cleanup = make_scope_exit([&] {
    memory.release(kernargAddr);
    memory.release(packetAddr);
    memory.release(queueAddr);
  });
  std::vector<uint8_t> packet(64, 0);
  put(packet, 2, 3, 2); // dimensions
  for (unsigned d = 0; d < 3; ++d) {
    put(packet, 4 + 2 * d, ws[d], 2);
    put(packet, 12 + 4 * d, uint64_t(grid[d]) * ws[d], 4);
  }
  put(packet, 24, kd.privateSegmentFixedSize, 4);
  put(packet, 28, ldsBytes, 4);
  put(packet, 32, k.descriptorAddress, 8);
  put(packet, 40, kernargAddr, 8);
  if (Error e = memory.write(kernargAddr, seg))
    return std::move(e);
  if (Error e = memory.write(packetAddr, packet))
    return std::move(e);
  for (auto name : {"kernarg segment", "dispatch packet", "queue"})
    if (Buffer *b = memory.lookup(name))
      b->readOnly = true;

  // Each axis fits the dispatch packet, but the product can reach 2^96
  // (and wrap a 64-bit count): bounded, in 128 bits, before anything per
  // workgroup is allocated.
  unsigned __int128 workgroups =
      (unsigned __int128)grid[0] * grid[1] * grid[2];
  if (workgroups > kMaxDispatchWorkgroups) {
    std::string count =
        workgroups > std::numeric_limits<uint64_t>::max()
            ? std::string("2^64 or more")
            : std::to_string(uint64_t(workgroups));
    return createStringError(
        formatv("the grid {0}x{1}x{2} has {3} workgroups; the emulator runs "
                "at most {4} (2^24) in one dispatch",
                grid[0], grid[1], grid[2], count, kMaxDispatchWorkgroups)
            .str());
  }
  uint64_t total = uint64_t(workgroups);
  auto idOf = [&](uint64_t i) -> std::array<uint32_t, 3> {
    return {uint32_t(i % grid[0]), uint32_t(i / grid[0] % grid[1]),
            uint32_t(i / (uint64_t(grid[0]) * grid[1]))};
  };
  // With the timing model and a classifier, only the first workgroup of
  // each class runs (in dispatch order, so split-K partners keep theirs).
  const TimingOptions *timing = cfg.timing;
  if (timing && !timing->device)
    return createStringError("the timing model needs a device");
  std::vector<uint64_t> toRun;
  std::vector<uint32_t> classOf;
  if (timing) {
    // The timing model keeps hundreds of bytes for each workgroup it
    // simulates: bounded before they are allocated.
    auto tooMany = [&](uint64_t simulatedCount) {
      return createStringError(
          formatv("the timing model would simulate {0} workgroups of the "
                  "grid {1}x{2}x{3}; it simulates at most {4} (2^18) in one "
                  "dispatch (one per class where the launch has classes)",
                  simulatedCount, grid[0], grid[1], grid[2],
                  kMaxTimedWorkgroups)
              .str());
    };
    if (!timing->classify && total > kMaxTimedWorkgroups)
      return tooMany(total);
    classOf.resize(total);
    DenseMap<uint64_t, uint32_t> classes;
    for (uint64_t i = 0; i < total; ++i) {
      uint64_t key = timing->classify ? timing->classify(idOf(i)) : i;
      auto [it, inserted] = classes.try_emplace(key, uint32_t(toRun.size()));
      if (inserted) {
        toRun.push_back(i);
        if (toRun.size() > kMaxTimedWorkgroups)
          return tooMany(toRun.size());
      }
      classOf[i] = it->second;
    }
    total = toRun.size();
  }
  std::vector<WorkgroupTiming> simulated(timing ? total : 0);
  LaunchShapeInfo shape;
  shape.grid = grid;
  shape.workgroupSize = ws;
  shape.vgprsPerWave = kd.getAllocatedVgprs();
  shape.ldsBytes = ldsBytes;
  shape.kernel = kernel.str();
  unsigned coResident =
      timing ? getCoResidentWorkgroups(*timing->device, impl->co->getChip(),
                                       shape, uint64_t(workgroups))
             : 1;
  unsigned threads = cfg.threads
                         ? cfg.threads
                         : std::max(1u, std::thread::hardware_concurrency());
  threads = std::max<uint64_t>(1, std::min<uint64_t>(threads, total));
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<ExecStats> perThread(threads);
  std::vector<std::string> errors(threads);
  auto worker = [&](unsigned t) {
    std::vector<uint8_t> lds(ldsBytes);
    while (!failed.load()) {
      uint64_t index = next.fetch_add(1);
      if (index >= total)
        break;
      std::array<uint32_t, 3> wg = idOf(timing ? toRun[index] : index);
      if (Error e = impl->runWorkgroup(
              k, cfg, wg, kernargAddr, packetAddr, queueAddr, seg, memory, lds,
              perThread[t], timing ? &simulated[index] : nullptr,
              coResident)) {
        errors[t] = toString(std::move(e));
        failed = true;
      }
    }
  };
  if (threads == 1) {
    worker(0);
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back(worker, t);
    for (auto &th : pool)
      th.join();
  }
  for (const std::string &e : errors)
    if (!e.empty())
      return createStringError(e);
  ExecStats stats;
  for (const ExecStats &s : perThread)
    stats.merge(s);
  if (timing) {
    std::vector<WorkgroupId> ids;
    for (uint64_t i : toRun)
      ids.push_back(idOf(i));
    stats.timing = std::make_shared<LaunchTiming>(computeLaunchTiming(
        *timing->device, *timing, shape, simulated, ids, classOf));
  }
  return stats;
}

} // namespace mlir::mlafp8::emu
