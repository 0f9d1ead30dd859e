//===- BundleTest.cpp - atomic bundle writes ------------------------------===//

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/Publish.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

using namespace mlir::mlafp8;

namespace {

class AtomicDirectory : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("mlafp8-bundle", root));
    dir = root;
    llvm::sys::path::append(dir, "bundle");
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root); }

  std::string read(llvm::StringRef name) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    auto buffer = llvm::MemoryBuffer::getFile(path);
    return buffer ? (*buffer)->getBuffer().str() : "<missing>";
  }
  /// Entries of the root directory, to prove no staging directory is left.
  std::vector<std::string> rootEntries() {
    std::vector<std::string> names;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(root, ec), end; it != end && !ec;
         it.increment(ec))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    return names;
  }

  llvm::SmallString<256> root, dir;
};

/// The files of a (tiny) bundle: only a directory like this, or an empty or
/// missing one, may be replaced.
std::vector<std::pair<std::string, std::string>>
bundleFiles(llvm::StringRef payload) {
  return {{"manifest.json",
           R"({"compiler": "mla-fp8", "chips": [{"code_object": "a.hsaco"}]})"},
          {"a.hsaco", payload.str()}};
}

TEST_F(AtomicDirectory, WritesAndReplaces) {
  auto files = bundleFiles("one");
  files.emplace_back("mla_fp8_kernels.h", "two");
  ASSERT_FALSE(static_cast<bool>(writeDirectoryAtomically(dir, files)));
  EXPECT_EQ(read("a.hsaco"), "one");
  EXPECT_EQ(read("mla_fp8_kernels.h"), "two");
  ASSERT_FALSE(
      static_cast<bool>(writeDirectoryAtomically(dir, bundleFiles("three"))));
  EXPECT_EQ(read("a.hsaco"), "three");
  // A replaced bundle does not keep files of the old one.
  EXPECT_EQ(read("mla_fp8_kernels.h"), "<missing>");
  EXPECT_EQ(rootEntries(), std::vector<std::string>{"bundle"});
}

TEST_F(AtomicDirectory, FailureKeepsThePreviousBundle) {
  ASSERT_FALSE(
      static_cast<bool>(writeDirectoryAtomically(dir, bundleFiles("old"))));
  // A file name with a directory in it is refused.
  auto files = bundleFiles("new");
  files.emplace_back("missing/b.txt", "new");
  llvm::Error err = writeDirectoryAtomically(dir, files);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("is not a plain file name"),
            std::string::npos);
  EXPECT_EQ(read("a.hsaco"), "old");
  EXPECT_EQ(rootEntries(), std::vector<std::string>{"bundle"});
}

TEST_F(AtomicDirectory, RefusesToReplaceAFile) {
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(dir, ec);
    os << "not a bundle";
  }
  llvm::Error err = writeDirectoryAtomically(dir, bundleFiles("x"));
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("is not a directory"),
            std::string::npos);
  auto buffer = llvm::MemoryBuffer::getFile(dir);
  ASSERT_TRUE(static_cast<bool>(buffer));
  EXPECT_EQ((*buffer)->getBuffer(), "not a bundle");
}

/// A check that refuses the staged bundle (what --verify does on a mismatch)
/// keeps the previous one, and sees every file before it is published.
TEST_F(AtomicDirectory, RefusedCheckKeepsThePreviousBundle) {
  ASSERT_FALSE(
      static_cast<bool>(writeDirectoryAtomically(dir, bundleFiles("old"))));
  std::string seen;
  llvm::Error err = writeDirectoryAtomically(
      dir, bundleFiles("new"), [&](llvm::StringRef staged) -> llvm::Error {
        llvm::SmallString<256> path(staged);
        llvm::sys::path::append(path, "a.hsaco");
        auto buffer = llvm::MemoryBuffer::getFile(path);
        seen = buffer ? (*buffer)->getBuffer().str() : "<missing>";
        return llvm::createStringError("verification failed");
      });
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)), "verification failed");
  EXPECT_EQ(seen, "new");
  EXPECT_EQ(read("a.hsaco"), "old");
  EXPECT_EQ(rootEntries(), std::vector<std::string>{"bundle"});
}

TEST(Sha256, KnownVector) {
  EXPECT_EQ(sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

} // namespace
