//===- CodeObject.cpp - Reading AMDGPU code objects -----------------------===//

#include "mla-fp8/Target/CodeObject.h"

#include "mla-fp8/Target/Chip.h"
#include "mla-fp8/Target/Serialization.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/BinaryFormat/MsgPackReader.h"
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
using llvm::msgpack::DocNode;
using MsgPackType = llvm::msgpack::Type;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

const KernelMetadata *CodeObjectMetadata::findKernel(StringRef name) const {
  for (const KernelMetadata &kernel : kernels)
    if (kernel.name == name)
      return &kernel;
  return nullptr;
}

/// Opens `bytes` as a 64-bit little-endian AMDGPU ELF. The object refers to
/// `bytes`, which must outlive it.
static llvm::Expected<std::unique_ptr<llvm::object::ELF64LEObjectFile>>
openAMDGPUElf(StringRef bytes) {
  llvm::MemoryBufferRef buffer(bytes, "code object");
  auto binary = llvm::object::ObjectFile::createObjectFile(buffer);
  if (!binary)
    return makeError("not an ELF object: " +
                     llvm::toString(binary.takeError()));
  auto *elf = dyn_cast<llvm::object::ELF64LEObjectFile>(binary->get());
  if (!elf)
    return makeError("not a 64-bit little-endian ELF object");
  unsigned machine = elf->getELFFile().getHeader().e_machine;
  if (machine != llvm::ELF::EM_AMDGPU)
    return makeError("not an AMDGPU ELF object (e_machine " + Twine(machine) +
                     ")");
  binary->release();
  return std::unique_ptr<llvm::object::ELF64LEObjectFile>(elf);
}

//===----------------------------------------------------------------------===//
// Metadata note
//===----------------------------------------------------------------------===//

/// Reads the msgpack node as an unsigned integer; producers encode small
/// numbers as either signed or unsigned.
static std::optional<uint64_t> readUInt(const DocNode &node) {
  if (node.getKind() == MsgPackType::UInt)
    return node.getUInt();
  if (node.getKind() == MsgPackType::Int && node.getInt() >= 0)
    return static_cast<uint64_t>(node.getInt());
  return std::nullopt;
}

namespace {
/// Reads the fields of one msgpack map, reporting errors with context.
class MapReader {
public:
  MapReader(DocNode &map, std::string context)
      : map(map), context(std::move(context)) {}

  /// Calls `fn(key, value)` for every entry whose key is a string.
  template <typename Fn> llvm::Error forEach(Fn fn) {
    if (map.getKind() != MsgPackType::Map)
      return makeError(context + " is not a map");
    for (auto &[key, value] : map.getMap()) {
      if (key.getKind() != MsgPackType::String)
        continue;
      if (llvm::Error error = fn(key.getString(), value))
        return error;
    }
    return llvm::Error::success();
  }

  template <typename T>
  llvm::Error readUnsigned(StringRef key, const DocNode &value, T &out) {
    std::optional<uint64_t> number = readUInt(value);
    if (!number || *number > std::numeric_limits<T>::max())
      return makeError(context + ": '" + key +
                       "' is not an unsigned integer in range");
    out = static_cast<T>(*number);
    return llvm::Error::success();
  }

  llvm::Error readString(StringRef key, const DocNode &value,
                         std::string &out) {
    if (value.getKind() != MsgPackType::String)
      return makeError(context + ": '" + key + "' is not a string");
    out = value.getString().str();
    return llvm::Error::success();
  }

  llvm::Error readBool(StringRef key, const DocNode &value, bool &out) {
    if (value.getKind() != MsgPackType::Boolean)
      return makeError(context + ": '" + key + "' is not a boolean");
    out = value.getBool();
    return llvm::Error::success();
  }

  const std::string &getContext() const { return context; }

private:
  DocNode &map;
  std::string context;
};
} // namespace

static llvm::Expected<KernelArgMetadata> parseArg(DocNode &node,
                                                  const Twine &context) {
  KernelArgMetadata arg;
  MapReader reader(node, context.str());
  bool hasOffset = false, hasSize = false;
  llvm::Error error =
      reader.forEach([&](StringRef key, DocNode &value) -> llvm::Error {
        if (key == ".offset") {
          hasOffset = true;
          return reader.readUnsigned(key, value, arg.offset);
        }
        if (key == ".size") {
          hasSize = true;
          return reader.readUnsigned(key, value, arg.size);
        }
        if (key == ".value_kind")
          return reader.readString(key, value, arg.valueKind);
        if (key == ".name")
          return reader.readString(key, value, arg.name.emplace());
        if (key == ".address_space")
          return reader.readString(key, value, arg.addressSpace.emplace());
        return llvm::Error::success();
      });
  if (error)
    return std::move(error);
  if (!hasOffset || !hasSize || arg.valueKind.empty())
    return makeError(context + " lacks .offset, .size or .value_kind");
  return arg;
}

static llvm::Expected<KernelMetadata> parseKernel(DocNode &node,
                                                  unsigned index) {
  KernelMetadata kernel;
  MapReader reader(node, "amdhsa.kernels[" + std::to_string(index) + "]");
  llvm::Error error = reader.forEach([&](StringRef key,
                                         DocNode &value) -> llvm::Error {
    if (key == ".name")
      return reader.readString(key, value, kernel.name);
    if (key == ".symbol")
      return reader.readString(key, value, kernel.symbol);
    if (key == ".kernarg_segment_size")
      return reader.readUnsigned(key, value, kernel.kernargSegmentSize);
    if (key == ".kernarg_segment_align")
      return reader.readUnsigned(key, value, kernel.kernargSegmentAlign);
    if (key == ".group_segment_fixed_size")
      return reader.readUnsigned(key, value, kernel.groupSegmentFixedSize);
    if (key == ".private_segment_fixed_size")
      return reader.readUnsigned(key, value, kernel.privateSegmentFixedSize);
    if (key == ".vgpr_count")
      return reader.readUnsigned(key, value, kernel.vgprCount);
    if (key == ".agpr_count")
      return reader.readUnsigned(key, value, kernel.agprCount);
    if (key == ".sgpr_count")
      return reader.readUnsigned(key, value, kernel.sgprCount);
    if (key == ".vgpr_spill_count")
      return reader.readUnsigned(key, value, kernel.vgprSpillCount);
    if (key == ".sgpr_spill_count")
      return reader.readUnsigned(key, value, kernel.sgprSpillCount);
    if (key == ".wavefront_size")
      return reader.readUnsigned(key, value, kernel.wavefrontSize);
    if (key == ".max_flat_workgroup_size")
      return reader.readUnsigned(key, value, kernel.maxFlatWorkgroupSize);
    if (key == ".uses_dynamic_stack")
      return reader.readBool(key, value, kernel.usesDynamicStack);
    if (key == ".args") {
      if (value.getKind() != MsgPackType::Array)
        return makeError(reader.getContext() + ": '.args' is not an array");
      for (auto [argIndex, argNode] : llvm::enumerate(value.getArray())) {
        auto arg = parseArg(argNode, reader.getContext() + ".args[" +
                                         Twine(argIndex) + "]");
        if (!arg)
          return arg.takeError();
        kernel.args.push_back(std::move(*arg));
      }
    }
    return llvm::Error::success();
  });
  if (error)
    return std::move(error);
  if (kernel.name.empty() || kernel.symbol.empty())
    return makeError(reader.getContext() + " lacks .name or .symbol");
  return kernel;
}

/// Walks the msgpack structure without building it and rejects map keys that
/// are arrays or maps: msgpack::Document's key ordering hits
/// llvm_unreachable on those, which traps in a release build.
static llvm::Error checkMsgPackKeys(StringRef blob) {
  llvm::msgpack::Reader reader(blob);
  struct Level {
    uint64_t remaining;
    bool isMap;
  };
  SmallVector<Level> stack;
  do {
    llvm::msgpack::Object object;
    llvm::Expected<bool> read = reader.read(object);
    if (!read)
      return makeError("the AMDGPU metadata note is not valid MessagePack: " +
                       llvm::toString(read.takeError()));
    if (!*read)
      return makeError("the AMDGPU metadata note is truncated");
    bool isKey =
        !stack.empty() && stack.back().isMap && stack.back().remaining % 2 == 0;
    if (!stack.empty())
      --stack.back().remaining;
    bool isContainer =
        object.Kind == MsgPackType::Array || object.Kind == MsgPackType::Map;
    if (isKey && (isContainer || object.Kind == MsgPackType::Extension))
      return makeError("the AMDGPU metadata note has a map key that is not a "
                       "scalar");
    if (isContainer) {
      uint64_t items = object.Length;
      if (object.Kind == MsgPackType::Map)
        items *= 2;
      stack.push_back({items, object.Kind == MsgPackType::Map});
    }
    while (!stack.empty() && stack.back().remaining == 0)
      stack.pop_back();
  } while (!stack.empty());
  return llvm::Error::success();
}

llvm::Error mlir::mlafp8::parseAMDGPUMetadataNote(StringRef blob,
                                                  CodeObjectMetadata &result) {
  if (llvm::Error error = checkMsgPackKeys(blob))
    return error;
  llvm::msgpack::Document document;
  if (!document.readFromBlob(blob, /*Multi=*/false))
    return makeError("the AMDGPU metadata note is not valid MessagePack");
  MapReader root(document.getRoot(), "the AMDGPU metadata");
  bool hasKernels = false;
  llvm::Error error = root.forEach([&](StringRef key,
                                       DocNode &value) -> llvm::Error {
    if (key == "amdhsa.target")
      return root.readString(key, value, result.targetID);
    if (key == "amdhsa.version") {
      if (value.getKind() != MsgPackType::Array || value.getArray().size() != 2)
        return makeError("'amdhsa.version' is not a pair");
      if (llvm::Error e = root.readUnsigned(key, value.getArray()[0],
                                            result.metadataVersionMajor))
        return e;
      return root.readUnsigned(key, value.getArray()[1],
                               result.metadataVersionMinor);
    }
    if (key == "amdhsa.kernels") {
      hasKernels = true;
      if (value.getKind() != MsgPackType::Array)
        return makeError("'amdhsa.kernels' is not an array");
      for (auto [index, node] : llvm::enumerate(value.getArray())) {
        auto kernel = parseKernel(node, index);
        if (!kernel)
          return kernel.takeError();
        result.kernels.push_back(std::move(*kernel));
      }
    }
    return llvm::Error::success();
  });
  if (error)
    return error;
  if (!hasKernels)
    return makeError("the AMDGPU metadata has no 'amdhsa.kernels'");
  return llvm::Error::success();
}

llvm::Expected<CodeObjectMetadata>
mlir::mlafp8::readCodeObjectMetadata(StringRef elfBytes) {
  auto object = openAMDGPUElf(elfBytes);
  if (!object)
    return object.takeError();
  const auto &file = (*object)->getELFFile();
  const auto &header = file.getHeader();

  CodeObjectMetadata result;
  result.elfFlags = header.e_flags;
  // The HSA ABI version byte counts from v2 = code object v4.
  if (header.e_ident[llvm::ELF::EI_OSABI] != llvm::ELF::ELFOSABI_AMDGPU_HSA)
    return makeError("not an HSA code object (EI_OSABI " +
                     Twine(unsigned(header.e_ident[llvm::ELF::EI_OSABI])) +
                     ")");
  unsigned abiVersion = header.e_ident[llvm::ELF::EI_ABIVERSION];
  if (abiVersion < llvm::ELF::ELFABIVERSION_AMDGPU_HSA_V4)
    return makeError("code object versions before v4 are not supported");
  result.codeObjectVersion = abiVersion + 2;

  auto sections = file.sections();
  if (!sections)
    return makeError("malformed section table: " +
                     llvm::toString(sections.takeError()));
  bool found = false;
  for (const auto &section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_NOTE)
      continue;
    llvm::Error noteError = llvm::Error::success();
    for (const auto &note : file.notes(section, noteError)) {
      if (note.getName() != "AMDGPU" ||
          note.getType() != llvm::ELF::NT_AMDGPU_METADATA)
        continue;
      if (found)
        return makeError("more than one AMDGPU metadata note");
      found = true;
      StringRef blob = note.getDescAsStringRef(section.sh_addralign);
      if (llvm::Error error = parseAMDGPUMetadataNote(blob, result))
        return std::move(error);
    }
    if (noteError)
      return makeError("malformed note section: " +
                       llvm::toString(std::move(noteError)));
  }
  if (!found)
    return makeError("no NT_AMDGPU_METADATA note");

  // "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" -> "gfx942".
  StringRef processor = StringRef(result.targetID).rsplit("--").second;
  result.processor = processor.split(':').first.str();
  return result;
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

  // Find the kernel's code: its function symbol gives offset and size. The
  // ELFFile-level accessors check every table against the file size, so a
  // corrupted sh_size cannot make the walk run over billions of entries.
  const auto &file = elf.getELFFile();
  auto sections = file.sections();
  if (!sections)
    return makeError("malformed section table: " +
                     llvm::toString(sections.takeError()));
  const llvm::object::ELF64LE::Sym *symbol = nullptr;
  for (const auto &section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_SYMTAB)
      continue;
    auto symbols = file.symbols(&section);
    if (!symbols)
      return makeError("malformed symbol table: " +
                       llvm::toString(symbols.takeError()));
    auto names = file.getStringTableForSymtab(section, *sections);
    if (!names)
      return makeError("malformed symbol names: " +
                       llvm::toString(names.takeError()));
    for (const auto &candidate : *symbols) {
      if (candidate.getType() != llvm::ELF::STT_FUNC)
        continue;
      auto name = candidate.getName(*names);
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      if (*name == kernelName) {
        symbol = &candidate;
        break;
      }
    }
  }
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
  initializeAMDGPUTarget();
  llvm::Triple triple(kAMDGPUTriple);
  std::string message;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, message);
  if (!target)
    return makeError("cannot find the AMDGPU target: " + message);
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
