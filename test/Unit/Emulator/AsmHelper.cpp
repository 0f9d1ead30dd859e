//===- AsmHelper.cpp - Assemble gfx9 text and run it on the emulator ------===//

#include "AsmHelper.h"

#include "llvm/MC/MCAsmBackend.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCCodeEmitter.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCObjectFileInfo.h"
#include "llvm/MC/MCObjectWriter.h"
#include "llvm/MC/MCParser/MCAsmParser.h"
#include "llvm/MC/MCParser/MCTargetAsmParser.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCStreamer.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

extern "C" void LLVMInitializeAMDGPUTargetInfo();
extern "C" void LLVMInitializeAMDGPUTargetMC();
extern "C" void LLVMInitializeAMDGPUAsmParser();

using namespace llvm;

namespace mlir::mlafp8::emu::test {

Expected<std::vector<uint8_t>> assemble(const std::string &source,
                                        const std::string &cpu) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmParser();
  });
  Triple triple("amdgcn-amd-amdhsa");
  std::string err;
  const Target *target = TargetRegistry::lookupTarget(triple, err);
  if (!target)
    return createStringError(err);
  std::unique_ptr<MCRegisterInfo> mri(target->createMCRegInfo(triple));
  MCTargetOptions options;
  std::unique_ptr<MCAsmInfo> mai(
      target->createMCAsmInfo(*mri, triple, options));
  std::unique_ptr<MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, cpu, "+wavefrontsize64"));
  std::unique_ptr<MCInstrInfo> mii(target->createMCInstrInfo());
  SourceMgr srcMgr;
  srcMgr.AddNewSourceBuffer(MemoryBuffer::getMemBufferCopy(source, "test.s"),
                            SMLoc());
  std::string diags;
  raw_string_ostream diagOs(diags);
  srcMgr.setDiagHandler(
      [](const SMDiagnostic &d, void *ctx) {
        d.print("", *static_cast<raw_string_ostream *>(ctx), false);
      },
      &diagOs);
  MCContext ctx(triple, mai.get(), mri.get(), sti.get(), &srcMgr);
  std::unique_ptr<MCObjectFileInfo> mofi(
      target->createMCObjectFileInfo(ctx, /*PIC=*/false));
  ctx.setObjectFileInfo(mofi.get());
  SmallVector<char, 0> out;
  raw_svector_ostream os(out);
  MCCodeEmitter *ce = target->createMCCodeEmitter(*mii, ctx);
  MCAsmBackend *mab = target->createMCAsmBackend(*sti, *mri, options);
  std::unique_ptr<MCStreamer> streamer(target->createMCObjectStreamer(
      triple, ctx, std::unique_ptr<MCAsmBackend>(mab),
      mab->createObjectWriter(os), std::unique_ptr<MCCodeEmitter>(ce), *sti));
  std::unique_ptr<MCAsmParser> parser(
      createMCAsmParser(srcMgr, ctx, *streamer, *mai));
  std::unique_ptr<MCTargetAsmParser> tap(
      target->createMCAsmParser(*sti, *parser, *mii, options));
  if (!tap)
    return createStringError("no AMDGPU assembly parser");
  parser->setTargetParser(*tap);
  if (parser->Run(/*NoInitialTextSection=*/false))
    return createStringError("assembly failed:\n" + diags);
  streamer->finish();
  auto obj = object::ELF64LEObjectFile::create(
      MemoryBufferRef(StringRef(out.data(), out.size()), "test.o"));
  if (!obj)
    return obj.takeError();
  for (const object::SectionRef &sec : obj->sections()) {
    Expected<StringRef> name = sec.getName();
    if (!name || *name != ".text")
      continue;
    Expected<StringRef> contents = sec.getContents();
    if (!contents)
      return contents.takeError();
    return std::vector<uint8_t>(contents->begin(), contents->end());
  }
  return createStringError("no .text section");
}

Expected<RunResult> runAsm(const std::string &source,
                           std::function<void(WaveState &)> setup,
                           DeviceMemory *memory, StringRef chipName,
                           unsigned workItems, uint32_t ldsBytes,
                           const TimingOptions *timing,
                           unsigned workgroups) {
  const ChipInfo *chip = lookupChip(chipName);
  if (!chip)
    return createStringError(describeUnsupportedChip(chipName));
  auto code = assemble(".text\n" + source + "\ns_endpgm\n", chip->name.str());
  if (!code)
    return code.takeError();
  KernelDescriptor kd;
  // Denormals kept, DX10 clamp, IEEE mode: what LLVM writes.
  kd.computePgmRsrc1 = (0xfu << 16) | (1u << 21) | (1u << 23);
  kd.groupSegmentFixedSize = ldsBytes;
  kd.privateSegmentFixedSize = 64;
  std::shared_ptr<const CodeObject> co(
      CodeObject::fromRawCode(*code, *chip, "test", kd));
  auto emu = Emulator::create(co);
  if (!emu)
    return emu.takeError();
  DeviceMemory localMem;
  DeviceMemory &mem = memory ? *memory : localMem;
  RunResult result;
  DispatchConfig cfg;
  cfg.workgroupSize = {workItems, 1, 1};
  cfg.gridWorkgroups = {workgroups, 1, 1};
  cfg.maxStepsPerWave = 100000;
  cfg.onWaveStart = setup;
  cfg.timing = timing;
  cfg.onWaveEnd = [&](const WaveState &w) { result.waves.push_back(w); };
  auto stats = (*emu)->dispatch("test", cfg, {}, mem);
  if (!stats)
    return stats.takeError();
  result.stats = *stats;
  return result;
}

} // namespace mlir::mlafp8::emu::test
