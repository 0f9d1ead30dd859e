//===- ForeignLaunchTest.cpp - records, roles and grid formulas -----------===//
//
// What needs no foreign code object: the role table, the grid formulas and
// the record reader's refusals. Running the records' kernels is
// test/Emulator/foreign.test (it needs ../shared/calibration).
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Runtime/ForeignLaunch.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;

namespace {

TEST(ForeignLaunch, RolesByName) {
  EXPECT_EQ(getForeignArgRole("a_ptr"), ForeignArgRole::X);
  EXPECT_EQ(getForeignArgRole("b_ptr"), ForeignArgRole::W);
  EXPECT_EQ(getForeignArgRole("c_ptr"), ForeignArgRole::Y);
  EXPECT_EQ(getForeignArgRole("b_scale_ptr"), ForeignArgRole::WScale);
  EXPECT_EQ(getForeignArgRole("a_scale_ptr"), ForeignArgRole::XScale);
  EXPECT_EQ(getForeignArgRole("bias_ptr"), ForeignArgRole::Bias);
  // The prequant kernel's and the GEMMs' spellings name one role.
  EXPECT_EQ(getForeignArgRole("stride_in_am"), ForeignArgRole::XStrideM);
  EXPECT_EQ(getForeignArgRole("stride_am"), ForeignArgRole::XStrideM);
  EXPECT_EQ(getForeignArgRole("stride_in_cb"), ForeignArgRole::YStrideB);
  EXPECT_EQ(getForeignArgRole("global_scratch"), ForeignArgRole::Null);
  EXPECT_FALSE(getForeignArgRole("d_ptr"));
  EXPECT_FALSE(getForeignArgRole(""));
}

TEST(ForeignLaunch, GridFormulas) {
  auto grid = [](llvm::StringRef f, int64_t b, int64_t m, int64_t n,
                 int64_t k) {
    auto g = evaluateForeignGrid(f, b, m, n, k);
    EXPECT_TRUE(bool(g)) << f.str() << ": " << llvm::toString(g.takeError());
    return g ? *g : std::array<uint64_t, 3>{};
  };
  EXPECT_EQ(grid("(B, cdiv(M, 16) * cdiv(N, 64), 1)", 128, 32, 128, 512),
            (std::array<uint64_t, 3>{128, 4, 1}));
  EXPECT_EQ(grid("(B, 1 * cdiv(M, 8) * cdiv(N, 64), 1)", 4, 5, 1024, 4096),
            (std::array<uint64_t, 3>{4, 16, 1}));
  EXPECT_EQ(grid("(B,cdiv(M,128)*cdiv(N,128),1)", 2, 0, 1024, 4096),
            (std::array<uint64_t, 3>{2, 0, 1}));
  EXPECT_EQ(grid("((B + 1) * 2, K - 1, (N))", 3, 1, 7, 9),
            (std::array<uint64_t, 3>{8, 8, 7}));
  for (const char *bad :
       {"", "(B, M)", "(B, M, N, K)", "(B, cdiv(M, 0), 1)", "(B, Q, 1)",
        "(B, M - N, 1)", "(B, cdiv(M), 1)", "(B, M, 1) x",
        "(B, 4294967296, 1)", "(B, 9223372036854775807 * 2, 1)"}) {
    auto g = evaluateForeignGrid(bad, 2, 3, 4, 5);
    EXPECT_FALSE(bool(g)) << bad;
    if (!g) {
      EXPECT_NE(llvm::toString(g.takeError()).find("grid '"),
                std::string::npos);
    }
  }
}

/// A kernels.json in a temporary file.
std::string writeRecords(const std::string &text) {
  llvm::SmallString<128> path;
  int fd;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("foreign", "json", fd,
                                                  path));
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << text;
  return std::string(path);
}

const char *kRecord = R"json({"kernels": [{
  "file": "k.hsaco", "kernel_symbol": "k", "chip": "gfx950",
  "grid": "(B, cdiv(M, 16) * cdiv(N, 64), 1)", "workgroup_size": 256,
  "dynamic_lds_bytes": 10240,
  "constexprs": {"HAS_BIAS": false, "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64,
                 "BLOCK_SIZE_K": 128},
  "args": [
    {"name": "a_ptr", "type": "*bf16", "offset": 0, "size": 8},
    {"name": "b_ptr", "type": "*fp8e4nv", "offset": 8, "size": 8},
    {"name": "c_ptr", "type": "*bf16", "offset": 16, "size": 8},
    {"name": "b_scale_ptr", "type": "*fp32", "offset": 24, "size": 8},
    {"name": "M", "type": "i32", "offset": 32, "size": 4},
    {"name": "N", "type": "i32", "offset": 36, "size": 4},
    {"name": "K", "type": "i32", "offset": 40, "size": 4}],
  "cases": [{"B": 2, "M": 1, "N": 1024, "K": 4096, "time_us": 35,
             "layout": "X bf16 (M,B,K) [transpose_bm_in]; Y bf16 (M,B,N)"}]
}]})json";

TEST(ForeignLaunch, ReadsARecord) {
  std::string path = writeRecords(kRecord);
  auto records = readForeignKernels(path);
  ASSERT_TRUE(bool(records)) << llvm::toString(records.takeError());
  ASSERT_EQ(records->size(), 1u);
  const ForeignKernel &k = records->front();
  EXPECT_EQ(k.math, ForeignMath::Prequant);
  EXPECT_FALSE(k.hasBias);
  EXPECT_EQ(k.blockK, 128);
  ASSERT_EQ(k.cases.size(), 1u);
  EXPECT_TRUE(k.cases[0].tokenMajorX);
  EXPECT_TRUE(k.cases[0].tokenMajorY);
  EXPECT_EQ(*k.cases[0].timeUs, 35.0);
  llvm::sys::fs::remove(path);
}

/// `text` with every occurrence of `from` replaced by `to`.
std::string replaceAll(std::string text, const std::string &from,
                       const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

TEST(ForeignLaunch, UntypedPointersTakeTheMathsFromTheRoles) {
  // Pointers typed only "ptr": a scale of W alone is the fp8 prequant...
  std::string untyped = kRecord;
  for (const char *t : {"*bf16", "*fp8e4nv", "*fp32"})
    untyped = replaceAll(untyped, std::string("\"") + t + "\"", "\"ptr\"");
  std::string path = writeRecords(untyped);
  auto records = readForeignKernels(path);
  llvm::sys::fs::remove(path);
  ASSERT_TRUE(bool(records)) << llvm::toString(records.takeError());
  EXPECT_EQ(records->front().math, ForeignMath::Prequant);
  // ... no scale at all the bf16 GEMM.
  std::string noScale = replaceAll(
      untyped,
      R"(    {"name": "b_scale_ptr", "type": "ptr", "offset": 24, "size": 8},
)",
      "");
  path = writeRecords(noScale);
  records = readForeignKernels(path);
  llvm::sys::fs::remove(path);
  ASSERT_TRUE(bool(records)) << llvm::toString(records.takeError());
  EXPECT_EQ(records->front().math, ForeignMath::BF16);
}

TEST(ForeignLaunch, RefusesBadRecords) {
  auto refusal = [](std::string text, const std::string &from,
                    const std::string &to) {
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::string path = writeRecords(text);
    auto records = readForeignKernels(path);
    llvm::sys::fs::remove(path);
    EXPECT_FALSE(bool(records)) << to;
    return records ? std::string() : llvm::toString(records.takeError());
  };
  EXPECT_NE(refusal(kRecord, R"("name": "a_ptr")", R"("name": "x_ptr")")
                .find("no role is known for an argument named 'x_ptr'"),
            std::string::npos);
  EXPECT_NE(refusal(kRecord, R"("file": "k.hsaco")", R"("file": "../k")")
                .find("'file' must name a file beside kernels.json"),
            std::string::npos);
  EXPECT_NE(refusal(kRecord, R"("workgroup_size": 256)",
                    R"("workgroup_size": 0)")
                .find("workgroup_size"),
            std::string::npos);
  EXPECT_NE(refusal(kRecord, R"("type": "*fp8e4nv")", R"("type": "*f64")")
                .find("none of the maths known"),
            std::string::npos);
  EXPECT_NE(refusal(kRecord, R"("HAS_BIAS": false)", R"("HAS_BIAS": true)")
                .find("HAS_BIAS is set but no argument is bias_ptr"),
            std::string::npos);
  EXPECT_NE(refusal(kRecord, R"("size": 4})", R"("size": 3})")
                .find("a size of 4 or 8"),
            std::string::npos);
}

} // namespace
