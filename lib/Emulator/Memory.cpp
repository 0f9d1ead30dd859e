//===- Memory.cpp - Device global memory ----------------------------------===//

#include "mla-fp8/Emulator/Memory.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace llvm;

namespace mlir::mlafp8::emu {

/// The next fresh device address for `size` bytes.
static uint64_t placeBuffer(uint64_t &nextAddress, uint64_t size,
                            uint64_t align) {
  align = std::max<uint64_t>(align, 256);
  uint64_t base = (nextAddress + align - 1) / align * align;
  // A 1 MiB guard gap: an overrun of a buffer lands in no buffer.
  nextAddress = base + std::max<uint64_t>(size, 1) + (1ull << 20);
  return base;
}

uint64_t DeviceMemory::allocate(StringRef name, uint64_t size, uint64_t align) {
  uint64_t base = placeBuffer(nextAddress, size, align);
  Buffer b;
  b.name = name.str();
  b.base = base;
  b.size = size;
  b.owned.reset(new uint8_t[std::max<uint64_t>(size, 1)]());
  b.data = b.owned.get();
  buffers.emplace(base, std::move(b));
  return base;
}

uint64_t DeviceMemory::mapNew(StringRef name, MutableArrayRef<uint8_t> host,
                              bool readOnly, uint64_t align) {
  uint64_t base = placeBuffer(nextAddress, host.size(), align);
  Buffer b;
  b.name = name.str();
  b.base = base;
  b.size = host.size();
  b.data = host.data();
  b.readOnly = readOnly;
  buffers.emplace(base, std::move(b));
  return base;
}

Error DeviceMemory::map(StringRef name, uint64_t base,
                        MutableArrayRef<uint8_t> host, bool readOnly) {
  uint64_t size = host.size();
  auto next = buffers.lower_bound(base);
  if (next != buffers.end() && next->first < base + std::max<uint64_t>(size, 1))
    return createStringError("buffer '%s' overlaps buffer '%s'",
                             name.str().c_str(), next->second.name.c_str());
  if (next != buffers.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > base)
      return createStringError("buffer '%s' overlaps buffer '%s'",
                               name.str().c_str(), prev->second.name.c_str());
  }
  Buffer b;
  b.name = name.str();
  b.base = base;
  b.size = size;
  b.data = host.data();
  b.readOnly = readOnly;
  buffers.emplace(base, std::move(b));
  nextAddress = std::max(nextAddress, base + size + uint64_t(1 << 20));
  return Error::success();
}

void DeviceMemory::release(uint64_t base) { buffers.erase(base); }

const Buffer *DeviceMemory::find(uint64_t addr, uint64_t size) const {
  auto it = buffers.upper_bound(addr);
  if (it == buffers.begin())
    return nullptr;
  --it;
  const Buffer &b = it->second;
  if (addr - b.base > b.size || size > b.size - (addr - b.base))
    return nullptr;
  return &b;
}

const Buffer *DeviceMemory::nearest(uint64_t addr) const {
  const Buffer *best = nullptr;
  uint64_t bestDist = ~0ull;
  for (const auto &[base, b] : buffers) {
    uint64_t dist = addr < base             ? base - addr
                    : addr >= base + b.size ? addr - (base + b.size) + 1
                                            : 0;
    if (dist < bestDist) {
      bestDist = dist;
      best = &b;
    }
  }
  return best;
}

Buffer *DeviceMemory::lookup(StringRef name) {
  for (auto &[base, b] : buffers)
    if (b.name == name)
      return &b;
  return nullptr;
}

Error DeviceMemory::write(uint64_t addr, ArrayRef<uint8_t> bytes) {
  uint8_t *p = translate(addr, bytes.size());
  if (!p)
    return createStringError("host write outside device buffers: %s",
                             describe(addr, bytes.size()).c_str());
  std::memcpy(p, bytes.data(), bytes.size());
  return Error::success();
}

Error DeviceMemory::read(uint64_t addr, MutableArrayRef<uint8_t> bytes) const {
  uint8_t *p = translate(addr, bytes.size());
  if (!p)
    return createStringError("host read outside device buffers: %s",
                             describe(addr, bytes.size()).c_str());
  std::memcpy(bytes.data(), p, bytes.size());
  return Error::success();
}

std::string DeviceMemory::describe(uint64_t addr, uint64_t size) const {
  std::string s;
  raw_string_ostream os(s);
  os << size << " bytes at " << format_hex(addr, 18);
  const Buffer *b = nearest(addr);
  if (!b) {
    os << " (no buffers registered)";
    return s;
  }
  uint64_t end = b->base + b->size;
  if (addr < b->base)
    os << ", " << (b->base - addr) << " bytes before";
  else if (addr + size > end)
    os << ", " << (addr + size - end) << " bytes past the end of";
  else
    os << ", inside";
  os << " buffer '" << b->name << "' [" << format_hex(b->base, 18) << ", "
     << format_hex(end, 18) << ")";
  return s;
}

} // namespace mlir::mlafp8::emu
