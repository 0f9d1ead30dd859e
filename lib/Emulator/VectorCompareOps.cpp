//===- VectorCompareOps.cpp - VOPC compares into a lane mask --------------===//

#include "InstTable.h"
#include "VectorFloat.h"

#include <limits>

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

/// v_cmp_class: whether `mask` has the bit of v's class (0 signalling NaN,
/// 1 quiet NaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal,
/// 8 +normal, 9 +inf).
bool cmpClass(double v, uint32_t mask, bool signalingNaN) {
  unsigned bit;
  if (std::isnan(v))
    bit = signalingNaN ? 0 : 1;
  else if (std::isinf(v))
    bit = v < 0 ? 2 : 9;
  else if (v == 0)
    bit = std::signbit(v) ? 5 : 6;
  else {
    bool neg = v < 0;
    bool denorm = std::fabs(v) < std::numeric_limits<float>::min();
    bit = neg ? (denorm ? 4 : 3) : (denorm ? 7 : 8);
  }
  return (mask >> bit) & 1;
}

/// VOPC: per-lane predicate into the mask operand (inactive lanes 0); the
/// v_cmpx forms also write EXEC.
template <typename P> Error vopc(Ctx &c, const Inst &I, bool isX, P pred) {
  uint64_t mask = 0;
  forEachLane(c, I, [&](const Lane &L) {
    if (pred(L))
      mask |= 1ull << L.lane;
  });
  if (I.ops[0].kind == OpKind::Sgpr)
    c.writeS64(I.ops[0], mask);
  if (isX)
    c.w.setExec(mask);
  return Error::success();
}

/// A compare row: the predicate after ISX per lane; v_cmpx (ISX) also
/// writes EXEC.
#define MLAFP8_VOPC(NAME, ISX, ...)                                            \
  InstDef {                                                                    \
    NAME, Operands::Def, InstClass::VALU, [](Ctx &c, const Inst &I) -> Error { \
      return vopc(c, I, ISX, [](const Lane &L) { return __VA_ARGS__; });       \
    }                                                                          \
  }
/// The integer compares of one relation.
#define MLAFP8_VOPC_INT(OPN, OP)                                               \
  MLAFP8_VOPC("v_cmp_" OPN "_i32", false, L.i32(0) OP L.i32(1)),               \
      MLAFP8_VOPC("v_cmp_" OPN "_u32", false, L.u32(0) OP L.u32(1)),           \
      MLAFP8_VOPC("v_cmpx_" OPN "_i32", true, L.i32(0) OP L.i32(1)),           \
      MLAFP8_VOPC("v_cmpx_" OPN "_u32", true, L.u32(0) OP L.u32(1)),           \
      MLAFP8_VOPC("v_cmp_" OPN "_i64", false,                                  \
                  int64_t(L.u64(0)) OP int64_t(L.u64(1))),                     \
      MLAFP8_VOPC("v_cmp_" OPN "_u64", false, L.u64(0) OP L.u64(1)),           \
      MLAFP8_VOPC("v_cmp_" OPN "_i16", false,                                  \
                  int16_t(L.u16(0)) OP int16_t(L.u16(1))),                     \
      MLAFP8_VOPC("v_cmp_" OPN "_u16", false, L.u16(0) OP L.u16(1))
/// The float compares of one predicate of a and b.
#define MLAFP8_VOPC_FLT(OPN, ...)                                              \
  MLAFP8_VOPC(                                                                 \
      "v_cmp_" OPN "_f32", false,                                              \
      [](float a, float b) { return __VA_ARGS__; }(L.f32(0), L.f32(1))),       \
      MLAFP8_VOPC(                                                             \
          "v_cmpx_" OPN "_f32", true,                                          \
          [](float a, float b) { return __VA_ARGS__; }(L.f32(0), L.f32(1))),   \
      MLAFP8_VOPC(                                                             \
          "v_cmp_" OPN "_f64", false,                                          \
          [](double a, double b) { return __VA_ARGS__; }(L.f64(0), L.f64(1))), \
      MLAFP8_VOPC("v_cmp_" OPN "_f16", false, [](float a, float b) {           \
        return __VA_ARGS__;                                                    \
      }(L.f16(0), L.f16(1)))

const InstDef kVectorCompareRows[] = {
    MLAFP8_VOPC_INT("lt", <),
    MLAFP8_VOPC_INT("eq", ==),
    MLAFP8_VOPC_INT("le", <=),
    MLAFP8_VOPC_INT("gt", >),
    MLAFP8_VOPC_INT("ne", !=),
    MLAFP8_VOPC_INT("ge", >=),
    MLAFP8_VOPC("v_cmp_f_i32", false, (void(L), false)),
    MLAFP8_VOPC("v_cmp_t_i32", false, (void(L), true)),
    MLAFP8_VOPC("v_cmp_f_u32", false, (void(L), false)),
    MLAFP8_VOPC("v_cmp_t_u32", false, (void(L), true)),
    MLAFP8_VOPC_FLT("f", (void(a), void(b), false)),
    MLAFP8_VOPC_FLT("lt", a < b),
    MLAFP8_VOPC_FLT("eq", a == b),
    MLAFP8_VOPC_FLT("le", a <= b),
    MLAFP8_VOPC_FLT("gt", a > b),
    MLAFP8_VOPC_FLT("lg", a<b || a> b),
    MLAFP8_VOPC_FLT("ge", a >= b),
    MLAFP8_VOPC_FLT("o", !std::isnan(a) && !std::isnan(b)),
    MLAFP8_VOPC_FLT("u", std::isnan(a) || std::isnan(b)),
    MLAFP8_VOPC_FLT("nge", !(a >= b)),
    MLAFP8_VOPC_FLT("nlg", !(a < b || a > b)),
    MLAFP8_VOPC_FLT("ngt", !(a > b)),
    MLAFP8_VOPC_FLT("nle", !(a <= b)),
    MLAFP8_VOPC_FLT("neq", !(a == b)),
    MLAFP8_VOPC_FLT("nlt", !(a < b)),
    MLAFP8_VOPC_FLT("tru", (void(a), void(b), true)),
    MLAFP8_VOPC("v_cmp_class_f32", false,
                cmpClass(L.f32(0), L.u32(1), isSignaling(L.f32(0)))),
    MLAFP8_VOPC("v_cmpx_class_f32", true,
                cmpClass(L.f32(0), L.u32(1), isSignaling(L.f32(0)))),
    MLAFP8_VOPC("v_cmp_class_f64", false,
                cmpClass(L.f64(0), L.u32(1), isSignaling(L.f64(0)))),
};
#undef MLAFP8_VOPC_FLT
#undef MLAFP8_VOPC_INT
#undef MLAFP8_VOPC

} // namespace

void registerVectorCompareOps(InstTable &t) { t.add(kVectorCompareRows); }

} // namespace mlir::mlafp8::emu
