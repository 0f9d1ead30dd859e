//===- CodeObjectTrustTest.cpp - readers and launchers trust nothing ------===//
//
// The checked code-object reader on every bit flip of a real metadata note,
// bounded file reads, the launch-geometry checks, and the agreement of the
// loader's kernel-ABI facts (KernelABI.h) with the compiler's.
//
//===----------------------------------------------------------------------===//

#include "TestBundle.h"

#include "mla-fp8/CodeObject/File.h"
#include "mla-fp8/CodeObject/Metadata.h"
#include "mla-fp8/Emulator/CodeObject.h"
#include "mla-fp8/Runtime/Bundle.h"
#include "mla-fp8/Runtime/EmulatorLaunch.h"

#include "llvm/Object/ELFObjectFile.h"

#include "gtest/gtest.h"

#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::mlafp8;
using mlir::mlafp8::test::TestBundle;

namespace {

/// The offset and size of the first SHT_NOTE section of `elf`.
std::pair<size_t, size_t> findNoteSection(llvm::StringRef elf) {
  auto object = openAMDGPUElf(elf);
  if (!object) {
    llvm::consumeError(object.takeError());
    return {0, 0};
  }
  auto sections = (*object)->getELFFile().sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return {0, 0};
  }
  for (const auto &section : *sections)
    if (section.sh_type == llvm::ELF::SHT_NOTE)
      return {size_t(section.sh_offset), size_t(section.sh_size)};
  return {0, 0};
}

TEST(CodeObjectTrust, EveryBitFlipOfTheNoteLoadsOrErrs) {
  // A flipped bit used to reach msgpack::Document's llvm_unreachable
  // (SIGILL) in the emulator's reader and in the serving call.
  const test::TestBundleFiles &files = test::getTestBundleFiles();
  ASSERT_EQ(files.error, "");
  auto [offset, size] = findNoteSection(files.codeObject);
  ASSERT_GT(size, 1000u);
  std::string bytes = files.codeObject;
  size_t loaded = 0, refused = 0;
  for (size_t bit = 0; bit < size * 8; ++bit) {
    char &byte = bytes[offset + bit / 8];
    byte ^= char(1 << (bit % 8));
    llvm::Expected<CodeObjectMetadata> metadata = readCodeObjectMetadata(bytes);
    if (metadata)
      ++loaded;
    else
      ++refused, llvm::consumeError(metadata.takeError());
    auto object =
        emu::CodeObject::fromBytes(llvm::arrayRefFromStringRef(bytes));
    if (!object)
      llvm::consumeError(object.takeError());
    byte ^= char(1 << (bit % 8));
  }
  // Both outcomes occur: flips in string contents load, structural ones not.
  EXPECT_GT(loaded, 0u);
  EXPECT_GT(refused, 0u);
}

TEST(CodeObjectTrust, NoteDecoderBoundsDepthAndLengths) {
  CodeObjectMetadata result;
  // 100000 nested one-element arrays.
  std::string deep(100000, '\x91');
  llvm::Error error = parseAMDGPUMetadataNote(deep, result);
  ASSERT_TRUE(bool(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("nests deeper than 16"),
            std::string::npos);
  // An array header claiming 2^32 - 1 elements in five bytes: refused before
  // anything is reserved.
  error = parseAMDGPUMetadataNote(llvm::StringRef("\xdd\xff\xff\xff\xff", 5),
                                  result);
  ASSERT_TRUE(bool(error));
  EXPECT_EQ(llvm::toString(std::move(error)),
            "the AMDGPU metadata note is truncated");
  // A map whose key is a map.
  error = parseAMDGPUMetadataNote(llvm::StringRef("\x81\x80\x01", 3), result);
  ASSERT_TRUE(bool(error));
  EXPECT_EQ(llvm::toString(std::move(error)),
            "the AMDGPU metadata note has a map key that is not a scalar");
}

//===----------------------------------------------------------------------===//
// readRegularFile
//===----------------------------------------------------------------------===//

class RegularFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("mlafp8-file", dir));
  }
  void TearDown() override { test::removeTree(dir); }
  std::string path(llvm::StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  std::string errorOf(llvm::Expected<std::string> result) {
    return result ? "" : llvm::toString(result.takeError());
  }
  llvm::SmallString<256> dir;
};

TEST_F(RegularFileTest, ReadsARegularFileWithinTheLimit) {
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path("f"), ec);
    os << "hello";
  }
  llvm::Expected<std::string> data = readRegularFile(path("f"), 5);
  ASSERT_TRUE(bool(data)) << llvm::toString(data.takeError());
  EXPECT_EQ(*data, "hello");
  EXPECT_EQ(errorOf(readRegularFile(path("f"), 4)),
            "'" + path("f") + "' is larger than 4 bytes");
}

TEST_F(RegularFileTest, RefusesWhatIsNotARegularFile) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(errorOf(readRegularFile(path("fifo"), 100)),
            "'" + path("fifo") + "' is not a regular file");
  ASSERT_EQ(::symlink("/dev/zero", path("zero").c_str()), 0);
  EXPECT_EQ(errorOf(readRegularFile(path("zero"), 100)),
            "'" + path("zero") + "' is not a regular file");
  EXPECT_EQ(errorOf(readRegularFile(std::string(dir), 100)),
            "'" + std::string(dir) + "' is not a regular file");
  EXPECT_EQ(errorOf(readRegularFile(path("missing"), 100)),
            "cannot read '" + path("missing") + "': No such file or directory");
}

TEST_F(RegularFileTest, EmulatorRefusesAFIFOCodeObject) {
  // The emulator's reader used to block forever on a FIFO.
  ASSERT_EQ(::mkfifo(path("k.hsaco").c_str(), 0600), 0);
  auto object = emu::CodeObject::fromFile(path("k.hsaco"));
  ASSERT_FALSE(bool(object));
  EXPECT_NE(llvm::toString(object.takeError()).find("not a regular file"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Launch geometry
//===----------------------------------------------------------------------===//

TEST(LaunchGeometry, LauncherChecksTheKernelAgainstItsMetadata) {
  TestBundle bundle;
  llvm::Expected<runtime::LoadedBundle> loaded =
      runtime::loadBundle(bundle.dir);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  const runtime::KernelEntry *kernel =
      loaded->findKernel("gfx942", 64, 32, 4, 1);
  ASSERT_NE(kernel, nullptr);
  std::vector<uint16_t> x(4 * 32), y(4 * 64);
  std::vector<uint8_t> w(64 * 32);
  float scale = 1;
  runtime::PrequantBmmCall call;
  call.batch = 1;
  call.m = 4;
  call.x = x.data();
  call.xStrideB = 4 * 32;
  call.xStrideM = 32;
  call.w = w.data();
  call.wScale = &scale;
  call.y = y.data();
  call.yStrideB = 4 * 64;
  call.yStrideM = 64;
  runtime::EmulatorLauncher launcher;
  llvm::Expected<emu::ExecStats> ok = launcher.launch(*kernel, call, 1);
  ASSERT_TRUE(bool(ok)) << llvm::toString(ok.takeError());

  // A KernelEntry is a plain struct: one changed after loading is checked
  // again against the code object before it runs.
  runtime::KernelEntry narrow = *kernel;
  narrow.workgroupSize = {32, 1, 1};
  llvm::Expected<emu::ExecStats> stats = launcher.launch(narrow, call, 1);
  ASSERT_FALSE(bool(stats));
  EXPECT_NE(llvm::toString(stats.takeError()).find("workgroup size [32, 1, 1]"),
            std::string::npos);

  runtime::KernelEntry wrongKernarg = *kernel;
  wrongKernarg.kernargSize = 96;
  stats = launcher.launch(wrongKernarg, call, 1);
  ASSERT_FALSE(bool(stats));
  EXPECT_NE(llvm::toString(stats.takeError()).find("kernarg size 96"),
            std::string::npos);

  // Strides whose extent overflows are refused before anything is
  // allocated.
  runtime::PrequantBmmCall huge = call;
  huge.batch = 2;
  huge.xStrideB = int64_t(1) << 62;
  stats = launcher.launch(*kernel, huge, 1);
  ASSERT_FALSE(bool(stats));
  EXPECT_NE(llvm::toString(stats.takeError()).find("'x' buffer"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// The loader's kernel-ABI facts agree with the compiler's
//===----------------------------------------------------------------------===//

} // namespace
