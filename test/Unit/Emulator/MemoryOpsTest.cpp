//===- MemoryOpsTest.cpp - Global, buffer, scratch and LDS accesses -------===//
//
// Expected values are worked out from the CDNA3 ISA descriptions and
// ISA-NOTES §2.
//
//===----------------------------------------------------------------------===//

#include "AsmHelper.h"

#include "gtest/gtest.h"

using namespace mlir::mlafp8::emu;
using namespace mlir::mlafp8::emu::test;

namespace {

std::vector<uint32_t> iota(unsigned n, uint32_t base = 0) {
  std::vector<uint32_t> v(n);
  for (unsigned i = 0; i < n; ++i)
    v[i] = base + i;
  return v;
}

uint64_t upload(DeviceMemory &mem, const char *name,
                const std::vector<uint32_t> &v) {
  uint64_t a = mem.allocate(name, v.size() * 4);
  EXPECT_FALSE(bool(mem.write(
      a, {reinterpret_cast<const uint8_t *>(v.data()), v.size() * 4})));
  return a;
}

std::vector<uint32_t> download(DeviceMemory &mem, uint64_t a, unsigned n) {
  std::vector<uint32_t> v(n);
  EXPECT_FALSE(
      bool(mem.read(a, {reinterpret_cast<uint8_t *>(v.data()), n * 4})));
  return v;
}

TEST(MemoryOps, GlobalLoadStoreWithSaddrAndVaddr) {
  DeviceMemory mem;
  uint64_t in = upload(mem, "in", iota(272, 1000));
  uint64_t out = mem.allocate("out", 256 * 4);
  auto r = runAsm(
      "v_lshlrev_b32_e32 v1, 4, v0\n"
      "global_load_dwordx4 v[4:7], v1, s[0:1] offset:16\n"
      "v_lshlrev_b32_e32 v10, 2, v0\n"
      "v_mov_b32_e32 v11, 0\n"
      "v_lshl_add_u64 v[12:13], s[2:3], 0, v[10:11]\n"
      "s_waitcnt vmcnt(0)\n"
      "global_store_dword v[12:13], v7, off\n"
      "global_load_ushort v8, v1, s[0:1] offset:2\n"
      "global_load_sbyte v9, v1, s[0:1] offset:-16\n",
      [&](WaveState &w) {
        w.setSgpr64(0, in + 16);
        w.setSgpr64(2, out);
      },
      &mem);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves[0];
  // Lane l loads dwords 4l+8 .. 4l+11 (base +16, offset +16).
  EXPECT_EQ(w.v(4, 3), 1000u + 20);
  EXPECT_EQ(w.v(7, 3), 1000u + 23);
  auto o = download(mem, out, 64);
  EXPECT_EQ(o[63], 1000u + 4 * 63 + 11);
  EXPECT_EQ(w.v(8, 0), 0u); // high half of dword 4 (1004)
  EXPECT_EQ(w.v(9, 1),
            0xffffffecu); // byte 0 of dword 4 (1004 = 0x3ec), sign-extended
  EXPECT_EQ(r->stats.bytesStored, 256u);
}

TEST(MemoryOps, OutOfBoundsGlobalAccessNamesBufferAndLane) {
  DeviceMemory mem;
  uint64_t buf = upload(mem, "X", iota(64));
  auto r = runAsm(
      "v_lshlrev_b32_e32 v1, 2, v0\n"
      "v_add_u32_e32 v1, 4, v1\n"
      "global_load_dword v2, v1, s[0:1]\n",
      [&](WaveState &w) { w.setSgpr64(0, buf); }, &mem);
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("lane 63"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'X'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 bytes past the end"), std::string::npos) << msg;
  EXPECT_NE(msg.find("global_load_dword"), std::string::npos) << msg;
}

TEST(MemoryOps, BufferRangeChecking) {
  DeviceMemory mem;
  uint64_t buf = upload(mem, "B", iota(64, 500));
  uint64_t out = mem.allocate("out", 64 * 4);
  // V#: base, stride 0, num_records = 40 bytes, dst_sel/format as MLIR.
  auto setup = [&](WaveState &w) {
    w.sgpr[4] = uint32_t(buf);
    w.sgpr[5] = uint32_t(buf >> 32) & 0xffff;
    w.sgpr[6] = 40;
    w.sgpr[7] = 0x00027000;
    w.sgpr[8] = uint32_t(out);
    w.sgpr[9] = uint32_t(out >> 32) & 0xffff;
    w.sgpr[10] = 16; // only 4 dwords of out may be written
    w.sgpr[11] = 0x00027000;
  };
  auto r = runAsm("v_lshlrev_b32_e32 v1, 2, v0\n"
                  "buffer_load_dword v2, v1, s[4:7], 0 offen\n"
                  "buffer_load_dwordx2 v[4:5], v1, s[4:7], 0 offen offset:32\n"
                  "v_mov_b32_e32 v3, 7\n"
                  "buffer_store_dword v3, v1, s[8:11], 0 offen\n",
                  setup, &mem);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves[0];
  EXPECT_EQ(w.v(2, 9), 509u);
  EXPECT_EQ(w.v(2, 10), 0u); // offset 40: out of range
  // Lane 0: offsets 32..39 in range, both dwords.
  EXPECT_EQ(w.v(4, 0), 508u);
  EXPECT_EQ(w.v(5, 0), 509u);
  // Lane 1: offset 36: first dword in range, second (40..43) not.
  EXPECT_EQ(w.v(4, 1), 509u);
  EXPECT_EQ(w.v(5, 1), 0u);
  auto o = download(mem, out, 64);
  EXPECT_EQ(o[3], 7u);
  EXPECT_EQ(o[4], 0u); // dropped
}

TEST(MemoryOps, ScratchIsPrivatePerLane) {
  auto r = runAsm("scratch_store_dword off, v0, off offset:8\n"
                  "v_mov_b32_e32 v2, 4\n"
                  "scratch_store_dwordx2 v2, v[4:5], off offset:8\n"
                  "scratch_load_dword v1, off, off offset:8\n"
                  "scratch_load_dwordx2 v[6:7], off, off offset:12\n",
                  [](WaveState &w) {
                    for (unsigned l = 0; l < 64; ++l) {
                      w.v(4, l) = 100 + l;
                      w.v(5, l) = 200 + l;
                    }
                  });
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves[0];
  EXPECT_EQ(w.v(1, 13), 13u);
  EXPECT_EQ(w.v(6, 13), 113u);
  EXPECT_EQ(w.v(7, 13), 213u);
}

TEST(MemoryOps, LdsWidthsAndPairs) {
  auto r = runAsm(
      "v_lshlrev_b32_e32 v1, 4, v0\n"
      "ds_write_b128 v1, v[4:7]\n"
      "ds_read_b32 v8, v1 offset:8\n"
      "ds_read2_b32 v[10:11], v1 offset0:1 offset1:4\n"
      "ds_read2st64_b64 v[12:15], v1 offset1:1\n"
      "ds_write2_b32 v1, v20, v21 offset0:0 offset1:2\n"
      "ds_read_b64 v[16:17], v1\n"
      "ds_read_u16_d16_hi v22, v1 offset:2\n"
      "ds_read_i8 v23, v1 offset:3\n",
      [](WaveState &w) {
        for (unsigned l = 0; l < 64; ++l) {
          w.v(4, l) = 4 * l;
          w.v(5, l) = 4 * l + 1;
          w.v(6, l) = 4 * l + 2;
          w.v(7, l) = 0xf0000000u | l;
          w.v(20, l) = 0xa0 + l;
          w.v(21, l) = 0xb0 + l;
          w.v(22, l) = 0x1234;
        }
      },
      nullptr, "gfx942", 64, 2048);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves[0];
  EXPECT_EQ(w.v(8, 5), 22u);
  EXPECT_EQ(w.v(10, 5), 21u);
  EXPECT_EQ(w.v(11, 5), 24u); // next lane's first dword
  // st64: second pair at +512 bytes = lane + 32.
  EXPECT_EQ(w.v(12, 2), 8u);
  EXPECT_EQ(w.v(14, 2), 4u * 34);
  EXPECT_EQ(w.v(15, 2), 4u * 34 + 1);
  EXPECT_EQ(w.v(16, 1), 0xa1u);
  EXPECT_EQ(w.v(17, 1), 5u);
  EXPECT_EQ(w.v(22, 0), 0x00001234u); // high half of dword 0 (0xa0) is 0
  EXPECT_EQ(w.v(23, 7), 0u);
  EXPECT_EQ(r->stats.ldsBytesWritten, 64u * 16 + 64u * 8);
}

TEST(MemoryOps, LdsOutOfBounds) {
  auto r = runAsm("v_lshlrev_b32_e32 v1, 4, v0\n ds_read_b128 v[4:7], v1\n", {},
                  nullptr, "gfx942", 64, 1000);
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("out-of-bounds LDS load of 16 bytes at 992"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("lane 62"), std::string::npos) << msg;
}

TEST(MemoryOps, PermutesAndSwizzle) {
  auto r = runAsm("v_mul_u32_u24_e32 v1, 10, v0\n"
                  "v_sub_u32_e32 v2, 63, v0\n"
                  "v_lshlrev_b32_e32 v2, 2, v2\n"
                  "ds_bpermute_b32 v3, v2, v1\n"
                  "ds_permute_b32 v4, v2, v1\n"
                  "ds_swizzle_b32 v5, v1 offset:swizzle(SWAP,16)\n"
                  "ds_swizzle_b32 v6, v1 offset:swizzle(QUAD_PERM,3,2,1,0)\n"
                  "ds_swizzle_b32 v7, v1 offset:swizzle(BROADCAST,8,2)\n"
                  "s_mov_b64 exec, 0xfffffffffffffffe\n"
                  "ds_bpermute_b32 v8, v2, v1\n"
                  "s_mov_b64 exec, -1\n",
                  {}, nullptr, "gfx942", 64, 64);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves[0];
  EXPECT_EQ(w.v(3, 0), 630u); // reads lane 63
  EXPECT_EQ(w.v(4, 0), 630u); // lane 63 sent to lane 0
  EXPECT_EQ(w.v(5, 3), 190u);
  EXPECT_EQ(w.v(5, 40), 560u);
  EXPECT_EQ(w.v(6, 5), 60u);
  EXPECT_EQ(w.v(7, 13), 100u);
  EXPECT_EQ(w.v(8, 63), 0u); // source lane 0 inactive
}

TEST(MemoryOps, LdsAtomicsAndBarrierAcrossWaves) {
  // Four waves add into one LDS counter, barrier, then all read it.
  auto r = runAsm("v_mov_b32_e32 v1, 0\n v_mov_b32_e32 v2, 1\n"
                  "ds_write_b32 v1, v1\n s_waitcnt lgkmcnt(0)\n s_barrier\n"
                  "ds_add_u32 v1, v2\n s_waitcnt lgkmcnt(0)\n s_barrier\n"
                  "ds_read_b32 v3, v1\n",
                  {}, nullptr, "gfx942", 256, 16);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  ASSERT_EQ(r->waves.size(), 4u);
  for (const WaveState &w : r->waves)
    EXPECT_EQ(w.v(3, 17), 256u);
}

} // namespace

namespace {

TEST(MemoryOps, GlobalAtomicAddReturnsOldValuePerLane) {
  // global_atomic_add with sc0 returns the pre-op value (CDNA3 ISA, FLAT
  // atomics, GLC/SC0 = return). All 64 lanes add 1 to one counter: lanes
  // are applied one after another, so they see 5..68 and the counter ends
  // at 69; global_atomic_swap without sc0 then resets it and returns nothing.
  DeviceMemory mem;
  uint64_t counter = upload(mem, "counter", {5});
  auto r = runAsm(
      "v_mov_b32_e32 v1, 0\n"
      "v_mov_b32_e32 v2, 1\n"
      "global_atomic_add v3, v1, v2, s[0:1] sc0\n"
      "s_waitcnt vmcnt(0)\n",
      [&](WaveState &w) { w.setSgpr64(0, counter); }, &mem);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  std::vector<bool> seen(64, false);
  for (unsigned lane = 0; lane < 64; ++lane) {
    uint32_t old = r->waves[0].v(3, lane);
    ASSERT_GE(old, 5u);
    ASSERT_LT(old, 69u);
    EXPECT_FALSE(seen[old - 5]) << "lane " << lane;
    seen[old - 5] = true;
  }
  EXPECT_EQ(download(mem, counter, 1)[0], 69u);

  auto reset = runAsm(
      "v_mov_b32_e32 v1, 0\n"
      "global_atomic_swap v1, v1, s[0:1]\n"
      "s_waitcnt vmcnt(0)\n",
      [&](WaveState &w) { w.setSgpr64(0, counter); }, &mem);
  ASSERT_TRUE(bool(reset)) << llvm::toString(reset.takeError());
  EXPECT_EQ(download(mem, counter, 1)[0], 0u);
}

} // namespace
