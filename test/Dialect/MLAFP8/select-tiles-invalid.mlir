// RUN: mla-fp8-opt %s -split-input-file -verify-diagnostics --mlafp8-select-tiles=chip=gfx942
// RUN: not mla-fp8-opt %s --mlafp8-select-tiles=chip=gfx90a 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not mla-fp8-opt %s --split-input-file --mlafp8-select-tiles=chip=gfx950 2>&1 | FileCheck %s --check-prefix=OCP

// CHIP: error: unknown chip 'gfx90a'; supported chips: gfx942, gfx950
// OCP: error: 'mlafp8.prequant_bmm' op gfx950 uses OCP fp8 (f8E4M3FN), not f8E4M3FNUZ

func.func @ocp_on_gfx942(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FN>,
                         %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{gfx942 uses FNUZ fp8 (f8E4M3FNUZ), not f8E4M3FN}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FN>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @fnuz_on_gfx950_is_checked_by_the_gfx950_run(%x: tensor<16x?x128xbf16>) {
  return
}

// -----

func.func @tiny_group(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
                      %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{group size must be a power of two of at least 16, got 8}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = 8 : i64} : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
