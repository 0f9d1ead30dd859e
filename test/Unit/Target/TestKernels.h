//===- TestKernels.h - Kernels shared by the Target tests -------*- C++ -*-===//

#ifndef MLA_FP8_TEST_UNIT_TARGET_TESTKERNELS_H
#define MLA_FP8_TEST_UNIT_TARGET_TESTKERNELS_H

namespace mlir::mlafp8::test {

/// A kernel with loads, a store and two dependent fp8 MFMAs (valid on both
/// chips).
inline constexpr const char *kMfmaKernelIR = R"(
define amdgpu_kernel void @mfma_kernel(ptr addrspace(1) %a, ptr addrspace(1) %b,
                                       ptr addrspace(1) %c, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i64, ptr addrspace(1) %a, i32 %tid
  %pb = getelementptr i64, ptr addrspace(1) %b, i32 %tid
  %va = load i64, ptr addrspace(1) %pa
  %vb = load i64, ptr addrspace(1) %pb
  %r0 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8(
            i64 %va, i64 %vb, <4 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %r1 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8(
            i64 %vb, i64 %va, <4 x float> %r0, i32 0, i32 0, i32 0)
  %nf = sitofp i32 %n to float
  %s = insertelement <4 x float> poison, float %nf, i32 0
  %splat = shufflevector <4 x float> %s, <4 x float> poison, <4 x i32> zeroinitializer
  %r = fmul <4 x float> %r1, %splat
  %pc = getelementptr <4 x float>, ptr addrspace(1) %c, i32 %tid
  store <4 x float> %r, ptr addrspace(1) %pc
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8(i64, i64, <4 x float>, i32, i32, i32)
)";

} // namespace mlir::mlafp8::test

#endif // MLA_FP8_TEST_UNIT_TARGET_TESTKERNELS_H
