//===- MLAFP8Base.td - mlafp8 dialect definition -----------*- tablegen -*-===//

#ifndef MLAFP8_BASE
#define MLAFP8_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def MLAFP8_Dialect : Dialect {
  let name = "mlafp8";
  let cppNamespace = "::mlir::mlafp8";
  let summary = "Group-quantized FP8 batched matmul, as multi-head latent attention decodes it";
  let description = [{
    The `mlafp8` dialect describes the two absorbed batched matmuls that models with
    multi-head latent attention run in decode: `Y[b] = X[b] * W[b]^T` with bf16/f16
    activations quantized to fp8 per token and per group of `G` reduction columns, fp8
    weights with a per-tensor or per-batch descale, fp32 accumulation and a bf16/f16
    result.

    What belongs here: the graph-level form of that computation (`group_quant` feeding
    `scaled_bmm`), its fused form (`prequant_bmm`, quantization inside the GEMM), and the
    tile configuration a kernel is generated with (`#mlafp8.tile`). The ops work on
    tensors: they state the math and the shapes, not the schedule.

    What does not: loops, memory, MFMA and LDS. Those appear only when
    `convert-mlafp8-to-gpu` turns a tiled `prequant_bmm` into `gpu.func` kernels built
    from upstream dialects (scf, vector, memref, amdgpu, rocdl).

    B (batch, the attention heads of a rank) and M (tokens) may be dynamic: kernels take
    them at run time. N, K and the group size are static: a kernel is specialized on them.
    The fp8 element type selects the format (`f8E4M3FNUZ` for gfx942, `f8E4M3FN` for
    gfx950); verifiers check shapes and types, lowerings check the chip.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes; defined beside them, where their storage is complete.
    void registerAttributes();
  }];
}

class MLAFP8_Op<string mnemonic, list<Trait> traits = []>
    : Op<MLAFP8_Dialect, mnemonic, traits>;

class MLAFP8_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<MLAFP8_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // MLAFP8_BASE
