//===- EmulatorLaunch.h - run a bundle's kernel on the emulator -*- C++ -*-===//
//
// Launches a kernel of a loaded bundle on the gfx9 emulator with host arrays,
// exactly as a HIP launcher would on a GPU: the manifest gives the kernarg
// offsets, the workgroup size and the grid. Serving code without an AMD GPU
// (and the project's end-to-end tests) run kernels through this.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_RUNTIME_EMULATORLAUNCH_H
#define MLA_FP8_RUNTIME_EMULATORLAUNCH_H

#include "mla-fp8/Emulator/Emulator.h"
#include "mla-fp8/Runtime/KernelTable.h"

#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace mlir::mlafp8::runtime {

/// Runs kernels of loaded bundles on the emulator; decodes each code object
/// once and reuses it across calls, and keeps each split-K kernel's workspace
/// (zeroed once) across calls. Safe to call from several threads.
class EmulatorLauncher {
public:
  EmulatorLauncher();
  ~EmulatorLauncher();

  /// Launches `kernel` for `call` with `threads` emulator worker threads
  /// (0: one per core). Returns the dynamic counts of the run.
  llvm::Expected<emu::ExecStats> launch(const KernelEntry &kernel,
                                        const PrequantBmmCall &call,
                                        unsigned threads = 0);

  /// A wave that executes more instructions stops the launch with an error
  /// (emu::DispatchConfig::maxStepsPerWave; mla-fp8-emu --emu-max-steps).
  void setMaxStepsPerWave(uint64_t steps) { maxStepsPerWave = steps; }

  /// Traces wave `wave` of workgroup (0,0,0) to stderr (-1: off;
  /// emu::DispatchConfig::traceWave; mla-fp8-emu --trace-wave).
  void setTraceWave(int wave) { traceWave = wave; }

  /// Runs the timing model for `device` (null: off) on every launch; its
  /// result is in the returned counts. Without `full`, one workgroup per
  /// class runs (every split of the first/interior/last M tile and batch
  /// element), which leaves Y incomplete.
  void setTiming(const DeviceTiming *device, bool full) {
    timingDevice = device;
    fullTiming = full;
  }

  /// Bytes of the split-K workspace kept for `kernel`: 0 until a launch of
  /// it has needed one (a launch of M = 0 or B = 0 never does).
  uint64_t getWorkspaceSize(const KernelEntry &kernel);

private:
  /// A split-K kernel's workspace, kept across launches as a server keeps it.
  struct Workspace {
    std::mutex mutex;
    std::vector<uint8_t> bytes;
  };

  llvm::Expected<emu::Emulator *> getEmulator(const KernelEntry &kernel);
  Workspace &getWorkspace(const KernelEntry &kernel);

  uint64_t maxStepsPerWave = emu::DispatchConfig().maxStepsPerWave;
  int traceWave = -1;
  const DeviceTiming *timingDevice = nullptr;
  bool fullTiming = false;

  std::mutex mutex;
  std::map<const std::string *, std::unique_ptr<emu::Emulator>> emulators;
  std::map<std::string, std::unique_ptr<Workspace>> workspaces;
};

/// Bytes from the first to one past the last element that a (b, m, cols) view
/// of 2-byte elements with element strides (strideB, strideM, 1) touches;
/// nullopt when b, m or cols is below 1, a stride is negative, or the size
/// overflows.
std::optional<uint64_t> getViewBytes(int64_t b, int64_t m, int64_t cols,
                                     int64_t strideB, int64_t strideM);

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_RUNTIME_EMULATORLAUNCH_H
