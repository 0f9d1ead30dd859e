//===- CodeObject.cpp - Reading AMDGPU code objects -----------------------===//

#include "mla-fp8/Target/CodeObject.h"

#include "mla-fp8/Target/Chip.h"
#include "mla-fp8/Target/Serialization.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
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
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::mlafp8;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

//===----------------------------------------------------------------------===//
// Disassembly
//===----------------------------------------------------------------------===//

llvm::Expected<KernelInstructionStats>
mlir::mlafp8::countKernelInstructions(StringRef elfBytes,
                                      StringRef kernelName) {
  auto object = openAMDGPUElf(elfBytes);
  if (!object)
    return object.takeError();
  llvm::object::ELF64LEObjectFile &elf = **object;

  // Find the kernel's code: its function symbol gives offset and size.
  const auto &file = elf.getELFFile();
  std::optional<llvm::object::ELF64LE::Sym> symbol;
  if (llvm::Error error = forEachDefinedSymbol(
          file,
          [&](const llvm::object::ELF64LE::Sym &candidate, StringRef name) {
            if (candidate.getType() == llvm::ELF::STT_FUNC &&
                name == kernelName)
              symbol = candidate;
            return !symbol;
          }))
    return std::move(error);
  if (!symbol)
    return makeError("no function symbol '" + kernelName +
                     "' in the code object");
  auto codeSection = file.getSection(symbol->st_shndx);
  if (!codeSection)
    return makeError("symbol '" + kernelName + "' has a bad section: " +
                     llvm::toString(codeSection.takeError()));
  auto contents = file.getSectionContents(**codeSection);
  if (!contents)
    return makeError("cannot read the code of '" + kernelName +
                     "': " + llvm::toString(contents.takeError()));
  // st_value is an address in a linked file and a section offset in a
  // relocatable one, where sh_addr is 0: the difference works for both.
  uint64_t address = symbol->st_value;
  uint64_t sectionAddress = (*codeSection)->sh_addr;
  uint64_t size = symbol->st_size;
  if (address < sectionAddress || address - sectionAddress > contents->size() ||
      size > contents->size() - (address - sectionAddress))
    return makeError("symbol '" + kernelName + "' lies outside its section");
  ArrayRef<uint8_t> code = contents->slice(address - sectionAddress, size);

  // Only disassemble for the chips of the table: LLVM's AMDGPU disassembler
  // aborts the process (report_fatal_error) for some other processors.
  unsigned mach = file.getHeader().e_flags & llvm::ELF::EF_AMDGPU_MACH;
  const ChipInfo *chip = lookupChipByElfMach(mach);
  if (!chip)
    return makeError("the code object is for EF_AMDGPU_MACH 0x" +
                     llvm::utohexstr(mach) + ", not a supported chip");
  StringRef cpu = chip->name;

  // The MC layer: one disassembler and printer for this processor.
  llvm::Expected<const llvm::Target *> found = getAMDGPUTarget();
  if (!found)
    return found.takeError();
  const llvm::Target *target = *found;
  llvm::Triple triple(kAMDGPUTriple);
  std::unique_ptr<llvm::MCRegisterInfo> registerInfo(
      target->createMCRegInfo(triple));
  llvm::MCTargetOptions mcOptions;
  std::unique_ptr<llvm::MCAsmInfo> asmInfo(
      target->createMCAsmInfo(*registerInfo, triple, mcOptions));
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(triple, cpu, ""));
  std::unique_ptr<llvm::MCInstrInfo> instrInfo(target->createMCInstrInfo());
  if (!registerInfo || !asmInfo || !subtarget || !instrInfo)
    return makeError("cannot set up the AMDGPU MC layer for " + cpu);
  llvm::MCContext context(triple, asmInfo.get(), registerInfo.get(),
                          subtarget.get());
  std::unique_ptr<llvm::MCDisassembler> disassembler(
      target->createMCDisassembler(*subtarget, context));
  std::unique_ptr<llvm::MCInstPrinter> printer(
      target->createMCInstPrinter(triple, asmInfo->getAssemblerDialect(),
                                  *asmInfo, *instrInfo, *registerInfo));
  if (!disassembler || !printer)
    return makeError("cannot create the AMDGPU disassembler for " + cpu);

  KernelInstructionStats stats;
  stats.codeBytes = size;
  uint64_t offset = 0;
  while (offset < code.size()) {
    llvm::MCInst inst;
    uint64_t instSize = 0;
    llvm::MCDisassembler::DecodeStatus status =
        disassembler->getInstruction(inst, instSize, code.drop_front(offset),
                                     address + offset, llvm::nulls());
    if (status != llvm::MCDisassembler::Success || instSize == 0)
      return makeError("cannot decode the instruction at offset " +
                       Twine(offset) + " of '" + kernelName + "'");
    // The mnemonic is the printed instruction's first word.
    std::string text;
    llvm::raw_string_ostream os(text);
    printer->printInst(&inst, address + offset, "", *subtarget, os);
    StringRef mnemonic = StringRef(text).ltrim().split(' ').first.rtrim();
    ++stats.numInstructions;
    if (mnemonic.starts_with("v_mfma"))
      ++stats.numMfma;
    ++stats.mnemonicCounts[mnemonic.str()];
    offset += instSize;
  }
  return stats;
}
