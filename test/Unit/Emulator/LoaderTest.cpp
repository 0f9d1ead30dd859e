//===- LoaderTest.cpp - Code object loading and initial wave state --------===//

#include "AsmHelper.h"
#include "PeerKernels.h"

#include "mla-fp8/Emulator/Emulator.h"

#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

using namespace mlir::mlafp8::emu;

namespace {

TEST(Loader, PeerKernelDescriptorAndMetadata) {
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  auto co = CodeObject::fromFile(
      peerDir + "/triton_gfx942_N512_K128_BM16_BN128_w8.hsaco");
  ASSERT_TRUE(bool(co)) << llvm::toString(co.takeError());
  EXPECT_EQ((*co)->getChip().name, "gfx942");
  auto k = (*co)->getKernel("prequant_bmm");
  ASSERT_TRUE(bool(k)) << llvm::toString(k.takeError());
  // Values read with llvm-readelf / llvm-objdump -s -j .rodata.
  EXPECT_EQ(k->descriptorAddress, 0x740u);
  EXPECT_EQ(k->entryAddress, 0x1800u);
  EXPECT_EQ(k->descriptor.kernargSize, 88u);
  EXPECT_EQ(k->descriptor.getUserSgprCount(), 16u);
  EXPECT_TRUE(k->descriptor.enablesWorkgroupId(0));
  EXPECT_TRUE(k->descriptor.enablesWorkgroupId(1));
  EXPECT_FALSE(k->descriptor.enablesWorkgroupId(2));
  EXPECT_TRUE(k->descriptor.hasCodeProperty(3));
  EXPECT_FALSE(k->descriptor.hasCodeProperty(1));
  EXPECT_EQ(k->descriptor.getKernargPreloadDwords(), 14u);
  EXPECT_TRUE(k->descriptor.getIEEEMode());
  EXPECT_EQ(k->kernargSegmentSize, 88u);
  EXPECT_EQ(k->maxFlatWorkgroupSize, 512u);
  EXPECT_EQ(k->args.size(), 15u);
  EXPECT_EQ(k->vgprCount, 57u);
}

TEST(Loader, Errors) {
  std::vector<uint8_t> junk(64, 0x42);
  auto co = CodeObject::fromBytes(junk);
  EXPECT_FALSE(bool(co));
  llvm::consumeError(co.takeError());
  auto missing = CodeObject::fromFile("/nonexistent.hsaco");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError()).find("cannot read"),
            std::string::npos);
  // The checks above ran; the rest needs a peer kernel.
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  auto peer = CodeObject::fromFile(
      peerDir + "/triton_gfx942_N512_K128_BM16_BN128_w8.hsaco");
  ASSERT_TRUE(bool(peer));
  auto k = (*peer)->getKernel("nope");
  ASSERT_FALSE(bool(k));
  EXPECT_NE(llvm::toString(k.takeError()).find("prequant_bmm"),
            std::string::npos);
}

TEST(Loader, ChipComesFromTheChipTable) {
  MLAFP8_PEER_KERNELS_DIR_OR_SKIP(peerDir);
  auto bytes = llvm::MemoryBuffer::getFile(
      peerDir + "/triton_gfx942_N512_K128_BM16_BN128_w8.hsaco");
  ASSERT_TRUE(bool(bytes));
  std::vector<uint8_t> elf((*bytes)->getBufferStart(),
                           (*bytes)->getBufferEnd());
  // e_flags (offset 48): the low byte is the EF_AMDGPU_MACH of the chip.
  const unsigned kFlagsOffset = 48;
  for (const mlir::mlafp8::ChipInfo &chip : mlir::mlafp8::getSupportedChips()) {
    elf[kFlagsOffset] = uint8_t(chip.elfMach);
    auto co = CodeObject::fromBytes(elf);
    ASSERT_TRUE(bool(co)) << llvm::toString(co.takeError());
    EXPECT_EQ(&(*co)->getChip(), &chip);
  }
  // gfx90a is no row of the table: the error lists the rows.
  elf[kFlagsOffset] = 0x3f;
  auto co = CodeObject::fromBytes(elf);
  ASSERT_FALSE(bool(co));
  std::string message = llvm::toString(co.takeError());
  EXPECT_EQ(message.rfind("unsupported AMDGPU target (e_flags mach 0x3f); "
                          "the emulator models ",
                          0),
            0u)
      << message;
  for (const mlir::mlafp8::ChipInfo &chip : mlir::mlafp8::getSupportedChips())
    EXPECT_NE(message.find(chip.name.str()), std::string::npos) << message;
}

TEST(Loader, InitialStateFollowsDescriptor) {
  // dispatch ptr (s[0:1]), kernarg ptr (s[2:3]), then workgroup ids x, y, z
  // at s4..s6; work-item ids packed in v0.
  auto code = test::assemble(".text\ns_endpgm\n", "gfx942");
  ASSERT_TRUE(bool(code)) << llvm::toString(code.takeError());
  KernelDescriptor kd;
  kd.kernelCodeProperties = (1 << 1) | (1 << 3);
  kd.computePgmRsrc2 = (4 << 1) | (1 << 7) | (1 << 8) | (1 << 9) | (2 << 11);
  std::shared_ptr<const CodeObject> co(CodeObject::fromRawCode(
      *code, *mlir::mlafp8::lookupChip("gfx942"), "k", kd));
  auto emu = Emulator::create(co);
  ASSERT_TRUE(bool(emu));
  DeviceMemory mem;
  std::vector<WaveState> ends;
  DispatchConfig cfg;
  cfg.gridWorkgroups = {2, 3, 4};
  cfg.workgroupSize = {8, 4,
                       3}; // 96 work-items: two waves, 32 lanes in the second
  cfg.onWaveEnd = [&](const WaveState &w) { ends.push_back(w); };
  std::vector<uint8_t> args = {1, 2, 3, 4};
  uint64_t kernarg = 0, packet = 0;
  cfg.onWaveStart = [&](WaveState &w) {
    packet = w.getSgpr64(0);
    kernarg = w.getSgpr64(2);
    if (w.workgroupId == std::array<uint32_t, 3>{1, 2, 3}) {
      EXPECT_EQ(w.sgpr[4], 1u);
      EXPECT_EQ(w.sgpr[5], 2u);
      EXPECT_EQ(w.sgpr[6], 3u);
      // Lane 5 of wave 1: flat id 69 = x 5, y 0, z 2.
      if (w.waveIdInGroup == 1) {
        EXPECT_EQ(w.v(0, 5), 5u | (0u << 10) | (2u << 20));
        EXPECT_EQ(w.getExec(), 0xffffffffull);
      } else {
        // Lane 13: x 5, y 1, z 0.
        EXPECT_EQ(w.v(0, 13), 5u | (1u << 10));
        EXPECT_EQ(w.getExec(), ~0ull);
      }
      // Kernarg segment: explicit bytes, then hidden block counts and group
      // sizes at align8(4) = 8.
      uint32_t v;
      ASSERT_FALSE(
          bool(mem.read(kernarg, {reinterpret_cast<uint8_t *>(&v), 4})));
      EXPECT_EQ(v, 0x04030201u);
      ASSERT_FALSE(bool(
          mem.read(kernarg + 8 + 4, {reinterpret_cast<uint8_t *>(&v), 4})));
      EXPECT_EQ(v, 3u); // block_count_y
      uint16_t g;
      ASSERT_FALSE(bool(
          mem.read(kernarg + 8 + 14, {reinterpret_cast<uint8_t *>(&g), 2})));
      EXPECT_EQ(g, 4u); // group_size_y
      ASSERT_FALSE(
          bool(mem.read(packet + 4, {reinterpret_cast<uint8_t *>(&g), 2})));
      EXPECT_EQ(g, 8u); // dispatch packet workgroup_size_x
      ASSERT_FALSE(
          bool(mem.read(packet + 16, {reinterpret_cast<uint8_t *>(&v), 4})));
      EXPECT_EQ(v, 12u); // grid_size_y in work-items
    }
  };
  auto stats = (*emu)->dispatch("k", cfg, args, mem);
  ASSERT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  EXPECT_EQ(stats->workgroups, 24u);
  EXPECT_EQ(stats->waves, 48u);
  EXPECT_EQ(ends.size(), 48u);
}

TEST(Loader, StepLimitAndUnimplementedStop) {
  auto loop = test::runAsm("L: s_branch L");
  ASSERT_FALSE(bool(loop));
  EXPECT_NE(llvm::toString(loop.takeError()).find("step limit"),
            std::string::npos);
  auto unimpl = test::runAsm("v_cvt_sr_fp8_f32 v1, v2, v3");
  ASSERT_FALSE(bool(unimpl));
  EXPECT_NE(llvm::toString(unimpl.takeError()).find("v_cvt_sr_fp8_f32"),
            std::string::npos);
  auto notInTable = test::runAsm("v_sad_u32 v1, v2, v3, v4");
  ASSERT_FALSE(bool(notInTable));
  std::string msg = llvm::toString(notInTable.takeError());
  EXPECT_NE(msg.find("not implemented: v_sad_u32"), std::string::npos) << msg;
}

} // namespace

namespace {

TEST(Loader, UndefinedStateIsPoisoned) {
  // A kernel that uses an unwritten VGPR pair as an address faults instead of
  // reading address 0 of some buffer.
  DeviceMemory mem;
  mem.allocate("low", 4096);
  auto r = test::runAsm("global_load_dword v2, v[6:7], off\n", {}, &mem);
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("0xffffffffffffffff"), std::string::npos) << msg;
}

} // namespace

namespace {

TEST(Loader, OnlyRegularFilesAreRead) {
  // /dev/zero never ends: it used to be read until memory ran out.
  auto zero = CodeObject::fromFile("/dev/zero");
  ASSERT_FALSE(bool(zero));
  EXPECT_EQ(llvm::toString(zero.takeError()),
            "'/dev/zero' is not a regular file");
  auto directory = CodeObject::fromFile("/");
  ASSERT_FALSE(bool(directory));
  EXPECT_EQ(llvm::toString(directory.takeError()), "'/' is not a regular file");
}

} // namespace
