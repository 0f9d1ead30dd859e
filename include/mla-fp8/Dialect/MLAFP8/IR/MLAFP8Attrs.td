//===- MLAFP8Attrs.td - mlafp8 attributes and enums --------*- tablegen -*-===//

#ifndef MLAFP8_ATTRS
#define MLAFP8_ATTRS

include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Base.td"

def MLAFP8_WeightScale : I32EnumAttr<"WeightScale",
    "how many weight descale values there are", [
      I32EnumAttrCase<"PerTensor", 0, "per_tensor">,
      I32EnumAttrCase<"PerBatch", 1, "per_batch">
    ]> {
  let cppNamespace = "::mlir::mlafp8";
  let genSpecializedAttr = 0;
}
def MLAFP8_WeightScaleAttr : EnumAttr<MLAFP8_Dialect, MLAFP8_WeightScale, "weight_scale">;

def MLAFP8_BatchLayout : I32EnumAttr<"BatchLayout",
    "order of the batch and token dimensions of an activation or result tensor", [
      I32EnumAttrCase<"BM", 0, "bm">,
      I32EnumAttrCase<"MB", 1, "mb">
    ]> {
  let cppNamespace = "::mlir::mlafp8";
  let genSpecializedAttr = 0;
}
def MLAFP8_BatchLayoutAttr : EnumAttr<MLAFP8_Dialect, MLAFP8_BatchLayout, "layout">;

def MLAFP8_MfmaShape : I32EnumAttr<"MfmaShape", "fp8 matrix-core instruction shape", [
      I32EnumAttrCase<"M16N16K32", 0, "m16n16k32">,
      I32EnumAttrCase<"M32N32K16", 1, "m32n32k16">,
      I32EnumAttrCase<"M16N16K128", 2, "m16n16k128">,
      I32EnumAttrCase<"M32N32K64", 3, "m32n32k64">
    ]> {
  let cppNamespace = "::mlir::mlafp8";
  let genSpecializedAttr = 0;
}

def MLAFP8_TileAttr : MLAFP8_Attr<"Tile", "tile"> {
  let summary = "kernel tile configuration for one range of M";
  let description = [{
    How one kernel of a `prequant_bmm` is tiled, and for which token counts it is used:
    the kernel serves `min_m <= M <= max_m` (`max_m = 0`: no upper bound).

    - `block_m` x `block_n`: the output tile one workgroup computes;
    - `waves`: wavefronts (64 lanes) per workgroup;
    - `mfma`: the fp8 matrix-core instruction;
    - `split_k`: the K-groups are divided among this many workgroups, which add their
      partial sums in fp32 (1 = no split);
    - `stages`: how many K-groups are in flight (1 = no software pipelining);
    - `occupancy`: waves per SIMD the register budget is sized for.

    ```mlir
    #mlafp8.tile<min_m = 1, max_m = 16, block_m = 16, block_n = 64, waves = 4,
                 mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>
    ```
  }];
  let parameters = (ins
    "int64_t":$min_m,
    "int64_t":$max_m,
    "int64_t":$block_m,
    "int64_t":$block_n,
    "int64_t":$waves,
    EnumParameter<MLAFP8_MfmaShape>:$mfma,
    "int64_t":$split_k,
    "int64_t":$stages,
    "int64_t":$occupancy
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Rows, columns and reduction depth of the MFMA instruction.
    int64_t getMfmaM() const;
    int64_t getMfmaN() const;
    int64_t getMfmaK() const;
    /// Whether `m` tokens are served by this tile.
    bool containsM(int64_t m) const {
      return m >= getMinM() && (getMaxM() == 0 || m <= getMaxM());
    }
  }];
}

def MLAFP8_TileArrayAttr : TypedArrayAttrBase<MLAFP8_TileAttr,
    "array of #mlafp8.tile, one per M range">;

#endif // MLAFP8_ATTRS
