//===- TileTable.cpp - Tuned tiles per chip, (N, K) and M range
//------------===//
//
// One entry per kernel: {min_m, max_m (0 = unbounded), block_m, block_n, waves,
// mfma, split_k, stages, occupancy}. The comment on each entry says what it
// buys, in modelled kernel time on MI300X (docs/timing-model.md); the grid is
// ceil(N / block_n) * split_k x ceil(M / block_m) x B.
//
// Decode kernels are bound by one workgroup's serial chain (its memory round
// trips and its X passes), not by arithmetic (SPEC.md). A workgroup's waves
// quantize its rows into LDS once for all of its N columns, so several waves
// per workgroup shorten every wave's chain, and wide N tiles avoid
// re-quantizing X once per narrow tile, which dominates the issue time at
// large B. Split-K (each split stores an f32 partial to a workspace and the
// last to arrive sums them in split order, ABI/KernelABI.h) costs two more
// round trips and HBM traffic: no table entry gains from it since V-up's
// groups are loaded all at once (stages = 4).
//
// Waves split the N side of the tile first (one W slice each, no W sharing
// through LDS needed); the remaining waves split M.
//
// V-up has four K-groups per row: its tiles use stages = 4, so the global loads
// of every group (W fragments and X rows) are issued before group 0 is
// quantized; every group is quantized into its own LDS copy, then all are
// multiplied (KernelPlan::ldsBuffers). K-up has one group, where stages
// changes nothing.
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

  // Chosen with the emulator's timing model (docs/timing-model.md): every
  // candidate compiled and modelled at B = 8, 16, 32, 128 on each range's
  // edges (bench/tile-sweep.cpp), keeping the tile that beats the peer
  // kernels at every B (bench/kernel-time.py). What decided: a wave's serial
  // chain is its X passes, so more waves per workgroup (each quantizing a
  // share of the rows into LDS once for all N columns of the tile) shorten
  // it more than more workgroups do; and at large B the issue term counts
  // every re-quantization of X, so wide N tiles pay.

  // gfx942 (MI300X: 304 CUs, 64 KiB LDS), K-up: N = 512, K = 128, one group.
  // Modelled times below are MI300X, from bench/tile-sweep.cpp.
  static const TileConfig gfx942KUp[] = {
      // 8 waves of 16 columns, 2 rows each to quantize: 1.25 us at B <= 32.
      // 16x16 single-wave tiles (512 workgroups at B = 16, one per CU and
      // more) took 1.32 us at M = 1 and 1.77 at M = 16: every one of them
      // quantizes all its rows alone.
      {1, 16, 16, 128, 8, k16},
      // 32 rows, 8 waves of 16 columns: 1.38 us at B = 8 up to M = 256 and
      // 12.7 at B = 128, M = 256 (32x16 single-wave tiles: 2.1-2.6 us at
      // B = 8; 32x256: 1.67 at B = 8, 9.5 at B = 128).
      {17, 32, 32, 128, 8, k16},
      {33, 64, 32, 128, 8, k16},
      {65, 128, 32, 128, 8, k16},
      {129, 256, 32, 128, 8, k16},
      // 32x32x16 MFMAs, 64x256 tiles: X quantized twice per row instead of
      // four times, which the issue term counts at large B.
      {257, 512, 64, 256, 8, k32},
      {513, 0, 128, 256, 8, k32},
  };

  // gfx942, V-up: N = 128, K = 512, four groups, emitted as straight-line
  // code with all four groups' loads issued up front (stages = 4): one memory
  // round trip per workgroup. 16x64 tiles: 2.09 us at B <= 16 up to M = 256
  // (stages = 2: 2.31; split_k = 2, which the table used up to M = 16 before
  // the groups were unrolled: 2.74, its partials costing two more round
  // trips; split_k = 4: 2.49).
  static const TileConfig gfx942VUp[] = {
      {1, 16, 16, 64, 4, k16, 1, 4},
      {17, 32, 16, 64, 4, k16, 1, 4},
      {33, 64, 16, 64, 4, k16, 1, 4},
      // 5.64 us at B = 128 (32x128: 5.54, but 2.40 against 2.09 at B <= 16).
      {65, 128, 16, 64, 4, k16, 1, 4},
      // 32x128, 8 waves, from here: half the X re-reads of 16x64, which the
      // issue term counts at large B (B = 128, M = 256: 9.50 us against
      // 11.28).
      {129, 256, 32, 128, 8, k16, 1, 4},
      {257, 512, 32, 128, 8, k16, 1, 4},
      {513, 0, 32, 128, 8, k16, 1, 4},
  };

  // gfx950 (MI355X: 256 CUs, 160 KiB LDS): the gfx942 tile shapes, each
  // with gfx950's f8f6f4 MFMA of the same output block. One 16x16x128 (or
  // two 32x32x64) covers a 128-column group where 16x16x32 (32x32x16) takes
  // four (eight): fewer issues and dependent-MFMA stalls, and the row scales
  // are applied to one partial per group either way. Modelled on MI355X
  // (bench/tile-sweep.cpp, B = 8, 16, 32, 128 and M = 1 to 1024), every
  // f8f6f4 tile is as fast as or faster than its 16x16x32 / 32x32x16 twin
  // at every (B, M); where both are HBM-bound they tie. So no gfx950 entry
  // keeps the older shapes; they serve groups shorter than the f8f6f4 K
  // (128 or 64; the heuristic tiles, TileSelection.cpp). The
  // f8f6f4 issue cycles (32 / 64, ISA-NOTES.md section 4) are the uncertain
  // constant here: at twice those (then no faster per k than the older
  // shapes) 16x16x128 still wins on issue slots (V-up 16x64: 1.555 us
  // against 1.660) and 32x32x64 ties 32x32x16 (K-up 128x256 at B = 8,
  // M = 1024: 2.655 against 2.652).
  //
  // gfx950's 160 KiB of LDS does not pay here: every V-up tile below already
  // holds one LDS copy per group (at most 17 KiB), and a 64x128 tile given
  // four copies (33 KiB: kMaxBatchedLDSBytes raised to half of 160 KiB for
  // the trial) models 2.078 us at M = 1 and 2.937 at B = 8, M = 64,
  // issue-bound on its X passes, against 1.903 for 32x128.
  static const MfmaLayout *const k128 = lookupMfma("m16n16k128");
  static const MfmaLayout *const k64 = lookupMfma("m32n32k64");

  // K-up: the same tiles as gfx942, for the same reasons (a wave's chain
  // does not depend on the CU count). 16x128: 1.032 us at B <= 32 and
  // M <= 16 (16x16x32: 1.048); 32x128: 1.102 (1.135), and 10.13 us at
  // B = 128, M = 256 (10.51); 64x256: 1.640 us at B = 8, M = 512 (32x32x16:
  // 1.710; 16x16x128: 1.655); 128x256: 2.475 at B = 8, M = 1024 (2.652),
  // HBM-bound at B = 128 (22.02, a tie).
  static const TileConfig gfx950KUp[] = {
      {1, 16, 16, 128, 8, k128},    {17, 32, 32, 128, 8, k128},
      {33, 64, 32, 128, 8, k128},   {65, 128, 32, 128, 8, k128},
      {129, 256, 32, 128, 8, k128}, {257, 512, 64, 256, 8, k64},
      {513, 0, 128, 256, 8, k64},
  };

  // V-up leaves 16x64 earlier than on gfx942: with 256 CUs the 16x64 grid
  // becomes issue-bound sooner at B = 128 (M = 64: 2.63 us against 2.36
  // for 16x128; M = 128: 5.25 against 3.67 for 32x128), at a cost of 0.05
  // and 0.36 us at B <= 32. With 16x16x128: 16x64 1.545 us at B <= 32
  // (16x16x32: 1.660), 16x128 1.593 (1.743), 32x128 1.903 (1.970) and at
  // B = 128, M = 1024 23.31 (24.91). 32x128 with 4 waves of 32x32x64: 2.66
  // us at B = 8, M = 64 (a wave's 32 rows of MFMAs in series); 64x128:
  // 2.91, issue-bound on its X passes.
  static const TileConfig gfx950VUp[] = {
      {1, 16, 16, 64, 4, k128, 1, 4},     {17, 32, 16, 64, 4, k128, 1, 4},
      {33, 64, 16, 128, 8, k128, 1, 4},   {65, 128, 32, 128, 8, k128, 1, 4},
      {129, 256, 32, 128, 8, k128, 1, 4}, {257, 512, 32, 128, 8, k128, 1, 4},
      {513, 0, 32, 128, 8, k128, 1, 4},
  };

  static const TileTableEntry table[] = {
      {"gfx942", 512, 128, 128, gfx942KUp},
      {"gfx942", 128, 512, 128, gfx942VUp},
      {"gfx950", 512, 128, 128, gfx950KUp},
      {"gfx950", 128, 512, 128, gfx950VUp},
  };
  return table;
}
