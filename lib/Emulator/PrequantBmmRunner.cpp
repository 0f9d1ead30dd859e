//===- PrequantBmmRunner.cpp - Run a prequant-bmm kernel vs the reference -===//

#include "mla-fp8/Emulator/PrequantBmmRunner.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <random>

using namespace llvm;

namespace mlir::mlafp8::emu {

std::optional<PrequantAbi> parsePrequantAbi(StringRef name) {
  if (name == "triton-peer")
    return PrequantAbi::TritonPeer;
  return std::nullopt;
}

/// Spacing of bf16 values at the magnitude of `v`.
static double bf16Ulp(double v) {
  v = std::fabs(v);
  if (v < 0x1p-126)
    return 0x1p-133;
  int e = std::ilogb(v);
  return std::ldexp(1.0, e - 7);
}

Expected<PrequantBmmResult> runPrequantBmm(Emulator &emu, StringRef kernel,
                                           PrequantAbi abi,
                                           const PrequantBmmProblem &p,
                                           unsigned tileM, unsigned tileN,
                                           const DispatchConfig &baseConfig) {
  if (p.B <= 0 || p.M < 0 || p.N <= 0 || p.K <= 0)
    return createStringError("invalid problem shape B=%lld M=%lld N=%lld "
                             "K=%lld",
                             (long long)p.B, (long long)p.M, (long long)p.N,
                             (long long)p.K);
  std::mt19937_64 rng(p.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int64_t B = p.B, M = p.M, N = p.N, K = p.K;

  std::vector<uint16_t> x(std::max<int64_t>(B * M * K, 1));
  for (auto &v : x)
    v = floatToBF16(normal(rng) * p.xScale);
  std::vector<float> wf(B * N * K);
  for (auto &v : wf)
    v = normal(rng) * 0.05f;
  std::vector<uint8_t> w(B * N * K);
  float ws = quantizeWeights(wf.data(), int64_t(wf.size()), p.format, w.data());

  // Y with a sentinel so unwritten elements show up.
  const uint16_t sentinel = 0x7fc1;
  int64_t yStrideB = p.transposeY ? N : M * N;
  int64_t yStrideM = p.transposeY ? B * N : N;
  std::vector<uint16_t> y(std::max<int64_t>(B * M * N, 1), sentinel);

  PrequantBmmArgs args;
  args.B = B;
  args.M = M;
  args.N = N;
  args.K = K;
  args.groupSize = p.groupSize;
  args.format = p.format;
  args.x = x.data();
  args.xStrideB = M * K;
  args.xStrideM = K;
  args.w = w.data();
  args.weightDescale = &ws;
  std::vector<double> ref;
  std::string err;
  if (!referencePrequantBmmF64(args, ref, &err))
    return createStringError("reference failed: %s", err.c_str());

  DeviceMemory mem;
  auto mapVec = [&](StringRef name, auto &vec, bool ro) -> Expected<uint64_t> {
    size_t bytes = vec.size() * sizeof(vec[0]);
    uint64_t addr = mem.allocate(name, bytes, 256);
    if (Error e = mem.write(
            addr,
            ArrayRef<uint8_t>(reinterpret_cast<uint8_t *>(vec.data()), bytes)))
      return std::move(e);
    mem.lookup(name)->readOnly = ro;
    return addr;
  };
  auto xa = mapVec("X", x, true);
  auto wa = mapVec("W", w, true);
  std::vector<float> wsv = {ws};
  auto wsa = mapVec("ws", wsv, true);
  auto ya = mapVec("Y", y, false);
  for (auto *e : {&xa, &wa, &wsa, &ya})
    if (!*e)
      return e->takeError();

  DispatchConfig cfg = baseConfig;
  std::vector<KernelArg> kargs;
  switch (abi) {
  case PrequantAbi::TritonPeer: {
    int64_t tiles = (M + tileM - 1) / tileM * ((N + tileN - 1) / tileN);
    cfg.gridWorkgroups = {uint32_t(B), uint32_t(tiles), 1};
    kargs = {KernelArg::pointer(*xa),
             KernelArg::pointer(*wa),
             KernelArg::pointer(*ya),
             KernelArg::pointer(*wsa),
             KernelArg::i32(int32_t(M)),
             KernelArg::i32(int32_t(N)),
             KernelArg::i32(int32_t(K)),
             KernelArg::i32(int32_t(M * K)),
             KernelArg::i32(int32_t(K)),
             KernelArg::i32(int32_t(N * K)),
             KernelArg::i32(int32_t(K)),
             KernelArg::i32(int32_t(yStrideB)),
             KernelArg::i32(int32_t(yStrideM)),
             KernelArg::pointer(0),
             KernelArg::pointer(0)};
    break;
  }
  }
  PrequantBmmResult result;
  if (M > 0) {
    std::vector<uint8_t> packed = packKernelArgs(kargs);
    auto stats = emu.dispatch(kernel, cfg, packed, mem);
    if (!stats)
      return stats.takeError();
    result.stats = *stats;
  }
  if (Error e = mem.read(
          *ya, MutableArrayRef<uint8_t>(reinterpret_cast<uint8_t *>(y.data()),
                                        y.size() * 2)))
    return std::move(e);

  // Gather Y in (B, M, N) order and compare.
  std::vector<uint16_t> yd(B * M * N);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        yd[(b * M + m) * N + n] = y[b * yStrideB + m * yStrideM + n];
  result.error = compareOutputsToF64(yd.data(), ref.data(), int64_t(yd.size()),
                                     OutType::BF16);
  double maxRef = 0;
  for (double r : ref)
    maxRef = std::max(maxRef, std::fabs(r));
  for (size_t i = 0; i < yd.size(); ++i) {
    if (yd[i] == sentinel) {
      ++result.unwritten;
      continue;
    }
    double got = bf16ToFloat(yd[i]);
    double tol = bf16Ulp(ref[i]) + 0x1p-20 * maxRef;
    if (!(std::fabs(got - ref[i]) <= tol)) {
      if (result.failures++ == 0) {
        raw_string_ostream os(result.firstFailure);
        int64_t b = i / (M * N), m = i / N % M, n = i % N;
        os << "Y[" << b << "," << m << "," << n << "] = " << got
           << ", reference " << format("%.9g", ref[i]);
      }
    }
  }
  return result;
}

} // namespace mlir::mlafp8::emu
