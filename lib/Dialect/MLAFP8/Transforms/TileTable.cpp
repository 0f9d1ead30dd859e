//===- TileTable.cpp - Tuned tiles per chip, (N, K) and range of rows
//------------===//
//
// One entry per kernel: {min_rows, max_rows (0 = unbounded), block_m,
// block_n, waves, mfma, split_k, stages, occupancy}, serving the launches of
// min_rows <= B * M <= max_rows. The comment on each entry gives its worst
// modelled ratio to the fastest candidate over the B and M it serves (timing
// model 3, docs/timing-model.md; how below); the grid is
// ceil(N / block_n) * split_k x ceil(M / block_m) x B.
//
// Decode kernels are bound by one workgroup's serial chain (its memory round
// trips and its X passes), not by arithmetic (SPEC.md). A workgroup's waves
// quantize its rows into LDS once for all of its N columns, and wide N tiles
// avoid re-quantizing X once per narrow tile, which dominates the issue time
// at large B; but a workgroup's waves share their SIMDs and their CU's pipes,
// so more waves per workgroup shorten its chain only while the SIMDs have
// slots to spare. Split-K (each split stores an f32 partial to a workspace and the
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

  // Chosen with timing model 3 (docs/timing-model.md), which simulates the
  // workgroups resident on a CU together, their waves in time order. Every candidate was compiled and
  // modelled at B = 8, 16, 32, 64, 128 and M = 1, 4, 16, 32, ..., 1024 by
  //   mla-fp8-tile-sweep --chip C -N n -K k --batches 8,16,32,64,128 \
  //       --ms 1,4,16,32,64,128,256,512,1024 --tile ... |
  //   bench/tile-choose.py - --kernels 5
  // (K-up candidates 16x32x1/2, 16x64x1/2/4, 16x128x2/4/8, 32x32x2,
  // 32x64x2/4, 32x128x4/8, 64x128x8, 32x256x8 with the small MFMA, 64x256x8
  // and 128x256x8 with the large; V-up 16x32x2, 16x64x2/4, 16x128x4/8,
  // 32x64x4, 32x128x4/8, 64x128x8, all with stages = 4, and on gfx942 also
  // 16x16x1 and 16x32x1). A kernel serves a range of launch rows, B * M: the
  // fastest tile is a function of the rows rather than of M (at B = 8 the
  // tile that wins at B = 128 has 4x fewer rows per workgroup than it
  // needs), and tile-choose splits the sampled rows into at most five
  // ranges so that the worst ratio of the range's tile to the fastest
  // candidate at any (B, M) is least, with the fewest ranges that come within
  // 0.5 % of it. The figure after each entry is that worst ratio over the
  // cases of its range. The kernels these tiles were swept with issue X's
  // loads before W's, saturate in the fp8 conversion instead of clamping,
  // compute 16x16 tiles transposed, preload their first seven arguments and
  // store the row scales without a branch (lib/Conversion/MLAFP8ToGPU).
  //
  // What decides under this model: the waves of a workgroup share their
  // SIMDs and the CU's memory and LDS pipes, and its co-resident copies
  // share them too; a launch that leaves CUs idle (few rows) wins with
  // narrow tiles spread over more CUs, and a launch of several rounds with
  // the widest tiles, which quantize X least often.

  // gfx942 (MI300X: 304 CUs, 64 KiB LDS), K-up: N = 512, K = 128, one
  // group. Over the 45 cases the worst ratio is 1.041 and the mean 1.004.
  static const TileConfig gfx942KUp[] = {
      {1, 512, 16, 64, 4, k16},       // 1.041
      {513, 2048, 16, 128, 4, k16},   // 1.000
      {2049, 8192, 32, 256, 8, k16},  // 1.000
      {8193, 0, 128, 256, 8, k32},    // 1.012
  };

  // gfx942, V-up: N = 128, K = 512, four groups, emitted as straight-line
  // code with all four groups' loads issued up front (stages = 4): one
  // memory round trip per workgroup (32x128x4 keeps one LDS copy,
  // KernelPlan::ldsBuffers, and so quantizes group by group between
  // barriers). Worst 1.004, mean 1.000.
  static const TileConfig gfx942VUp[] = {
      {1, 2048, 16, 64, 4, k16, 1, 4},       // 1.004
      {2049, 4096, 16, 128, 4, k16, 1, 4},   // 1.000
      {4097, 8192, 32, 128, 8, k16, 1, 4},   // 1.000
      {8193, 16384, 32, 128, 4, k16, 1, 4},  // 1.000
      {16385, 0, 64, 128, 8, k16, 1, 4},     // 1.000
  };

  // gfx950 (MI355X: 256 CUs, 160 KiB LDS): the gfx942 tile shapes, each
  // with gfx950's f8f6f4 MFMA of the same output block. One 16x16x128 (or
  // two 32x32x64) covers a 128-column group where 16x16x32 (32x32x16) takes
  // four (eight): fewer issues and dependent-MFMA stalls, and the row scales
  // are applied to one partial per group either way. Modelled on MI355X
  // (bench/tile-sweep.cpp, B = 8, 16, 32, 128 and M = 1 to 1024), every
  // f8f6f4 tile is as fast as or faster than its 16x16x32 / 32x32x16 twin
  // at every (B, M) (timing model 1, as are the figures of this paragraph
  // and the next); where both are HBM-bound they tie. So no gfx950 entry
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

  // K-up: worst 1.038, mean 1.008.
  static const TileConfig gfx950KUp[] = {
      {1, 2048, 16, 128, 4, k128},    // 1.038
      {2049, 8192, 32, 256, 8, k128}, // 1.000
      {8193, 0, 128, 256, 8, k64},    // 1.000
  };

  // V-up: worst 1.009, mean 1.002.
  static const TileConfig gfx950VUp[] = {
      {1, 2048, 16, 64, 4, k128, 1, 4},      // 1.009
      {2049, 4096, 16, 128, 4, k128, 1, 4},  // 1.000
      {4097, 8192, 32, 128, 8, k128, 1, 4},  // 1.000
      {8193, 0, 64, 128, 8, k128, 1, 4},     // 1.004
  };

  // DeepSeek-V4's wo_a: N = 1024, K = 4096 (32 groups), at B = 1 to 16 (its
  // output groups per rank). Few rows leave most CUs idle behind a 32-group
  // serial chain (16 x 2 workgroups at B = 2, M = 1 without a split): split-K
  // spreads the chain over the chip, at the cost of the partials' round
  // trips and the last split's sum. Swept at B = 1, 2, 4, 8, 16 and
  // M = 1, 4, 16, 64, 256, 1024 over 16x64x4, 16x128x4 (split 1, 4, 8, 16),
  // 16x128x8, 32x128x8 (1, 2, 4, 8), 32x256x8, 64x128x8 (1, 2, 4) and
  // 128x256x8 (1, 2); tile-choose --kernels 5 keeps four ranges.
  // gfx950: worst 1.201 (B = 1, M = 16: 4.82 against 4.01 us of 16x64x4
  // split 16, which is 1.5x slower at B = 16), mean 1.063. B = 2, M = 1
  // models 4.79 us (16x128x4 without a split: 21.6 us).
  static const TileConfig gfx950WoA[] = {
      {1, 256, 16, 128, 4, k128, 8},     // 1.201
      {257, 1024, 32, 128, 8, k128, 4},  // 1.001
      {1025, 2048, 32, 256, 8, k128, 2}, // 1.000
      {2049, 0, 32, 128, 8, k128},       // 1.069
  };

  // gfx942 wo_a (candidates as gfx950's, less the ones gfx950 never picked;
  // M = 1, 16, 256, 1024): worst 1.093, mean 1.012. B = 2, M = 1 models
  // 4.77 us (16x32x2 without a split, the heuristic tile: 18.6 us).
  static const TileConfig gfx942WoA[] = {
      {1, 128, 16, 64, 4, k16, 8},      // 1.062
      {129, 1024, 32, 128, 8, k16, 4},  // 1.093
      {1025, 2048, 32, 256, 8, k16, 2}, // 1.000
      {2049, 4096, 32, 256, 8, k16},    // 1.000
      {4097, 0, 64, 128, 8, k16},       // 1.000
  };

  // GLM-5 and GLM-4.7-Flash (B = 5 to 64) and MiniCPM3-4B (B = 5 to 40),
  // M = 1, 4, 16, 64, 256, 1024. Their K-up has a partial last K-group
  // (K = 192: 128 + 64; K = 64: the partial group alone), loaded without a
  // branch (EmitterBase::loadTailVector). K-up candidates 16x32x2, 16x64x2/4,
  // 16x128x4/8, 32x128x8, 32x256x8, 128x256x8 (and 16x64x4, 16x128x4 with
  // stages 2) for GLM; 16x32x1/2, 16x64x2/4, 16x128x4, 16x256x4, 32x128x8,
  // 32x256x8, 64x256x8 for MiniCPM3. V-up candidates (stages 4 for GLM's
  // four groups, 2 for MiniCPM3's two) 16x32x2, 16x64x4, 16x128x4,
  // 16x256x4/8, 32x128x8, 32x256x8, 64x128x8, 64x256x8 for GLM (N = 256);
  // 16x16x1, 16x32x1/2, 16x64x2/4, 32x64x4, 64x64x8 for MiniCPM3 (N = 64).
  static const TileConfig gfx942GlmKUp[] = {
      {1, 2048, 16, 128, 4, k16},    // 1.042
      {2049, 4096, 32, 256, 8, k16}, // 1.000
      {4097, 5120, 16, 128, 4, k16}, // 1.000
      {5121, 0, 32, 256, 8, k16},    // 1.000
  };
  static const TileConfig gfx942GlmVUp[] = {
      {1, 1024, 16, 64, 4, k16, 1, 4},     // 1.004
      {1025, 2048, 16, 128, 4, k16, 1, 4}, // 1.000
      {2049, 4096, 32, 128, 8, k16, 1, 4}, // 1.000
      {4097, 8192, 32, 256, 8, k16, 1, 4}, // 1.000
      {8193, 0, 64, 256, 8, k16, 1, 4},    // 1.000
  };
  static const TileConfig gfx950GlmKUp[] = {
      {1, 1280, 16, 64, 4, k128},     // 1.019
      {1281, 8192, 32, 128, 8, k128}, // 1.014
      {8193, 0, 128, 256, 8, k64},    // 1.000
  };
  static const TileConfig gfx950GlmVUp[] = {
      {1, 1024, 16, 64, 4, k128, 1, 4},     // 1.009
      {1025, 2048, 16, 128, 4, k128, 1, 4}, // 1.000
      {2049, 4096, 32, 128, 8, k128, 1, 4}, // 1.000
      {4097, 8192, 32, 256, 8, k128, 1, 4}, // 1.000
      {8193, 0, 64, 256, 8, k128, 1, 4},    // 1.000
  };
  static const TileConfig gfx942MiniCpmKUp[] = {
      {1, 640, 16, 64, 4, k16},     // 1.000
      {641, 1280, 16, 128, 4, k16}, // 1.000
      {1281, 0, 16, 256, 4, k16},   // 1.000
  };
  static const TileConfig gfx942MiniCpmVUp[] = {
      {1, 10240, 16, 64, 4, k16, 1, 2}, // 1.000
      {10241, 0, 32, 64, 4, k16, 1, 2}, // 1.000
  };
  static const TileConfig gfx950MiniCpmKUp[] = {
      {1, 640, 16, 64, 4, k128},      // 1.000
      {641, 1280, 16, 128, 4, k128},  // 1.000
      {1281, 2560, 16, 256, 4, k128}, // 1.000
      {2561, 10240, 16, 128, 4, k128}, // 1.000
      {10241, 20480, 32, 256, 8, k128}, // 1.000
      // Past the sweep's rows only B = 40, M = 1024 lies: there 64x128x4
      // with the large MFMA models 7.64 us against 9.42 for 32x256x8 and
      // 8.14 for the heuristic's 128x128x4 (a sweep of those three and
      // 64x256x8 at B = 20 and 40, M = 1024).
      {20481, 0, 64, 128, 4, k64},
  };
  static const TileConfig gfx950MiniCpmVUp[] = {
      {1, 10240, 16, 64, 4, k128, 1, 2}, // 1.000
      {10241, 0, 32, 64, 4, k128, 1, 2}, // 1.000
  };

  static const TileTableEntry table[] = {
      {"gfx942", 512, 128, 128, gfx942KUp},
      {"gfx942", 128, 512, 128, gfx942VUp},
      {"gfx950", 512, 128, 128, gfx950KUp},
      {"gfx950", 128, 512, 128, gfx950VUp},
      {"gfx942", 1024, 4096, 128, gfx942WoA},
      {"gfx950", 1024, 4096, 128, gfx950WoA},
      {"gfx942", 512, 192, 128, gfx942GlmKUp},
      {"gfx942", 256, 512, 128, gfx942GlmVUp},
      {"gfx950", 512, 192, 128, gfx950GlmKUp},
      {"gfx950", 256, 512, 128, gfx950GlmVUp},
      {"gfx942", 256, 64, 128, gfx942MiniCpmKUp},
      {"gfx942", 64, 256, 128, gfx942MiniCpmVUp},
      {"gfx950", 256, 64, 128, gfx950MiniCpmKUp},
      {"gfx950", 64, 256, 128, gfx950MiniCpmVUp},
  };
  return table;
}
