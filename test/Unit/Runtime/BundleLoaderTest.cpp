//===- BundleLoaderTest.cpp - the run-time bundle loader ------------------===//
//
// Every test copies a real bundle compiled by the AOT library (TestBundle.h),
// damages it one way and checks that the loader refuses it with a message
// naming the file and the field, or loads it.
//
//===----------------------------------------------------------------------===//

#include "TestBundle.h"

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/Runtime/Bundle.h"

#include "gtest/gtest.h"

#include <chrono>
#include <future>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;
using mlir::mlafp8::test::TestBundle;

namespace {

class BundleLoaderTest : public ::testing::Test {
protected:
  /// Loads and expects failure; returns the message.
  std::string loadError() {
    llvm::Expected<LoadedBundle> loaded = loadBundle(bundle.dir);
    if (loaded) {
      ADD_FAILURE() << "loading succeeded";
      return "";
    }
    return llvm::toString(loaded.takeError());
  }

  /// Writes the edited manifest (with its digest unless `digest` is false)
  /// and expects the load to fail with a message containing `expected`.
  void expectRefused(const std::string &expected, bool digest = true) {
    bundle.writeManifest(digest);
    std::string message = loadError();
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }

  TestBundle bundle;
};

const char *const kKUp16 = "mla_fp8_n64_k32_g128_bf16_gfx942_r1_256";
const char *const kKUp32 = "mla_fp8_n64_k32_g128_bf16_gfx942_r257_512";
const char *const kKUpInf = "mla_fp8_n64_k32_g128_bf16_gfx942_r513_inf";

TEST_F(BundleLoaderTest, LoadsEveryField) {
  llvm::Expected<LoadedBundle> loaded = loadBundle(bundle.dir);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(loaded->schemaVersion, kSupportedManifestSchemaVersion);
  EXPECT_EQ(loaded->model, "custom");
  EXPECT_EQ(loaded->maxM, 64);
  EXPECT_EQ(loaded->manifestSha256.size(), 64u);
  ASSERT_EQ(loaded->chips.size(), 1u);
  const LoadedChip *chip = loaded->findChip("gfx942");
  ASSERT_NE(chip, nullptr);
  // Three ranges of rows per projection, for bf16 and for f16 activations.
  ASSERT_EQ(chip->kernels.size(), 12u);
  EXPECT_EQ(chip->codeObjectVersion, 5u);
  EXPECT_EQ(chip->kernels[6].inType, "f16");
  EXPECT_EQ(chip->kernels[6].symbol,
            "mla_fp8_n64_k32_g128_xf16_bf16_gfx942_r1_256");

  const KernelEntry &e = chip->kernels[1];
  EXPECT_EQ(e.symbol, kKUp32);
  EXPECT_EQ(e.projection, "k_up");
  EXPECT_EQ(e.fp8Type, "f8E4M3FNUZ");
  EXPECT_EQ(e.n, 64);
  EXPECT_EQ(e.k, 32);
  EXPECT_EQ(e.workgroupSize[1], 1u);
  EXPECT_EQ(e.workgroupSize[0], uint32_t(e.waves * 64));
  EXPECT_EQ(e.kernargSize, 88u);
  // Every kernel of a chip shares the one code object.
  EXPECT_EQ(e.codeObject.get(), chip->codeObject.get());
  // Arguments are named by their position in the kernel ABI.
  ASSERT_EQ(e.args.size(), 11u);
  EXPECT_EQ(e.args[3].name, "m");
  EXPECT_EQ(e.args[3].offset, 24u);
  EXPECT_FALSE(e.args[3].isHidden());
  ASSERT_NE(e.findArg("w_scale"), nullptr);
  EXPECT_EQ(e.findArg("w_scale")->offset, 40u);
  ASSERT_NE(e.findArg("workspace"), nullptr);
  EXPECT_EQ(e.findArg("ws"), nullptr);
}

TEST_F(BundleLoaderTest, LookupAtRangeEdges) {
  llvm::Expected<LoadedBundle> loaded = loadBundle(bundle.dir);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  // At B = 16 the rows 1-256, 257-512 and 513 up are M 1-16, 17-32 and 33
  // up.
  auto symbolFor = [&](int64_t m, int64_t b = 16) -> std::string {
    const KernelEntry *e = loaded->findKernel("gfx942", 64, 32, m, b);
    return e ? e->symbol : "<none>";
  };
  EXPECT_EQ(symbolFor(1), kKUp16);
  EXPECT_EQ(symbolFor(16), kKUp16);
  EXPECT_EQ(symbolFor(17), kKUp32);
  EXPECT_EQ(symbolFor(32), kKUp32);
  EXPECT_EQ(symbolFor(33), kKUpInf);
  EXPECT_EQ(symbolFor(1 << 20), kKUpInf);
  // The rows decide, not M: B = 1 at M = 256, B = 2 at M = 129 (258 rows),
  // B = 128 at M = 4 (512) and M = 5 (640).
  EXPECT_EQ(symbolFor(256, 1), kKUp16);
  EXPECT_EQ(symbolFor(129, 2), kKUp32);
  EXPECT_EQ(symbolFor(4, 128), kKUp32);
  EXPECT_EQ(symbolFor(5, 128), kKUpInf);
  // B * M beyond every bound of a range (2^31 - 1 each): the unbounded one.
  EXPECT_EQ(symbolFor((int64_t(1) << 31) - 1, (int64_t(1) << 31) - 1), kKUpInf);
  // M = 0 or B = 0 is not an error: the lowest range describes the empty
  // launch.
  EXPECT_EQ(symbolFor(0), kKUp16);
  EXPECT_EQ(symbolFor(40, 0), kKUp16);
  EXPECT_EQ(symbolFor(-1), "<none>");
  EXPECT_EQ(symbolFor(1, -1), "<none>");
  EXPECT_EQ(symbolFor(1, int64_t(1) << 31), "<none>");
  EXPECT_EQ(loaded->findKernel("gfx950", 64, 32, 1, 16), nullptr);
  EXPECT_EQ(loaded->findKernel("gfx942", 64, 32, 1, 16, "f16"), nullptr);
  EXPECT_EQ(loaded->findKernel("gfx942", 64, 32, 1, 16, "bf16", "per_batch"),
            nullptr);
  const KernelEntry *vUp = loaded->findKernel("gfx942", 32, 64, 5, 16);
  ASSERT_NE(vUp, nullptr);
  EXPECT_EQ(vUp->projection, "v_up");
}

TEST_F(BundleLoaderTest, GridAndLaunchChecks) {
  llvm::Expected<LoadedBundle> loaded = loadBundle(bundle.dir);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  const KernelEntry *e = loaded->findKernel("gfx942", 64, 32, 20, 16);
  ASSERT_NE(e, nullptr);
  uint64_t x = (64 + e->blockN - 1) / e->blockN * e->splitK;
  uint64_t blockM = uint64_t(e->blockM);
  EXPECT_EQ(e->getGrid(20, 3),
            (std::array<uint64_t, 3>{x, (20 + blockM - 1) / blockM, 3}));
  EXPECT_EQ(e->getGrid(0, 3)[1], 0u);
  EXPECT_EQ(e->checkLaunch(20, 3), "");
  // M = 2^40 used to truncate the grid to 0 and return with Y untouched.
  EXPECT_NE(e->checkLaunch(int64_t(1) << 40, 1), "");
  EXPECT_NE(e->checkLaunch(1, int64_t(1) << 40), "");
  EXPECT_NE(e->checkLaunch(-1, 1), "");
}

//===----------------------------------------------------------------------===//
// The digest and the schema
//===----------------------------------------------------------------------===//

TEST_F(BundleLoaderTest, OlderSchemaIsRefusedNamingBothVersions) {
  // Schema 1 had no digest file, schema 2 no argument names, schema 3
  // ranges of M, schema 4 the arguments in their old order: the version is
  // what is wrong, whatever else the manifest holds.
  ASSERT_FALSE(llvm::sys::fs::remove(bundle.path("manifest.sha256")));
  for (int version : {1, 2, 3, 4}) {
    SCOPED_TRACE(version);
    bundle.root()["schema_version"] = version;
    bundle.writeManifest(/*digest=*/false);
    std::string message = loadError();
    EXPECT_NE(message.find("manifest.json: field 'schema_version': the "
                           "manifest has schema version " +
                           std::to_string(version) +
                           "; this loader reads schema version 5 only. "
                           "Regenerate the bundle"),
              std::string::npos)
        << message;
  }
}

TEST_F(BundleLoaderTest, ArgumentNamesComeFromTheNameField) {
  // `meaning` is prose for people: rewriting it changes nothing.
  llvm::json::Object &kernel = bundle.kernel(1);
  for (llvm::json::Value &arg : *kernel.getArray("args"))
    (*arg.getAsObject())["meaning"] = "anything: at all";
  bundle.writeManifest();
  llvm::Expected<LoadedBundle> loaded = loadBundle(bundle.dir);
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  const KernelEntry &e = loaded->chips[0].kernels[1];
  EXPECT_EQ(e.args[kernel_abi::kArgXStrideM].name, "x_stride_m");
  EXPECT_EQ(e.args[kernel_abi::kArgXStrideM].meaning, "anything: at all");
}

TEST_F(BundleLoaderTest, MissingDigestIsRefused) {
  ASSERT_FALSE(llvm::sys::fs::remove(bundle.path("manifest.sha256")));
  std::string message = loadError();
  EXPECT_NE(message.find("manifest.sha256"), std::string::npos) << message;
  EXPECT_NE(message.find("No such file"), std::string::npos) << message;
}

TEST_F(BundleLoaderTest, EditedManifestFailsTheDigest) {
  // Any field, even one no other check can see, is covered by the digest.
  bundle.kernel(0)["instructions"] = 7;
  expectRefused("manifest.sha256: manifest.json has SHA-256", /*digest=*/false);
}

TEST_F(BundleLoaderTest, MalformedDigestFileIsRefused) {
  bundle.writeManifest();
  std::string text = test::sha256Of("x") + "  manifest.json"; // no newline
  bundle.writeFile("manifest.sha256", text);
  std::string message = loadError();
  EXPECT_NE(message.find("manifest.sha256: expected one line"),
            std::string::npos)
      << message;
  bundle.writeFile("manifest.sha256",
                   llvm::StringRef(test::sha256Of("x")).upper() +
                       "  manifest.json\n");
  message = loadError();
  EXPECT_NE(message.find("manifest.sha256: expected one line"),
            std::string::npos)
      << message;
}

//===----------------------------------------------------------------------===//
// Mutations: each is refused by the deep checks with the digest recomputed,
// and by the digest without.
//===----------------------------------------------------------------------===//

struct Mutation {
  const char *name;
  std::function<void(llvm::json::Object &)> apply;
  const char *field;
};

static std::vector<Mutation> getMutations() {
  return {
      {"grid.x = 0",
       [](llvm::json::Object &k) { (*k.getObject("grid"))["x"] = 0; },
       "field 'chips[0].kernels[1].grid.x': expected"},
      {"grid.z = 1",
       [](llvm::json::Object &k) { (*k.getObject("grid"))["z"] = 1; },
       "field 'chips[0].kernels[1].grid.z': expected \"B\""},
      {"grid.y divisor that overflows",
       [](llvm::json::Object &k) {
         (*k.getObject("grid"))["y"] = "ceil(M/18446744073709551616)";
       },
       "field 'chips[0].kernels[1].grid.y'"},
      {"grid.y divisor near 2^63",
       [](llvm::json::Object &k) {
         (*k.getObject("grid"))["y"] = "ceil(M/9223372036854775807)";
       },
       "field 'chips[0].kernels[1].grid.y'"},
      {"grid.y of another block_m",
       [](llvm::json::Object &k) { (*k.getObject("grid"))["y"] = "ceil(M/8)"; },
       "field 'chips[0].kernels[1].grid.y': expected"},
      {"workgroup_size [32,1,1]",
       [](llvm::json::Object &k) {
         k["workgroup_size"] = llvm::json::Array{32, 1, 1};
       },
       "field 'chips[0].kernels[1].workgroup_size'"},
      {"workgroup_size and waves changed together",
       [](llvm::json::Object &k) {
         int64_t waves = *k.getObject("tile")->getInteger("waves");
         (*k.getObject("tile"))["waves"] = waves * 2;
         k["workgroup_size"] = llvm::json::Array{waves * 128, 1, 1};
       },
       "field 'chips[0].kernels[1].workgroup_size': 128, but the code "
       "object's .max_flat_workgroup_size is 64"},
      {"has_bias flipped", [](llvm::json::Object &k) { k["has_bias"] = true; },
       "field 'chips[0].kernels[1].has_bias': contradicts the symbol"},
      {"w_scale flipped",
       [](llvm::json::Object &k) { k["w_scale"] = "per_batch"; },
       "field 'chips[0].kernels[1].w_scale': contradicts the symbol"},
      {"out_type flipped", [](llvm::json::Object &k) { k["out_type"] = "f16"; },
       "field 'chips[0].kernels[1].out_type': contradicts the symbol"},
      {"in_type flipped", [](llvm::json::Object &k) { k["in_type"] = "f16"; },
       "field 'chips[0].kernels[1].in_type': contradicts the symbol"},
      {"in_type unknown", [](llvm::json::Object &k) { k["in_type"] = "f32"; },
       "field 'chips[0].kernels[1].in_type': expected one of"},
      {"symbol of the other projection's kernel",
       [](llvm::json::Object &k) {
         k["symbol"] = "mla_fp8_n32_k64_g128_bf16_gfx942_r257_512";
       },
       "field 'chips[0].kernels[1].symbol': "
       "'mla_fp8_n32_k64_g128_bf16_gfx942_r257_512' is not the kernel"},
      {"n and symbol of the other projection's kernel",
       [](llvm::json::Object &k) {
         k["symbol"] = "mla_fp8_n32_k64_g128_bf16_gfx942_r257_512";
         k["n"] = 32;
         k["k"] = 64;
       },
       "field 'chips[0].kernels[1].grid.x'"},
      {"a symbol the code object lacks",
       [](llvm::json::Object &k) {
         k["symbol"] = "mla_fp8_n64_k32_g128_bf16_gfx942_r257_600";
         k["max_rows"] = 600;
         (*k.getObject("tile"))["max_rows"] = 600;
       },
       "field 'chips[0].kernels[1].symbol': no kernel "
       "'mla_fp8_n64_k32_g128_bf16_gfx942_r257_600' in gfx942.hsaco"},
      {"huge kernarg_size",
       [](llvm::json::Object &k) { k["kernarg_size"] = int64_t(1) << 40; },
       "field 'chips[0].kernels[1].kernarg_size': expected an integer in"},
      {"kernarg_size not the code object's",
       [](llvm::json::Object &k) { k["kernarg_size"] = 96; },
       "field 'chips[0].kernels[1].kernarg_size': 96, but the code object's "
       ".kernarg_segment_size is 88"},
      {"huge workspace_bytes_per_block",
       [](llvm::json::Object &k) {
         k["workspace_bytes_per_block"] = int64_t(1) << 40;
       },
       "field 'chips[0].kernels[1].workspace_bytes_per_block': expected"},
      {"lds_bytes not the code object's",
       [](llvm::json::Object &k) { k["lds_bytes"] = 0; },
       "field 'chips[0].kernels[1].lds_bytes': 0, but the code object's "
       ".group_segment_fixed_size"},
      {"scratch_bytes not the code object's",
       [](llvm::json::Object &k) { k["scratch_bytes"] = 16; },
       "field 'chips[0].kernels[1].scratch_bytes'"},
      {"kernarg_align not the code object's",
       [](llvm::json::Object &k) { k["kernarg_align"] = 16; },
       "field 'chips[0].kernels[1].kernarg_align'"},
      {"argument offset moved",
       [](llvm::json::Object &k) {
         (*(*k.getArray("args"))[3].getAsObject())["offset"] = 48;
       },
       "field 'chips[0].kernels[1].args[3]': expected the ABI's 'm' argument"},
      {"arguments swapped",
       [](llvm::json::Object &k) {
         llvm::json::Array &args = *k.getArray("args");
         std::swap(args[6], args[8]);
       },
       "field 'chips[0].kernels[1].args[6].name': 'y_stride_b' is argument 8 "
       "of the kernel ABI, not 6"},
      {"argument without a name",
       [](llvm::json::Object &k) {
         (*k.getArray("args"))[3].getAsObject()->erase("name");
       },
       "field 'chips[0].kernels[1].args[3].name': missing"},
      {"argument name unknown to the ABI",
       [](llvm::json::Object &k) {
         (*(*k.getArray("args"))[3].getAsObject())["name"] = "scale";
       },
       "field 'chips[0].kernels[1].args[3].name': 'scale' is not an argument "
       "of the kernel ABI"},
      {"argument named as another",
       [](llvm::json::Object &k) {
         (*(*k.getArray("args"))[5].getAsObject())["name"] = "x_stride_b";
       },
       "field 'chips[0].kernels[1].args[5].name': 'x_stride_b' is argument 1 "
       "of the kernel ABI, not 5"},
      {"argument name not a string",
       [](llvm::json::Object &k) {
         (*(*k.getArray("args"))[0].getAsObject())["name"] = 0;
       },
       "field 'chips[0].kernels[1].args[0].name': expected a string"},
      {"argument dropped",
       [](llvm::json::Object &k) {
         k.getArray("args")->erase(k.getArray("args")->begin() + 10);
       },
       "field 'chips[0].kernels[1].args': 10 explicit arguments"},
      {"fp8_type of the other chip",
       [](llvm::json::Object &k) { k["fp8_type"] = "f8E4M3FN"; },
       "field 'chips[0].kernels[1].fp8_type'"},
      {"tile max_rows not the kernel's",
       [](llvm::json::Object &k) { (*k.getObject("tile"))["max_rows"] = 0; },
       "field 'chips[0].kernels[1].tile.max_rows'"},
      {"negative n", [](llvm::json::Object &k) { k["n"] = -64; },
       "field 'chips[0].kernels[1].n': expected an integer in [1, 65536]"},
      {"n as a string", [](llvm::json::Object &k) { k["n"] = "64"; },
       "field 'chips[0].kernels[1].n': expected an integer"},
      {"split_k changed",
       [](llvm::json::Object &k) { (*k.getObject("tile"))["split_k"] = 2; },
       "field 'chips[0].kernels[1].grid.x'"},
  };
}

TEST_F(BundleLoaderTest, EveryMutationIsRefusedWithItsDigest) {
  for (const Mutation &mutation : getMutations()) {
    SCOPED_TRACE(mutation.name);
    TestBundle fresh;
    mutation.apply(fresh.kernel(1));
    fresh.writeManifest();
    llvm::Expected<LoadedBundle> loaded = loadBundle(fresh.dir);
    ASSERT_FALSE(bool(loaded));
    std::string message = llvm::toString(loaded.takeError());
    EXPECT_NE(message.find(mutation.field), std::string::npos) << message;
    EXPECT_NE(message.find("manifest.json: "), std::string::npos) << message;
  }
}

TEST_F(BundleLoaderTest, EveryMutationIsRefusedByTheDigest) {
  for (const Mutation &mutation : getMutations()) {
    SCOPED_TRACE(mutation.name);
    TestBundle fresh;
    mutation.apply(fresh.kernel(1));
    fresh.writeManifest(/*digest=*/false);
    llvm::Expected<LoadedBundle> loaded = loadBundle(fresh.dir);
    ASSERT_FALSE(bool(loaded));
    std::string message = llvm::toString(loaded.takeError());
    EXPECT_NE(message.find("manifest.sha256: manifest.json has SHA-256"),
              std::string::npos)
        << message;
  }
}

TEST_F(BundleLoaderTest, ChipOfAnotherCodeObjectIsRefused) {
  bundle.chip()["chip"] = "gfx950";
  expectRefused("field 'chips[0].chip': 'gfx950', but gfx942.hsaco is for "
                "'gfx942'");
}

/// The manifest's code-object version must be the ELF header's; bundles
/// written before the field existed load with the header's.
TEST_F(BundleLoaderTest, CodeObjectVersionMatchesTheELFHeader) {
  EXPECT_EQ(bundle.chip().getInteger("code_object_version"), 5);
  bundle.chip()["code_object_version"] = 6;
  expectRefused("field 'chips[0].code_object_version': 6, but gfx942.hsaco "
                "is code object v5 (ELF ABI version 3)");
  bundle.chip()["code_object_version"] = 4;
  expectRefused("field 'chips[0].code_object_version': expected an integer "
                "in [5, 6], got 4");
  bundle.chip().erase("code_object_version");
  bundle.writeManifest();
  llvm::Expected<LoadedBundle> loaded = loadBundle(bundle.dir);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(loaded->chips[0].codeObjectVersion, 5u);
}

TEST_F(BundleLoaderTest, UnknownChipIsRefused) {
  bundle.chip()["chip"] = "gfx90a";
  expectRefused("field 'chips[0].chip': unknown chip 'gfx90a'; supported "
                "chips: gfx942, gfx950");
}

TEST_F(BundleLoaderTest, HugeCodeObjectSizeIsRefused) {
  bundle.chip()["bytes"] = int64_t(1) << 50;
  expectRefused("field 'chips[0].bytes': expected an integer in");
}

TEST_F(BundleLoaderTest, CodeObjectOutsideTheBundleIsRejected) {
  bundle.chip()["code_object"] = "../gfx942.hsaco";
  expectRefused("field 'chips[0].code_object'");
  bundle.chip()["code_object"] = "..";
  expectRefused("field 'chips[0].code_object'");
}

TEST_F(BundleLoaderTest, HashMismatch) {
  bundle.chip()["sha256"] = test::sha256Of("something else");
  expectRefused("chips[0].sha256");
}

TEST_F(BundleLoaderTest, DamagedCodeObject) {
  std::string damaged = test::getTestBundleFiles().codeObject;
  damaged[damaged.size() / 2] ^= 1;
  bundle.writeFile("gfx942.hsaco", damaged);
  std::string message = loadError();
  EXPECT_NE(message.find("gfx942.hsaco: SHA-256"), std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, MissingCodeObject) {
  ASSERT_FALSE(llvm::sys::fs::remove(bundle.path("gfx942.hsaco")));
  std::string message = loadError();
  EXPECT_NE(message.find("gfx942.hsaco"), std::string::npos) << message;
  EXPECT_NE(message.find("chips[0].code_object"), std::string::npos) << message;
}

TEST_F(BundleLoaderTest, MissingManifest) {
  ASSERT_FALSE(llvm::sys::fs::remove(bundle.path("manifest.json")));
  std::string message = loadError();
  EXPECT_NE(message.find("cannot read '"), std::string::npos) << message;
  EXPECT_NE(message.find("manifest.json': No such file"), std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, MalformedJSON) {
  bundle.writeManifestText("{\"schema_version\": 3, \"chips\": [");
  std::string message = loadError();
  EXPECT_NE(message.find("manifest.json: malformed JSON"), std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, DeeplyNestedManifestIsAnError) {
  // 100000 nested arrays used to overflow the stack in json::parse.
  std::string text =
      "{\"schema_version\": 3, \"chips\": " + std::string(100000, '[') +
      std::string(100000, ']') + "}";
  bundle.writeManifestText(text);
  std::string message = loadError();
  EXPECT_NE(message.find("manifest.json: malformed JSON: arrays and objects "
                         "nest deeper than 64 levels"),
            std::string::npos)
      << message;
  // Brackets inside strings do not count.
  bundle.root()["model"] = std::string(1000, '[');
  bundle.writeManifest();
  llvm::Expected<LoadedBundle> loaded = loadBundle(bundle.dir);
  EXPECT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
}

//===----------------------------------------------------------------------===//
// Files that are not regular files
//===----------------------------------------------------------------------===//

/// Runs the load on a thread and fails if it does not return within 20 s
/// (a FIFO used to block forever; the thread is then left behind).
static std::string loadErrorPromptly(const std::string &dir) {
  auto done = std::make_shared<std::promise<std::string>>();
  std::future<std::string> result = done->get_future();
  std::thread([dir, done] {
    llvm::Expected<LoadedBundle> loaded = loadBundle(dir);
    done->set_value(loaded ? "" : llvm::toString(loaded.takeError()));
  }).detach();
  if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "loading " << dir << " did not return";
    return "";
  }
  return result.get();
}

TEST_F(BundleLoaderTest, ManifestThatIsAFIFOIsAnError) {
  std::string manifest = bundle.path("manifest.json");
  ASSERT_FALSE(llvm::sys::fs::remove(manifest));
  ASSERT_EQ(::mkfifo(manifest.c_str(), 0600), 0);
  std::string message = loadErrorPromptly(std::string(bundle.dir));
  EXPECT_NE(message.find("manifest.json' is not a regular file"),
            std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, CodeObjectThatIsAFIFOIsAnError) {
  std::string object = bundle.path("gfx942.hsaco");
  ASSERT_FALSE(llvm::sys::fs::remove(object));
  ASSERT_EQ(::mkfifo(object.c_str(), 0600), 0);
  std::string message = loadErrorPromptly(std::string(bundle.dir));
  EXPECT_NE(message.find("gfx942.hsaco' is not a regular file (code object "
                         "of chip 'gfx942'"),
            std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, SymlinkToDevZeroIsAnError) {
  std::string object = bundle.path("gfx942.hsaco");
  ASSERT_FALSE(llvm::sys::fs::remove(object));
  ASSERT_EQ(::symlink("/dev/zero", object.c_str()), 0);
  std::string message = loadErrorPromptly(std::string(bundle.dir));
  EXPECT_NE(message.find("gfx942.hsaco' is not a regular file"),
            std::string::npos)
      << message;

  std::string manifest = bundle.path("manifest.json");
  ASSERT_FALSE(llvm::sys::fs::remove(manifest));
  ASSERT_EQ(::symlink("/dev/zero", manifest.c_str()), 0);
  message = loadErrorPromptly(std::string(bundle.dir));
  EXPECT_NE(message.find("manifest.json' is not a regular file"),
            std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, ManifestThatIsADirectoryIsAnError) {
  std::string manifest = bundle.path("manifest.json");
  ASSERT_FALSE(llvm::sys::fs::remove(manifest));
  ASSERT_FALSE(llvm::sys::fs::create_directory(manifest));
  std::string message = loadError();
  EXPECT_NE(message.find("manifest.json'"), std::string::npos) << message;
}

TEST_F(BundleLoaderTest, OversizedManifestIsAnError) {
  // Sparse: the size is checked before anything is read.
  std::string manifest = bundle.path("manifest.json");
  ASSERT_EQ(::truncate(manifest.c_str(), off_t(64) << 20), 0);
  std::string message = loadError();
  EXPECT_NE(message.find("manifest.json' is larger than 16777216 bytes"),
            std::string::npos)
      << message;
}

TEST_F(BundleLoaderTest, LoadsQuickly) {
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<LoadedBundle> loaded = loadBundle(bundle.dir);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  // The target is 20 ms; the bound leaves room for a loaded test machine.
  EXPECT_LT(ms, 200.0);
}

} // namespace
