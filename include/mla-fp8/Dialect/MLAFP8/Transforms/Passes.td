//===- Passes.td - mlafp8 transformation passes ------------*- tablegen -*-===//

#ifndef MLAFP8_TRANSFORMS_PASSES
#define MLAFP8_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def MLAFP8FusePrequantPass : Pass<"mlafp8-fuse-prequant"> {
  let summary = "fuse activation group quantization into the fp8 batched matmul";
  let description = [{
    Rewrites a `mlafp8.group_quant` whose two results feed only one
    `mlafp8.scaled_bmm` (as its `q` and `scales`) into one `mlafp8.prequant_bmm`,
    so the kernel quantizes in registers instead of writing fp8 activations and
    scales to memory and reading them back. A `group_quant` whose results have any
    other use, or whose group size differs from the matmul's, is left alone.

    Before:
    ```mlir
    %q, %s = mlafp8.group_quant %x : tensor<16x?x128xbf16>
        -> tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>
    %y = mlafp8.scaled_bmm %q, %s, %w, %ws : ... -> tensor<16x?x512xbf16>
    ```
    After:
    ```mlir
    %y = mlafp8.prequant_bmm %x, %w, %ws : ... -> tensor<16x?x512xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::mlafp8::MLAFP8Dialect"];
}

def MLAFP8SelectTilesPass : Pass<"mlafp8-select-tiles"> {
  let summary = "attach the tile configurations, one per range of launch rows, to each prequant_bmm";
  let description = [{
    Sets the `tiles` attribute of every `mlafp8.prequant_bmm` that has none, from
    the tuned table in `TileTable.cpp` (keyed by chip, N, K and group size, one
    entry per range of rows B x M, the launch's batch times its tokens) or, for
    shapes the table lacks, from a heuristic that keeps small launches from
    leaving most of the chip idle (narrow N tiles) and grows the tile with the
    rows. An op that already has `tiles` is left alone. The same
    selection is available as `mlir::mlafp8::selectTiles` (TileSelection.h).

    Split-K is never selected: combining partial sums across workgroups needs
    fp32 atomics on a zeroed fp32 buffer and a second pass to round to the
    output type, and the order of the atomics makes results vary from run to
    run. Narrower N tiles fill the chip instead.

    Fails with a diagnostic for an unknown chip, or when `w`'s fp8 format is not
    the chip's (FNUZ on gfx942, OCP on gfx950).

    Before:
    ```mlir
    %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
        tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
    ```
    After (`chip=gfx942`):
    ```mlir
    %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [
        #mlafp8.tile<min_rows = 1, max_rows = 256, block_m = 16, block_n = 64, ...>,
        ...]} : ...
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"gfx942\"",
           "the target chip, a row of the chip table (lib/Hardware/Chip.cpp), e.g. gfx942">
  ];
  let dependentDialects = ["::mlir::mlafp8::MLAFP8Dialect"];
}

#endif // MLAFP8_TRANSFORMS_PASSES
