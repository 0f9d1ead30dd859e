//===- PeerKernelsTest.cpp - Run the foreign Triton code objects ----------===//
//
// shared/peer-kernels holds code objects compiled by Triton from the same
// math as SPEC.md, two for gfx942 and two for gfx950. Matching the reference
// with them checks the emulator's instruction semantics against code known
// to run on MI300 and MI350.
//
//===----------------------------------------------------------------------===//

#include "PeerKernels.h"

#include "mla-fp8/Runtime/PeerLaunch.h"
#include "mla-fp8/Runtime/Verify.h"

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
    {"triton_gfx950_N512_K128_BM16_BN128_w8.hsaco", 512, 128, 16, 128, 18432},
    {"triton_gfx950_N128_K512_BM32_BN64_w8.hsaco", 128, 512, 32, 64, 12288},
};

/// The reference check (Runtime/Verify.h) of `pk`, loaded from `dir` and
/// launched with the peer argument layout and `lds` bytes of dynamic LDS.
runtime::VerifyResult verifyPeer(const std::string &dir, const PeerKernel &pk,
                                 const runtime::VerifyProblem &problem,
                                 unsigned lds) {
  runtime::VerifyResult failed;
  auto co = CodeObject::fromFile(dir + "/" + pk.file);
  if (!co) {
    failed.error = llvm::toString(co.takeError());
    return failed;
  }
  // The chip, and so the weights' fp8 format, is the code object's.
  const ChipInfo &chip = (*co)->getChip();
  runtime::KernelEntry peer;
  peer.symbol = "prequant_bmm";
  peer.chip = chip.name.str();
  peer.n = pk.n;
  peer.k = pk.k;
  peer.groupSize = 128;
  peer.inType = peer.outType = "bf16";
  peer.fp8Type = chip.fp8E4M3TypeName.str();
  auto emulator =
      Emulator::create(std::shared_ptr<const CodeObject>(std::move(*co)));
  if (!emulator) {
    failed.error = llvm::toString(emulator.takeError());
    return failed;
  }
  peer.weightScale = kernel_abi::WeightScaleMode::PerTensor;
  runtime::TritonPeerLaunch launch;
  launch.tileM = pk.tileM;
  launch.tileN = pk.tileN;
  launch.config.workgroupSize = {512, 1, 1};
  launch.config.dynamicLdsBytes = lds;
  return runtime::verifyPrequantBmm(
      peer, problem,
      [&](const runtime::PrequantBmmCall &call, unsigned threads) {
        return runtime::launchTritonPeer(**emulator, peer.symbol, pk.n, pk.k,
                                         call, launch, threads);
      });
}

/// (kernel, B, M, transposed Y).
class PeerKernelTest
    : public ::testing::TestWithParam<std::tuple<int, int64_t, int64_t, bool>> {
};

TEST_P(PeerKernelTest, MatchesReference) {
  auto [which, batch, m, transposeY] = GetParam();
  const PeerKernel &pk = kPeers[which];
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  runtime::VerifyProblem p;
  p.batch = batch;
  p.m = m;
  p.seed = 1000 + m;
  p.y.tokenMajor = transposeY;
  runtime::VerifyResult res = verifyPeer(peerDir, pk, p, pk.lds);
  EXPECT_TRUE(res.passed()) << res.error << res.message;
  // SPEC.md: within 1 bf16 ulp (plus f32 accumulation noise). gfx950 keeps
  // this bound although its MFMA model is not bit-accurate (MFMA.cpp):
  // CDNA3's truncating datapath differs from it by at most 2^-24 of
  // |C| + sum |a*b| per MFMA (MfmaTest, Gfx950ModelAgainstCdna3Datapath), and
  // with that datapath in its place every gfx950 case here kept the same
  // maximum error.
  EXPECT_LE(res.maxUlp, 1.0);
  EXPECT_GT(res.stats.mfma, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    PeerKernels, PeerKernelTest,
    ::testing::Combine(::testing::Values(0, 1), ::testing::Values<int64_t>(2),
                       ::testing::Values<int64_t>(1, 16, 17, 33, 64),
                       ::testing::Values(false, true)));

// gfx950: every M edge at B = 4; B = 16 (more workgroups per launch) at two
// of them. At B = 16, M = 64 the K = 512 peers of both chips exceed one
// relative ulp on an output whose reference nearly cancels (inside SPEC.md's
// 2^-20 max|ref| term): the relative bound holds for these inputs, while
// res.passed() is SPEC's rule.
INSTANTIATE_TEST_SUITE_P(
    Gfx950PeerKernelsB4, PeerKernelTest,
    ::testing::Combine(::testing::Values(2, 3), ::testing::Values<int64_t>(4),
                       ::testing::Values<int64_t>(1, 16, 17, 33, 64, 100),
                       ::testing::Values(false)));
INSTANTIATE_TEST_SUITE_P(Gfx950PeerKernelsB16, PeerKernelTest,
                         ::testing::Combine(::testing::Values(2, 3),
                                            ::testing::Values<int64_t>(16),
                                            ::testing::Values<int64_t>(17, 100),
                                            ::testing::Values(true)));

TEST(PeerKernels, ZeroRowsWritesNothing) {
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  runtime::VerifyProblem p;
  p.batch = 2;
  p.m = 0;
  runtime::VerifyResult res = verifyPeer(peerDir, kPeers[0], p, 18432);
  EXPECT_TRUE(res.passed()) << res.error << res.message;
  EXPECT_EQ(res.stats.waves, 0u);
}

TEST(PeerKernels, TooLittleLdsIsReported) {
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  runtime::VerifyProblem p;
  p.batch = 1;
  p.m = 16;
  runtime::VerifyResult res = verifyPeer(peerDir, kPeers[0], p, 1024);
  ASSERT_FALSE(res.passed());
  EXPECT_NE(res.error.find("out-of-bounds LDS"), std::string::npos)
      << res.error;
  EXPECT_NE(res.error.find("lane"), std::string::npos) << res.error;
}

} // namespace

namespace {

TEST(PeerKernels, ThreadedDispatchMatchesSerial) {
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  runtime::VerifyProblem p;
  p.batch = 3;
  p.m = 40;
  p.threads = 1;
  runtime::VerifyResult serial = verifyPeer(peerDir, kPeers[1], p, 12288);
  ASSERT_TRUE(serial.passed()) << serial.error << serial.message;
  // The same bits with three threads, and the same instructions executed.
  p.threads = 3;
  p.repeatThreads = {1};
  runtime::VerifyResult threaded = verifyPeer(peerDir, kPeers[1], p, 12288);
  EXPECT_TRUE(threaded.passed()) << threaded.error << threaded.message;
  EXPECT_EQ(threaded.maxAbsError, serial.maxAbsError);
  EXPECT_EQ(threaded.stats.instructions, serial.stats.instructions);
}

} // namespace
