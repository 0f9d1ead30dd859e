//===- TestBundle.h - a real bundle for the loader tests --------*- C++ -*-===//
//
// The loader checks every manifest field against the code object's metadata,
// so its tests need real code objects: this compiles a small bundle once per
// test process (one chip, two projections, three M ranges each) with the AOT
// library, without ../shared, and lets each test copy and damage it.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_TEST_UNIT_RUNTIME_TESTBUNDLE_H
#define MLA_FP8_TEST_UNIT_RUNTIME_TESTBUNDLE_H

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/KernelSet.h"
#include "mla-fp8/Runtime/KernelTable.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <ftw.h>
#include <string>

namespace mlir::mlafp8::test {

inline std::string sha256Of(llvm::StringRef data) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(data)),
                     /*LowerCase=*/true);
}

/// The files of the test bundle, as the AOT library generates them.
struct TestBundleFiles {
  std::string error;
  std::string manifest;
  std::string codeObject;
};

/// Compiles the gfx942 kernels of a small model: k_up (N 64, K 32) and v_up
/// (N 32, K 64) with 16 heads at TP 1, ranges planned up to M = 64 (1024
/// rows: the heuristic's ranges 1-256, 257-512 and 513 up).
inline const TestBundleFiles &getTestBundleFiles() {
  static const TestBundleFiles files = [] {
    TestBundleFiles result;
    BundleOptions options;
    // CTest runs each test in its own process: the compilation cache in the
    // build tree compiles the kernels once for all of them.
    options.cacheDir = MLAFP8_TEST_BUNDLE_CACHE;
    KernelSetOptions &ks = options.kernels;
    ks.model = "custom";
    ks.dims = {/*heads=*/16, /*kvLoraRank=*/64, /*qkNopeHeadDim=*/32,
               /*vHeadDim=*/32};
    ks.tp = {1};
    ks.tpExplicit = true;
    ks.maxM = 64;
    ks.chips = {"gfx942"};
    llvm::Expected<std::vector<KernelGroupSpec>> groups = buildKernelSet(ks);
    if (!groups) {
      result.error = llvm::toString(groups.takeError());
      return result;
    }
    llvm::Expected<ChipBundle> chip =
        buildChipBundle(*groups, "gfx942", options, nullptr, nullptr);
    if (!chip) {
      result.error = llvm::toString(chip.takeError());
      return result;
    }
    result.codeObject = chip->codeObject;
    result.manifest = renderManifest(options, {*chip});
    return result;
  }();
  return files;
}

/// A test bundle in a fresh directory, removed at the end of the test.
/// Removes `dir` and everything below it, FIFOs included (which
/// llvm::sys::fs::remove_directories leaves, so the tests that make them
/// would leak their directories).
inline void removeTree(llvm::StringRef dir) {
  ::nftw(
      dir.str().c_str(),
      [](const char *path, const struct stat *, int, struct FTW *) {
        ::remove(path);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

class TestBundle {
public:
  TestBundle() {
    const TestBundleFiles &files = getTestBundleFiles();
    EXPECT_EQ(files.error, "");
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("mlafp8-bundle", dir));
    llvm::Expected<llvm::json::Value> parsed =
        llvm::json::parse(files.manifest);
    EXPECT_TRUE(bool(parsed));
    if (!parsed) {
      llvm::consumeError(parsed.takeError());
      return;
    }
    manifest = std::move(*parsed);
    // The loader's schema, whichever the writer of this build emits.
    (*manifest.getAsObject())["schema_version"] =
        runtime::kSupportedManifestSchemaVersion;
    writeFile("gfx942.hsaco", files.codeObject);
    writeManifest();
  }
  ~TestBundle() { removeTree(dir); }

  std::string path(llvm::StringRef name) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }

  void writeFile(llvm::StringRef name, llvm::StringRef contents) const {
    std::error_code ec;
    llvm::raw_fd_ostream os(path(name), ec);
    ASSERT_FALSE(ec) << ec.message();
    os << contents;
  }

  /// Writes `text` as manifest.json and, when `digest`, its manifest.sha256.
  void writeManifestText(llvm::StringRef text, bool digest = true) const {
    writeFile("manifest.json", text);
    if (digest)
      writeFile("manifest.sha256", sha256Of(text) + "  manifest.json\n");
  }
  /// Writes `manifest` (edited by the test) as manifest.json.
  void writeManifest(bool digest = true) const {
    writeManifestText(llvm::formatv("{0:2}", manifest).str(), digest);
  }

  llvm::json::Object &root() { return *manifest.getAsObject(); }
  llvm::json::Object &chip(size_t i = 0) {
    return *(*root().getArray("chips"))[i].getAsObject();
  }
  llvm::json::Array &kernels(size_t chipIndex = 0) {
    return *chip(chipIndex).getArray("kernels");
  }
  llvm::json::Object &kernel(size_t i, size_t chipIndex = 0) {
    return *kernels(chipIndex)[i].getAsObject();
  }

  llvm::SmallString<256> dir;
  llvm::json::Value manifest = nullptr;
};

} // namespace mlir::mlafp8::test

#endif // MLA_FP8_TEST_UNIT_RUNTIME_TESTBUNDLE_H
