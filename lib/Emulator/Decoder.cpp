//===- Decoder.cpp - LLVM MC disassembly and the instruction cache --------===//

#include "Decoder.h"
#include "InstTable.h"
#include "WaveTimeline.h"

#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstPrinter.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <array>

extern "C" void LLVMInitializeAMDGPUTargetInfo();
extern "C" void LLVMInitializeAMDGPUTargetMC();
extern "C" void LLVMInitializeAMDGPUDisassembler();

using namespace llvm;

namespace mlir::mlafp8::emu {

/// LLVM's MC objects for one subtarget.
class MCState {
public:
  std::unique_ptr<MCRegisterInfo> mri;
  std::unique_ptr<MCAsmInfo> mai;
  std::unique_ptr<MCSubtargetInfo> sti;
  std::unique_ptr<MCInstrInfo> mii;
  std::unique_ptr<MCContext> ctx;
  std::unique_ptr<MCDisassembler> disasm;
  std::unique_ptr<MCInstPrinter> printer;
};

static Expected<std::unique_ptr<MCState>> createMCState(const ChipInfo &chip) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUDisassembler();
  });
  Triple triple(kAMDGPUTriple);
  std::string err;
  const Target *target = TargetRegistry::lookupTarget(triple, err);
  if (!target)
    return createStringError("AMDGPU target unavailable: %s", err.c_str());
  auto s = std::make_unique<MCState>();
  s->mri.reset(target->createMCRegInfo(triple));
  MCTargetOptions options;
  s->mai.reset(target->createMCAsmInfo(*s->mri, triple, options));
  s->sti.reset(
      target->createMCSubtargetInfo(triple, chip.name, "+wavefrontsize64"));
  s->mii.reset(target->createMCInstrInfo());
  if (!s->mri || !s->mai || !s->sti || !s->mii)
    return createStringError("cannot create the AMDGPU MC layer");
  s->ctx = std::make_unique<MCContext>(triple, s->mai.get(), s->mri.get(),
                                       s->sti.get());
  s->disasm.reset(target->createMCDisassembler(*s->sti, *s->ctx));
  s->printer.reset(target->createMCInstPrinter(
      triple, s->mai->getAssemblerDialect(), *s->mai, *s->mii, *s->mri));
  if (!s->disasm || !s->printer)
    return createStringError("cannot create the AMDGPU disassembler");
  return s;
}

Expected<std::unique_ptr<InstCache>> InstCache::create(ArrayRef<uint8_t> image,
                                                       const ChipInfo &chip) {
  auto mc = createMCState(chip);
  if (!mc)
    return mc.takeError();
  std::unique_ptr<InstCache> cache(new InstCache());
  cache->image = image;
  cache->mc = std::move(*mc);
  cache->chip = &chip;
  cache->slots = std::vector<std::atomic<const Inst *>>(image.size() / 4 + 1);
  return cache;
}

InstCache::~InstCache() = default;

/// Disassembles at `pc`: size and printed text.
static Error disassembleOne(MCState &mc, ArrayRef<uint8_t> image, uint64_t pc,
                            uint64_t &size, std::string &text,
                            std::string &opcodeName) {
  if (pc >= image.size() || pc % 4)
    return createStringError("program counter 0x%llx outside the code",
                             (unsigned long long)pc);
  // The disassembler gets a zero-padded window: LLVM 22's AMDGPU decoder can
  // read past a short buffer (a literal constant after the last word), so it
  // never sees one; an instruction that would end past the code is an error.
  std::array<uint8_t, 32> window{};
  size_t avail = std::min<size_t>(16, image.size() - pc);
  std::copy_n(image.begin() + pc, avail, window.begin());
  uint32_t word = uint32_t(window[0]) | uint32_t(window[1]) << 8 |
                  uint32_t(window[2]) << 16 | uint32_t(window[3]) << 24;
  MCInst mi;
  auto status = mc.disasm->getInstruction(
      mi, size, ArrayRef<uint8_t>(window.data(), 16), pc, nulls());
  if (status != MCDisassembler::Success)
    return createStringError("cannot decode the instruction at 0x%llx "
                             "(word 0x%08x)",
                             (unsigned long long)pc, unsigned(word));
  if (size > avail)
    return createStringError("the instruction at 0x%llx (word 0x%08x) runs "
                             "past the end of the code",
                             (unsigned long long)pc, unsigned(word));
  raw_string_ostream os(text);
  mc.printer->printInst(&mi, pc, "", *mc.sti, os);
  opcodeName = mc.mii->getName(mi.getOpcode()).str();
  return Error::success();
}

Expected<std::string> InstCache::disassemble(uint64_t pc) {
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t size;
  std::string text, name;
  if (Error e = disassembleOne(*mc, image, pc, size, text, name))
    return std::move(e);
  return StringRef(text).trim().str();
}

Expected<const Inst *> InstCache::decode(uint64_t pc) {
  std::lock_guard<std::mutex> lock(mutex);
  if (pc % 4 == 0 && pc / 4 < slots.size())
    if (const Inst *i = slots[pc / 4].load(std::memory_order_acquire))
      return i;
  auto inst = std::make_unique<Inst>();
  uint64_t size;
  std::string text, opcodeName;
  if (Error e = disassembleOne(*mc, image, pc, size, text, opcodeName))
    return std::move(e);
  inst->pc = pc;
  inst->size = size;
  inst->text = StringRef(text).trim().str();
  if (Error e = parseAssembly(inst->text, *inst))
    return std::move(e);
  if (!inst->def)
    return createStringError("pc 0x%llx: instruction not implemented: %s "
                             "(%s, opcode %s)",
                             (unsigned long long)pc, inst->mnemonic.c_str(),
                             inst->text.c_str(), opcodeName.c_str());
  inst->handler = inst->def->handler;
  inst->cls = inst->def->cls;
  assignTimingKind(*inst, *chip);
  const Inst *raw = inst.get();
  owned.push_back(std::move(inst));
  slots[pc / 4].store(raw, std::memory_order_release);
  return raw;
}

} // namespace mlir::mlafp8::emu
