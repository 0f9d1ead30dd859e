//===- Decoder.h - LLVM MC disassembly and the instruction cache *- C++ -*-===//

#ifndef MLA_FP8_LIB_EMULATOR_DECODER_H
#define MLA_FP8_LIB_EMULATOR_DECODER_H

#include "Internal.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace mlir::mlafp8::emu {

class MCState;

/// Decodes instructions of one image with LLVM's AMDGPU disassembler, once
/// per address; lookups after the first are lock-free.
class InstCache {
public:
  static llvm::Expected<std::unique_ptr<InstCache>>
  create(llvm::ArrayRef<uint8_t> image, const ChipInfo &chip);
  ~InstCache();

  /// The instruction at `pc` (decoded on first use).
  llvm::Expected<const Inst *> get(uint64_t pc) {
    if (pc % 4 == 0 && pc / 4 < slots.size())
      if (const Inst *i = slots[pc / 4].load(std::memory_order_acquire))
        return i;
    return decode(pc);
  }

  /// Disassembly text at `pc`.
  llvm::Expected<std::string> disassemble(uint64_t pc);

private:
  InstCache() = default;
  llvm::Expected<const Inst *> decode(uint64_t pc);

  llvm::ArrayRef<uint8_t> image;
  std::unique_ptr<MCState> mc;
  const ChipInfo *chip = nullptr;
  std::vector<std::atomic<const Inst *>> slots;
  std::vector<std::unique_ptr<Inst>> owned;
  std::mutex mutex;
};

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_LIB_EMULATOR_DECODER_H
