//===- WriteErrorsTest.cpp - a full disk under the generator --------------===//

#include "mla-fp8/AOT/Bundle.h"

#include "../FullTmpfs.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

#include <unistd.h>

using namespace mlir::mlafp8;

namespace {

BundleOptions smallBundle(const std::string &outputDir) {
  BundleOptions options;
  options.kernels.dims = lookupModelPreset("deepseek-r1")->dims;
  options.kernels.chips = {"gfx942"};
  options.kernels.tp = {8};
  options.kernels.maxM = 16;
  options.outputDir = outputDir;
  options.jobs = 1;
  return options;
}

/// The bundle's own file system is full: an error naming the file, and
/// nothing left behind.
TEST(AOTWriteErrors, FullOutputFileSystem) {
  test::FullTmpfs full("256k");
  if (!full.mounted)
    GTEST_SKIP() << full.skipReason;
  llvm::Expected<BundleResult> result =
      generateBundle(smallBundle(full.dir + "/bundle"));
  ASSERT_FALSE(static_cast<bool>(result));
  std::string message = llvm::toString(result.takeError());
  EXPECT_NE(message.find("No space left on device"), std::string::npos)
      << message;
  std::vector<std::string> names;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(full.dir, ec), end;
       it != end && !ec; it.increment(ec))
    names.push_back(llvm::sys::path::filename(it->path()).str());
  EXPECT_EQ(names, std::vector<std::string>{"filler"});
}

/// The cache's file system is full: the bundle is still generated, with one
/// warning.
TEST(AOTWriteErrors, FullCacheFileSystem) {
  test::FullTmpfs full("256k");
  if (!full.mounted)
    GTEST_SKIP() << full.skipReason;
  llvm::SmallString<128> out;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("mla-fp8-out", out));
  BundleOptions options = smallBundle(std::string(out) + "/bundle");
  options.cacheDir = full.dir + "/cache";
  std::vector<std::string> warnings;
  options.onWarning = [&](llvm::StringRef w) { warnings.push_back(w.str()); };
  llvm::Expected<BundleResult> result = generateBundle(options);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cannot write the cache in"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("No space left on device"), std::string::npos)
      << warnings[0];
  EXPECT_TRUE(llvm::sys::fs::exists(out + "/bundle/gfx942.hsaco"));
  llvm::sys::fs::remove_directories(out);
}

} // namespace
