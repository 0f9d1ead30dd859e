// RUN: not mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx90a" 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx950" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 format=elf" 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 dump=%t.missing-dir/x.hsaco" 2>&1 | FileCheck %s --check-prefix=DUMP
// RUN: not mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 opt-level=99" 2>&1 | FileCheck %s --check-prefix=OPT
// A write error (a full disk) is a diagnostic, not "LLVM ERROR".
// RUN: not mla-fp8-opt %s --mlafp8-to-hsaco="chip=gfx942 dump=/dev/full" 2>&1 | FileCheck %s --check-prefix=FULL --implicit-check-not="LLVM ERROR"

// CHIP: error: unknown chip 'gfx90a'; supported chips: gfx942, gfx950
// FORMAT: error: 'mlafp8.prequant_bmm' op gfx950 uses OCP fp8 (f8E4M3FN), not f8E4M3FNUZ
// OPTION: error: unknown serialization format 'elf'; expected hsaco, object or isa
// DUMP: error: cannot write {{.*}}x.hsaco
// OPT: error: opt-level must be 0 to 3, got 99{{$}}
// FULL: error: cannot write /dev/full: No space left on device

func.func @kup(%x: tensor<16x?x128xbf16>, %w: tensor<16x512x128xf8E4M3FNUZ>,
               %ws: tensor<1xf32>) -> tensor<16x?x512xbf16> {
  %y = mlafp8.prequant_bmm %x, %w, %ws : tensor<16x?x128xbf16>,
      tensor<16x512x128xf8E4M3FNUZ>, tensor<1xf32> -> tensor<16x?x512xbf16>
  return %y : tensor<16x?x512xbf16>
}
