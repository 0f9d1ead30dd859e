//===- CodeObject.cpp - HSACO loading -------------------------------------===//

#include "mla-fp8/Emulator/CodeObject.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace mlir::mlafp8::emu {

const char *getChipName(Chip chip) {
  return chip == Chip::GFX942 ? "gfx942" : "gfx950";
}

KernelDescriptor KernelDescriptor::decode(ArrayRef<uint8_t> b) {
  auto u32 = [&](unsigned off) {
    return support::endian::read32le(b.data() + off);
  };
  auto u16 = [&](unsigned off) {
    return support::endian::read16le(b.data() + off);
  };
  KernelDescriptor kd;
  kd.groupSegmentFixedSize = u32(0);
  kd.privateSegmentFixedSize = u32(4);
  kd.kernargSize = u32(8);
  kd.kernelCodeEntryByteOffset =
      int64_t(support::endian::read64le(b.data() + 16));
  kd.computePgmRsrc3 = u32(44);
  kd.computePgmRsrc1 = u32(48);
  kd.computePgmRsrc2 = u32(52);
  kd.kernelCodeProperties = u16(56);
  kd.kernargPreload = u16(58);
  return kd;
}

/// Fills the kernels' metadata fields from the NT_AMDGPU_METADATA note.
static Error applyMetadata(StringRef blob, std::vector<KernelInfo> &kernels) {
  msgpack::Document doc;
  if (!doc.readFromBlob(blob, /*Multi=*/false))
    return createStringError("malformed AMDGPU metadata note");
  auto &root = doc.getRoot();
  if (root.getKind() != msgpack::Type::Map)
    return createStringError("AMDGPU metadata is not a map");
  auto &map = root.getMap();
  auto it = map.find(doc.getNode("amdhsa.kernels"));
  if (it == map.end() || it->second.getKind() != msgpack::Type::Array)
    return Error::success();
  auto getInt = [](msgpack::MapDocNode &m, StringRef key,
                   uint64_t dflt) -> uint64_t {
    auto i = m.find(key);
    if (i == m.end())
      return dflt;
    if (i->second.getKind() == msgpack::Type::UInt)
      return i->second.getUInt();
    if (i->second.getKind() == msgpack::Type::Int)
      return uint64_t(i->second.getInt());
    return dflt;
  };
  auto getStr = [](msgpack::MapDocNode &m, StringRef key) -> std::string {
    auto i = m.find(key);
    if (i == m.end() || i->second.getKind() != msgpack::Type::String)
      return "";
    return i->second.getString().str();
  };
  for (auto &node : it->second.getArray()) {
    if (node.getKind() != msgpack::Type::Map)
      continue;
    auto &k = node.getMap();
    std::string name = getStr(k, ".name");
    for (KernelInfo &info : kernels) {
      if (info.name != name)
        continue;
      info.kernargSegmentSize =
          getInt(k, ".kernarg_segment_size", info.kernargSegmentSize);
      info.kernargSegmentAlign = getInt(k, ".kernarg_segment_align", 8);
      info.maxFlatWorkgroupSize = getInt(k, ".max_flat_workgroup_size", 1024);
      info.wavefrontSize = getInt(k, ".wavefront_size", 64);
      info.sgprCount = getInt(k, ".sgpr_count", 0);
      info.vgprCount = getInt(k, ".vgpr_count", 0);
      info.agprCount = getInt(k, ".agpr_count", 0);
      auto ds = k.find(".uses_dynamic_stack");
      if (ds != k.end() && ds->second.getKind() == msgpack::Type::Boolean)
        info.usesDynamicStack = ds->second.getBool();
      auto args = k.find(".args");
      if (args != k.end() && args->second.getKind() == msgpack::Type::Array) {
        for (auto &a : args->second.getArray()) {
          if (a.getKind() != msgpack::Type::Map)
            continue;
          auto &am = a.getMap();
          KernelArgInfo arg;
          arg.name = getStr(am, ".name");
          arg.valueKind = getStr(am, ".value_kind");
          arg.offset = getInt(am, ".offset", 0);
          arg.size = getInt(am, ".size", 0);
          info.args.push_back(std::move(arg));
        }
      }
    }
  }
  return Error::success();
}

Expected<std::unique_ptr<CodeObject>>
CodeObject::fromBytes(ArrayRef<uint8_t> bytes) {
  StringRef data(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  auto fileOr =
      object::ELF64LEObjectFile::create(MemoryBufferRef(data, "hsaco"));
  if (!fileOr)
    return fileOr.takeError();
  const object::ELF64LEFile &elf = fileOr->getELFFile();
  const auto &header = elf.getHeader();
  if (header.e_machine != ELF::EM_AMDGPU)
    return createStringError("not an AMDGPU code object (e_machine %u)",
                             unsigned(header.e_machine));
  auto co = std::make_unique<CodeObject>();
  unsigned mach = header.e_flags & ELF::EF_AMDGPU_MACH;
  if (mach == ELF::EF_AMDGPU_MACH_AMDGCN_GFX942)
    co->chip = Chip::GFX942;
  else if (mach == ELF::EF_AMDGPU_MACH_AMDGCN_GFX950)
    co->chip = Chip::GFX950;
  else
    return createStringError("unsupported AMDGPU target (e_flags mach 0x%x); "
                             "the emulator models gfx942 and gfx950",
                             mach);

  // Lay the loadable segments out at their virtual addresses.
  auto phdrs = elf.program_headers();
  if (!phdrs)
    return phdrs.takeError();
  uint64_t end = 0;
  for (const auto &ph : *phdrs)
    if (ph.p_type == ELF::PT_LOAD)
      end = std::max<uint64_t>(end, ph.p_vaddr + ph.p_memsz);
  if (end > (1ull << 30))
    return createStringError("code object image too large");
  co->image.assign(end, 0);
  for (const auto &ph : *phdrs) {
    if (ph.p_type != ELF::PT_LOAD)
      continue;
    if (ph.p_offset + ph.p_filesz > bytes.size() || ph.p_filesz > ph.p_memsz)
      return createStringError("malformed PT_LOAD segment");
    std::copy(bytes.begin() + ph.p_offset,
              bytes.begin() + ph.p_offset + ph.p_filesz,
              co->image.begin() + ph.p_vaddr);
  }

  // Kernels: every "<name>.kd" symbol.
  for (const object::ELFSymbolRef &sym : fileOr->symbols()) {
    Expected<StringRef> name = sym.getName();
    Expected<uint64_t> addr = sym.getAddress();
    if (!name || !addr) {
      consumeError(name.takeError());
      consumeError(addr.takeError());
      continue;
    }
    if (!name->ends_with(".kd"))
      continue;
    KernelInfo info;
    info.name = name->drop_back(3).str();
    if (llvm::any_of(co->kernels,
                     [&](const KernelInfo &k) { return k.name == info.name; }))
      continue;
    if (*addr + 64 > co->image.size())
      return createStringError("kernel descriptor '%s' outside the image",
                               name->str().c_str());
    info.descriptorAddress = *addr;
    info.descriptor =
        KernelDescriptor::decode(ArrayRef<uint8_t>(co->image).slice(*addr, 64));
    info.entryAddress = *addr + info.descriptor.kernelCodeEntryByteOffset;
    if (info.entryAddress >= co->image.size())
      return createStringError("kernel '%s' entry outside the image",
                               info.name.c_str());
    info.kernargSegmentSize = info.descriptor.kernargSize;
    co->kernels.push_back(std::move(info));
  }

  // Metadata note (in a PT_NOTE segment).
  for (const auto &ph : *phdrs) {
    if (ph.p_type != ELF::PT_NOTE)
      continue;
    Error err = Error::success();
    for (const auto &note : elf.notes(ph, err)) {
      if (note.getName() == "AMDGPU" &&
          note.getType() == ELF::NT_AMDGPU_METADATA) {
        ArrayRef<uint8_t> desc = note.getDesc(ph.p_align);
        StringRef blob(reinterpret_cast<const char *>(desc.data()),
                       desc.size());
        if (Error e = applyMetadata(blob, co->kernels))
          return std::move(e);
      }
    }
    if (err)
      return std::move(err);
  }
  return co;
}

Expected<std::unique_ptr<CodeObject>> CodeObject::fromFile(StringRef path) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return createStringError(buf.getError(), "cannot read '%s': %s",
                             path.str().c_str(),
                             buf.getError().message().c_str());
  auto co = fromBytes(ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>((*buf)->getBufferStart()),
      (*buf)->getBufferSize()));
  if (!co)
    return createStringError("%s: %s", path.str().c_str(),
                             toString(co.takeError()).c_str());
  return co;
}

std::unique_ptr<CodeObject>
CodeObject::fromRawCode(ArrayRef<uint8_t> code, Chip chip, StringRef name,
                        const KernelDescriptor &descriptor) {
  auto co = std::make_unique<CodeObject>();
  co->chip = chip;
  co->image.assign(code.begin(), code.end());
  KernelInfo info;
  info.name = name.str();
  info.descriptor = descriptor;
  info.entryAddress = 0;
  info.kernargSegmentSize = descriptor.kernargSize;
  co->kernels.push_back(std::move(info));
  return co;
}

Expected<const KernelInfo &> CodeObject::getKernel(StringRef name) const {
  if (name.ends_with(".kd"))
    name = name.drop_back(3);
  for (const KernelInfo &k : kernels)
    if (k.name == name)
      return k;
  std::string known;
  for (const KernelInfo &k : kernels)
    known += (known.empty() ? "" : ", ") + k.name;
  return createStringError("no kernel '%s' in the code object (kernels: %s)",
                           name.str().c_str(), known.c_str());
}

} // namespace mlir::mlafp8::emu
