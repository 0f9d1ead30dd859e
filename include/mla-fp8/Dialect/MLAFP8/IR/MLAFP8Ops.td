//===- MLAFP8Ops.td - mlafp8 operations --------------------*- tablegen -*-===//

#ifndef MLAFP8_OPS
#define MLAFP8_OPS

include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Base.td"
include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Shapes and element types are checked in C++ (MLAFP8Ops.cpp) so that each rule has one
// message naming the operand and the value it expected.

def MLAFP8_GroupQuantOp : MLAFP8_Op<"group_quant", [Pure]> {
  let summary = "quantize activations to fp8 per row and per group of columns";
  let description = [{
    Splits the last dimension of `x` into groups of `group_size` columns (the last group
    may be partial) and, per row and group, computes the fp32 scale
    `s = max(amax, 1e-10) / FMAX` and `q = fp8(clamp(x / s, -FMAX, FMAX))`, rounding to
    nearest even. FMAX is the largest finite value of `q`'s element type. `scales` has
    one value per group: shape `(d0, d1, ceil(K / group_size))`.

    ```mlir
    %q, %s = mlafp8.group_quant %x {group_size = 128 : i64}
        : tensor<16x?x512xbf16> -> tensor<16x?x512xf8E4M3FNUZ>, tensor<16x?x4xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$x,
    DefaultValuedAttr<I64Attr, "128">:$group_size
  );
  let results = (outs AnyRankedTensor:$q, AnyRankedTensor:$scales);
  let assemblyFormat = [{
    $x attr-dict `:` type($x) `->` type($q) `,` type($scales)
  }];
  let hasVerifier = 1;
}

def MLAFP8_ScaledBmmOp : MLAFP8_Op<"scaled_bmm", [Pure]> {
  let summary = "batched matmul of group-quantized fp8 activations and fp8 weights";
  let description = [{
    `y[b, m, n] = out(sum_g scales[b, m, g] * sum_{k in g} q[b, m, k] * w[b, n, k]
    * w_scale (+ bias[b, n]))`, accumulated in fp32 and rounded once to `y`'s element
    type. `w` is `(B, N, K)`. `w_scale` holds one descale (`w_scale_mode = per_tensor`,
    shape `1`) or one per batch element (`per_batch`, shape `B`). `x_layout` and
    `y_layout` say whether `q`/`scales` and `y` are `(B, M, ...)` (`bm`) or
    `(M, B, ...)` (`mb`).

    ```mlir
    %y = mlafp8.scaled_bmm %q, %s, %w, %ws
        : tensor<16x?x128xf8E4M3FNUZ>, tensor<16x?x1xf32>, tensor<16x512x128xf8E4M3FNUZ>,
          tensor<1xf32> -> tensor<16x?x512xbf16>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$q,
    AnyRankedTensor:$scales,
    AnyRankedTensor:$w,
    AnyRankedTensor:$w_scale,
    Optional<AnyRankedTensor>:$bias,
    DefaultValuedAttr<I64Attr, "128">:$group_size,
    DefaultValuedAttr<MLAFP8_WeightScaleAttr, "WeightScale::PerTensor">:$w_scale_mode,
    DefaultValuedAttr<MLAFP8_BatchLayoutAttr, "BatchLayout::BM">:$x_layout,
    DefaultValuedAttr<MLAFP8_BatchLayoutAttr, "BatchLayout::BM">:$y_layout
  );
  let results = (outs AnyRankedTensor:$y);
  let assemblyFormat = [{
    $q `,` $scales `,` $w `,` $w_scale (`bias` $bias^)? attr-dict `:` type($q) `,`
    type($scales) `,` type($w) `,` type($w_scale) (`,` type($bias)^)? `->` type($y)
  }];
  let hasVerifier = 1;
}

def MLAFP8_PrequantBmmOp : MLAFP8_Op<"prequant_bmm", [Pure]> {
  let summary = "fused group quantization and fp8 batched matmul";
  let description = [{
    `group_quant` followed by `scaled_bmm` as one operation: `x` is bf16/f16 and is
    quantized to `w`'s fp8 format inside the kernel, per row and per group of
    `group_size` columns. Attributes as on `scaled_bmm`; `tiles`, when present, holds one
    `#mlafp8.tile` per range of launch rows (B x M), sorted, covering every row count from
    1 up (the last range is unbounded). `mlafp8-select-tiles` attaches them; `convert-mlafp8-to-gpu` needs them
    and sets `kernels`: one `@module::@kernel` reference per tile, in the same order,
    naming the kernel that serves the tile's range of rows.

    ```mlir
    %y = mlafp8.prequant_bmm %x, %w, %ws {group_size = 128 : i64}
        : tensor<16x?x128xbf16>, tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32>
          -> tensor<16x?x512xbf16>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$x,
    AnyRankedTensor:$w,
    AnyRankedTensor:$w_scale,
    Optional<AnyRankedTensor>:$bias,
    DefaultValuedAttr<I64Attr, "128">:$group_size,
    DefaultValuedAttr<MLAFP8_WeightScaleAttr, "WeightScale::PerTensor">:$w_scale_mode,
    DefaultValuedAttr<MLAFP8_BatchLayoutAttr, "BatchLayout::BM">:$x_layout,
    DefaultValuedAttr<MLAFP8_BatchLayoutAttr, "BatchLayout::BM">:$y_layout,
    OptionalAttr<MLAFP8_TileArrayAttr>:$tiles,
    OptionalAttr<SymbolRefArrayAttr>:$kernels
  );
  let results = (outs AnyRankedTensor:$y);
  let assemblyFormat = [{
    $x `,` $w `,` $w_scale (`bias` $bias^)? attr-dict `:` type($x) `,` type($w) `,`
    type($w_scale) (`,` type($bias)^)? `->` type($y)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The static N and K of the GEMM (from `w`).
    int64_t getN();
    int64_t getK();
    /// Number of K-groups, the last possibly partial.
    int64_t getNumGroups();
  }];
}

#endif // MLAFP8_OPS
