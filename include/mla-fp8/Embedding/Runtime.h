//===- Runtime.h - serving in plain C++ types -------------------*- C++ -*-===//
//
// The serving half of the embedding API (library MLAFP8EmbeddingRuntime):
// load a bundle and run its kernels on the emulator. It links Runtime,
// RuntimeEmulator and Emulator, never MLIR, so a serving process that uses
// it does not map libMLIR. Like Compiler.h it is plain C++ for callers built
// with exceptions and RTTI (the Python module); it is not a C API.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_EMBEDDING_RUNTIME_H
#define MLA_FP8_EMBEDDING_RUNTIME_H

#include "mla-fp8/Runtime/KernelTable.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir::mlafp8::embedding {

/// One row of the chip table (Hardware/Chip.h) in plain types.
struct ChipSummary {
  std::string name;
  std::string marketingNames;
  /// "CDNA3" or "CDNA4".
  std::string architecture;
  /// The fp8 types the chip's kernels take, e.g. "f8E4M3FNUZ".
  std::string fp8E4M3Type;
  std::string fp8E5M2Type;
  unsigned waveSize = 0;
  unsigned ldsBytesPerWorkgroup = 0;
  unsigned numCUs = 0;
  /// The fp8 MFMA mnemonics the chip implements.
  std::vector<std::string> mfmas;
};

/// Every supported chip, in the chip table's order.
std::vector<ChipSummary> listChips();

/// One explicit argument of the kernel ABI.
struct KernelArgSummary {
  std::string name;
  unsigned offset = 0, size = 0;
  /// The code-object metadata's .value_kind, e.g. "global_buffer".
  std::string valueKind;
};

/// One fp8 MFMA record that a tile may name.
struct MfmaSummary {
  /// The tile's spelling, e.g. "m16n16k32".
  std::string shape;
  std::string mnemonic;
  unsigned m = 0, n = 0;
};

/// What a bundle loader written in another language (the Python package's)
/// must agree on with this one: the kernel ABI's arguments, the MFMA records
/// and every bound the loader checks, by name.
struct LoaderFacts {
  std::vector<KernelArgSummary> args;
  std::vector<MfmaSummary> mfmas;
  std::vector<std::pair<std::string, int64_t>> constants;
};
LoaderFacts getLoaderFacts();

/// Loads a bundle directory (Runtime/Bundle.h); null with `error` set on
/// failure.
std::shared_ptr<const runtime::LoadedBundle> loadBundle(const std::string &dir,
                                                        std::string &error);

/// Runs the kernels of one loaded bundle on the gfx9 emulator. Each chip's
/// code object is decoded once, on first use; the bundle is kept alive as
/// long as this object. Safe to call from several threads.
class BundleEmulator {
public:
  explicit BundleEmulator(std::shared_ptr<const runtime::LoadedBundle> bundle);
  ~BundleEmulator();
  BundleEmulator(const BundleEmulator &) = delete;
  BundleEmulator &operator=(const BundleEmulator &) = delete;

  /// Launches `kernel` (one of the bundle's) for `call` with `threads`
  /// emulator threads (0: one per core). Returns false with `error` set on
  /// failure; `instructions` receives the executed instruction count.
  bool launch(const runtime::KernelEntry &kernel,
              const runtime::PrequantBmmCall &call, unsigned threads,
              uint64_t &instructions, std::string &error);

  const runtime::LoadedBundle &getBundle() const { return *bundle; }

private:
  struct Launcher;
  std::shared_ptr<const runtime::LoadedBundle> bundle;
  std::unique_ptr<Launcher> launcher;
};

} // namespace mlir::mlafp8::embedding

#endif // MLA_FP8_EMBEDDING_RUNTIME_H
