//===- BundleLoaderTest.cpp - the run-time bundle loader ------------------===//
//
// Every test writes a small synthetic bundle (fake code object bytes with their
// real SHA-256) so that the loader is tested without the kernel generator.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Runtime/Bundle.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <chrono>

using namespace mlir::mlafp8::runtime;

namespace {

std::string sha256(llvm::StringRef data) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(data)),
                     /*LowerCase=*/true);
}

/// One kernel entry of the synthetic manifest.
std::string kernelJSON(llvm::StringRef symbol, int n, int k, int minM, int maxM,
                       int blockM, llvm::StringRef outType = "bf16",
                       llvm::StringRef wScale = "per_tensor") {
  return llvm::formatv(
             R"json({{"symbol": "{0}", "projection": "k_up", "n": {1}, "k": {2},
  "group_size": 128, "batches": [16], "tp": [8], "in_type": "bf16",
  "fp8_type": "f8E4M3FNUZ", "out_type": "{5}", "w_scale": "{6}",
  "min_m": {3}, "max_m": {4},
  "tile": {{"min_m": {3}, "max_m": {4}, "block_m": {7}, "block_n": 64,
           "waves": 4, "mfma": "16x16x32", "split_k": 1, "stages": 1,
           "occupancy": 2},
  "workgroup_size": [256, 1, 1],
  "grid": {{"x": 8, "y": "ceil(M/{7})", "z": "B"},
  "lds_bytes": 4096, "scratch_bytes": 0, "vgprs": 64, "agprs": 0,
  "sgprs": 32, "vgpr_spills": 0, "sgpr_spills": 0, "instructions": 100,
  "mfma_instructions": 8, "kernarg_size": 336, "kernarg_align": 8,
  "args": [
    {{"offset": 0, "size": 8, "kind": "global_buffer", "meaning": "x: acts"},
    {{"offset": 8, "size": 8, "kind": "global_buffer", "meaning": "w: fp8"},
    {{"offset": 40, "size": 8, "kind": "by_value", "meaning": "m: tokens"},
    {{"offset": 80, "size": 4, "kind": "hidden_block_count_x"}]})json",
             symbol, n, k, minM, maxM, outType, wScale, blockM)
      .str();
}

class BundleLoaderTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("mlafp8-runtime-test", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  void writeFile(llvm::StringRef name, llvm::StringRef contents) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec) << ec.message();
    os << contents;
  }

  /// A manifest with gfx942 (three M ranges of one shape, the last
  /// unbounded, plus an f16 kernel) and gfx950 (one kernel), and their code
  /// objects. `schema` and `hash942` can be changed to break it.
  std::string manifest(int schema = 1, std::string hash942 = "") {
    if (hash942.empty())
      hash942 = sha256(code942);
    return llvm::formatv(
               R"json({{"schema_version": {0}, "compiler": "mla-fp8",
  "compiler_version": "0.1.0", "model": "deepseek-r1", "heads": 128,
  "kv_lora_rank": 512, "qk_nope_head_dim": 128, "v_head_dim": 128,
  "max_m": 1024,
  "chips": [
    {{"chip": "gfx942", "code_object": "gfx942.hsaco", "sha256": "{1}",
     "bytes": {2}, "kernels": [{3}, {4}, {5}, {6}]},
    {{"chip": "gfx950", "code_object": "gfx950.hsaco", "sha256": "{7}",
     "bytes": {8}, "kernels": [{9}]}]})json",
               schema, hash942, code942.size(),
               kernelJSON("k942_m1_16", 512, 128, 1, 16, 16),
               kernelJSON("k942_m17_64", 512, 128, 17, 64, 32),
               kernelJSON("k942_m65_inf", 512, 128, 65, 0, 64),
               kernelJSON("k942_f16", 512, 128, 1, 0, 16, "f16"),
               sha256(code950), code950.size(),
               kernelJSON("k950_all", 128, 512, 1, 0, 32))
        .str();
  }

  void writeBundle(const std::string &manifestText) {
    writeFile("gfx942.hsaco", code942);
    writeFile("gfx950.hsaco", code950);
    writeFile("manifest.json", manifestText);
  }

  /// Loads and expects failure; returns the message.
  std::string loadError() {
    llvm::Expected<LoadedBundle> bundle = loadBundle(dir);
    if (bundle) {
      ADD_FAILURE() << "loading succeeded";
      return "";
    }
    return llvm::toString(bundle.takeError());
  }

  llvm::SmallString<256> dir;
  std::string code942 = std::string("\x7f"
                                    "ELF fake gfx942 code object\0x",
                                    30);
  std::string code950 = "\x7f"
                        "ELF fake gfx950";
};

TEST_F(BundleLoaderTest, LoadsEveryField) {
  writeBundle(manifest());
  llvm::Expected<LoadedBundle> bundle = loadBundle(dir);
  ASSERT_TRUE(bool(bundle)) << llvm::toString(bundle.takeError());
  EXPECT_EQ(bundle->schemaVersion, 1);
  EXPECT_EQ(bundle->model, "deepseek-r1");
  EXPECT_EQ(bundle->compilerVersion, "0.1.0");
  EXPECT_EQ(bundle->maxM, 1024);
  ASSERT_EQ(bundle->chips.size(), 2u);
  const LoadedChip *chip = bundle->findChip("gfx942");
  ASSERT_NE(chip, nullptr);
  EXPECT_EQ(*chip->codeObject, code942);
  ASSERT_EQ(chip->kernels.size(), 4u);

  const KernelEntry &e = chip->kernels[1];
  EXPECT_EQ(e.symbol, "k942_m17_64");
  EXPECT_EQ(e.chip, "gfx942");
  EXPECT_EQ(e.projection, "k_up");
  EXPECT_EQ(e.fp8Type, "f8E4M3FNUZ");
  EXPECT_EQ(e.blockM, 32);
  EXPECT_EQ(e.workgroupSize, (std::array<uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(e.kernargSize, 336u);
  EXPECT_EQ(e.kernargAlign, 8u);
  EXPECT_EQ(e.ldsBytes, 4096u);
  // Every kernel of a chip shares the one code object.
  EXPECT_EQ(e.codeObject.get(), chip->codeObject.get());
  ASSERT_EQ(e.args.size(), 4u);
  EXPECT_EQ(e.args[2].name, "m");
  EXPECT_EQ(e.args[2].offset, 40u);
  EXPECT_FALSE(e.args[2].isHidden());
  EXPECT_TRUE(e.args[3].isHidden());
  EXPECT_EQ(e.args[3].name, "hidden_block_count_x");
  ASSERT_NE(e.findArg("w"), nullptr);
  EXPECT_EQ(e.findArg("w")->offset, 8u);
  EXPECT_EQ(e.findArg("bias"), nullptr);
}

TEST_F(BundleLoaderTest, LookupAtRangeEdges) {
  writeBundle(manifest());
  llvm::Expected<LoadedBundle> bundle = loadBundle(dir);
  ASSERT_TRUE(bool(bundle)) << llvm::toString(bundle.takeError());
  auto symbolFor = [&](int64_t m) -> std::string {
    const KernelEntry *e = bundle->findKernel("gfx942", 512, 128, m);
    return e ? e->symbol : "<none>";
  };
  EXPECT_EQ(symbolFor(1), "k942_m1_16");
  EXPECT_EQ(symbolFor(16), "k942_m1_16");
  EXPECT_EQ(symbolFor(17), "k942_m17_64");
  EXPECT_EQ(symbolFor(64), "k942_m17_64");
  EXPECT_EQ(symbolFor(65), "k942_m65_inf");
  // The last range has no upper bound.
  EXPECT_EQ(symbolFor(1 << 20), "k942_m65_inf");
  // M = 0 is not an error: the lowest range describes the empty launch.
  EXPECT_EQ(symbolFor(0), "k942_m1_16");
  EXPECT_EQ(symbolFor(-1), "<none>");
  // The other matching fields select among kernels of one shape.
  const KernelEntry *f16 = bundle->findKernel("gfx942", 512, 128, 100, "f16");
  ASSERT_NE(f16, nullptr);
  EXPECT_EQ(f16->symbol, "k942_f16");
  const KernelEntry *gfx950 = bundle->findKernel("gfx950", 128, 512, 7);
  ASSERT_NE(gfx950, nullptr);
  EXPECT_EQ(gfx950->symbol, "k950_all");
}

TEST_F(BundleLoaderTest, UnknownChipOrShapeGivesNull) {
  writeBundle(manifest());
  llvm::Expected<LoadedBundle> bundle = loadBundle(dir);
  ASSERT_TRUE(bool(bundle)) << llvm::toString(bundle.takeError());
  EXPECT_EQ(bundle->findKernel("gfx90a", 512, 128, 1), nullptr);
  EXPECT_EQ(bundle->findChip("gfx90a"), nullptr);
  EXPECT_EQ(bundle->findKernel("gfx942", 128, 512, 1), nullptr);
  EXPECT_EQ(bundle->findKernel("gfx942", 512, 128, 1, "bf16", "per_batch"),
            nullptr);
  EXPECT_EQ(bundle->findKernel("gfx942", 512, 128, 1, "bf16", "per_tensor", 64),
            nullptr);
  EXPECT_EQ(bundle->findKernel("gfx950", 512, 128, 1), nullptr);
}

TEST_F(BundleLoaderTest, Grid) {
  writeBundle(manifest());
  llvm::Expected<LoadedBundle> bundle = loadBundle(dir);
  ASSERT_TRUE(bool(bundle)) << llvm::toString(bundle.takeError());
  const KernelEntry *e = bundle->findKernel("gfx942", 512, 128, 40);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->getGrid(40, 16), (std::array<uint64_t, 3>{8, 2, 16}));
  EXPECT_EQ(e->getGrid(64, 16), (std::array<uint64_t, 3>{8, 2, 16}));
  EXPECT_EQ(e->getGrid(33, 3), (std::array<uint64_t, 3>{8, 2, 3}));
  EXPECT_EQ(e->getGrid(32, 3), (std::array<uint64_t, 3>{8, 1, 3}));
  EXPECT_EQ(e->getGrid(0, 16), (std::array<uint64_t, 3>{8, 0, 16}));
}

TEST_F(BundleLoaderTest, WrongSchemaVersion) {
  writeBundle(manifest(/*schema=*/2));
  std::string message = loadError();
  EXPECT_NE(message.find("manifest.json"), std::string::npos) << message;
  EXPECT_NE(message.find("schema_version"), std::string::npos) << message;
  EXPECT_NE(message.find("reads schema version 1, the manifest has 2"),
            std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, MissingSchemaVersion) {
  writeBundle(R"({"chips": []})");
  std::string message = loadError();
  EXPECT_NE(message.find("field 'schema_version': missing"), std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, HashMismatch) {
  writeBundle(manifest(1, sha256("something else")));
  std::string message = loadError();
  EXPECT_NE(message.find("gfx942.hsaco"), std::string::npos) << message;
  EXPECT_NE(message.find("chips[0].sha256"), std::string::npos) << message;
}

TEST_F(BundleLoaderTest, DamagedCodeObject) {
  writeBundle(manifest());
  std::string damaged = code942;
  damaged[5] ^= 1;
  writeFile("gfx942.hsaco", damaged);
  std::string message = loadError();
  EXPECT_NE(message.find("SHA-256"), std::string::npos) << message;
}

TEST_F(BundleLoaderTest, MissingManifest) {
  std::string message = loadError();
  EXPECT_NE(message.find("manifest.json: cannot read"), std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, MissingCodeObject) {
  writeFile("gfx942.hsaco", code942);
  writeFile("manifest.json", manifest());
  std::string message = loadError();
  EXPECT_NE(message.find("gfx950.hsaco"), std::string::npos) << message;
  EXPECT_NE(message.find("chips[1].code_object"), std::string::npos) << message;
}

TEST_F(BundleLoaderTest, MalformedJSON) {
  writeBundle(manifest().substr(0, 200));
  std::string message = loadError();
  EXPECT_NE(message.find("manifest.json: malformed JSON"), std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, WrongFieldTypeNamesThePath) {
  std::string text = manifest();
  size_t pos = text.find(R"json("y": "ceil(M/32)")json");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 17, R"json("y": "floor(M/32)")json");
  writeBundle(text);
  std::string message = loadError();
  EXPECT_NE(message.find("field 'chips[0].kernels[1].grid.y'"),
            std::string::npos)
      << message;

  text = manifest();
  pos = text.find(R"("n": 512)");
  text.replace(pos, 8, R"("n": "512")");
  writeBundle(text);
  message = loadError();
  EXPECT_NE(message.find("field 'chips[0].kernels[0].n': expected an integer"),
            std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, CodeObjectOutsideTheBundleIsRejected) {
  std::string text = manifest();
  size_t pos = text.find(R"("gfx950.hsaco")");
  text.replace(pos, 14, R"("../gfx950.hsaco")");
  writeBundle(text);
  std::string message = loadError();
  EXPECT_NE(message.find("chips[1].code_object"), std::string::npos) << message;
}

TEST_F(BundleLoaderTest, SizeMismatch) {
  std::string text = manifest();
  std::string field = llvm::formatv(R"("bytes": {0})", code950.size()).str();
  size_t pos = text.find(field);
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, field.size(), R"("bytes": 3)");
  writeBundle(text);
  std::string message = loadError();
  EXPECT_NE(message.find("chips[1].bytes"), std::string::npos) << message;
}

TEST_F(BundleLoaderTest, LoadsQuickly) {
  // A bundle the size of the default one: two chips, 1 MiB code objects and
  // 40 kernels each.
  code942.assign(1 << 20, 'a');
  code950.assign(1 << 20, 'b');
  std::string kernels;
  for (int i = 0; i < 40; ++i)
    kernels += (i ? ", " : "") +
               kernelJSON("k" + std::to_string(i), 512 + i, 128, 1, 0, 16);
  std::string text = llvm::formatv(
                         R"json({{"schema_version": 1, "chips": [
    {{"chip": "gfx942", "code_object": "gfx942.hsaco", "sha256": "{0}",
     "bytes": {1}, "kernels": [{4}]},
    {{"chip": "gfx950", "code_object": "gfx950.hsaco", "sha256": "{2}",
     "bytes": {3}, "kernels": [{4}]}]})json",
                         sha256(code942), code942.size(), sha256(code950),
                         code950.size(), kernels)
                         .str();
  writeBundle(text);
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<LoadedBundle> bundle = loadBundle(dir);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  ASSERT_TRUE(bool(bundle)) << llvm::toString(bundle.takeError());
  EXPECT_EQ(bundle->chips[1].kernels.size(), 40u);
  // The target is 20 ms; the bound leaves room for a loaded test machine.
  EXPECT_LT(ms, 200.0);
}

} // namespace
