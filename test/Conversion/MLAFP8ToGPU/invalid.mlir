// RUN: mla-fp8-opt %s -split-input-file -verify-diagnostics --convert-mlafp8-to-gpu=chip=gfx942
// RUN: not mla-fp8-opt %s -split-input-file --convert-mlafp8-to-gpu=chip=gfx1100 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not mla-fp8-opt %s -split-input-file --convert-mlafp8-to-gpu=chip=gfx950 2>&1 | FileCheck %s --check-prefix=OCP

// CHIP: error: unknown chip 'gfx1100'; supported chips: gfx942, gfx950
// OCP: error: 'mlafp8.prequant_bmm' op gfx950 uses OCP fp8 (f8E4M3FN), not f8E4M3FNUZ

func.func @no_tiles(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
                    %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{has no tiles; run mlafp8-select-tiles before convert-mlafp8-to-gpu}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

// split_k above the K-groups is rejected by the op verifier already; the
// pass repeats the check for tiles built in C++.
func.func @split_k(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
                   %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{tile 0 split_k 2 exceeds the 1 K-groups}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0,
      block_m = 16, block_n = 16, waves = 1, mfma = m16n16k32, split_k = 2,
      stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @lds(%x: tensor<16x?x1024xbf16>, %w: tensor<16x128x1024xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  // expected-error @+1 {{tile 0: the tile needs 131584 bytes of LDS, more than the 65536 of gfx942}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = 1024 : i64, tiles = [
      #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 128, block_n = 32, waves = 1,
                   mfma = m32n32k16, split_k = 1, stages = 1, occupancy = 2>]}
      : tensor<16x?x1024xbf16>, tensor<16x128x1024xf8E4M3FNUZ>, tensor<1xf32>
        -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}

// -----

func.func @short_group(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
                       %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{tile 0: group_size 16 is smaller than the MFMA's K (32)}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = 16 : i64, tiles = [
      #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 16, waves = 1,
                   mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>]}
      : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32>
        -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @scaled_mfma(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
                       %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{tile 0: gfx942 has no v_mfma_f32_16x16x128_f8f6f4}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [
      #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 16, waves = 1,
                   mfma = m16n16k128, split_k = 1, stages = 1, occupancy = 2>]}
      : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32>
        -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
