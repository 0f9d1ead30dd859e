//===- Dpp.h - DPP lane-selection controls ----------------------*- C++ -*-===//
//
// The values of the DPP dpp_ctrl field (ISA-NOTES §3; a row is 16 lanes),
// named once for the text parser that encodes them and for the lane
// selection that decodes them.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_LIB_EMULATOR_DPP_H
#define MLA_FP8_LIB_EMULATOR_DPP_H

#include <cstdint>

namespace mlir::mlafp8::emu::dpp {

/// dpp_ctrl values. The controls that take an amount n (row_shl:n, row_shr:n,
/// row_ror:n with n in 1..15, row_newbcast:n) are their base plus n.
enum Ctrl : uint16_t {
  /// quad_perm:[a,b,c,d] is a | b << 2 | c << 4 | d << 6: 0x00 to 0xff.
  QuadPermLast = 0xff,
  /// quad_perm:[0,1,2,3], what an instruction without DPP would read.
  QuadPermIdentity = 0xe4,
  /// Lane i reads lane i + n of its row.
  RowShl = 0x100,
  /// Lane i reads lane i - n of its row.
  RowShr = 0x110,
  /// Lane i reads lane (i - n) mod 16 of its row.
  RowRor = 0x120,
  /// Whole-wave shifts and rotates by one lane.
  WaveShl1 = 0x130,
  WaveRol1 = 0x134,
  WaveShr1 = 0x138,
  WaveRor1 = 0x13c,
  /// Lane i reads lane 15 - i of its row.
  RowMirror = 0x140,
  /// Lane i reads lane 7 - i of its half row.
  RowHalfMirror = 0x141,
  /// row_bcast:15: each row reads lane 15 of the previous row.
  RowBcast15 = 0x142,
  /// row_bcast:31: rows 2 and 3 read lane 31.
  RowBcast31 = 0x143,
  /// gfx90a+ row_newbcast:n: every lane reads lane n of its row.
  RowNewBcast = 0x150,
};

/// The bits of the amount n in a control that takes one.
constexpr uint16_t kAmountMask = 0xf;

/// Lanes per DPP row.
constexpr unsigned kRowLanes = 16;

/// The lane that `lane` reads under control `ctrl`, or -1 when it reads no
/// lane (out of range, or an unknown control).
int getSourceLane(uint16_t ctrl, unsigned lane);

} // namespace mlir::mlafp8::emu::dpp

#endif // MLA_FP8_LIB_EMULATOR_DPP_H
