//===- ScalarOpsTest.cpp - SALU, control flow and SMEM --------------------===//
//
// Expected values are worked out from the CDNA3 ISA descriptions.
//
//===----------------------------------------------------------------------===//

#include "AsmHelper.h"

#include "gtest/gtest.h"

using namespace mlir::mlafp8::emu;
using namespace mlir::mlafp8::emu::test;

namespace {

/// Runs one wave and returns its final state.
WaveState run1(const std::string &src,
               std::function<void(WaveState &)> setup = {},
               DeviceMemory *mem = nullptr) {
  auto r = runAsm(src, setup, mem);
  EXPECT_TRUE(bool(r)) << (r ? "" : llvm::toString(r.takeError()));
  if (!r)
    return WaveState();
  return r->waves.at(0);
}

TEST(ScalarOps, AddWithCarryChain) {
  // 64-bit add through s_add_u32 / s_addc_u32: 0xffffffff_ffffffff + 2.
  WaveState w = run1("s_mov_b32 s0, -1\n s_mov_b32 s1, -1\n"
                     "s_add_u32 s2, s0, 2\n s_addc_u32 s3, s1, 0\n");
  EXPECT_EQ(w.sgpr[2], 1u);
  EXPECT_EQ(w.sgpr[3], 0u);
  EXPECT_TRUE(w.scc); // carry out of the high half
}

TEST(ScalarOps, SignedOverflowAndCompare) {
  WaveState w = run1("s_mov_b32 s0, 0x7fffffff\n s_add_i32 s1, s0, 1\n");
  EXPECT_EQ(w.sgpr[1], 0x80000000u);
  EXPECT_TRUE(w.scc); // signed overflow
  w = run1("s_movk_i32 s0, 0xff80\n s_cmpk_lt_i32 s0, 0\n");
  EXPECT_EQ(w.sgpr[0], 0xffffff80u); // SOPK immediates are sign-extended
  EXPECT_TRUE(w.scc);
}

TEST(ScalarOps, ShiftsBitfieldsAndSelect) {
  WaveState w = run1("s_mov_b32 s0, 0x12345678\n"
                     "s_bfe_u32 s1, s0, 0x80004\n" // width 8 at offset 4
                     "s_lshl_b64 s[2:3], s[0:1], 8\n"
                     "s_ashr_i32 s4, -16, 2\n"
                     "s_cmp_eq_u32 s1, 0x67\n"
                     "s_cselect_b32 s5, 11, 22\n"
                     "s_abs_i32 s6, -7\n"
                     "s_bcnt1_i32_b64 s7, s[2:3]\n"
                     "s_ff1_i32_b32 s8, 0x50\n");
  EXPECT_EQ(w.sgpr[1], 0x67u);
  EXPECT_EQ(w.sgpr[2], 0x34567800u);
  EXPECT_EQ(w.sgpr[3], 0x6712u); // s1 already holds 0x67
  EXPECT_EQ(w.sgpr[4], uint32_t(-4));
  EXPECT_EQ(w.sgpr[5], 11u);
  EXPECT_EQ(w.sgpr[6], 7u);
  EXPECT_EQ(w.sgpr[8], 4u);
}

TEST(ScalarOps, SaveExecAndBranches) {
  // Count down a loop with s_cbranch_scc1, then mask EXEC.
  WaveState w = run1("s_mov_b32 s0, 5\n s_mov_b32 s1, 0\n"
                     "s_mov_b32 s6, 0\n s_mov_b32 s7, 0\n"
                     "L: s_add_u32 s1, s1, 3\n s_sub_u32 s0, s0, 1\n"
                     "s_cmp_lg_u32 s0, 0\n s_cbranch_scc1 L\n"
                     "s_mov_b64 s[2:3], 0xff\n"
                     "s_and_saveexec_b64 s[4:5], s[2:3]\n"
                     "s_cbranch_execz Skip\n s_mov_b32 s6, 1\n"
                     "Skip: s_mov_b64 s[2:3], 0\n"
                     "s_and_saveexec_b64 s[8:9], s[2:3]\n"
                     "s_cbranch_execz End\n s_mov_b32 s7, 1\n End:\n");
  EXPECT_EQ(w.sgpr[1], 15u);
  EXPECT_EQ(w.getSgpr64(4), ~0ull); // old EXEC
  EXPECT_EQ(w.sgpr[6], 1u);
  EXPECT_EQ(w.getSgpr64(8), 0xffull);
  EXPECT_EQ(w.sgpr[7], 0u); // skipped: EXEC was zero
  EXPECT_EQ(w.getExec(), 0ull);
  EXPECT_FALSE(w.scc);
}

TEST(ScalarOps, GetPcAndSetReg) {
  WaveState w = run1("s_nop 0\n s_getpc_b64 s[0:1]\n"
                     "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 23, 1), 1\n"
                     "s_getreg_b32 s2, hwreg(HW_REG_MODE, 23, 1)\n");
  EXPECT_EQ(w.getSgpr64(0), 8u); // address of the next instruction
  EXPECT_EQ(w.sgpr[2], 1u);
  EXPECT_EQ((w.mode >> 23) & 1, 1u);
}

TEST(ScalarOps, ScalarLoadsAreChecked) {
  DeviceMemory mem;
  uint64_t buf = mem.allocate("args", 32);
  uint32_t vals[8] = {10, 11, 12, 13, 14, 15, 16, 17};
  ASSERT_FALSE(bool(mem.write(buf, {reinterpret_cast<uint8_t *>(vals), 32})));
  auto setup = [&](WaveState &w) { w.setSgpr64(0, buf); };
  WaveState w = run1("s_load_dwordx4 s[4:7], s[0:1], 0x8\n"
                     "s_load_dword s8, s[0:1], 0x1c\n s_waitcnt lgkmcnt(0)\n",
                     setup, &mem);
  EXPECT_EQ(w.sgpr[4], 12u);
  EXPECT_EQ(w.sgpr[7], 15u);
  EXPECT_EQ(w.sgpr[8], 17u);
  auto bad = runAsm("s_load_dwordx2 s[4:5], s[0:1], 0x1c\n", setup, &mem);
  ASSERT_FALSE(bool(bad));
  std::string msg = llvm::toString(bad.takeError());
  EXPECT_NE(msg.find("out-of-bounds load"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'args'"), std::string::npos) << msg;
}

} // namespace
