//===- KernelABITest.cpp - The kernel ABI's table and formulas ------------===//

#include "mla-fp8/ABI/KernelABI.h"

#include "gtest/gtest.h"

#include <limits>

using namespace mlir::mlafp8;

TEST(KernelABI, ArgumentsAreContiguousAndIndexed) {
  llvm::ArrayRef<kernel_abi::KernelArg> args = kernel_abi::getKernelArgs();
  ASSERT_EQ(args.size(), size_t(kernel_abi::kNumArgs));
  unsigned offset = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    EXPECT_EQ(args[i].index, i);
    EXPECT_EQ(args[i].offset, offset) << args[i].name.str();
    EXPECT_EQ(args[i].size, 8u);
    EXPECT_EQ(kernel_abi::lookupKernelArg(args[i].name), &args[i]);
    EXPECT_FALSE(args[i].description.empty());
    offset += args[i].size;
  }
  EXPECT_EQ(offset, kernel_abi::kKernargBytes);
  EXPECT_EQ(args[kernel_abi::kArgWScale].name, "w_scale");
  EXPECT_EQ(args[kernel_abi::kArgM].kind, kernel_abi::ArgKind::I64);
  EXPECT_EQ(kernel_abi::getMetadataValueKind(args[kernel_abi::kArgY].kind),
            "global_buffer");
  EXPECT_EQ(kernel_abi::getMetadataValueKind(args[kernel_abi::kArgM].kind),
            "by_value");
  EXPECT_EQ(kernel_abi::stringifyArgKind(args[kernel_abi::kArgWorkspace].kind),
            "pointer");
  EXPECT_EQ(kernel_abi::lookupKernelArg("ws"), nullptr);
}

TEST(KernelABI, GridAndWorkgroup) {
  kernel_abi::LaunchShape shape{/*n=*/512, /*blockM=*/32, /*blockN=*/64,
                                /*waves=*/4, /*splitK=*/2};
  EXPECT_EQ(kernel_abi::getGrid(shape, 33, 16),
            (std::array<int64_t, 3>{16, 2, 16}));
  EXPECT_EQ(kernel_abi::getGrid(shape, 0, 16)[1], 0);
  std::array<kernel_abi::GridDim, 3> dims = kernel_abi::getGridDims(shape);
  EXPECT_EQ(dims[0].str(), "16");
  EXPECT_EQ(dims[1].str(), "ceil(M/32)");
  EXPECT_EQ(dims[2].str(), "B");
  // No overflow at the extremes, and negative counts launch nothing.
  EXPECT_EQ(dims[1].evaluate(std::numeric_limits<int64_t>::max(), 1),
            std::numeric_limits<int64_t>::max() / 32 + 1);
  EXPECT_EQ(dims[1].evaluate(-5, 1), 0);
  EXPECT_EQ(kernel_abi::getWorkgroupSize(shape),
            (std::array<int64_t, 3>{256, 1, 1}));
}

TEST(KernelABI, Workspace) {
  // 8 N tiles x 2 splits x 32 x 64 f32, then 8 counters: 131104 bytes,
  // rounded up to 256.
  kernel_abi::LaunchShape shape{512, 32, 64, 4, 2};
  EXPECT_EQ(kernel_abi::getWorkspaceBytesPerBlock(shape), 131328);
  EXPECT_EQ(kernel_abi::getWorkspaceCountersOffset(shape), 131072);
  EXPECT_EQ(kernel_abi::getWorkspaceBytes(shape, 33, 3), 131328 * 2 * 3);
  shape.splitK = 1;
  EXPECT_EQ(kernel_abi::getWorkspaceBytesPerBlock(shape), 0);
  shape.n = 0;
  EXPECT_EQ(kernel_abi::getWorkspaceBytesPerBlock(shape), std::nullopt);
  shape = {512, 1 << 20, 64, 4, 2};
  EXPECT_EQ(kernel_abi::getWorkspaceBytesPerBlock(shape), std::nullopt);
  shape = {512, 32, 64, 4, 2};
  EXPECT_EQ(kernel_abi::getWorkspaceBytes(shape, int64_t(1) << 62, 1 << 20),
            std::nullopt);
  EXPECT_EQ(kernel_abi::getLDSBytes(16, 128), 16 * 128 + 64);
}

TEST(KernelABI, Symbols) {
  kernel_abi::KernelNameFields f;
  f.n = 512;
  f.k = 128;
  f.groupSize = 128;
  f.outType = "bf16";
  f.chip = "gfx942";
  f.minRows = 1;
  f.maxRows = 256;
  EXPECT_EQ(kernel_abi::getKernelSymbol(f),
            "mla_fp8_n512_k128_g128_bf16_gfx942_r1_256");
  f.perBatchScale = true;
  f.hasBias = true;
  f.minRows = 8193;
  f.maxRows = 0;
  EXPECT_EQ(kernel_abi::getKernelSymbol(f),
            "mla_fp8_n512_k128_g128_bf16_pb_bias_gfx942_r8193_inf");
  f.inType = "f16";
  EXPECT_EQ(kernel_abi::getKernelSymbol(f),
            "mla_fp8_n512_k128_g128_xf16_bf16_pb_bias_gfx942_r8193_inf");
}
