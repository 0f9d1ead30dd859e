//===- VectorOpsTest.cpp - VALU, VOPC, VOP3P, DPP, SDWA, cross-lane -------===//
//
// Expected values are worked out from the CDNA3 ISA descriptions.
//
//===----------------------------------------------------------------------===//

#include "AsmHelper.h"

#include "llvm/ADT/bit.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir::mlafp8::emu;
using namespace mlir::mlafp8::emu::test;

namespace {

WaveState run1(const std::string &src,
               std::function<void(WaveState &)> setup = {}) {
  auto r = runAsm(src, setup);
  EXPECT_TRUE(bool(r)) << (r ? "" : llvm::toString(r.takeError()));
  if (!r)
    return WaveState();
  return r->waves.at(0);
}
uint32_t f(float x) { return llvm::bit_cast<uint32_t>(x); }
float asf(uint32_t b) { return llvm::bit_cast<float>(b); }

TEST(VectorOps, IntegerLaneOps) {
  WaveState w = run1("v_add_u32_e32 v1, 100, v0\n"
                     "v_lshl_add_u64 v[2:3], v[4:5], 4, v[6:7]\n"
                     "v_perm_b32 v8, v9, v10, v11\n"
                     "v_bfe_u32 v12, v9, 8, 12\n"
                     "v_mad_u64_u32 v[14:15], s[0:1], v9, v9, v[6:7]\n"
                     "v_mul_hi_u32 v16, v9, 16\n"
                     "v_xad_u32 v17, v0, 1, 10\n",
                     [](WaveState &w) {
                       for (unsigned l = 0; l < 64; ++l) {
                         w.v(4, l) = 0x80000001u;
                         w.v(5, l) = l;
                         w.v(6, l) = 5;
                         w.v(7, l) = 0;
                         w.v(9, l) = 0xaabbccddu;
                         w.v(10, l) = 0x11223344u;
                         // bytes: 0 of src1, 4 of src0(=byte0 of v9), 12 ->
                         // 0x00, 13 -> 0xff
                         w.v(11, l) = 0x0d0c0400u;
                       }
                     });
  EXPECT_EQ(w.v(1, 7), 107u);
  // (l:0x80000001 << 4) + 5
  uint64_t e = ((uint64_t(3) << 32 | 0x80000001u) << 4) + 5;
  EXPECT_EQ(w.v(2, 3), uint32_t(e));
  EXPECT_EQ(w.v(3, 3), uint32_t(e >> 32));
  EXPECT_EQ(w.v(8, 0), 0xff00dd44u);
  EXPECT_EQ(w.v(12, 0), 0xbccu);
  uint64_t sq = uint64_t(0xaabbccddu) * 0xaabbccddu + 5;
  EXPECT_EQ(w.v(14, 9), uint32_t(sq));
  EXPECT_EQ(w.v(15, 9), uint32_t(sq >> 32));
  EXPECT_EQ(w.v(16, 0), 0xau);
  EXPECT_EQ(w.v(17, 6), (6u ^ 1u) + 10u);
}

TEST(VectorOps, CarryCompareAndExecMasking) {
  WaveState w =
      run1("v_mov_b32_e32 v1, -1\n"
           "v_add_co_u32_e32 v2, vcc, v1, v0\n" // carry for lanes >= 1
           "v_addc_co_u32_e64 v3, s[6:7], 0, 0, vcc\n"
           "v_cmp_gt_u32_e64 s[0:1], 4, v0\n" // lanes 0..3
           "v_cndmask_b32_e64 v4, 7, 9, s[0:1]\n"
           "s_and_saveexec_b64 s[2:3], s[0:1]\n"
           "v_mov_b32_e32 v5, 1\n" // only lanes 0..3
           "s_or_b64 exec, exec, s[2:3]\n"
           "v_cmpx_lt_u32_e64 s[4:5], v0, 2\n" // EXEC = lanes 0, 1
           "v_mov_b32_e32 v6, 1\n"
           "s_mov_b64 exec, -1\n",
           [](WaveState &w) {
             for (unsigned l = 0; l < 64; ++l)
               w.v(5, l) = w.v(6, l) = 0x55;
           });
  EXPECT_EQ(w.v(2, 0), 0xffffffffu);
  EXPECT_EQ(w.v(2, 5), 4u);
  EXPECT_EQ(w.v(3, 0), 0u);
  EXPECT_EQ(w.v(3, 5), 1u);
  EXPECT_EQ(w.getSgpr64(0), 0xfull);
  EXPECT_EQ(w.v(4, 2), 9u);
  EXPECT_EQ(w.v(4, 20), 7u);
  EXPECT_EQ(w.v(5, 3), 1u);
  EXPECT_EQ(w.v(5, 4), 0x55u);
  EXPECT_EQ(w.getSgpr64(4), 0x3ull);
  EXPECT_EQ(w.v(6, 1), 1u);
  EXPECT_EQ(w.v(6, 2), 0x55u);
}

TEST(VectorOps, FloatSemantics) {
  WaveState w = run1("v_fma_f32 v1, v10, v11, v12\n"
                     "v_med3_f32 v2, v13, -1.0, 1.0\n" // NaN -> min3 = -1
                     "v_max_f32_e32 v3, v13, v10\n" // qNaN vs number -> number
                     "v_cvt_u32_f32_e32 v4, v14\n"  // saturate
                     "v_cvt_u32_f32_e32 v5, v13\n"  // NaN -> 0
                     "v_max3_f32 v6, |v15|, v10, -4.0\n"
                     "v_mul_f32_e64 v7, -v10, v11 mul:2\n"
                     "v_add_f32_e64 v8, v10, v11 clamp\n"
                     "v_ldexp_f32 v9, v10, -3\n",
                     [](WaveState &w) {
                       for (unsigned l = 0; l < 64; ++l) {
                         w.v(10, l) = f(1.5f);
                         w.v(11, l) = f(3.0f);
                         w.v(12, l) = f(0.25f);
                         w.v(13, l) = 0x7fc00000u;
                         w.v(14, l) = f(5e9f);
                         w.v(15, l) = f(-7.0f);
                       }
                     });
  EXPECT_EQ(asf(w.v(1, 0)), 4.75f);
  EXPECT_EQ(asf(w.v(2, 0)), -1.0f);
  EXPECT_EQ(asf(w.v(3, 0)), 1.5f);
  EXPECT_EQ(w.v(4, 0), 0xffffffffu);
  EXPECT_EQ(w.v(5, 0), 0u);
  EXPECT_EQ(asf(w.v(6, 0)), 7.0f);
  EXPECT_EQ(asf(w.v(7, 0)), -9.0f);
  EXPECT_EQ(asf(w.v(8, 0)), 1.0f);
  EXPECT_EQ(asf(w.v(9, 0)), 0.1875f);
}

TEST(VectorOps, DivisionSequenceIsCorrectlyRounded) {
  // LLVM's f32 division expansion for 1.0 / v1.
  WaveState w = run1("v_div_scale_f32 v2, s[0:1], v1, v1, 1.0\n"
                     "v_rcp_f32_e32 v3, v2\n"
                     "v_fma_f32 v4, -v2, v3, 1.0\n"
                     "v_fmac_f32_e32 v3, v4, v3\n"
                     "v_div_scale_f32 v4, vcc, 1.0, v1, 1.0\n"
                     "v_mul_f32_e32 v5, v4, v3\n"
                     "v_fma_f32 v6, -v2, v5, v4\n"
                     "v_fmac_f32_e32 v5, v6, v3\n"
                     "v_fma_f32 v2, -v2, v5, v4\n"
                     "v_div_fmas_f32 v2, v2, v3, v5\n"
                     "v_div_fixup_f32 v2, v2, v1, 1.0\n",
                     [](WaveState &w) {
                       for (unsigned l = 0; l < 64; ++l)
                         w.v(1, l) = f(float(l + 1) * 0.37f);
                     });
  for (unsigned l = 0; l < 64; ++l)
    EXPECT_EQ(asf(w.v(2, l)), 1.0f / (float(l + 1) * 0.37f)) << l;
}

TEST(VectorOps, PackedMath) {
  WaveState w =
      run1("v_pk_fma_f32 v[4:5], v[0:1], v[2:3], v[6:7] op_sel_hi:[1,0,1]\n"
           "v_pk_mul_f32 v[8:9], v[0:1], v[2:3] op_sel:[1,0] op_sel_hi:[0,1]\n"
           "v_pk_add_f16 v10, v11, v12 op_sel:[1,0] op_sel_hi:[0,1]\n"
           "v_pk_mov_b32 v[14:15], v[0:1], v[2:3] op_sel:[1,0]\n",
           [](WaveState &w) {
             for (unsigned l = 0; l < 64; ++l) {
               w.v(0, l) = f(2.0f);
               w.v(1, l) = f(3.0f);
               w.v(2, l) = f(10.0f);
               w.v(3, l) = f(100.0f);
               w.v(6, l) = f(0.5f);
               w.v(7, l) = f(0.25f);
               w.v(11, l) = 0x40003c00u; // {2.0, 1.0} as f16 (hi, lo)
               w.v(12, l) = 0x44004200u; // {4.0, 3.0}
             }
           });
  // hi lane uses src1's low dword (op_sel_hi[1] = 0).
  EXPECT_EQ(asf(w.v(4, 0)), 2.0f * 10.0f + 0.5f);
  EXPECT_EQ(asf(w.v(5, 0)), 3.0f * 10.0f + 0.25f);
  // lo: src0.hi * src1.lo; hi: src0.lo * src1.hi.
  EXPECT_EQ(asf(w.v(8, 0)), 30.0f);
  EXPECT_EQ(asf(w.v(9, 0)), 200.0f);
  // lo: src0.hi (2.0) + src1.lo (3.0) = 5.0 (0x4500); hi: src0.lo (1.0) +
  // src1.hi (4.0) = 5.0.
  EXPECT_EQ(w.v(10, 0), 0x45004500u);
  EXPECT_EQ(asf(w.v(14, 0)), 3.0f);
  EXPECT_EQ(asf(w.v(15, 0)), 10.0f);
}

/// v_fma_mix*: each source is f32, or f16 from the half op_sel picks when
/// op_sel_hi is set; one rounding to the destination type; mixlo/mixhi keep
/// the other half of the destination.
TEST(VectorOps, MixedPrecisionFma) {
  WaveState w =
      run1("v_fma_mix_f32 v4, v0, v1, v2 op_sel:[0,1,0] op_sel_hi:[0,1,0]\n"
           "v_fma_mixlo_f16 v5, v0, v3, 0\n"
           "v_fma_mixhi_f16 v6, -v0, |v7|, v2 op_sel_hi:[0,0,0]\n"
           "v_fma_mixlo_f16 v8, v9, v9, 0\n",
           [](WaveState &w) {
             for (unsigned l = 0; l < 64; ++l) {
               w.v(0, l) = f(3.0f);
               w.v(1, l) = 0x44003c00u; // f16 {hi 4.0, lo 1.0}
               w.v(2, l) = f(0.5f);
               // 1 + 2^-11 + 2^-20: above the f16 tie between 1 and 1 + 2^-10
               // only by a bit that a rounding through f32 would keep too, so
               // the single rounding gives 1 + 2^-10 (0x3c01).
               w.v(3, l) = f((1.0f + 0x1p-11f + 0x1p-20f) / 3.0f);
               w.v(5, l) = 0xabcd0000u;
               w.v(6, l) = 0x0000beefu;
               w.v(7, l) = f(-2.0f);
               // 2^-8 squared is 2^-16, below f16's smallest normal: a
               // denormal.
               w.v(9, l) = f(0x1p-8f);
               w.v(8, l) = 0x12340000u;
             }
           });
  // src1 is f16, its high half (op_sel[1]) = 4.0: 3 * 4 + 0.5.
  EXPECT_EQ(asf(w.v(4, 0)), 12.5f);
  // 3 * v3 is 1 + 2^-11 + 2^-20 up to f32 rounding, which rounds up in f16.
  EXPECT_EQ(w.v(5, 0), 0xabcd3c01u);
  // -3 * |-2| + 0.5 = -5.5 = 0xc580 in the high half; low half kept.
  EXPECT_EQ(w.v(6, 0), 0xc580beefu);
  EXPECT_EQ(w.v(8, 0), 0x12340000u | 0x0100u); // 2^-16 = 256 * 2^-24
}

/// gfx950 v_maximum3/v_minimum3 propagate NaN (unlike v_max3/v_min3, which
/// return the other operand) and order -0 below +0.
TEST(VectorOps, IeeeMaximumMinimum3) {
  auto r = runAsm(
      "v_maximum3_f32 v3, v0, v1, v2\n"
      "v_minimum3_f32 v4, v0, v1, v2\n"
      "v_max3_f32 v5, v0, v1, v2\n",
      [](WaveState &w) {
        for (unsigned l = 0; l < 64; ++l) {
          w.v(0, l) = f(l == 1 ? NAN : 1.0f);
          w.v(1, l) = f(5.0f);
          w.v(2, l) = f(l == 2 ? 0.0f : -3.0f);
        }
        w.v(0, 2) = f(-0.0f);
        w.v(1, 2) = f(-0.0f);
      },
      /*memory=*/nullptr, "gfx950");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves.at(0);
  EXPECT_EQ(asf(w.v(3, 0)), 5.0f);
  EXPECT_EQ(asf(w.v(4, 0)), -3.0f);
  EXPECT_TRUE(std::isnan(asf(w.v(3, 1))));
  EXPECT_TRUE(std::isnan(asf(w.v(4, 1))));
  EXPECT_EQ(asf(w.v(5, 1)), 5.0f); // v_max3 skips the NaN
  EXPECT_EQ(w.v(3, 2), f(0.0f));   // max(-0, -0, +0) = +0
  EXPECT_EQ(w.v(4, 2), f(-0.0f));  // min(-0, -0, +0) = -0
}

TEST(VectorOps, DppRowShiftsMasksAndInPlace) {
  WaveState w = run1(
      "v_mov_b32_e32 v1, v0\n"
      "v_mov_b32_dpp v1, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf\n"
      "v_mov_b32_e32 v2, 99\n"
      "v_mov_b32_dpp v2, v0 row_shr:1 row_mask:0xf bank_mask:0xf\n"
      "v_mov_b32_e32 v3, 99\n"
      "v_mov_b32_dpp v3, v0 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1\n"
      "v_mov_b32_e32 v4, 99\n"
      "v_mov_b32_dpp v4, v0 row_shl:8 row_mask:0x5 bank_mask:0x3\n"
      "v_add_u32_dpp v5, v0, v0 row_mirror row_mask:0xf bank_mask:0xf\n"
      "v_mov_b32_dpp v6, v0 row_bcast:15 row_mask:0xa bank_mask:0xf\n");
  EXPECT_EQ(w.v(1, 0), 1u);
  EXPECT_EQ(w.v(1, 1), 0u);
  EXPECT_EQ(w.v(1, 6), 7u);
  EXPECT_EQ(w.v(2, 17), 16u);
  EXPECT_EQ(w.v(2, 16), 99u); // first lane of a row: no source, not written
  EXPECT_EQ(w.v(3, 16), 0u);  // bound_ctrl: reads zero
  EXPECT_EQ(w.v(4, 0), 8u);   // row 0, bank 0
  EXPECT_EQ(w.v(4, 8), 99u);  // bank 2 masked
  EXPECT_EQ(w.v(4, 16), 99u); // row 1 masked
  EXPECT_EQ(w.v(4, 37), 45u); // row 2, bank 1
  EXPECT_EQ(w.v(5, 0), 15u + 0u);
  EXPECT_EQ(w.v(5, 18), 29u + 18u);
  EXPECT_EQ(w.v(6, 20), 15u); // row 1 gets lane 15
  EXPECT_EQ(w.v(6, 60), 47u);
}

// Every named DPP control, through the whole chain: LLVM assembles it, the
// disassembler prints it, the emulator encodes the printed name and selects
// lanes by it. Lane l holds 100 + l; with bound_ctrl a lane without a source
// reads 0.
TEST(VectorOps, DppEveryNamedControl) {
  struct Control {
    const char *syntax;
    /// The lane that `lane` reads, or -1 for none.
    int (*source)(int lane);
  };
  const Control controls[] = {
      {"quad_perm:[3,2,1,0]", [](int l) { return (l & ~3) | (3 - (l & 3)); }},
      {"row_shl:3", [](int l) { return (l & 15) + 3 < 16 ? l + 3 : -1; }},
      {"row_shr:5", [](int l) { return (l & 15) >= 5 ? l - 5 : -1; }},
      {"row_ror:4", [](int l) { return (l & ~15) | ((l - 4) & 15); }},
      {"wave_shl:1", [](int l) { return l < 63 ? l + 1 : -1; }},
      {"wave_rol:1", [](int l) { return (l + 1) % 64; }},
      {"wave_shr:1", [](int l) { return l > 0 ? l - 1 : -1; }},
      {"wave_ror:1", [](int l) { return (l + 63) % 64; }},
      {"row_mirror", [](int l) { return (l & ~15) | (15 - (l & 15)); }},
      {"row_half_mirror", [](int l) { return (l & ~7) | (7 - (l & 7)); }},
      {"row_bcast:15", [](int l) { return l >= 16 ? (l & ~15) - 1 : -1; }},
      {"row_bcast:31", [](int l) { return l >= 32 ? 31 : -1; }},
      {"row_newbcast:6", [](int l) { return (l & ~15) | 6; }},
  };
  std::string source = "v_add_u32_e32 v1, 100, v0\n";
  unsigned reg = 2;
  for (const Control &c : controls)
    source += "v_mov_b32_dpp v" + std::to_string(reg++) + ", v1 " + c.syntax +
              " row_mask:0xf bank_mask:0xf bound_ctrl:1\n";
  WaveState w = run1(source);
  reg = 2;
  for (const Control &c : controls) {
    for (int lane = 0; lane < 64; ++lane) {
      int from = c.source(lane);
      EXPECT_EQ(w.v(reg, lane), from < 0 ? 0u : 100u + unsigned(from))
          << c.syntax << " lane " << lane;
    }
    ++reg;
  }
}

TEST(VectorOps, SdwaSelects) {
  WaveState w = run1(
      "v_mov_b32_sdwa v2, v1 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE "
      "src0_sel:BYTE_2\n"
      "v_mov_b32_sdwa v3, v1 dst_sel:BYTE_1 dst_unused:UNUSED_PAD "
      "src0_sel:WORD_1\n"
      "v_add_u32_sdwa v4, sext(v1), v1 dst_sel:DWORD dst_unused:UNUSED_PAD "
      "src0_sel:BYTE_3 src1_sel:BYTE_0\n",
      [](WaveState &w) {
        for (unsigned l = 0; l < 64; ++l) {
          w.v(1, l) = 0x87654321u;
          w.v(2, l) = 0xaaaabbbbu;
        }
      });
  EXPECT_EQ(w.v(2, 0), 0x0065bbbbu);
  EXPECT_EQ(w.v(3, 0), 0x00006500u); // low byte of 0x8765 into byte 1
  EXPECT_EQ(w.v(4, 0), uint32_t(int32_t(int8_t(0x87)) + 0x21));
}

TEST(VectorOps, CrossLane) {
  WaveState w = run1("v_mov_b32_e32 v2, 0\n"
                     "v_mul_u32_u24_e32 v1, 3, v0\n"
                     "v_readlane_b32 s0, v1, 5\n"
                     "s_mov_b32 s1, 7\n"
                     "v_writelane_b32 v2, s1, 9\n"
                     "s_mov_b64 exec, 0xf0\n"
                     "v_readfirstlane_b32 s2, v1\n"
                     "v_mbcnt_lo_u32_b32 v3, -1, 0\n"
                     "s_mov_b64 exec, -1\n"
                     "v_mbcnt_lo_u32_b32 v4, -1, 0\n"
                     "v_mbcnt_hi_u32_b32 v4, -1, v4\n");
  EXPECT_EQ(w.sgpr[0], 15u);
  EXPECT_EQ(w.v(2, 9), 7u);
  EXPECT_EQ(w.v(2, 8), 0u);
  EXPECT_EQ(w.sgpr[2], 12u); // lowest active lane is 4
  EXPECT_EQ(w.v(3, 6), 6u);
  EXPECT_EQ(w.v(4, 50), 50u);
}

TEST(VectorOps, Fp8ConversionsGfx942) {
  // gfx942 converts to e4m3fnuz: 1.0 = 0x40, 240 = 0x7f; 300 with FP16_OVFL=1
  // saturates to 0x7f, with 0 it gives NaN 0x80.
  auto r = runAsm("v_cvt_pk_fp8_f32 v3, v1, v2\n"
                  "v_cvt_pk_fp8_f32 v3, v2, v1 op_sel:[0,0,1]\n"
                  "v_cvt_pk_fp8_f32 v4, v5, v1\n"
                  "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 23, 1), 1\n"
                  "v_cvt_pk_fp8_f32 v6, v5, -v5\n"
                  "v_cvt_f32_fp8_sdwa v7, v3 src0_sel:BYTE_2\n"
                  "v_cvt_pk_f32_fp8_sdwa v[8:9], v3 src0_sel:WORD_1\n"
                  "v_cvt_f32_fp8_e32 v10, v3\n",
                  [](WaveState &w) {
                    for (unsigned l = 0; l < 64; ++l) {
                      w.v(1, l) = f(1.0f);
                      w.v(2, l) = f(-0.5f);
                      w.v(5, l) = f(300.0f);
                      w.v(3, l) = 0;
                    }
                  });
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves[0];
  // -0.5 in e4m3fnuz: sign, exponent 7 (bias 8), mantissa 0 -> 0xb8.
  EXPECT_EQ(w.v(3, 0), 0x40b8b840u);
  EXPECT_EQ(w.v(4, 0) & 0xffff, 0x4080u);
  EXPECT_EQ(w.v(6, 0) & 0xffff, 0xff7fu);
  EXPECT_EQ(asf(w.v(7, 0)), -0.5f);
  EXPECT_EQ(asf(w.v(8, 0)), -0.5f);
  EXPECT_EQ(asf(w.v(9, 0)), 1.0f);
  EXPECT_EQ(asf(w.v(10, 0)), 1.0f);
}

TEST(VectorOps, Gfx950ConversionsAreOcp) {
  auto r = runAsm(
      "v_cvt_pk_fp8_f32 v3, v1, v2\n"
      "v_cvt_pk_bf16_f32 v4, v1, v5\n"
      "v_cvt_scalef32_pk_fp8_f32 v6, v1, v2, v7\n"
      "v_cvt_scalef32_f32_fp8 v8, v3, v7 op_sel:[0,1,0]\n",
      [](WaveState &w) {
        for (unsigned l = 0; l < 64; ++l) {
          w.v(1, l) = f(1.0f);
          w.v(2, l) = f(-0.5f);
          w.v(5, l) = f(1.00390625f); // tie: rounds to even 1.0
          w.v(7, l) = f(4.0f);        // scale 2^2
          w.v(3, l) = 0;
          w.v(6, l) = 0;
        }
      },
      nullptr, "gfx950");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves[0];
  // e4m3fn: 1.0 = 0x38, -0.5 = 0xb0.
  EXPECT_EQ(w.v(3, 0), 0xb038u);
  EXPECT_EQ(w.v(4, 0), 0x3f803f80u);
  // 1.0 / 4 = 0.25 = 0x28; -0.5 / 4 = -0.125 = 0xa0.
  EXPECT_EQ(w.v(6, 0), 0xa028u);
  // byte 1 of v3 (-0.5) times 4.
  EXPECT_EQ(asf(w.v(8, 0)), -2.0f);
}

} // namespace

namespace {

TEST(VectorOps, Gfx950Bitop3) {
  // Bit i of the truth table is the result for (src0 << 2 | src1 << 1 |
  // src2) = i: 0xf0 is src0, 0x96 the three-way xor, 0x80 the three-way and,
  // 0xf8 (bits 3-7) src0 | (src1 & src2) and 0xec (bits 2, 3, 5, 6, 7)
  // src1 | (src0 & src2), Triton's sign-or and byte-pack steps. The b16 form
  // applies it to 16-bit halves; op_sel:[1,0,0,1] reads src0's high half and
  // writes the result's high half, keeping the low one.
  auto r = runAsm(
      "v_bitop3_b32 v3, v0, v1, v2 bitop3:0xf0\n"
      "v_bitop3_b32 v4, v0, v1, v2 bitop3:0x96\n"
      "v_bitop3_b32 v5, v0, v1, v2 bitop3:0x80\n"
      "v_bitop3_b16 v6, v0, v1, v2 bitop3:0xf8\n"
      "v_bitop3_b16 v7, v0, v1, v2 bitop3:0xec\n"
      "v_mov_b32_e32 v8, 0x11112222\n"
      "v_bitop3_b16 v8, v0, v1, v2 bitop3:0xf0 op_sel:[1,0,0,1]\n"
      "v_lshlrev_b16_e32 v9, 8, v1\n"
      "v_lshlrev_b16_e32 v10, 20, v2\n",
      [](WaveState &w) {
        for (unsigned l = 0; l < 64; ++l) {
          w.v(0, l) = 0x12ab0ff0u;
          w.v(1, l) = 0xf0f0f0f0u;
          w.v(2, l) = 0xccccccccu;
        }
      },
      nullptr, "gfx950");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves[0];
  EXPECT_EQ(w.v(3, 0), 0x12ab0ff0u);
  EXPECT_EQ(w.v(4, 0), 0x12ab0ff0u ^ 0xf0f0f0f0u ^ 0xccccccccu);
  EXPECT_EQ(w.v(5, 0), 0x12ab0ff0u & 0xf0f0f0f0u & 0xccccccccu);
  // 0x0ff0 | (0xf0f0 & 0xcccc) = 0x0ff0 | 0xc0c0.
  EXPECT_EQ(w.v(6, 0) & 0xffffu, 0xcff0u);
  // 0xf0f0 | (0x0ff0 & 0xcccc) = 0xf0f0 | 0x0cc0.
  EXPECT_EQ(w.v(7, 0) & 0xffffu, 0xfcf0u);
  // 0xf0 selects src0: its high half 0x12ab, into v8's high half.
  EXPECT_EQ(w.v(8, 0), 0x12ab2222u);
  // v_lshlrev_b16: src1's low half shifted by src0 mod 16; gfx9 zeroes the
  // high half. 0xf0f0 << 8 = 0xf000; 0xcccc << (20 mod 16 = 4) = 0xccc0.
  EXPECT_EQ(w.v(9, 0), 0xf000u);
  EXPECT_EQ(w.v(10, 0), 0xccc0u);
}

} // namespace

namespace {

TEST(VectorOps, Gfx950PermlaneSwaps) {
  // permlane16_swap: odd rows of vdst <-> even rows of src; permlane32_swap:
  // rows 2-3 of vdst <-> rows 0-1 of src.
  auto r = runAsm("v_mov_b32_e32 v1, v0\n"
                  "v_add_u32_e32 v2, 100, v0\n"
                  "v_permlane16_swap_b32 v1, v2\n"
                  "v_mov_b32_e32 v3, v0\n"
                  "v_add_u32_e32 v4, 100, v0\n"
                  "v_permlane32_swap_b32 v3, v4\n",
                  {}, nullptr, "gfx950");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const WaveState &w = r->waves[0];
  EXPECT_EQ(w.v(1, 3), 3u);    // row 0 of vdst kept
  EXPECT_EQ(w.v(1, 19), 103u); // row 1 of vdst <- row 0 of src
  EXPECT_EQ(w.v(2, 3), 19u);   // row 0 of src <- row 1 of vdst
  EXPECT_EQ(w.v(2, 19), 119u); // row 1 of src kept
  EXPECT_EQ(w.v(1, 50), 134u); // row 3 <- row 2 of src
  EXPECT_EQ(w.v(3, 40), 108u); // lane 40 <- src lane 8
  EXPECT_EQ(w.v(4, 8), 40u);
  EXPECT_EQ(w.v(3, 8), 8u);
}

} // namespace
