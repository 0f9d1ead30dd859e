//===- KernelEmitter.h - The body of one prequant_bmm kernel ----*- C++ -*-===//
//
// One kernel per tile: for each K-group, load W and X (Loads.cpp), quantize
// X into LDS (Quantize.cpp), run the MFMAs (Mma.cpp); then the epilogue
// (Epilogue.h). The K-group loop and the kernel itself are KernelBuilder.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MLAFP8_LIB_CONVERSION_MLAFP8TOGPU_KERNELEMITTER_H
#define MLAFP8_LIB_CONVERSION_MLAFP8TOGPU_KERNELEMITTER_H

#include "EmitterBase.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::mlafp8 {

class KernelEmitter : public EmitterBase {
public:
  using EmitterBase::EmitterBase;

  /// Emits the body of `func`, whose signature is the kernel ABI's.
  void emit(gpu::GPUFuncOp func);

private:
  /// Binds the kernel arguments (by kernel_abi::ArgIndex), the LDS buffers
  /// and the ids.
  void bindArguments(gpu::GPUFuncOp func);
  /// The K-groups of this workgroup (all of them, or its split's share).
  SmallVector<Value> emitGroups(SmallVector<Value> accs);
  /// The full groups of a split whose group count is known, as straight-line
  /// code with `stages - 1` groups of loads in flight ahead of the compute.
  SmallVector<Value> emitUnrolledGroups(Value kBegin, int64_t count,
                                        SmallVector<Value> accs);
  /// The full groups of [kBegin, kEnd) as an scf.for, prefetching
  /// `stages - 1` groups through loop-carried values.
  SmallVector<Value> emitGroupLoop(Value kBegin, Value kEnd, int64_t stages,
                                   SmallVector<Value> accs);
  /// The global loads of one K-group starting at column `k0`: the raw X
  /// chunks ([pass][chunk]) followed by the W units ([N tile][unit]), all
  /// unconditional. Issued `stages - 1` groups ahead of their compute.
  SmallVector<Value> loadGroup(Value k0, bool partial);
  /// An `amdgpu.sched_barrier` that no instruction crosses: it pins the order
  /// of the loads and of the waits for them.
  void emitScheduleFence();
  /// Quantizes the X chunks of one K-group into the LDS A tile and its row
  /// scales.
  void quantizeRows(ValueRange xChunks);
  /// One K-group from its loads: quantizes X into LDS, runs the MFMAs and
  /// returns the updated accumulators. `more`: another group's quantization
  /// follows, which must wait (a barrier) until every wave has read the LDS.
  SmallVector<Value> emitGroup(ValueRange loads, ValueRange accs,
                               bool more = true);
  /// The X chunks and the W units among a group's loads (loadGroup's
  /// order).
  ValueRange getXLoads(ValueRange loads) const {
    return loads.take_front(p.passes * p.chunksPerLane);
  }
  ValueRange getWLoads(ValueRange loads) const {
    return loads.drop_front(p.passes * p.chunksPerLane);
  }
  /// Sets (or clears) MODE.FP16_OVFL, under which v_cvt_pk_fp8_f32
  /// saturates out-of-range values to the format's largest finite value
  /// instead of giving NaN.
  void setSaturatingFp8(bool on);
  /// The MFMAs of one K-group whose A tile is in LDS copy `ldsBuffer`, with
  /// the W units among `loads`; returns the updated accumulators.
  SmallVector<Value> multiplyGroup(ValueRange loads, ValueRange accs);
};

/// Creates the kernel of `plan` named `name` at the end of `module`.
gpu::GPUFuncOp buildKernel(gpu::GPUModuleOp module, Location loc,
                           StringRef name, const KernelPlan &plan);

} // namespace mlir::mlafp8

#endif // MLAFP8_LIB_CONVERSION_MLAFP8TOGPU_KERNELEMITTER_H
