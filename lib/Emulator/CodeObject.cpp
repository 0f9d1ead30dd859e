//===- CodeObject.cpp - HSACO loading -------------------------------------===//

#include "mla-fp8/Emulator/CodeObject.h"

#include "mla-fp8/CodeObject/File.h"
#include "mla-fp8/CodeObject/Metadata.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"

#include <limits>

using namespace llvm;

namespace mlir::mlafp8::emu {

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

/// The largest kernarg segment a kernel may declare: the dispatcher allocates
/// it, so a forged size must not reach the allocator.
static constexpr uint64_t kMaxKernargSegmentBytes = 65536;

/// Fills the kernels' metadata fields from what the checked reader found in
/// the NT_AMDGPU_METADATA note.
static Error applyMetadata(const CodeObjectMetadata &metadata,
                           std::vector<KernelInfo> &kernels) {
  for (const KernelMetadata &k : metadata.kernels) {
    for (KernelInfo &info : kernels) {
      if (info.name != k.name)
        continue;
      if (k.kernargSegmentSize > kMaxKernargSegmentBytes ||
          k.kernargSegmentAlign > kMaxKernargSegmentBytes)
        return createStringError("kernel '%s': kernarg segment out of range",
                                 k.name.c_str());
      if (k.kernargSegmentSize)
        info.kernargSegmentSize = uint32_t(k.kernargSegmentSize);
      info.kernargSegmentAlign =
          k.kernargSegmentAlign ? uint32_t(k.kernargSegmentAlign) : 8;
      info.maxFlatWorkgroupSize =
          k.maxFlatWorkgroupSize ? k.maxFlatWorkgroupSize : 1024;
      info.reqdWorkgroupSize = k.reqdWorkgroupSize;
      info.wavefrontSize = k.wavefrontSize ? k.wavefrontSize : 64;
      info.sgprCount = k.sgprCount;
      info.vgprCount = k.vgprCount;
      info.agprCount = k.agprCount;
      info.usesDynamicStack = k.usesDynamicStack;
      info.args.clear();
      for (const KernelArgMetadata &a : k.args) {
        if (a.offset > std::numeric_limits<uint32_t>::max() ||
            a.size > std::numeric_limits<uint32_t>::max())
          return createStringError("kernel '%s': argument out of range",
                                   k.name.c_str());
        KernelArgInfo arg;
        arg.name = a.name.value_or("");
        arg.valueKind = a.valueKind;
        arg.offset = uint32_t(a.offset);
        arg.size = uint32_t(a.size);
        info.args.push_back(std::move(arg));
      }
    }
  }
  return Error::success();
}

Expected<std::unique_ptr<CodeObject>>
CodeObject::fromBytes(ArrayRef<uint8_t> bytes) {
  StringRef data(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  auto fileOr = openAMDGPUElf(data);
  if (!fileOr)
    return fileOr.takeError();
  const object::ELF64LEFile &elf = (*fileOr)->getELFFile();
  auto co = std::make_unique<CodeObject>();
  unsigned mach = elf.getHeader().e_flags & ELF::EF_AMDGPU_MACH;
  co->chip = lookupChipByElfMach(mach);
  if (!co->chip) {
    std::string supported;
    for (const ChipInfo &chip : getSupportedChips())
      supported += (supported.empty() ? "" : ", ") + chip.name.str();
    return createStringError("unsupported AMDGPU target (e_flags mach 0x%x); "
                             "the emulator models %s",
                             mach, supported.c_str());
  }

  // Lay the loadable segments out at their virtual addresses.
  auto phdrs = elf.program_headers();
  if (!phdrs)
    return phdrs.takeError();
  // Every bound is checked before it is added to, so a forged header can
  // neither wrap an address nor size the image past kMaxImageBytes.
  constexpr uint64_t kMaxImageBytes = uint64_t(256) << 20;
  uint64_t end = 0;
  for (const auto &ph : *phdrs) {
    if (ph.p_type != ELF::PT_LOAD)
      continue;
    if (ph.p_vaddr > kMaxImageBytes || ph.p_memsz > kMaxImageBytes - ph.p_vaddr)
      return createStringError("code object image too large");
    if (ph.p_filesz > ph.p_memsz || ph.p_offset > bytes.size() ||
        ph.p_filesz > bytes.size() - ph.p_offset)
      return createStringError("malformed PT_LOAD segment");
    end = std::max<uint64_t>(end, ph.p_vaddr + ph.p_memsz);
  }
  co->image.assign(end, 0);
  for (const auto &ph : *phdrs) {
    if (ph.p_type != ELF::PT_LOAD)
      continue;
    std::copy(bytes.begin() + ph.p_offset,
              bytes.begin() + ph.p_offset + ph.p_filesz,
              co->image.begin() + ph.p_vaddr);
  }

  // Kernels: every "<name>.kd" symbol, in symbol-table order.
  std::vector<std::pair<StringRef, uint64_t>> descriptors;
  if (Error error = forEachDefinedSymbol(
          elf, [&](const object::ELF64LE::Sym &symbol, StringRef name) {
            if (name.ends_with(".kd"))
              descriptors.emplace_back(name, symbol.st_value);
            return true;
          }))
    return std::move(error);
  llvm::StringSet<> seen;
  for (const auto &[kdName, addr] : descriptors) {
    KernelInfo info;
    info.name = kdName.drop_back(3).str();
    if (!seen.insert(info.name).second)
      continue;
    if (addr > co->image.size() || co->image.size() - addr < 64)
      return createStringError("kernel descriptor '%s' outside the image",
                               kdName.str().c_str());
    info.descriptorAddress = addr;
    info.descriptor =
        KernelDescriptor::decode(ArrayRef<uint8_t>(co->image).slice(addr, 64));
    int64_t entryOffset = info.descriptor.kernelCodeEntryByteOffset;
    if (entryOffset < -int64_t(addr) ||
        (entryOffset > 0 && uint64_t(entryOffset) >= co->image.size() - addr))
      return createStringError("kernel '%s' entry outside the image",
                               info.name.c_str());
    info.entryAddress = addr + entryOffset;
    if (info.entryAddress >= co->image.size())
      return createStringError("kernel '%s' entry outside the image",
                               info.name.c_str());
    if (info.descriptor.kernargSize > kMaxKernargSegmentBytes)
      return createStringError("kernel '%s' declares a kernarg segment of %u "
                               "bytes, more than %u",
                               info.name.c_str(), info.descriptor.kernargSize,
                               unsigned(kMaxKernargSegmentBytes));
    info.kernargSegmentSize = info.descriptor.kernargSize;
    co->kernels.push_back(std::move(info));
  }

  Expected<CodeObjectMetadata> metadata = readCodeObjectMetadata(data);
  if (!metadata)
    return metadata.takeError();
  if (Error e = applyMetadata(*metadata, co->kernels))
    return std::move(e);
  return co;
}

Expected<std::unique_ptr<CodeObject>> CodeObject::fromFile(StringRef path) {
  Expected<std::string> buf = readRegularFile(path, kMaxCodeObjectBytes);
  if (!buf)
    return buf.takeError();
  auto co = fromBytes(arrayRefFromStringRef(*buf));
  if (!co)
    return createStringError("%s: %s", path.str().c_str(),
                             toString(co.takeError()).c_str());
  return co;
}

std::unique_ptr<CodeObject>
CodeObject::fromRawCode(ArrayRef<uint8_t> code, const ChipInfo &chip,
                        StringRef name, const KernelDescriptor &descriptor) {
  auto co = std::make_unique<CodeObject>();
  co->chip = &chip;
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
