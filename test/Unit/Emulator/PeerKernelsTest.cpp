//===- PeerKernelsTest.cpp - Run the foreign Triton code objects ----------===//
//
// shared/peer-kernels holds two gfx942 code objects compiled by Triton from
// the same math as SPEC.md. Matching the reference with them checks the
// emulator's instruction semantics against code known to run on MI300.
//
//===----------------------------------------------------------------------===//

#include "PeerKernels.h"

#include "mla-fp8/Emulator/PrequantBmmRunner.h"

#include "gtest/gtest.h"

#include <string>
#include <tuple>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::emu;

namespace {

struct PeerKernel {
  const char *file;
  int64_t n, k;
  unsigned tileM, tileN, lds;
};

const PeerKernel kPeers[] = {
    {"triton_gfx942_N512_K128_BM16_BN128_w8.hsaco", 512, 128, 16, 128, 18432},
    {"triton_gfx942_N128_K512_BM32_BN64_w8.hsaco", 128, 512, 32, 64, 12288},
};

class PeerKernelTest
    : public ::testing::TestWithParam<std::tuple<int, int64_t, bool>> {};

TEST_P(PeerKernelTest, MatchesReference) {
  auto [which, m, transposeY] = GetParam();
  const PeerKernel &pk = kPeers[which];
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  std::string path = peerDir + "/" + pk.file;
  auto co = CodeObject::fromFile(path);
  ASSERT_TRUE(bool(co)) << llvm::toString(co.takeError());
  auto emu =
      Emulator::create(std::shared_ptr<const CodeObject>(std::move(*co)));
  ASSERT_TRUE(bool(emu)) << llvm::toString(emu.takeError());
  PrequantBmmProblem p;
  p.B = 2;
  p.M = m;
  p.N = pk.n;
  p.K = pk.k;
  p.seed = 1000 + m;
  p.transposeY = transposeY;
  DispatchConfig cfg;
  cfg.workgroupSize = {512, 1, 1};
  cfg.dynamicLdsBytes = pk.lds;
  auto res = runPrequantBmm(**emu, "prequant_bmm", PrequantAbi::TritonPeer, p,
                            pk.tileM, pk.tileN, cfg);
  ASSERT_TRUE(bool(res)) << llvm::toString(res.takeError());
  EXPECT_EQ(res->unwritten, 0);
  EXPECT_EQ(res->failures, 0) << res->firstFailure;
  EXPECT_EQ(res->error.nanMismatches, 0);
  // SPEC.md: within 1 bf16 ulp (plus f32 accumulation noise).
  EXPECT_LE(res->error.maxUlpDistance, 1.0);
  EXPECT_GT(res->stats.mfma, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    PeerKernels, PeerKernelTest,
    ::testing::Combine(::testing::Values(0, 1),
                       ::testing::Values<int64_t>(1, 16, 17, 33, 64),
                       ::testing::Values(false, true)));

TEST(PeerKernels, ZeroRowsWritesNothing) {
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  std::string path = peerDir + "/" + kPeers[0].file;
  auto co = CodeObject::fromFile(path);
  ASSERT_TRUE(bool(co)) << llvm::toString(co.takeError());
  auto emu =
      Emulator::create(std::shared_ptr<const CodeObject>(std::move(*co)));
  ASSERT_TRUE(bool(emu));
  PrequantBmmProblem p;
  p.B = 2;
  p.M = 0;
  p.N = 512;
  p.K = 128;
  DispatchConfig cfg;
  cfg.workgroupSize = {512, 1, 1};
  cfg.dynamicLdsBytes = 18432;
  auto res = runPrequantBmm(**emu, "prequant_bmm", PrequantAbi::TritonPeer, p,
                            16, 128, cfg);
  ASSERT_TRUE(bool(res)) << llvm::toString(res.takeError());
  EXPECT_EQ(res->error.count, 0);
}

TEST(PeerKernels, TooLittleLdsIsReported) {
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  std::string path = peerDir + "/" + kPeers[0].file;
  auto co = CodeObject::fromFile(path);
  ASSERT_TRUE(bool(co));
  auto emu =
      Emulator::create(std::shared_ptr<const CodeObject>(std::move(*co)));
  ASSERT_TRUE(bool(emu));
  PrequantBmmProblem p;
  p.B = 1;
  p.M = 16;
  p.N = 512;
  p.K = 128;
  DispatchConfig cfg;
  cfg.workgroupSize = {512, 1, 1};
  cfg.dynamicLdsBytes = 1024;
  auto res = runPrequantBmm(**emu, "prequant_bmm", PrequantAbi::TritonPeer, p,
                            16, 128, cfg);
  ASSERT_FALSE(bool(res));
  std::string msg = llvm::toString(res.takeError());
  EXPECT_NE(msg.find("out-of-bounds LDS"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lane"), std::string::npos) << msg;
}

} // namespace

namespace {

TEST(PeerKernels, ThreadedDispatchMatchesSerial) {
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  std::string path = peerDir + "/" + kPeers[1].file;
  auto co = CodeObject::fromFile(path);
  ASSERT_TRUE(bool(co));
  auto emu =
      Emulator::create(std::shared_ptr<const CodeObject>(std::move(*co)));
  ASSERT_TRUE(bool(emu));
  PrequantBmmProblem p;
  p.B = 3;
  p.M = 40;
  p.N = 128;
  p.K = 512;
  DispatchConfig cfg;
  cfg.workgroupSize = {512, 1, 1};
  cfg.dynamicLdsBytes = 12288;
  cfg.threads = 1;
  auto serial = runPrequantBmm(**emu, "prequant_bmm", PrequantAbi::TritonPeer,
                               p, 32, 64, cfg);
  ASSERT_TRUE(bool(serial)) << llvm::toString(serial.takeError());
  cfg.threads = 3;
  auto threaded = runPrequantBmm(**emu, "prequant_bmm", PrequantAbi::TritonPeer,
                                 p, 32, 64, cfg);
  ASSERT_TRUE(bool(threaded)) << llvm::toString(threaded.takeError());
  EXPECT_EQ(threaded->failures, 0);
  EXPECT_EQ(threaded->error.maxAbsError, serial->error.maxAbsError);
  EXPECT_EQ(threaded->stats.instructions, serial->stats.instructions);
}

} // namespace
