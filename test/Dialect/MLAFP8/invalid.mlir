// RUN: mla-fp8-opt %s -split-input-file -verify-diagnostics

func.func @f(%x: tensor<4x?x256xbf16>) -> tensor<4x?x2xf32> {
  // expected-error @+1 {{group_size must be a positive power of two, got 96}}
  %q, %s = mlafp8.group_quant %x {group_size = 96 : i64} : tensor<4x?x256xbf16> -> tensor<4x?x256xf8E4M3FNUZ>, tensor<4x?x2xf32>
  return %s : tensor<4x?x2xf32>
}

// -----

func.func @f(%x: tensor<4x256xbf16>) -> tensor<4x?x2xf32> {
  // expected-error @+1 {{x must be a rank-3 tensor, got 'tensor<4x256xbf16>'}}
  %q, %s = mlafp8.group_quant %x : tensor<4x256xbf16> -> tensor<4x?x256xf8E4M3FNUZ>, tensor<4x?x2xf32>
  return %s : tensor<4x?x2xf32>
}

// -----

func.func @f(%x: tensor<4x?x256xf32>) -> tensor<4x?x2xf32> {
  // expected-error @+1 {{x element type must be bf16 or f16, got 'f32'}}
  %q, %s = mlafp8.group_quant %x : tensor<4x?x256xf32> -> tensor<4x?x256xf8E4M3FNUZ>, tensor<4x?x2xf32>
  return %s : tensor<4x?x2xf32>
}

// -----

func.func @f(%x: tensor<4x?x256xbf16>) -> tensor<4x?x2xf32> {
  // expected-error @+1 {{q must be a rank-3 tensor, got 'tensor<1024xf8E4M3FNUZ>'}}
  %q, %s = mlafp8.group_quant %x : tensor<4x?x256xbf16> -> tensor<1024xf8E4M3FNUZ>, tensor<4x?x2xf32>
  return %s : tensor<4x?x2xf32>
}

// -----

func.func @f(%x: tensor<4x?x256xbf16>) -> tensor<4x?x2xf32> {
  // expected-error @+1 {{q element type must be f8E4M3FNUZ or f8E4M3FN, got 'f8E5M2'}}
  %q, %s = mlafp8.group_quant %x : tensor<4x?x256xbf16> -> tensor<4x?x256xf8E5M2>, tensor<4x?x2xf32>
  return %s : tensor<4x?x2xf32>
}

// -----

func.func @f(%x: tensor<4x?x256xbf16>) -> tensor<4x?x2xf32> {
  // expected-error @+1 {{q dimension 0 must be 4 (as x), got 8}}
  %q, %s = mlafp8.group_quant %x : tensor<4x?x256xbf16> -> tensor<8x?x256xf8E4M3FNUZ>, tensor<4x?x2xf32>
  return %s : tensor<4x?x2xf32>
}

// -----

func.func @f(%x: tensor<4x?x?xbf16>) -> tensor<4x?x2xf32> {
  // expected-error @+1 {{x must have a static last dimension, got 'tensor<4x?x?xbf16>'}}
  %q, %s = mlafp8.group_quant %x : tensor<4x?x?xbf16> -> tensor<4x?x?xf8E4M3FNUZ>, tensor<4x?x2xf32>
  return %s : tensor<4x?x2xf32>
}

// -----

func.func @f(%x: tensor<4x?x256xbf16>) -> tensor<4x2xf32> {
  // expected-error @+1 {{scales must be a rank-3 tensor, got 'tensor<4x2xf32>'}}
  %q, %s = mlafp8.group_quant %x : tensor<4x?x256xbf16> -> tensor<4x?x256xf8E4M3FNUZ>, tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}

// -----

func.func @f(%x: tensor<4x?x256xbf16>) -> tensor<4x?x2xf16> {
  // expected-error @+1 {{scales element type must be f32, got 'f16'}}
  %q, %s = mlafp8.group_quant %x : tensor<4x?x256xbf16> -> tensor<4x?x256xf8E4M3FNUZ>, tensor<4x?x2xf16>
  return %s : tensor<4x?x2xf16>
}

// -----

// K = 300 with G = 128 is three groups, the last partial.
func.func @f(%x: tensor<4x?x300xbf16>) -> tensor<4x?x2xf32> {
  // expected-error @+1 {{scales dimension 2 must be 3, got 2}}
  %q, %s = mlafp8.group_quant %x : tensor<4x?x300xbf16> -> tensor<4x?x300xf8E4M3FNUZ>, tensor<4x?x2xf32>
  return %s : tensor<4x?x2xf32>
}

// -----

func.func @f(%q: tensor<16x?x128xf8E4M3FNUZ>, %s: tensor<16x?x1xf32>, %w: tensor<16x512x128xf8E4M3FN>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{w element type must match q ('f8E4M3FNUZ'), got 'f8E4M3FN'}}
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws : tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x128xf8E4M3FN>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%q: tensor<16x7x128xf8E4M3FNUZ>, %s: tensor<16x8x1xf32>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{scales dimension 1 must be 7, got 8}}
  %y = mlafp8.scaled_bmm %q, %s, %w, %ws : tensor<16x7x128xf8E4M3FNUZ>, tensor<16x8x1xf32>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{w must be a rank-3 tensor, got 'tensor<512x128xf8E4M3FNUZ>'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xbf16>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{w element type must be f8E4M3FNUZ or f8E4M3FN, got 'bf16'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<16x512x128xbf16>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x?x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{w must have static N and K dimensions, got 'tensor<16x?x128xf8E4M3FNUZ>'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<16x?x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x0x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x0xbf16> {
  // expected-error @+1 {{w must have N and K of at least 1, got 'tensor<16x0x128xf8E4M3FNUZ>'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<16x0x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x0xbf16>
  return %y : tensor<16x?x0xbf16>
}

// -----

func.func @f(%x: tensor<16x?x512xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{x reduction dimension must be 128 (K of w), got 512}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x512xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<8x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{x batch dimension 8 does not match the batch dimension of w, 16}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<8x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

// Token-major x: its batch is the second dimension.
func.func @f(%x: tensor<?x4x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{x batch dimension 4 does not match the batch dimension of w, 16}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {x_layout = #mlafp8<layout mb>} : tensor<?x4x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf16>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{w_scale must be a rank-1 tensor of f32, got 'tensor<1xf16>'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf16> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<16xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{per_tensor w_scale must hold exactly 1 value, got 'tensor<16xf32>'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<16xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<8xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{per_batch w_scale must hold one value per batch element (16), got 'tensor<8xf32>'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {w_scale_mode = #mlafp8<weight_scale per_batch>} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<8xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<?x512xbf16> {
  // expected-error @+1 {{y must be a rank-3 tensor, got 'tensor<?x512xbf16>'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<?x512xbf16>
  return %y : tensor<?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xf32> {
  // expected-error @+1 {{y element type must be bf16 or f16, got 'f32'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xf32>
  return %y : tensor<16x?x512xf32>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<8x?x512xbf16> {
  // expected-error @+1 {{y batch dimension must be 16, got 8}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<8x?x512xbf16>
  return %y : tensor<8x?x512xbf16>
}

// -----

// Token-major y: its batch is the second dimension.
func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<?x4x512xbf16> {
  // expected-error @+1 {{y batch dimension must be 16, got 4}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {y_layout = #mlafp8<layout mb>} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<?x4x512xbf16>
  return %y : tensor<?x4x512xbf16>
}

// -----

func.func @f(%x: tensor<16x5x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x6x512xbf16> {
  // expected-error @+1 {{y token dimension must be 5 (M of x), got 6}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x5x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x6x512xbf16>
  return %y : tensor<16x6x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x128xbf16> {
  // expected-error @+1 {{y last dimension must be 512 (N of w), got 128}}
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x128xbf16>
  return %y : tensor<16x?x128xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>, %b: tensor<512xbf16>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{bias must be a rank-2 (B, N) tensor, got 'tensor<512xbf16>'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws bias %b : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32>, tensor<512xbf16> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>, %b: tensor<16x512xf16>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{bias element type must match y ('bf16'), got 'f16'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws bias %b : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32>, tensor<16x512xf16> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>, %b: tensor<16x128xbf16>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{bias must be (16, 512), got 'tensor<16x128xbf16>'}}
  %y = mlafp8.prequant_bmm %x, %w, %ws bias %b : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32>, tensor<16x128xbf16> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{tiles must hold at least one #mlafp8.tile}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = []} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{tiles must cover every row count B * M in order: tile 1 starts at rows = 20, expected 17}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 16, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>, #mlafp8.tile<min_rows = 20, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{tiles must cover every row count B * M in order: tile 0 starts at rows = 2, expected 1}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 2, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{tile 0 split_k 2 exceeds the 1 K-groups}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 2, stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{the last tile must have no upper bound on rows (max_rows = 0), got max_rows = 64}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 64, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @f(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{tile 1 follows a tile with no upper bound on rows}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>, #mlafp8.tile<min_rows = 2, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>]} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

// expected-error @+1 {{min_rows must be at least 1, got 0}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 0, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{max_rows must be 0 (unbounded) or at least min_rows (8), got 4}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 8, max_rows = 4, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{block_m must be a positive multiple of the MFMA's 32 rows, got 16}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m32n32k16, split_k = 1, stages = 1, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{block_n must be a positive multiple of the MFMA's 16 columns, got 40}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 40, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{waves must be between 1 and 16, got 0}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 0, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{block_m and block_n must be at most 4096, got 16x2147483648}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 2147483648, waves = 1, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{a 256x256 block on 2 waves needs 512 accumulator registers per lane, more than 256}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 256, block_n = 256, waves = 2, mfma = m32n32k16, split_k = 1, stages = 1, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{the 4 MFMA tiles of a 16x64 block cannot be shared evenly by 8 waves}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 8, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{split_k must be between 1 and 1024, got 0}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 0, stages = 1, occupancy = 2>} {
  return
}

// -----

// The kernel ABI's bound: beyond it the workspace formulas could overflow.
// expected-error @+1 {{split_k must be between 1 and 1024, got 1025}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1025, stages = 1, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{stages must be between 1 and 4 (deeper pipelines are not generated), got 5}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 5, occupancy = 2>} {
  return
}

// -----

// expected-error @+1 {{occupancy must be 2 (the generator does not use it yet), got 4}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 4>} {
  return
}

// -----

// expected-error @+2 {{unknown fp8 MFMA 'm8n8k64'; known: m16n16k32, m32n32k16, m16n16k128, m32n32k64}}
// expected-error @+1 {{failed to parse MLAFP8_TileAttr parameter 'mfma'}}
func.func @f() attributes {t = #mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m8n8k64, split_k = 1, stages = 1, occupancy = 2>} {
  return
}

// -----

func.func @kernels_without_tiles(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{kernels must hold one symbol per tile (0), got 1}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {kernels = [@m::@k]} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}

// -----

func.func @kernels_per_tile(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>, %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  // expected-error @+1 {{kernels must hold one symbol per tile (1), got 2}}
  %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<min_rows = 1, max_rows = 0, block_m = 16, block_n = 64, waves = 4, mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>], kernels = [@m::@k0, @m::@k1]} : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
