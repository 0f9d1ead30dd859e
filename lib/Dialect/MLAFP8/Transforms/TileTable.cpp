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
// of every group (W fragments and X rows) are in flight while group 0 is
// quantized and multiplied. K-up has one group, where stages changes nothing.
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

  // gfx950 (MI355X: 256 CUs, 160 KiB LDS): the same K-up tiles, for the same
  // reasons (a wave's chain does not depend on the CU count);
  // bench/kernel-time.py compares them with the gfx950 peers.
  static const TileConfig gfx950KUp[] = {
      {1, 16, 16, 128, 8, k16},    {17, 32, 32, 128, 8, k16},
      {33, 64, 32, 128, 8, k16},   {65, 128, 32, 128, 8, k16},
      {129, 256, 32, 128, 8, k16}, {257, 512, 64, 256, 8, k32},
      {513, 0, 128, 256, 8, k32},
  };

  // V-up on gfx950 leaves 16x64 earlier: with 256 CUs the 16x64 grid becomes
  // issue-bound sooner at B = 128 (M = 64: 2.67 us against 2.36 for 16x128;
  // M = 128: 5.35 against 3.67 for 32x128), at a cost of 0.08 and 0.31 us at
  // B <= 32 (1.66 us for 16x64).
  static const TileConfig gfx950VUp[] = {
      {1, 16, 16, 64, 4, k16, 1, 4},     {17, 32, 16, 64, 4, k16, 1, 4},
      {33, 64, 16, 128, 8, k16, 1, 4},   {65, 128, 32, 128, 8, k16, 1, 4},
      {129, 256, 32, 128, 8, k16, 1, 4}, {257, 512, 32, 128, 8, k16, 1, 4},
      {513, 0, 32, 128, 8, k16, 1, 4},
  };

  static const TileTableEntry table[] = {
      {"gfx942", 512, 128, 128, gfx942KUp},
      {"gfx942", 128, 512, 128, gfx942VUp},
      {"gfx950", 512, 128, 128, gfx950KUp},
      {"gfx950", 128, 512, 128, gfx950VUp},
  };
  return table;
}
