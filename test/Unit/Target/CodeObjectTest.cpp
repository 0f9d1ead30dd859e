//===- CodeObjectTest.cpp - Code-object reader tests on bad input ---------===//

#include "mla-fp8/Target/CodeObject.h"
#include "mla-fp8/Target/Serialization.h"

#include "TestKernels.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include "gtest/gtest.h"

#include <random>

using namespace mlir;
using namespace mlir::mlafp8;
using namespace mlir::mlafp8::test;

namespace {

/// Builds the test kernel's code object for gfx942 once for all tests.
const std::string &getCodeObject() {
  static const std::string hsaco = [] {
    llvm::LLVMContext context;
    llvm::SMDiagnostic diagnostic;
    auto module = llvm::parseAssemblyString(kMfmaKernelIR, diagnostic, context);
    if (!module)
      return std::string();
    auto object = emitObject(*module, *lookupChip("gfx942"));
    if (!object) {
      llvm::consumeError(object.takeError());
      return std::string();
    }
    auto linked = linkCodeObject(*object);
    if (!linked) {
      llvm::consumeError(linked.takeError());
      return std::string();
    }
    return *linked;
  }();
  return hsaco;
}

std::string errorOf(llvm::Error error) {
  return llvm::toString(std::move(error));
}

template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value)
    return "";
  return llvm::toString(value.takeError());
}

std::string toBlob(llvm::msgpack::Document &document) {
  std::string blob;
  document.writeToBlob(blob);
  return blob;
}

} // namespace

TEST(CodeObjectTest, NotAnElf) {
  EXPECT_NE(errorOf(readCodeObjectMetadata("")).find("not an ELF object"),
            std::string::npos);
  EXPECT_NE(errorOf(readCodeObjectMetadata("garbage bytes, no ELF here"))
                .find("not an ELF object"),
            std::string::npos);
  EXPECT_NE(errorOf(countKernelInstructions("\x7f"
                                            "ELF",
                                            "k")),
            "");
}

TEST(CodeObjectTest, NotAMDGPU) {
  std::string hsaco = getCodeObject();
  ASSERT_FALSE(hsaco.empty());
  hsaco[18] = 62; // e_machine = EM_X86_64
  hsaco[19] = 0;
  EXPECT_EQ(errorOf(readCodeObjectMetadata(hsaco)),
            "not an AMDGPU ELF object (e_machine 62)");
}

TEST(CodeObjectTest, UnknownKernel) {
  ASSERT_FALSE(getCodeObject().empty());
  EXPECT_EQ(errorOf(countKernelInstructions(getCodeObject(), "nope")),
            "no function symbol 'nope' in the code object");
  auto metadata = readCodeObjectMetadata(getCodeObject());
  ASSERT_TRUE(bool(metadata)) << errorOf(metadata.takeError());
  EXPECT_EQ(metadata->findKernel("nope"), nullptr);
}

TEST(CodeObjectTest, TruncatedFilesGiveErrors) {
  const std::string &hsaco = getCodeObject();
  ASSERT_FALSE(hsaco.empty());
  for (size_t length = 0; length < hsaco.size(); length += 13) {
    // Copy so that reading past `length` would be caught by sanitizers.
    std::string truncated = hsaco.substr(0, length);
    auto metadata = readCodeObjectMetadata(truncated);
    auto stats = countKernelInstructions(truncated, "mfma_kernel");
    // The section headers sit at the end: no prefix is a valid file.
    EXPECT_FALSE(bool(metadata)) << "length " << length;
    if (!metadata)
      llvm::consumeError(metadata.takeError());
    EXPECT_FALSE(bool(stats)) << "length " << length;
    if (!stats)
      llvm::consumeError(stats.takeError());
  }
}

TEST(CodeObjectTest, CorruptedBytesNeverCrash) {
  const std::string &hsaco = getCodeObject();
  ASSERT_FALSE(hsaco.empty());
  std::mt19937 random(42);
  for (int round = 0; round < 400; ++round) {
    std::string corrupted = hsaco;
    for (int flips = 0; flips < 4; ++flips)
      corrupted[random() % corrupted.size()] = char(random());
    auto metadata = readCodeObjectMetadata(corrupted);
    if (!metadata)
      llvm::consumeError(metadata.takeError());
    auto stats = countKernelInstructions(corrupted, "mfma_kernel");
    if (!stats)
      llvm::consumeError(stats.takeError());
  }
}

TEST(CodeObjectTest, CorruptedMetadataNeverCrashes) {
  const std::string &hsaco = getCodeObject();
  size_t note = hsaco.find("amdhsa.kernels");
  ASSERT_NE(note, std::string::npos);
  // The msgpack payload spans about a kilobyte around its first key.
  size_t begin = note > 64 ? note - 64 : 0;
  size_t span = std::min<size_t>(1536, hsaco.size() - begin);
  std::mt19937 random(1);
  for (int round = 0; round < 2000; ++round) {
    std::string corrupted = hsaco;
    for (int flips = 0; flips < 3; ++flips)
      corrupted[begin + random() % span] = char(random());
    auto metadata = readCodeObjectMetadata(corrupted);
    if (!metadata)
      llvm::consumeError(metadata.takeError());
  }
}

TEST(CodeObjectTest, MetadataNoteErrors) {
  CodeObjectMetadata result;
  EXPECT_NE(errorOf(parseAMDGPUMetadataNote("\xc1", result))
                .find("the AMDGPU metadata note is not valid MessagePack"),
            std::string::npos);
  EXPECT_EQ(errorOf(parseAMDGPUMetadataNote("\x82\xa1k", result)),
            "the AMDGPU metadata note is truncated");
  // {[]: 1}: a container as a map key.
  EXPECT_EQ(
      errorOf(parseAMDGPUMetadataNote(StringRef("\x81\x90\x01", 3), result)),
      "the AMDGPU metadata note has a map key that is not a scalar");

  llvm::msgpack::Document notAMap;
  notAMap.getRoot() = notAMap.getNode(uint64_t(3));
  EXPECT_EQ(errorOf(parseAMDGPUMetadataNote(toBlob(notAMap), result)),
            "the AMDGPU metadata is not a map");

  llvm::msgpack::Document noKernels;
  noKernels.getRoot().getMap(true)["amdhsa.target"] =
      noKernels.getNode("amdgcn-amd-amdhsa--gfx942");
  EXPECT_EQ(errorOf(parseAMDGPUMetadataNote(toBlob(noKernels), result)),
            "the AMDGPU metadata has no 'amdhsa.kernels'");

  llvm::msgpack::Document badKernels;
  badKernels.getRoot().getMap(true)["amdhsa.kernels"] =
      badKernels.getNode("oops");
  EXPECT_EQ(errorOf(parseAMDGPUMetadataNote(toBlob(badKernels), result)),
            "'amdhsa.kernels' is not an array");

  llvm::msgpack::Document badField;
  auto &kernels = badField.getRoot().getMap(true)["amdhsa.kernels"].getArray(
      /*Convert=*/true);
  auto &kernel = kernels[0].getMap(/*Convert=*/true);
  kernel[".name"] = badField.getNode("k");
  kernel[".symbol"] = badField.getNode("k.kd");
  kernel[".vgpr_count"] = badField.getNode("many");
  EXPECT_EQ(errorOf(parseAMDGPUMetadataNote(toBlob(badField), result)),
            "amdhsa.kernels[0]: '.vgpr_count' is not an unsigned integer in "
            "range");

  kernel[".vgpr_count"] = badField.getNode(int64_t(-1));
  EXPECT_NE(errorOf(parseAMDGPUMetadataNote(toBlob(badField), result)), "");

  kernel[".vgpr_count"] = badField.getNode(uint64_t(1) << 40);
  EXPECT_NE(errorOf(parseAMDGPUMetadataNote(toBlob(badField), result)), "");

  kernel[".vgpr_count"] = badField.getNode(uint64_t(12));
  auto &arg = kernel[".args"].getArray(true)[0].getMap(true);
  arg[".offset"] = badField.getNode(uint64_t(0));
  arg[".value_kind"] = badField.getNode("by_value");
  EXPECT_EQ(errorOf(parseAMDGPUMetadataNote(toBlob(badField), result)),
            "amdhsa.kernels[0].args[0] lacks .offset, .size or .value_kind");

  arg[".size"] = badField.getNode(uint64_t(4));
  CodeObjectMetadata good;
  EXPECT_EQ(errorOf(parseAMDGPUMetadataNote(toBlob(badField), good)), "");
  ASSERT_EQ(good.kernels.size(), 1u);
  EXPECT_EQ(good.kernels[0].vgprCount, 12u);
  ASSERT_EQ(good.kernels[0].args.size(), 1u);
  EXPECT_EQ(good.kernels[0].args[0].size, 4u);
  EXPECT_FALSE(good.kernels[0].args[0].name.has_value());

  llvm::msgpack::Document unnamed;
  unnamed.getRoot().getMap(true)["amdhsa.kernels"].getArray(true)[0].getMap(
      true)[".sgpr_count"] = unnamed.getNode(uint64_t(3));
  EXPECT_EQ(errorOf(parseAMDGPUMetadataNote(toBlob(unnamed), result)),
            "amdhsa.kernels[0] lacks .name or .symbol");
}

TEST(CodeObjectTest, ListsDefinedSymbols) {
  auto metadata = readCodeObjectMetadata(getCodeObject());
  ASSERT_TRUE(bool(metadata)) << errorOf(metadata.takeError());
  EXPECT_TRUE(metadata->definesSymbol("mfma_kernel"));
  EXPECT_TRUE(metadata->definesSymbol("mfma_kernel.kd"));
  EXPECT_FALSE(metadata->definesSymbol("mfma_kernel.k"));
  ASSERT_NE(metadata->findKernel("mfma_kernel"), nullptr);
  // The IR asks for no particular workgroup size.
  EXPECT_FALSE(metadata->findKernel("mfma_kernel")->reqdWorkgroupSize);
}

TEST(CodeObjectTest, DeepOrOversizedNotesAreErrors) {
  // Deep nesting and a header that claims 2^32 - 1 elements must neither
  // exhaust the stack nor allocate what the header claims.
  CodeObjectMetadata result;
  EXPECT_EQ(
      errorOf(parseAMDGPUMetadataNote(std::string(100000, '\x91'), result)),
      "the AMDGPU metadata note nests deeper than 16 levels");
  EXPECT_EQ(errorOf(parseAMDGPUMetadataNote(
                StringRef("\x81\xa1k\xdf\xff\xff\xff\xff", 8), result)),
            "the AMDGPU metadata note is truncated");
  // A map key that is a map (msgpack::Document traps on it).
  EXPECT_EQ(
      errorOf(parseAMDGPUMetadataNote(StringRef("\x81\x80\x01", 3), result)),
      "the AMDGPU metadata note has a map key that is not a scalar");
}

// Lookups by name go through the index readCodeObjectMetadata builds (a scan
// per manifest entry made a forged bundle's load quadratic): the first of
// equal names wins, as the scan's did, and kernels added after indexing are
// still found.
TEST(CodeObjectTest, KernelLookupByNameIndex) {
  CodeObjectMetadata metadata;
  for (const char *name : {"b", "a", "c", "a"}) {
    KernelMetadata &kernel = metadata.kernels.emplace_back();
    kernel.name = name;
    kernel.symbol = std::string(name) + ".kd";
  }
  metadata.kernels[3].kernargSegmentSize = 99;
  metadata.indexKernels();
  ASSERT_EQ(metadata.kernelIndex.size(), 4u);
  for (const char *name : {"a", "b", "c"}) {
    const KernelMetadata *found = metadata.findKernel(name);
    ASSERT_NE(found, nullptr) << name;
    EXPECT_EQ(found->name, name);
  }
  EXPECT_EQ(metadata.findKernel("a"), &metadata.kernels[1]);
  EXPECT_EQ(metadata.findKernel("zz"), nullptr);
  EXPECT_EQ(metadata.findKernel(""), nullptr);
  metadata.kernels.emplace_back().name = "d";
  ASSERT_NE(metadata.findKernel("d"), nullptr);
  EXPECT_EQ(metadata.findKernel("d"), &metadata.kernels[4]);

  // A real code object comes indexed.
  auto read = readCodeObjectMetadata(getCodeObject());
  ASSERT_TRUE(bool(read)) << errorOf(read.takeError());
  EXPECT_EQ(read->kernelIndex.size(), read->kernels.size());
  for (const KernelMetadata &kernel : read->kernels)
    EXPECT_EQ(read->findKernel(kernel.name), &kernel);
}
