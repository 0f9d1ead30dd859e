//===- Metadata.cpp - the checked AMDGPU code-object reader ---------------===//

#include "mla-fp8/CodeObject/Metadata.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackReader.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>

using namespace mlir::mlafp8;
using llvm::StringRef;
using llvm::Twine;
using MsgPackType = llvm::msgpack::Type;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

const KernelMetadata *
CodeObjectMetadata::findKernel(llvm::StringRef name) const {
  if (kernelIndex.size() == kernels.size()) {
    auto it = llvm::partition_point(kernelIndex, [&](const auto &entry) {
      return StringRef(entry.first) < name;
    });
    if (it == kernelIndex.end() || it->first != name)
      return nullptr;
    // The index is of these kernels unless they were changed since.
    if (it->second < kernels.size() && kernels[it->second].name == name)
      return &kernels[it->second];
  }
  for (const KernelMetadata &kernel : kernels)
    if (kernel.name == name)
      return &kernel;
  return nullptr;
}

void CodeObjectMetadata::indexKernels() {
  kernelIndex.clear();
  kernelIndex.reserve(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i)
    kernelIndex.emplace_back(kernels[i].name, i);
  llvm::stable_sort(kernelIndex, [](const auto &a, const auto &b) {
    return a.first < b.first;
  });
}

bool CodeObjectMetadata::definesSymbol(llvm::StringRef name) const {
  return std::binary_search(definedSymbols.begin(), definedSymbols.end(),
                            name.str());
}

//===----------------------------------------------------------------------===//
// MessagePack decoding
//===----------------------------------------------------------------------===//

namespace {
/// One decoded MessagePack value. Strings refer to the blob.
struct Node {
  MsgPackType kind = MsgPackType::Nil;
  uint64_t uint = 0;
  int64_t sint = 0;
  bool boolean = false;
  StringRef string;
  /// Arrays: the elements; maps: keys and values alternately.
  std::vector<Node> items;
};

/// Decodes a blob into a Node tree. Depth is bounded by kMaxMetadataDepth and
/// the node count by the blob's size (every node takes at least one byte),
/// so neither the stack nor the heap grows with what a header claims.
class Decoder {
public:
  explicit Decoder(StringRef blob) : reader(blob), budget(blob.size()) {}

  llvm::Error decode(Node &node, unsigned depth) {
    llvm::msgpack::Object object;
    llvm::Expected<bool> read = reader.read(object);
    if (!read)
      return makeError("the AMDGPU metadata note is not valid MessagePack: " +
                       llvm::toString(read.takeError()));
    if (!*read)
      return makeError("the AMDGPU metadata note is truncated");
    if (budget == 0)
      return makeError("the AMDGPU metadata note is truncated");
    --budget;
    node.kind = object.Kind;
    switch (object.Kind) {
    case MsgPackType::UInt:
      node.uint = object.UInt;
      return llvm::Error::success();
    case MsgPackType::Int:
      node.sint = object.Int;
      return llvm::Error::success();
    case MsgPackType::Boolean:
      node.boolean = object.Bool;
      return llvm::Error::success();
    case MsgPackType::String:
    case MsgPackType::Binary:
      node.string = object.Raw;
      return llvm::Error::success();
    case MsgPackType::Array:
    case MsgPackType::Map:
      break;
    default:
      return llvm::Error::success();
    }
    if (depth >= kMaxMetadataDepth)
      return makeError("the AMDGPU metadata note nests deeper than " +
                       Twine(kMaxMetadataDepth) + " levels");
    bool isMap = object.Kind == MsgPackType::Map;
    uint64_t count = object.Length;
    // Each item needs a byte: a longer container is truncated, and saying so
    // before reserving anything keeps a forged length from allocating.
    if (count > budget || (isMap && 2 * count > budget))
      return makeError("the AMDGPU metadata note is truncated");
    if (isMap)
      count *= 2;
    node.items.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      if (llvm::Error error = decode(node.items[i], depth + 1))
        return error;
      MsgPackType kind = node.items[i].kind;
      if (isMap && i % 2 == 0 &&
          (kind == MsgPackType::Array || kind == MsgPackType::Map ||
           kind == MsgPackType::Extension))
        return makeError(
            "the AMDGPU metadata note has a map key that is not a scalar");
    }
    return llvm::Error::success();
  }

private:
  llvm::msgpack::Reader reader;
  uint64_t budget;
};

/// Reads the msgpack node as an unsigned integer; producers encode small
/// numbers as either signed or unsigned.
std::optional<uint64_t> readUInt(const Node &node) {
  if (node.kind == MsgPackType::UInt)
    return node.uint;
  if (node.kind == MsgPackType::Int && node.sint >= 0)
    return static_cast<uint64_t>(node.sint);
  return std::nullopt;
}

/// Reads the fields of one msgpack map, reporting errors with context.
class MapReader {
public:
  MapReader(const Node &map, std::string context)
      : map(map), context(std::move(context)) {}

  /// Calls `fn(key, value)` for every entry whose key is a string.
  template <typename Fn> llvm::Error forEach(Fn fn) {
    if (map.kind != MsgPackType::Map)
      return makeError(context + " is not a map");
    for (size_t i = 0; i + 1 < map.items.size(); i += 2) {
      const Node &key = map.items[i];
      if (key.kind != MsgPackType::String)
        continue;
      if (llvm::Error error = fn(key.string, map.items[i + 1]))
        return error;
    }
    return llvm::Error::success();
  }

  template <typename T>
  llvm::Error readUnsigned(StringRef key, const Node &value, T &out) {
    std::optional<uint64_t> number = readUInt(value);
    if (!number || *number > std::numeric_limits<T>::max())
      return makeError(context + ": '" + key +
                       "' is not an unsigned integer in range");
    out = static_cast<T>(*number);
    return llvm::Error::success();
  }

  llvm::Error readString(StringRef key, const Node &value, std::string &out) {
    if (value.kind != MsgPackType::String)
      return makeError(context + ": '" + key + "' is not a string");
    out = value.string.str();
    return llvm::Error::success();
  }

  llvm::Error readBool(StringRef key, const Node &value, bool &out) {
    if (value.kind != MsgPackType::Boolean)
      return makeError(context + ": '" + key + "' is not a boolean");
    out = value.boolean;
    return llvm::Error::success();
  }

  const std::string &getContext() const { return context; }

private:
  const Node &map;
  std::string context;
};
} // namespace

static llvm::Expected<KernelArgMetadata> parseArg(const Node &node,
                                                  const Twine &context) {
  KernelArgMetadata arg;
  MapReader reader(node, context.str());
  bool hasOffset = false, hasSize = false;
  llvm::Error error =
      reader.forEach([&](StringRef key, const Node &value) -> llvm::Error {
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

static llvm::Expected<KernelMetadata> parseKernel(const Node &node,
                                                  size_t index) {
  KernelMetadata kernel;
  MapReader reader(node, "amdhsa.kernels[" + std::to_string(index) + "]");
  llvm::Error error = reader.forEach([&](StringRef key,
                                         const Node &value) -> llvm::Error {
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
    if (key == ".reqd_workgroup_size") {
      if (value.kind != MsgPackType::Array || value.items.size() != 3)
        return makeError(reader.getContext() +
                         ": '.reqd_workgroup_size' is not three integers");
      std::array<uint32_t, 3> size;
      for (size_t i = 0; i < 3; ++i)
        if (llvm::Error e = reader.readUnsigned(key, value.items[i], size[i]))
          return e;
      kernel.reqdWorkgroupSize = size;
      return llvm::Error::success();
    }
    if (key == ".args") {
      if (value.kind != MsgPackType::Array)
        return makeError(reader.getContext() + ": '.args' is not an array");
      for (auto [argIndex, argNode] : llvm::enumerate(value.items)) {
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

llvm::Error mlir::mlafp8::parseAMDGPUMetadataNote(StringRef blob,
                                                  CodeObjectMetadata &result) {
  Node document;
  if (llvm::Error error = Decoder(blob).decode(document, 0))
    return error;
  MapReader root(document, "the AMDGPU metadata");
  bool hasKernels = false;
  llvm::Error error =
      root.forEach([&](StringRef key, const Node &value) -> llvm::Error {
        if (key == "amdhsa.target")
          return root.readString(key, value, result.targetID);
        if (key == "amdhsa.version") {
          if (value.kind != MsgPackType::Array || value.items.size() != 2)
            return makeError("'amdhsa.version' is not a pair");
          if (llvm::Error e = root.readUnsigned(key, value.items[0],
                                                result.metadataVersionMajor))
            return e;
          return root.readUnsigned(key, value.items[1],
                                   result.metadataVersionMinor);
        }
        if (key == "amdhsa.kernels") {
          if (hasKernels)
            return makeError("'amdhsa.kernels' appears twice");
          hasKernels = true;
          if (value.kind != MsgPackType::Array)
            return makeError("'amdhsa.kernels' is not an array");
          for (auto [index, node] : llvm::enumerate(value.items)) {
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

//===----------------------------------------------------------------------===//
// ELF
//===----------------------------------------------------------------------===//

llvm::Expected<std::unique_ptr<llvm::object::ELF64LEObjectFile>>
mlir::mlafp8::openAMDGPUElf(StringRef bytes) {
  // Other object formats (wasm, Mach-O, COFF) are not ELF either, whatever
  // LLVM's reader would make of them.
  static constexpr char kElfMagic[] = {0x7f, 'E', 'L', 'F'};
  if (bytes.size() < 18 || !bytes.starts_with(StringRef(kElfMagic, 4)))
    return makeError("not an ELF object: The file was not recognized as a "
                     "valid object file");
  llvm::MemoryBufferRef buffer(bytes, "code object");
  auto binary = llvm::object::ObjectFile::createObjectFile(buffer);
  if (!binary)
    return makeError("not an ELF object: " +
                     llvm::toString(binary.takeError()));
  auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(binary->get());
  if (!elf)
    return makeError("not a 64-bit little-endian ELF object");
  unsigned machine = elf->getELFFile().getHeader().e_machine;
  if (machine != llvm::ELF::EM_AMDGPU)
    return makeError("not an AMDGPU ELF object (e_machine " + Twine(machine) +
                     ")");
  binary->release();
  return std::unique_ptr<llvm::object::ELF64LEObjectFile>(elf);
}

llvm::Error mlir::mlafp8::forEachDefinedSymbol(
    const llvm::object::ELF64LEFile &file,
    llvm::function_ref<bool(const llvm::object::ELF64LE::Sym &, StringRef)>
        visit,
    std::optional<size_t> maxNameBytes) {
  auto sections = file.sections();
  if (!sections)
    return makeError("malformed section table: " +
                     llvm::toString(sections.takeError()));
  const llvm::object::ELF64LE::Shdr *table = nullptr;
  for (const auto &section : *sections) {
    if (section.sh_type == llvm::ELF::SHT_SYMTAB) {
      table = &section;
      break;
    }
    if (section.sh_type == llvm::ELF::SHT_DYNSYM && !table)
      table = &section;
  }
  if (!table)
    return llvm::Error::success();
  auto symbols = file.symbols(table);
  if (!symbols)
    return makeError("malformed symbol table: " +
                     llvm::toString(symbols.takeError()));
  auto names = file.getStringTableForSymtab(*table, *sections);
  if (!names)
    return makeError("malformed symbol names: " +
                     llvm::toString(names.takeError()));
  for (const auto &symbol : *symbols) {
    if (symbol.st_shndx == llvm::ELF::SHN_UNDEF)
      continue;
    if (maxNameBytes) {
      // getName's check, then a bounded search for the name's end.
      uint32_t offset = symbol.st_name;
      if (offset >= names->size())
        return makeError(llvm::formatv("malformed symbol name: st_name "
                                       "(0x{0:x}) is past the end of the "
                                       "string table of size 0x{1:x}",
                                       offset, names->size()));
      StringRef rest = names->drop_front(offset);
      size_t end = rest.take_front(*maxNameBytes + 1).find('\0');
      if (end == StringRef::npos)
        continue;
      if (!visit(symbol, rest.take_front(end)))
        break;
      continue;
    }
    auto name = symbol.getName(*names);
    if (!name)
      return makeError("malformed symbol name: " +
                       llvm::toString(name.takeError()));
    if (!visit(symbol, *name))
      break;
  }
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

  // The ELFFile-level accessors check every table against the file size, so
  // a corrupted sh_size cannot make a walk run past the bytes.
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
      if (found) {
        llvm::consumeError(std::move(noteError));
        return makeError("more than one AMDGPU metadata note");
      }
      found = true;
      StringRef blob = note.getDescAsStringRef(section.sh_addralign);
      if (blob.size() > kMaxMetadataNoteBytes) {
        llvm::consumeError(std::move(noteError));
        return makeError(llvm::formatv("the AMDGPU metadata note is {0} "
                                       "bytes, more than the limit of {1}",
                                       blob.size(), kMaxMetadataNoteBytes));
      }
      if (llvm::Error error = parseAMDGPUMetadataNote(blob, result)) {
        llvm::consumeError(std::move(noteError));
        return std::move(error);
      }
    }
    if (noteError)
      return makeError("malformed note section: " +
                       llvm::toString(std::move(noteError)));
  }
  if (!found)
    return makeError("no NT_AMDGPU_METADATA note");

  // Only the kernels' own names are ever looked up (definesSymbol), so
  // only they are kept, and no name is read further than the longest.
  llvm::StringSet<> wanted;
  size_t longest = 0;
  for (const KernelMetadata &kernel : result.kernels)
    for (StringRef name : {StringRef(kernel.name), StringRef(kernel.symbol)}) {
      wanted.insert(name);
      longest = std::max(longest, name.size());
    }
  if (llvm::Error error = forEachDefinedSymbol(
          file,
          [&](const llvm::object::ELF64LE::Sym &, StringRef name) {
            if (wanted.contains(name))
              result.definedSymbols.push_back(name.str());
            return true;
          },
          longest))
    return error;
  llvm::sort(result.definedSymbols);
  result.definedSymbols.erase(llvm::unique(result.definedSymbols),
                              result.definedSymbols.end());
  result.indexKernels();

  // "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" -> "gfx942".
  StringRef processor = StringRef(result.targetID).rsplit("--").second;
  result.processor = processor.split(':').first.str();
  return result;
}
