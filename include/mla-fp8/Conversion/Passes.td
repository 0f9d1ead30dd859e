//===- Passes.td - mlafp8 conversion passes ----------------*- tablegen -*-===//

#ifndef MLAFP8_CONVERSION_PASSES
#define MLAFP8_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertMLAFP8ToGPUPass : Pass<"convert-mlafp8-to-gpu", "::mlir::ModuleOp"> {
  let summary = "generate one gpu.func kernel per tile of each prequant_bmm";
  let description = [{
    For every `mlafp8.prequant_bmm` (which must carry `tiles`, see
    `mlafp8-select-tiles`), creates `gpu.module @<func>_kernels` (the module
    becomes a `gpu.container_module`) holding one `gpu.func` kernel per tile,
    named as `kernel_abi::getKernelSymbol` says, e.g.
    `mla_fp8_n512_k128_g128_bf16_gfx942_r1_64`. The host function is left in
    place: the op gets its `kernels` attribute, an array of `@module::@kernel`
    symbol references parallel to `tiles`, that tells a launcher which kernel
    serves which range of launch rows (B * M). The kernel ABI (argument order, kernarg offsets, grid,
    workspace) is `ABI/KernelABI.h`; the kernel's geometry is `KernelPlan.h`,
    read from the tile and its MFMA record (`Hardware/Mfma.h`).

    Inside a kernel, for each K-group: the X rows of the tile are loaded,
    then W fragments with 16-byte loads straight into MFMA operand registers
    (X first: its round trip precedes the quantization); each row's amax is
    reduced across the lanes that hold it (DPP, then `gpu.shuffle xor` for
    rows wider than 16 lanes), the values are scaled and converted with
    `amdgpu.packed_trunc_2xfp8` while MODE.FP16_OVFL is set (an
    `llvm.amdgcn.s.setreg` on either side), so that the conversion saturates
    at +-FMAX, and stored to LDS in MFMA operand order (one 16-byte
    `ds_read_b128` per lane feeds two MFMAs) with the row scales next to them;
    `amdgpu.mfma` accumulates a fresh per-group partial, which is multiplied
    by the row scales and added to the f32 accumulator. 16x16 tiles are
    computed transposed (W the A operand, X the B operand: a lane holds 4
    columns of one row); 32x32 tiles take X as A. The epilogue applies the
    weight descale (per tensor or per batch) and the bias, rounds to the
    output type and stores 4 adjacent columns per lane (32x32 tiles after a
    DPP transpose) with M and N tail masks. The
    K order inside a group is permuted identically for X and W so that each
    lane's two 8-byte MFMA operands are 16 contiguous bytes. A partial last
    K-group reads zeros past K (masked loads), so its amax and sum cover only
    the existing columns. With `stages` = s > 1 the W and X loads of group
    g + s - 1 are issued before group g is computed; up to 8 groups per
    workgroup are emitted as straight-line code, so that no loop-carried
    register copy waits for a prefetched load. Quantization passes whose rows all
    lie past M (a workgroup-uniform test) are skipped: an output row
    depends only on its own X row, and rows past M are never stored.
    LLVM sizes registers from the workgroup size (the tile verifier accepts
    only the default `occupancy`).

    With `split_k` > 1 the K-groups are divided among `split_k` workgroups per
    output tile (to fill the chip at small M). Each stores its f32 partial
    (row scales applied) to the `workspace` argument, fences (release, agent
    scope) and increments the tile's u32 counter with an agent-scope
    `llvm.atomicrmw add`; the workgroup that arrives last fences (acquire),
    adds the partials in split order 0..split_k-1 (deterministic whatever
    the arrival order), runs the usual epilogue and resets the counter to 0.
    The caller zeroes the workspace once; every launch leaves it reusable.
    Layout and size: `ABI/KernelABI.h` (`getWorkspaceBytesPerBlock`).

    Fails with a diagnostic for an unknown chip, an fp8 format the chip lacks,
    a missing `tiles`, an MFMA the chip lacks, `split_k` above the number of
    K-groups, a group size below the MFMA's K, or a tile whose LDS exceeds the
    chip's.

    Before:
    ```mlir
    %y = mlafp8.prequant_bmm %x, %w, %ws {tiles = [#mlafp8.tile<...>]} : ...
    ```
    After:
    ```mlir
    %y = mlafp8.prequant_bmm %x, %w, %ws {kernels = [@f_kernels::@mla_fp8_...],
        tiles = [...]} : ...
    gpu.module @f_kernels {
      gpu.func @mla_fp8_n512_k128_g128_bf16_gfx942_m1_0(%x: memref<...>, ...)
          kernel attributes {known_block_size = array<i32: 64, 1, 1>} { ... }
    }
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"gfx942\"",
           "the target chip, a row of the chip table (lib/Hardware/Chip.cpp), e.g. gfx942">
  ];
  let dependentDialects = [
    "::mlir::amdgpu::AMDGPUDialect", "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def MLAFP8SerializePass : Pass<"mlafp8-serialize", "::mlir::ModuleOp"> {
  let summary = "compile each gpu.module to a code object in-process";
  let description = [{
    Replaces every `gpu.module` (in the LLVM and ROCDL dialects, as after
    `convert-gpu-to-rocdl`) with a `gpu.binary` of the same name holding one
    `#gpu.object<#rocdl.target<chip = ...>, ...>`: a linked code object
    (`format=hsaco`, ELF shared object, built with LLVM's AMDGPU target and the
    lld library in this process: no ROCm, no linker executable), a relocatable
    object (`format=object`) or the assembly text (`format=isa`). With `dump`,
    the bytes are also written to disk: to `<dump>/<module>.hsaco|.o|.s` when
    `dump` is an existing directory, else to the file `dump` (one module only).

    Before:
    ```mlir
    gpu.module @f_kernels { llvm.func @k(...) attributes {rocdl.kernel} }
    ```
    After:
    ```mlir
    gpu.binary @f_kernels [#gpu.object<#rocdl.target<chip = "gfx942">, bin = "...">]
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"gfx942\"",
           "the target chip, a row of the chip table (lib/Hardware/Chip.cpp), e.g. gfx942">,
    Option<"format", "format", "std::string", /*default=*/"\"hsaco\"",
           "what to produce: hsaco, object or isa">,
    Option<"optLevel", "opt-level", "unsigned", /*default=*/"3",
           "LLVM optimization level (0 to 3)">,
    Option<"dump", "dump", "std::string", /*default=*/"\"\"",
           "also write the bytes to this directory or file">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::ROCDL::ROCDLDialect"];
}

#endif // MLAFP8_CONVERSION_PASSES
