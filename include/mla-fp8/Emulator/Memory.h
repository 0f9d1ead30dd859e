//===- Memory.h - Device global memory made of named buffers ----*- C++ -*-===//
//
// The emulator's global memory is nothing but the buffers its caller
// registers: every access must fall inside one of them, so a kernel that
// reads or writes past a tensor stops with a precise message instead of
// silently touching a neighbour.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_EMULATOR_MEMORY_H
#define MLA_FP8_EMULATOR_MEMORY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace mlir::mlafp8::emu {

/// One registered range of device memory.
struct Buffer {
  std::string name;
  uint64_t base = 0;
  uint64_t size = 0;
  /// Host storage of `size` bytes: owned (allocate) or the caller's (map).
  uint8_t *data = nullptr;
  std::unique_ptr<uint8_t[]> owned;
  bool readOnly = false;
};

/// Device global memory: a set of non-overlapping buffers.
class DeviceMemory {
public:
  /// Allocates `size` zeroed bytes owned by the emulator at a fresh device
  /// address aligned to `align`; a guard gap separates buffers so that an
  /// overrun lands in no buffer. Returns the device address.
  uint64_t allocate(llvm::StringRef name, uint64_t size, uint64_t align = 256);

  /// Registers caller-owned storage `host` at a fresh device address, as
  /// allocate places its buffers (aligned, with a guard gap), with no copy.
  /// Returns the device address.
  uint64_t mapNew(llvm::StringRef name, llvm::MutableArrayRef<uint8_t> host,
                  bool readOnly, uint64_t align = 256);

  /// Registers caller-owned storage `host` at device address `base`.
  llvm::Error map(llvm::StringRef name, uint64_t base,
                  llvm::MutableArrayRef<uint8_t> host, bool readOnly = false);

  /// Removes the buffer starting at `base` (no-op if none).
  void release(uint64_t base);

  /// The buffer that holds all of [addr, addr + size), or null.
  const Buffer *find(uint64_t addr, uint64_t size) const;

  /// The buffer nearest to `addr` (for error messages), or null if empty.
  const Buffer *nearest(uint64_t addr) const;

  /// Host pointer for [addr, addr + size) if one buffer holds it, else null.
  uint8_t *translate(uint64_t addr, uint64_t size) const {
    const Buffer *b = find(addr, size);
    return b ? b->data + (addr - b->base) : nullptr;
  }

  /// The buffer called `name`, or null.
  Buffer *lookup(llvm::StringRef name);

  /// Copies host bytes in / out of device memory; fails outside buffers.
  llvm::Error write(uint64_t addr, llvm::ArrayRef<uint8_t> bytes);
  llvm::Error read(uint64_t addr, llvm::MutableArrayRef<uint8_t> bytes) const;

  /// Describes `addr` relative to the buffers ("3 bytes past the end of 'Y'
  /// [0x..., 0x...)").
  std::string describe(uint64_t addr, uint64_t size) const;

private:
  std::map<uint64_t, Buffer> buffers;
  uint64_t nextAddress = 0x100000000ull;
};

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_EMULATOR_MEMORY_H
