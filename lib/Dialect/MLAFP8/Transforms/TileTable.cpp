//===- TileTable.cpp - Tuned tiles per chip, (N, K) and M range
//------------===//
//
// One entry per kernel: {min_m, max_m (0 = unbounded), block_m, block_n, waves,
// mfma, split_k, stages, occupancy}. The comment on each entry says what it
// buys. Workgroup counts are for DeepSeek-R1 at TP8 (B = 16 heads per rank);
// the grid is ceil(N / block_n) x ceil(M / block_m) x B.
//
// Decode is bound by launch latency and by how many CUs the grid keeps busy,
// not by arithmetic (SPEC.md), so small M uses narrow N tiles to fill the
// chip; what they cost is that each N tile re-reads and re-quantizes its X
// rows, which is cheap at decode sizes (X is KiBs, W is 1 MiB). When even the
// narrowest tile leaves CUs idle (V-up: N = 128 is only 8 tiles of 16), the
// K-groups are split across workgroups (split_k): each stores an f32 partial
// to a workspace and the last to arrive sums them in split order, so results
// are deterministic (ABI/KernelABI.h). Split-K costs a workspace round trip
// (block_m x block_n f32 per split) and one atomic per workgroup.
//
// Waves split the N side of the tile first (one W slice each, no W sharing
// through LDS needed); the remaining waves split M.
//
// V-up has four K-groups per row: its tiles use stages = 2, so the global loads
// of group g + 1 (W fragments and X rows) are in flight while group g is
// quantized and multiplied; the serial chain of a workgroup then pays the
// global-memory latency about once instead of once per group. K-up has one
// group, where stages changes nothing.
//
//===----------------------------------------------------------------------===//

#include "TileTable.h"

using namespace mlir;
using namespace mlir::mlafp8;

ArrayRef<TileTableEntry> mlir::mlafp8::getTileTable() {
  // Built on first use, so that the table never depends on the order in
  // which files' globals are initialized (the MFMA records themselves are
  // constant-initialized).
  static const MfmaLayout *const k16 = lookupMfma("m16n16k32");
  static const MfmaLayout *const k32 = lookupMfma("m32n32k16");

  // gfx942 (MI300X: 304 CUs, 64 KiB LDS), K-up: N = 512, K = 128, one group.
  static const TileConfig gfx942KUp[] = {
      // 16-column tiles: 32 N tiles x 16 heads = 512 single-wave workgroups at
      // M = 1, 1.7 per CU, so no CU idles; 4 MFMAs per workgroup.
      {1, 16, 16, 16, 1, k16},
      // Two 16-row MFMA blocks share each W fragment; still 512 workgroups.
      {17, 32, 32, 16, 1, k16},
      // 32x32 tiles, two waves: 16 N x 2 M tiles x 16 = 512 workgroups at
      // M = 64.
      {33, 64, 32, 32, 2, k16},
      // Each wave: 64 rows x 16 columns, W fragment reused by 4 MFMA row
      // blocks; 512 workgroups at M = 128.
      {65, 128, 64, 32, 2, k16},
      // 64x64, four waves: 512 workgroups at M = 256, 256 at M = 129.
      {129, 256, 64, 64, 4, k16},
      // 32x32x16 MFMAs (half the issue count per flop of 16x16x32 at this
      // size), 64x128 tiles: 320-512 workgroups for M = 257..512.
      {257, 512, 64, 128, 4, k32},
      // 128x128, each wave 128x32 (64 accumulator VGPRs): 512 workgroups at
      // M = 1024, W read once per 128 rows.
      {513, 0, 128, 128, 4, k32},
  };

  // gfx942, V-up: N = 128, K = 512, four groups.
  static const TileConfig gfx942VUp[] = {
      // 16-column tiles split 4 ways over the 4 K-groups: 8 N tiles x 4 splits
      // x 16 = 512 workgroups at M = 1 (1.7 per CU of 304; without split-K,
      // 128 would leave 176 CUs idle). One group per workgroup: no prefetch.
      {1, 16, 16, 16, 1, k16, 4, 1},
      // 32 rows per tile, W fragments reused twice; split 4 ways: 512
      // workgroups (128 without split-K).
      {17, 32, 32, 16, 1, k16, 4, 1},
      // 2 M tiles at M = 33..64, split 2 ways (two groups each, the second
      // prefetched): 512 workgroups instead of 256 of 304 CUs.
      {33, 64, 32, 16, 1, k16, 2, 2},
      // 32x32, two waves: 256 workgroups at M = 128.
      {65, 128, 32, 32, 2, k16, 1, 2},
      // 64x32: each wave 64x16, 256 workgroups at M = 256.
      {129, 256, 64, 32, 2, k16, 1, 2},
      // 64x64, four waves: 256 workgroups at M = 512.
      {257, 512, 64, 64, 4, k16, 1, 2},
      // 32x32x16, 128x64 tiles, each wave 64x32: 256 workgroups at M = 1024.
      {513, 0, 128, 64, 4, k32, 1, 2},
  };

  // gfx950 (MI355X: 256 CUs, 160 KiB LDS), K-up. Same reasoning as gfx942 with
  // 256 CUs: 512 workgroups at small M is 2 per CU.
  static const TileConfig gfx950KUp[] = {
      // 512 single-wave workgroups at M = 1 (2 per CU).
      {1, 16, 16, 16, 1, k16},
      // 512 workgroups, W fragment reused by two MFMA row blocks.
      {17, 32, 32, 16, 1, k16},
      // 512 workgroups at M = 64.
      {33, 64, 32, 32, 2, k16},
      // 512 workgroups at M = 128.
      {65, 128, 64, 32, 2, k16},
      // 512 workgroups at M = 256.
      {129, 256, 64, 64, 4, k16},
      // 32x32x16 MFMAs: 320-512 workgroups for M = 257..512.
      {257, 512, 64, 128, 4, k32},
      // 128x128: 512 workgroups at M = 1024.
      {513, 0, 128, 128, 4, k32},
  };

  // gfx950, V-up.
  static const TileConfig gfx950VUp[] = {
      // Split 4 ways over the 4 K-groups: 8 x 4 x 16 = 512 workgroups at M = 1,
      // 2 per CU (128 without split-K: half the chip idle).
      {1, 16, 16, 16, 1, k16, 4, 1},
      // W fragments reused twice; split 4 ways: 512 workgroups (128 without).
      {17, 32, 32, 16, 1, k16, 4, 1},
      // 256 workgroups at M = 64: one per CU.
      {33, 64, 32, 16, 1, k16, 1, 2},
      // 256 workgroups at M = 128.
      {65, 128, 32, 32, 2, k16, 1, 2},
      // 256 workgroups at M = 256.
      {129, 256, 64, 32, 2, k16, 1, 2},
      // 256 workgroups at M = 512.
      {257, 512, 64, 64, 4, k16, 1, 2},
      // 256 workgroups at M = 1024, 32x32x16 MFMAs.
      {513, 0, 128, 64, 4, k32, 1, 2},
  };

  static const TileTableEntry table[] = {
      {"gfx942", 512, 128, 128, gfx942KUp},
      {"gfx942", 128, 512, 128, gfx942VUp},
      {"gfx950", 512, 128, 128, gfx950KUp},
      {"gfx950", 128, 512, 128, gfx950VUp},
  };
  return table;
}
