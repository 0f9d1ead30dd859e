// RUN: not mla-fp8-opt %s -split-input-file --mlafp8-select-tiles=chip=gfx942 2>/dev/null | FileCheck %s --check-prefix=GFX942
// The FNUZ splits fail on gfx950 (select-tiles-invalid.mlir checks the message).
// RUN: not mla-fp8-opt %s -split-input-file --mlafp8-select-tiles=chip=gfx950 2>/dev/null | FileCheck %s --check-prefix=GFX950

// DeepSeek-R1 K-up (N = 512, K = 128): from the table, chosen with timing
// model 3 by launch rows B * M (the 4-wave 16x64 tile up to 512 rows, the
// 4-wave 16x128 tile up to 2048, the wide 8-wave 32x256 tile up to 8192, then
// 128x256 with 32x32x16 MFMAs); the last range is unbounded.
// GFX942-LABEL: func.func @kup
// GFX942: mlafp8.prequant_bmm
// GFX942-SAME: tiles = [#mlafp8.tile<min_rows = 1, max_rows = 512, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>
// GFX942-SAME: #mlafp8.tile<min_rows = 513, max_rows = 2048, block_m = 16, block_n = 128, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>
// GFX942-SAME: #mlafp8.tile<min_rows = 2049, max_rows = 8192, block_m = 32, block_n = 256, waves = 8, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>
// GFX942-SAME: #mlafp8.tile<min_rows = 8193, max_rows = 0, block_m = 128, block_n = 256, waves = 8, mfma = m32n32k16, split_k = 1, stages = 1, occupancy = 2>]
func.func @kup(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

// DeepSeek-R1 V-up (N = 128, K = 512, four groups), OCP on gfx950.
// GFX950-LABEL: func.func @vup
// GFX950: tiles = [#mlafp8.tile<min_rows = 1, max_rows = 2048, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k128, split_k = 1, stages = 4
// GFX950-SAME: #mlafp8.tile<min_rows = 2049, max_rows = 4096, block_m = 16, block_n = 128, waves = 4, mfma = m16n16k128, split_k = 1, stages = 4
// GFX950-SAME: #mlafp8.tile<min_rows = 4097, max_rows = 8192, block_m = 32, block_n = 128, waves = 8, mfma = m16n16k128, split_k = 1, stages = 4
// GFX950-SAME: #mlafp8.tile<min_rows = 8193, max_rows = 0, block_m = 64, block_n = 128, waves = 8, mfma = m16n16k128, split_k = 1, stages = 4, occupancy = 2>]
func.func @vup(%x: tensor<16x?x512xbf16>, %w: tensor<16x128x512xf8E4M3FN>,
               %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x512xbf16>,
      tensor<16x128x512xf8E4M3FN>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}

// -----

// DeepSeek-R1 K-up on gfx950 (OCP): the 4-wave 16x128 tile up to 2048 rows,
// 32x256 up to 8192, then 128x256 with 32x32x64 MFMAs.
// GFX950-LABEL: func.func @kup_ocp
// GFX950: tiles = [#mlafp8.tile<min_rows = 1, max_rows = 2048, block_m = 16, block_n = 128, waves = 4, mfma = m16n16k128, split_k = 1, stages = 1
// GFX950-SAME: #mlafp8.tile<min_rows = 2049, max_rows = 8192, block_m = 32, block_n = 256, waves = 8, mfma = m16n16k128, split_k = 1, stages = 1
// GFX950-SAME: #mlafp8.tile<min_rows = 8193, max_rows = 0, block_m = 128, block_n = 256, waves = 8, mfma = m32n32k64, split_k = 1, stages = 1, occupancy = 2>]
func.func @kup_ocp(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FN>,
                   %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FN>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

// A shape outside the table: the heuristic picks the widest N tile that still
// gives a workgroup per CU (assuming B = 16, so rows 1-256 are M = 1-16) and
// covers every row count.
// GFX942-LABEL: func.func @heuristic
// GFX942: tiles = [#mlafp8.tile<min_rows = 1, max_rows = 256, block_m = 16, block_n = 16, waves = 1, mfma = m16n16k32
// GFX942-SAME: min_rows = 8193, max_rows = 0, block_m = 128, block_n = 128, waves = 4, mfma = m32n32k16
func.func @heuristic(%x: tensor<8x?x256xf16>, %w: tensor<8x384x256xf8E4M3FNUZ>,
                     %ws: tensor<8xf32>) -> tensor<?x8x384xf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {w_scale_mode = #mlafp8<weight_scale per_batch>,
      y_layout = #mlafp8<layout mb>} : tensor<8x?x256xf16>,
      tensor<8x384x256xf8E4M3FNUZ>, tensor<8xf32> -> tensor<?x8x384xf16>
  return %y : tensor<?x8x384xf16>
}

// -----

// Tiles that are already there are kept.
// GFX942-LABEL: func.func @preset
// GFX942: tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 32, block_n = 32, waves = 1, mfma = m32n32k16, split_k = 1, stages = 1, occupancy = 2>]
func.func @preset(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
                  %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0,
      block_m = 32, block_n = 32, waves = 1, mfma = m32n32k16, split_k = 1,
      stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
