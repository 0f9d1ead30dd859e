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

// An fp8 MFMA record of Hardware/Mfma.h, spelled by its shape name
// (`m16n16k32`): a row added there is accepted here with no edit.
def MLAFP8_MfmaParameter : AttrParameter<"::mlir::mlafp8::MfmaRecord",
    "an fp8 MFMA (Hardware/Mfma.h), spelled by its shape name"> {
  let parser = "::mlir::mlafp8::parseMfmaLayout($_parser)";
  let printer = "$_printer << $_self->shapeName";
}

def MLAFP8_TileAttr : MLAFP8_Attr<"Tile", "tile"> {
  let summary = "kernel tile configuration for one range of launch rows (B x M)";
  let description = [{
    How one kernel of a `prequant_bmm` is tiled, and for which launches it is used: the
    kernel serves the calls whose rows, batch times tokens, lie in
    `min_rows <= B * M <= max_rows` (`max_rows = 0`: no upper bound).

    - `block_m` x `block_n`: the output tile one workgroup computes;
    - `waves`: wavefronts (64 lanes) per workgroup;
    - `mfma`: the fp8 matrix-core instruction, by the shape name of its record in
      `Hardware/Mfma.h` (`m16n16k32`, `m32n32k16`, ...);
    - `split_k`: the K-groups are divided among this many workgroups, which add their
      partial sums in fp32 (1 = no split);
    - `stages`: how many K-groups are in flight, 1 to 4: 1 is no software pipelining;
      with s > 1 the loads of group g + s - 1 are issued before group g is computed;
    - `occupancy`: reserved for the waves per SIMD the register budget will be sized
      for; the generator does not use it yet, so only its default, 2, is accepted.

    ```mlir
    #mlafp8.tile<min_rows = 1, max_rows = 256, block_m = 16, block_n = 64, waves = 4,
                 mfma = m16n16k32, split_k = 1, stages = 1, occupancy = 2>
    ```
  }];
  let parameters = (ins
    "int64_t":$min_rows,
    "int64_t":$max_rows,
    "int64_t":$block_m,
    "int64_t":$block_n,
    "int64_t":$waves,
    MLAFP8_MfmaParameter:$mfma,
    "int64_t":$split_k,
    "int64_t":$stages,
    "int64_t":$occupancy
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether a launch of `rows` = B * M rows is served by this tile.
    bool containsRows(int64_t rows) const {
      return rows >= getMinRows() && (getMaxRows() == 0 || rows <= getMaxRows());
    }
  }];
}

def MLAFP8_TileArrayAttr : TypedArrayAttrBase<MLAFP8_TileAttr,
    "array of #mlafp8.tile, one per range of rows">;

#endif // MLAFP8_ATTRS
