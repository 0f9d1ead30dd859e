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
// large B. When the grid is too small to keep the latency hidden (V-up at
// M <= 16), the K-groups are split across workgroups (split_k): each stores
// an f32 partial to a workspace and the last to arrive sums them in split
// order, so results are deterministic (ABI/KernelABI.h). Split-K costs a
// workspace round trip and its HBM traffic.
//
// Waves split the N side of the tile first (one W slice each, no W sharing
// through LDS needed); the remaining waves split M.
//
// V-up has four K-groups per row: its tiles use stages = 2, so the global loads
// of group g + 1 (W fragments and X rows) are in flight while group g is
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

  // gfx942, V-up: N = 128, K = 512, four groups. Split-K fills the chip at
  // small B but its partials add HBM traffic at B = 128, and one tile serves
  // every B; the sweep kept split-K only where M <= 16.
  static const TileConfig gfx942VUp[] = {
      // Four waves of 16 columns, split 2 ways with the second group
      // prefetched: the same time at every B (split 4 ways was faster at
      // B = 8 but HBM-bound at B = 128).
      {1, 16, 16, 64, 4, k16, 2, 2},
      // No split from here.
      {17, 32, 16, 64, 4, k16, 1, 2},
      // 32x128, 8 waves: 16x64 tiles were issue-bound at B = 128, M = 64.
      {33, 64, 32, 128, 8, k16, 1, 2},
      // 16x64 at B = 8 waits less than 32x128 and stays ahead at B = 128 up
      // to M = 128.
      {65, 128, 16, 64, 4, k16, 1, 2},
      // 32x128 from here: half the X re-reads of 16x64 at large B.
      {129, 256, 32, 128, 8, k16, 1, 2},
      {257, 512, 32, 128, 8, k16, 1, 2},
      {513, 0, 32, 128, 8, k16, 1, 2},
  };

  // gfx950 (MI355X: 256 CUs, 160 KiB LDS): the same tiles, for the same
  // reasons (the waves' chains and the issue term do not depend on the CU
  // count); bench/kernel-time.py compares them with the gfx950 peers.
  static const TileConfig gfx950KUp[] = {
      {1, 16, 16, 128, 8, k16},    {17, 32, 32, 128, 8, k16},
      {33, 64, 32, 128, 8, k16},   {65, 128, 32, 128, 8, k16},
      {129, 256, 32, 128, 8, k16}, {257, 512, 64, 256, 8, k32},
      {513, 0, 128, 256, 8, k32},
  };

  static const TileConfig gfx950VUp[] = {
      {1, 16, 16, 64, 4, k16, 2, 2},     {17, 32, 16, 64, 4, k16, 1, 2},
      {33, 64, 32, 128, 8, k16, 1, 2},   {65, 128, 16, 64, 4, k16, 1, 2},
      {129, 256, 32, 128, 8, k16, 1, 2}, {257, 512, 32, 128, 8, k16, 1, 2},
      {513, 0, 32, 128, 8, k16, 1, 2},
  };

  static const TileTableEntry table[] = {
      {"gfx942", 512, 128, 128, gfx942KUp},
      {"gfx942", 128, 512, 128, gfx942VUp},
      {"gfx950", 512, 128, 128, gfx950KUp},
      {"gfx950", 128, 512, 128, gfx950VUp},
  };
  return table;
}
