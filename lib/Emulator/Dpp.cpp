//===- Dpp.cpp - DPP lane selection ---------------------------------------===//

#include "Dpp.h"

namespace mlir::mlafp8::emu::dpp {

/// Whether `ctrl` is `base` plus an amount in 1..15.
static bool takesAmount(uint16_t ctrl, Ctrl base) {
  return ctrl > base && ctrl <= base + kAmountMask;
}

int getSourceLane(uint16_t ctrl, unsigned lane) {
  unsigned row = lane & ~(kRowLanes - 1), inRow = lane & (kRowLanes - 1);
  unsigned n = ctrl & kAmountMask;
  if (ctrl <= QuadPermLast)
    return (lane & ~3u) | ((ctrl >> (2 * (lane & 3))) & 3);
  if (takesAmount(ctrl, RowShl))
    return inRow + n < kRowLanes ? int(lane + n) : -1;
  if (takesAmount(ctrl, RowShr))
    return inRow >= n ? int(lane - n) : -1;
  if (takesAmount(ctrl, RowRor))
    return int(row + ((inRow + kRowLanes - n) & (kRowLanes - 1)));
  switch (ctrl) {
  case WaveShl1:
    return lane < 63 ? int(lane + 1) : -1;
  case WaveRol1:
    return int((lane + 1) & 63);
  case WaveShr1:
    return lane > 0 ? int(lane - 1) : -1;
  case WaveRor1:
    return int((lane + 63) & 63);
  case RowMirror:
    return int(row + 15 - inRow);
  case RowHalfMirror:
    return int((lane & ~7u) + 7 - (lane & 7));
  case RowBcast15:
    return row ? int(row - 1) : -1;
  case RowBcast31:
    return lane >= 32 ? 31 : -1;
  default:
    break;
  }
  if (ctrl >= RowNewBcast && ctrl <= RowNewBcast + kAmountMask)
    return int(row + n);
  return -1;
}

} // namespace mlir::mlafp8::emu::dpp
