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

#endif // MLAFP8_TRANSFORMS_PASSES
