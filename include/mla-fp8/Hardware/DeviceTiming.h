//===- DeviceTiming.h - Timing constants of the products ---------*- C++
//-*-===//
//
// The constants of the emulator's timing model, one row per product (MI300X
// on gfx942; MI355X and MI350X on gfx950). Each value cites its public source
// in DeviceTiming.cpp; values that no public source gives are marked there as
// assumptions, and the model reports its result at 0.5x and 2x of the most
// uncertain one (global-memory latency).
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_HARDWARE_DEVICETIMING_H
#define MLA_FP8_HARDWARE_DEVICETIMING_H

#include "mla-fp8/Hardware/Chip.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::mlafp8 {

/// One product's timing constants. Cycles are shader-clock cycles.
struct DeviceTiming {
  /// Product name ("MI300X") and the chip it is built on.
  llvm::StringRef name;
  llvm::StringRef chip;
  /// Peak engine clock.
  double clockGHz;
  /// Active compute units.
  unsigned numCUs;
  /// LDS a compute unit holds (what bounds resident workgroups).
  unsigned ldsBytesPerCU;
  /// Peak HBM bandwidth and the L2's aggregate read bandwidth, bytes/s.
  double hbmBytesPerSecond;
  double l2BytesPerSecond;
  /// Vector L1 bytes per clock per CU (what one CU's loads can move, all
  /// its resident waves together), and what one wave's requests can move.
  unsigned l1BytesPerClockPerCU;
  unsigned waveVmemBytesPerClock;
  /// LDS banks (4 bytes each) a read or a write is served from per cycle.
  unsigned ldsReadBanks, ldsWriteBanks;
  /// Load-to-use latencies.
  unsigned vmemLoadLatency;
  unsigned vmemStoreLatency;
  unsigned smemLatency;
  unsigned ldsLatency;
  /// Cycles a wave64 instruction occupies its wave's issue slot (VALU, SALU,
  /// branch, memory issue), and a quarter-rate (transcendental, 32-bit
  /// integer multiply) VALU instruction.
  unsigned issueCycles;
  unsigned quarterRateCycles;
  /// Launch overhead of one kernel, microseconds (reported separately).
  double launchOverheadMicroseconds;
  /// What a profiler's kernel time holds beyond the waves' own time: the
  /// command processor starting the dispatch, launching its workgroups and
  /// signalling its end, microseconds (included in the kernel time).
  double dispatchWindowMicroseconds;
  /// The cache line the memory model counts in, bytes.
  unsigned lineBytes;

  double cyclesToMicroseconds(double cycles) const {
    return cycles / (clockGHz * 1e3);
  }
};

/// Every product of the table.
llvm::ArrayRef<DeviceTiming> getDeviceTimings();

/// The product called `name` (case-insensitive), or null.
const DeviceTiming *lookupDeviceTiming(llvm::StringRef name);

/// The product a chip's timing defaults to (MI300X for gfx942, MI355X for
/// gfx950), or null if the chip has none.
const DeviceTiming *getDefaultDeviceTiming(llvm::StringRef chip);

/// "MI300X, MI355X, MI350X", for messages.
std::string joinDeviceTimingNames();

} // namespace mlir::mlafp8

#endif // MLA_FP8_HARDWARE_DEVICETIMING_H
