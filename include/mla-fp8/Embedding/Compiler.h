//===- Compiler.h - the compiler in plain C++ types -------------*- C++ -*-===//
//
// The compiler half of the embedding API (library MLAFP8Embedding): parse IR
// and run pass pipelines, compile one shape, write a bundle. What the Python
// module (and any embedder built with exceptions and RTTI) calls: text, bytes
// and standard containers in, the same out, with errors as messages.
// Everything typed by LLVM or MLIR stays inside the libraries, which are built
// with LLVM's -fno-exceptions -fno-rtti. It is a C++ facade, not a C API: its
// callers are C++ (pybind11) and gain nothing from extern "C". It links MLIR;
// the serving half without it is Runtime.h.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_EMBEDDING_COMPILER_H
#define MLA_FP8_EMBEDDING_COMPILER_H

#include "mla-fp8/ABI/KernelDescription.h"
#include "mla-fp8/AOT/KernelSetRequest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::mlafp8::embedding {

/// The output of a text-to-text call: `text` holds the result when `ok`, the
/// diagnostics otherwise.
struct TextResult {
  bool ok = false;
  std::string text;
};

/// Parses `ir` (an MLIR module in the generic or custom form, any registered
/// dialect) and prints it back, in the generic form when `generic`. The
/// parsed module is verified.
TextResult parseAndPrint(const std::string &ir, bool generic = false);

/// Parses `ir`, runs `pipeline` (textual, anchored on the module, e.g.
/// "builtin.module(mlafp8-fuse-prequant)") and prints the result. Knows the
/// mlafp8 dialect, passes and pipelines and every upstream dialect and pass.
TextResult runPipeline(const std::string &ir, const std::string &pipeline,
                       bool generic = false);

/// A bundle to write.
struct GenerateOptions {
  /// The kernels, as mla-fp8-aot's options say them: resolved by the same
  /// code (AOT/Options.h), so the same values pass and fail alike.
  KernelSetRequest kernels;
  std::string outputDir;
  /// Replace an mla-fp8 bundle in outputDir even if it holds other files
  /// (they are deleted); a directory that is not a bundle is never replaced.
  bool force = false;
  /// Empty disables the cache.
  std::string cacheDir;
  unsigned jobs = 0;
};

/// One chip of a generated bundle.
struct GeneratedChip {
  std::string chip;
  std::vector<std::string> symbols;
  uint64_t codeObjectBytes = 0;
  std::string sha256;
  bool fromCache = false;
};

struct GenerateResult {
  bool ok = false;
  std::string error;
  std::vector<GeneratedChip> chips;
  std::string manifest;
  uint64_t bytesWritten = 0;
};

/// Writes a bundle as `mla-fp8-aot` does.
GenerateResult generateBundle(const GenerateOptions &options);

/// One projection shape on one chip.
struct CompileSpecOptions {
  /// The kernels' description; an empty fp8Type takes the chip's.
  kernel_abi::KernelDescription kernel;
  std::string projection = "custom";
  std::vector<int64_t> batches;
  int64_t maxM = 1024;
  bool withIsa = true;
  /// 5 (ROCm 6.0+) or 6 (ROCm 6.3+).
  int64_t codeObjectVersion = 5;
};

/// A kernel of a compiled spec with its tile.
struct CompiledKernel {
  std::string symbol;
  /// Serves the launches of minRows <= B * M <= maxRows (maxRows 0: no
  /// upper bound).
  int64_t minRows = 0, maxRows = 0, blockM = 0, blockN = 0, waves = 0,
          splitK = 1, stages = 1, occupancy = 2;
  std::string mfma;
  /// From the code object's metadata note.
  uint64_t kernargSize = 0, ldsBytes = 0, scratchBytes = 0;
  unsigned vgprs = 0, agprs = 0, sgprs = 0, vgprSpills = 0, sgprSpills = 0,
           wavefrontSize = 0, maxWorkgroupSize = 0;
};

struct CompileSpecResult {
  bool ok = false;
  std::string error;
  std::string codeObject;
  std::string isa;
  /// The code object's target id (e.g. "amdgcn-amd-amdhsa--gfx942") and
  /// code-object version.
  std::string targetId;
  unsigned codeObjectVersion = 0;
  /// The description every kernel was compiled from (fp8Type filled in).
  kernel_abi::KernelDescription kernel;
  std::vector<CompiledKernel> kernels;
};

/// Compiles the kernels of one shape (one per range of launch rows, B * M) into a code object.
CompileSpecResult compileSpec(const CompileSpecOptions &options);

/// Kernel groups lowered by this process so far (AOT/Compile.h).
uint64_t compiledGroupCount();

} // namespace mlir::mlafp8::embedding

#endif // MLA_FP8_EMBEDDING_COMPILER_H
