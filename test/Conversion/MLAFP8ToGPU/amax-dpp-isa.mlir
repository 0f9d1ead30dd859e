// On both chips the row amax takes four dependent DPP steps (folded into
// v_max_u32_dpp where LLVM can, else a v_mov_b32_dpp and a max) with no ds_swizzle, no LDS traffic and no
// s_waitcnt between them (the shuffle form waited lgkmcnt(0) after each
// step). The epilogue of a 32x32 tile transposes with DPP moves of its own,
// after the MFMAs; the 16x16 tiles, computed transposed, store their
// accumulators as they are, with no DPP after the amax.
// RUN: rm -rf %t && mkdir -p %t/gfx942 %t/gfx950
// RUN: mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 dump=%t/gfx942" -o /dev/null
// RUN: llvm-objdump -d --mcpu=gfx942 %t/gfx942/kup_kernels.hsaco | FileCheck %s --check-prefixes=CHECK,GFX942 --implicit-check-not=ds_swizzle --implicit-check-not=ds_bpermute
// gfx950 takes OCP fp8 weights.
// RUN: sed 's/f8E4M3FNUZ/f8E4M3FN/g' %s > %t/ocp.mlir
// RUN: mla-fp8-opt %t/ocp.mlir --mlafp8-to-hsaco="chip=gfx950 dump=%t/gfx950" -o /dev/null
// RUN: llvm-objdump -d --mcpu=gfx950 %t/gfx950/kup_kernels.hsaco | FileCheck %s --check-prefixes=CHECK,GFX950 --implicit-check-not=ds_swizzle --implicit-check-not=ds_bpermute

// The first range (four waves, 16x16 MFMAs): on gfx942 16x64, up to 512
// rows B * M; on gfx950 16x128, up to 2048 rows.
// CHECK-LABEL: _r1_{{512|2048}}>:
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
// CHECK-NOT: {{s_waitcnt|ds_}}
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf
// CHECK-NOT: {{s_waitcnt|ds_}}
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}row_half_mirror row_mask:0xf bank_mask:0xf
// CHECK-NOT: {{s_waitcnt|ds_}}
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}row_mirror row_mask:0xf bank_mask:0xf
// CHECK: ds_write_b64
// CHECK-NOT: _dpp
// CHECK: s_endpgm
// 32x256 (eight waves, 16x16 MFMAs, 2049-8192 rows on both chips) reduces
// the same way, and its epilogue has no DPP either.
// CHECK-LABEL: _r2049_8192>:
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
// CHECK-NOT: {{s_waitcnt|ds_}}
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf
// CHECK-NOT: {{s_waitcnt|ds_}}
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}row_half_mirror row_mask:0xf bank_mask:0xf
// CHECK-NOT: {{s_waitcnt|ds_}}
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}row_mirror row_mask:0xf bank_mask:0xf
// CHECK: ds_write_b64
// CHECK-NOT: _dpp
// CHECK: s_endpgm
// The largest tile, 128x256 (eight waves, 32x32 MFMAs, from 8193 rows on both
// chips), reduces the same way too; its epilogue transposes each quad's 4
// rows with DPP after the MFMAs.
// CHECK-LABEL: _r8193_inf>:
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
// CHECK-NOT: {{s_waitcnt|ds_}}
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf
// CHECK-NOT: {{s_waitcnt|ds_}}
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}row_half_mirror row_mask:0xf bank_mask:0xf
// CHECK-NOT: {{s_waitcnt|ds_}}
// CHECK: {{v_max_u32_dpp|v_mov_b32_dpp}} {{.*}}row_mirror row_mask:0xf bank_mask:0xf
// GFX942: v_mfma_f32_32x32x16_fp8_fp8
// GFX950: v_mfma_f32_32x32x64_f8f6f4
// CHECK: v_mov_b32_dpp {{.*}}quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
// CHECK: v_mov_b32_dpp {{.*}}quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf
// CHECK: s_endpgm
func.func @kup(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
