//===- ForeignLaunch.cpp - run a described foreign kernel -----------------===//

#include "mla-fp8/Runtime/ForeignLaunch.h"

#include "mla-fp8/CodeObject/File.h"
#include "mla-fp8/Emulator/Memory.h"
#include "mla-fp8/Reference/Formats.h"
#include "mla-fp8/Reference/PrequantBmm.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The one table of argument names, as AITER's kernels spell them (the
/// prequant kernel's `stride_in_*`, the GEMMs' `stride_*`).
std::optional<ForeignArgRole>
runtime::getForeignArgRole(llvm::StringRef name) {
  using R = ForeignArgRole;
  std::optional<R> role =
      llvm::StringSwitch<std::optional<R>>(name)
          .Case("a_ptr", R::X)
          .Case("b_ptr", R::W)
          .Case("c_ptr", R::Y)
          .Case("a_scale_ptr", R::XScale)
          .Case("b_scale_ptr", R::WScale)
          .Case("bias_ptr", R::Bias)
          .Case("M", R::M)
          .Case("N", R::N)
          .Case("K", R::K)
          .Cases({"stride_in_ab", "stride_ab"}, R::XStrideB)
          .Cases({"stride_in_am", "stride_am"}, R::XStrideM)
          .Cases({"stride_in_bb", "stride_bb"}, R::WStrideB)
          .Cases({"stride_in_bn", "stride_bn"}, R::WStrideN)
          .Cases({"stride_in_cb", "stride_cb"}, R::YStrideB)
          .Cases({"stride_in_cm", "stride_cm"}, R::YStrideM)
          .Case("stride_ck", R::YStrideK)
          .Cases({"stride_in_biasb", "stride_biasb"}, R::BiasStrideB)
          .Case("stride_ascaleb", R::XScaleStrideB)
          .Case("stride_bscaleb", R::WScaleStrideB)
          .Cases({"global_scratch", "profile_scratch"}, R::Null)
          .Default(std::nullopt);
  return role;
}

//===----------------------------------------------------------------------===//
// Records
//===----------------------------------------------------------------------===//

namespace {
/// Reads one record, naming it in every error.
struct RecordReader {
  const llvm::json::Object &o;
  std::string where;

  llvm::Error fail(const llvm::Twine &why) const {
    return makeError(where + ": " + why);
  }
  llvm::Expected<std::string> string(StringRef key) const {
    std::optional<StringRef> s = o.getString(key);
    if (!s)
      return fail("'" + key + "' must be a string");
    return s->str();
  }
  int64_t integer(const llvm::json::Object &from, StringRef key,
                  int64_t fallback = 0) const {
    return from.getInteger(key).value_or(fallback);
  }
};
} // namespace

static llvm::Expected<ForeignKernel>
readRecord(const llvm::json::Value &value, size_t index) {
  const llvm::json::Object *object = value.getAsObject();
  std::string where = "kernels[" + std::to_string(index) + "]";
  if (!object)
    return makeError(where + ": not an object");
  if (std::optional<StringRef> file = object->getString("file"))
    where += " (" + file->str() + ")";
  RecordReader r{*object, where};
  ForeignKernel k;
  for (auto [key, field] :
       {std::pair<StringRef, std::string *>{"file", &k.file},
        {"kernel_symbol", &k.symbol},
        {"chip", &k.chip},
        {"grid", &k.grid}}) {
    llvm::Expected<std::string> s = r.string(key);
    if (!s)
      return s.takeError();
    *field = *s;
  }
  if (k.file.find('/') != std::string::npos || k.file.empty())
    return r.fail("'file' must name a file beside kernels.json");
  std::optional<int64_t> wg = object->getInteger("workgroup_size");
  std::optional<int64_t> lds = object->getInteger("dynamic_lds_bytes");
  if (!wg || *wg < 1 || *wg > 1024)
    return r.fail("'workgroup_size' must be 1 to 1024");
  if (!lds || *lds < 0 || *lds > (1 << 20))
    return r.fail("'dynamic_lds_bytes' must be 0 to 1 MiB");
  k.workgroupSize = unsigned(*wg);
  k.dynamicLdsBytes = unsigned(*lds);
  k.n = r.integer(*object, "N");
  k.k = r.integer(*object, "K");

  const llvm::json::Array *args = object->getArray("args");
  if (!args || args->empty())
    return r.fail("'args' must be a non-empty array");
  for (size_t i = 0; i < args->size(); ++i) {
    const llvm::json::Object *a = (*args)[i].getAsObject();
    std::string at = "args[" + std::to_string(i) + "]";
    if (!a)
      return r.fail(at + " is not an object");
    std::optional<StringRef> name = a->getString("name");
    std::optional<StringRef> type = a->getString("type");
    std::optional<int64_t> offset = a->getInteger("offset");
    std::optional<int64_t> size = a->getInteger("size");
    if (!name || !type || !offset || !size || *offset < 0 ||
        *offset > 4096 || (*size != 4 && *size != 8))
      return r.fail(at + " needs name, type, an offset of 0 to 4096 and a "
                         "size of 4 or 8");
    std::optional<ForeignArgRole> role = getForeignArgRole(*name);
    if (!role)
      return r.fail(at + ": no role is known for an argument named '" +
                    *name + "'");
    k.args.push_back({name->str(), type->str(), uint32_t(*offset),
                      uint32_t(*size), *role});
  }
  auto has = [&](ForeignArgRole role) {
    return llvm::any_of(k.args,
                        [&](const ForeignArg &a) { return a.role == role; });
  };
  for (ForeignArgRole need :
       {ForeignArgRole::X, ForeignArgRole::W, ForeignArgRole::Y,
        ForeignArgRole::M, ForeignArgRole::N, ForeignArgRole::K})
    if (!has(need))
      return r.fail("the arguments lack a_ptr, b_ptr, c_ptr, M, N or K");
  const ForeignArg &w = *llvm::find_if(
      k.args, [](const ForeignArg &a) { return a.role == ForeignArgRole::W; });
  // The maths from W's type, or, where the record types its pointers only
  // as "ptr", from the roles alone: scales of X and W are the int8 GEMM, a
  // scale of W alone the fp8 prequant, no scale the bf16 GEMM.
  if (has(ForeignArgRole::XScale))
    k.math = ForeignMath::A8W8;
  else if (StringRef(w.type).contains("fp8") ||
           (w.type == "ptr" && has(ForeignArgRole::WScale)))
    k.math = ForeignMath::Prequant;
  else if (w.type == "*bf16" || w.type == "ptr")
    k.math = ForeignMath::BF16;
  else
    return r.fail("b_ptr of type '" + w.type +
                  "' is none of the maths known (fp8 prequant, int8 with "
                  "scales, bf16)");
  if (k.math == ForeignMath::Prequant && !has(ForeignArgRole::WScale))
    return r.fail("a prequant kernel needs b_scale_ptr");

  // Tile sizes and the bias: the constexprs the kernel was compiled with,
  // else its config.
  for (StringRef section : {"config", "constexprs"})
    if (const llvm::json::Object *c = object->getObject(section)) {
      k.blockM = c->getInteger("BLOCK_SIZE_M").value_or(k.blockM);
      k.blockN = c->getInteger("BLOCK_SIZE_N").value_or(k.blockN);
      k.blockK = c->getInteger("BLOCK_SIZE_K").value_or(k.blockK);
    }
  if (const llvm::json::Object *c = object->getObject("constexprs"))
    k.hasBias = c->getBoolean("HAS_BIAS").value_or(false);
  if (k.hasBias && !has(ForeignArgRole::Bias))
    return r.fail("HAS_BIAS is set but no argument is bias_ptr");

  if (const llvm::json::Array *cases = object->getArray("cases"))
    for (size_t i = 0; i < cases->size(); ++i) {
      const llvm::json::Object *c = (*cases)[i].getAsObject();
      if (!c)
        return r.fail("cases[" + std::to_string(i) + "] is not an object");
      ForeignCase fc;
      fc.b = r.integer(*c, "B");
      fc.m = r.integer(*c, "M");
      fc.n = r.integer(*c, "N");
      fc.k = r.integer(*c, "K");
      if (fc.b < 1 || fc.m < 0 || fc.n < 1 || fc.k < 1)
        return r.fail("cases[" + std::to_string(i) +
                      "] needs B, N, K of at least 1 and M of at least 0");
      fc.timeUs = c->getNumber("time_us");
      StringRef layout = c->getString("layout").value_or("");
      fc.tokenMajorX = layout.contains("(M,B,K)");
      fc.tokenMajorY = layout.contains("(M,B,N)");
      fc.source = c->getString("source").value_or("").str();
      fc.method = c->getString("measured_how").value_or("").str();
      k.cases.push_back(std::move(fc));
    }
  return k;
}

llvm::Expected<std::vector<ForeignKernel>>
runtime::readForeignKernels(llvm::StringRef path) {
  llvm::Expected<std::string> text = readRegularFile(path, kMaxManifestBytes);
  if (!text)
    return text.takeError();
  llvm::Expected<llvm::json::Value> json = parseJSONWithinDepth(*text, 64);
  if (!json)
    return makeError(path + ": " + llvm::toString(json.takeError()));
  const llvm::json::Array *records = json->getAsArray();
  if (const llvm::json::Object *o = json->getAsObject())
    records = o->getArray("kernels");
  if (!records)
    return makeError(path + ": expected an array of kernel records or an "
                            "object with one under \"kernels\"");
  std::vector<ForeignKernel> kernels;
  for (size_t i = 0; i < records->size(); ++i) {
    llvm::Expected<ForeignKernel> k = readRecord((*records)[i], i);
    if (!k)
      return makeError(path + ": " + llvm::toString(k.takeError()));
    kernels.push_back(std::move(*k));
  }
  return kernels;
}

//===----------------------------------------------------------------------===//
// Grid formulas
//===----------------------------------------------------------------------===//

namespace {
/// expr := term (('+' | '-') term)*; term := atom ('*' atom)*;
/// atom := integer | B | M | N | K | cdiv '(' expr ',' expr ')' | '(' expr ')'
struct GridParser {
  StringRef text;
  size_t at = 0;
  int64_t b, m, n, k;
  std::string error;

  void skip() {
    while (at < text.size() && text[at] == ' ')
      ++at;
  }
  bool eat(char c) {
    skip();
    if (at < text.size() && text[at] == c) {
      ++at;
      return true;
    }
    return false;
  }
  std::optional<int64_t> fail(const std::string &why) {
    if (error.empty())
      error = why + " at offset " + std::to_string(at);
    return std::nullopt;
  }
  static std::optional<int64_t> checked(__int128 v) {
    if (v < 0 || v > std::numeric_limits<int64_t>::max())
      return std::nullopt;
    return int64_t(v);
  }
  std::optional<int64_t> atom() {
    skip();
    if (eat('(')) {
      std::optional<int64_t> v = expr();
      if (!v || !eat(')'))
        return fail("expected ')'");
      return v;
    }
    size_t start = at;
    while (at < text.size() && (std::isalnum(text[at]) || text[at] == '_'))
      ++at;
    StringRef word = text.slice(start, at);
    if (word.empty())
      return fail("expected a number, B, M, N, K or cdiv");
    int64_t value;
    if (!word.getAsInteger(10, value))
      return value;
    if (word == "B")
      return b;
    if (word == "M")
      return m;
    if (word == "N")
      return n;
    if (word == "K")
      return k;
    if (word != "cdiv")
      return fail("unknown name '" + word.str() + "'");
    std::optional<int64_t> x, y;
    if (!eat('(') || !(x = expr()) || !eat(',') || !(y = expr()) || !eat(')'))
      return fail("expected cdiv(a, b)");
    if (*y <= 0)
      return fail("cdiv by a non-positive number");
    return (*x + *y - 1) / *y;
  }
  std::optional<int64_t> term() {
    std::optional<int64_t> v = atom();
    while (v && eat('*')) {
      std::optional<int64_t> r = atom();
      if (!r)
        return std::nullopt;
      v = checked(__int128(*v) * *r);
      if (!v)
        return fail("overflow");
    }
    return v;
  }
  std::optional<int64_t> expr() {
    std::optional<int64_t> v = term();
    for (;;) {
      skip();
      if (!v || at >= text.size() || (text[at] != '+' && text[at] != '-'))
        return v;
      char op = text[at++];
      std::optional<int64_t> r = term();
      if (!r)
        return std::nullopt;
      v = checked(op == '+' ? __int128(*v) + *r : __int128(*v) - *r);
      if (!v)
        return fail("a negative or overflowing value");
    }
  }
};
} // namespace

llvm::Expected<std::array<uint64_t, 3>>
runtime::evaluateForeignGrid(llvm::StringRef formula, int64_t b, int64_t m,
                             int64_t n, int64_t k) {
  GridParser p{formula, 0, b, m, n, k, {}};
  std::array<uint64_t, 3> grid;
  bool ok = p.eat('(');
  for (unsigned axis = 0; ok && axis < 3; ++axis) {
    std::optional<int64_t> v = p.expr();
    ok = v && (axis == 2 ? p.eat(')') : p.eat(','));
    if (v)
      grid[axis] = uint64_t(*v);
  }
  p.skip();
  if (!ok || p.at != formula.size())
    return makeError("grid '" + formula + "': " +
                     (p.error.empty() ? std::string("expected (x, y, z)")
                                      : p.error));
  for (uint64_t axis : grid)
    if (axis > std::numeric_limits<uint32_t>::max())
      return makeError("grid '" + formula + "': an axis of " +
                       std::to_string(axis) + " workgroups");
  return grid;
}

//===----------------------------------------------------------------------===//
// The launch
//===----------------------------------------------------------------------===//

namespace {
/// The inputs of one run and the strides the launch passes.
struct Problem {
  int64_t b, m, n, k;
  int64_t xStrideB, xStrideM, yStrideB, yStrideM;
  std::vector<uint8_t> x, w, bias, xScale, wScale;
  std::vector<uint16_t> y;
  FP8Format format = FP8Format::E4M3FN;
};
} // namespace

/// Element (b, m, n) of a (B, M, N) or (M, B, N) view.
static int64_t at3(int64_t strideB, int64_t strideM, int64_t bi, int64_t mi,
                   int64_t ni) {
  return bi * strideB + mi * strideM + ni;
}

template <typename T> static const T *as(const std::vector<uint8_t> &bytes) {
  return reinterpret_cast<const T *>(bytes.data());
}

/// Fills X, W, the scales and the bias for `kernel`'s math from `seed`.
static void fillInputs(const ForeignKernel &kernel, Problem &p,
                       uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int64_t xElems = p.b * p.m * p.k, wElems = p.b * p.n * p.k;
  auto fillBf16 = [&](std::vector<uint8_t> &out, int64_t count, float scale) {
    out.resize(count * 2);
    uint16_t *bits = reinterpret_cast<uint16_t *>(out.data());
    for (int64_t i = 0; i < count; ++i)
      bits[i] = floatToBF16(normal(rng) * scale);
  };
  std::uniform_int_distribution<int> byte(-127, 127);
  std::uniform_real_distribution<float> positive(0.5f, 1.5f);
  switch (kernel.math) {
  case ForeignMath::Prequant: {
    fillBf16(p.x, xElems, 1.0f);
    std::vector<float> wf(wElems);
    for (float &v : wf)
      v = normal(rng) * 0.05f;
    p.w.resize(wElems);
    p.wScale.resize(4);
    float descale = quantizeWeights(wf.data(), wElems, p.format, p.w.data());
    std::memcpy(p.wScale.data(), &descale, 4);
    break;
  }
  case ForeignMath::A8W8: {
    p.x.resize(xElems);
    p.w.resize(wElems);
    for (uint8_t &v : p.x)
      v = uint8_t(int8_t(byte(rng)));
    for (uint8_t &v : p.w)
      v = uint8_t(int8_t(byte(rng)));
    p.xScale.resize(p.b * p.m * 4);
    p.wScale.resize(p.b * p.n * 4);
    float *xs = reinterpret_cast<float *>(p.xScale.data());
    float *ws = reinterpret_cast<float *>(p.wScale.data());
    for (int64_t i = 0; i < p.b * p.m; ++i)
      xs[i] = positive(rng) / 127.0f;
    for (int64_t i = 0; i < p.b * p.n; ++i)
      ws[i] = positive(rng) / 127.0f;
    break;
  }
  case ForeignMath::BF16:
    fillBf16(p.x, xElems, 1.0f);
    fillBf16(p.w, wElems, 0.05f);
    break;
  }
  if (kernel.hasBias)
    fillBf16(p.bias, p.b * p.n, 1.0f);
  // The X the kernel reads is in the launch's layout: re-place it.
  if (p.xStrideM != p.k) {
    size_t elem = kernel.math == ForeignMath::A8W8 ? 1 : 2;
    std::vector<uint8_t> placed(p.x.size());
    for (int64_t bi = 0; bi < p.b; ++bi)
      for (int64_t mi = 0; mi < p.m; ++mi)
        std::memcpy(&placed[at3(p.xStrideB, p.xStrideM, bi, mi, 0) * elem],
                    &p.x[((bi * p.m + mi) * p.k) * elem], p.k * elem);
    p.x = std::move(placed);
  }
}

/// The reference Y, dense (B, M, N), in f64 before the output rounding.
static std::vector<double> referenceY(const ForeignKernel &kernel,
                                      const Problem &p,
                                      bool aiterBiasRounding) {
  std::vector<double> ref(p.b * p.m * p.n, 0.0);
  const uint16_t *bias = as<uint16_t>(p.bias);
  // AITER's prequant and int8 kernels round the product to bf16, then add
  // the bias and round again; the default adds it unrounded, as this
  // project's kernels and AITER's bf16 GEMM do.
  auto biasAt = [&](int64_t bi, int64_t ni) {
    return kernel.hasBias ? double(bf16ToFloat(bias[bi * p.n + ni])) : 0.0;
  };
  auto withBias = [&](double product, int64_t bi, int64_t ni) {
    if (!kernel.hasBias)
      return product;
    if (!aiterBiasRounding)
      return product + biasAt(bi, ni);
    return double(bf16ToFloat(floatToBF16(
        bf16ToFloat(floatToBF16(float(product))) + float(biasAt(bi, ni)))));
  };
  switch (kernel.math) {
  case ForeignMath::Prequant: {
    PrequantBmmArgs args;
    args.B = p.b;
    args.M = p.m;
    args.N = p.n;
    args.K = p.k;
    args.groupSize = kernel.blockK ? kernel.blockK : 128;
    args.format = p.format;
    args.inputType = OutType::BF16;
    args.x = as<uint16_t>(p.x);
    args.xStrideB = p.xStrideB;
    args.xStrideM = p.xStrideM;
    args.w = p.w.data();
    args.weightDescale = as<float>(p.wScale);
    args.outType = OutType::BF16;
    // AITER rounds the product to bf16, then adds the bias in bf16.
    args.bias = kernel.hasBias && !aiterBiasRounding ? bias : nullptr;
    std::string error;
    referencePrequantBmmF64(args, ref, &error, nullptr);
    if (kernel.hasBias && aiterBiasRounding)
      for (int64_t bi = 0; bi < p.b; ++bi)
        for (int64_t mi = 0; mi < p.m; ++mi)
          for (int64_t ni = 0; ni < p.n; ++ni) {
            double &r = ref[(bi * p.m + mi) * p.n + ni];
            r = withBias(r, bi, ni);
          }
    break;
  }
  case ForeignMath::A8W8: {
    const int8_t *x = as<int8_t>(p.x), *w = as<int8_t>(p.w);
    const float *xs = as<float>(p.xScale), *ws = as<float>(p.wScale);
    for (int64_t bi = 0; bi < p.b; ++bi)
      for (int64_t mi = 0; mi < p.m; ++mi)
        for (int64_t ni = 0; ni < p.n; ++ni) {
          int64_t acc = 0;
          const int8_t *xr = x + at3(p.xStrideB, p.xStrideM, bi, mi, 0);
          const int8_t *wr = w + (bi * p.n + ni) * p.k;
          for (int64_t ki = 0; ki < p.k; ++ki)
            acc += int64_t(xr[ki]) * wr[ki];
          // The scales as AITER's epilogue applies them, in f32: the
          // int32 sum (exact in f32 below 2^24) times the product of the
          // row's and the column's scales.
          float scale = xs[bi * p.m + mi] * ws[bi * p.n + ni];
          ref[(bi * p.m + mi) * p.n + ni] =
              withBias(double(float(acc) * scale), bi, ni);
        }
    break;
  }
  case ForeignMath::BF16: {
    const uint16_t *x = as<uint16_t>(p.x), *w = as<uint16_t>(p.w);
    for (int64_t bi = 0; bi < p.b; ++bi)
      for (int64_t mi = 0; mi < p.m; ++mi)
        for (int64_t ni = 0; ni < p.n; ++ni) {
          double acc = 0;
          const uint16_t *xr = x + at3(p.xStrideB, p.xStrideM, bi, mi, 0);
          const uint16_t *wr = w + (bi * p.n + ni) * p.k;
          for (int64_t ki = 0; ki < p.k; ++ki)
            acc += double(bf16ToFloat(xr[ki])) * bf16ToFloat(wr[ki]);
          ref[(bi * p.m + mi) * p.n + ni] = withBias(acc, bi, ni);
        }
    break;
  }
  }
  return ref;
}

/// What a foreign kernel's Y may differ from the reference by, beyond one
/// bf16 ulp, relative to max |reference|: its fp8 quantization may round a
/// value the other way (a division where the reference multiplies by the
/// inverse), and its fp32 accumulation order is its own. Wrong arguments
/// give errors of the order of the values themselves.
static double relativeTolerance(ForeignMath math) {
  switch (math) {
  case ForeignMath::Prequant:
    return 0x1p-8;
  case ForeignMath::BF16:
    return 0x1p-12;
  case ForeignMath::A8W8:
    return 0x1p-16;
  }
  return 0;
}

llvm::Expected<ForeignRunResult>
runtime::runForeignKernel(emu::Emulator &emulator, const ForeignKernel &kernel,
                          const ForeignRunOptions &o) {
  int64_t b = o.b, m = o.m, n = o.n, k = o.k;
  constexpr int64_t kMaxI32 = std::numeric_limits<int32_t>::max();
  if (b < 1 || m < 0 || n < 1 || k < 1 || b * m * n > (int64_t(1) << 28) ||
      b * n * k > (int64_t(1) << 30) || b * m * k > (int64_t(1) << 30))
    return makeError(llvm::formatv("shape B = {0}, M = {1}, N = {2}, K = {3} "
                                   "is outside what a foreign run emulates",
                                   b, m, n, k));
  llvm::Expected<const emu::KernelInfo &> info =
      emulator.getCodeObject().getKernel(kernel.symbol);
  if (!info)
    return info.takeError();
  // Every argument against the code object's own description.
  for (const ForeignArg &a : kernel.args) {
    auto meta = llvm::find_if(info->args, [&](const emu::KernelArgInfo &x) {
      return x.offset == a.offset;
    });
    if (meta == info->args.end() || meta->size != a.size)
      return makeError(llvm::formatv(
          "{0}: argument '{1}' at offset {2} ({3} bytes) is not an argument "
          "of the code object's metadata",
          kernel.symbol, a.name, a.offset, a.size));
    if (a.offset + a.size > info->kernargSegmentSize)
      return makeError(kernel.symbol + ": argument '" + a.name +
                       "' ends past the kernarg segment");
  }

  ForeignRunResult result;
  llvm::Expected<std::array<uint64_t, 3>> grid =
      evaluateForeignGrid(kernel.grid, b, m, n, k);
  if (!grid)
    return grid.takeError();
  result.grid = *grid;
  if (m == 0)
    return result;

  Problem p;
  p.b = b, p.m = m, p.n = n, p.k = k;
  p.format = kernel.chip == "gfx942" ? FP8Format::E4M3FNUZ : FP8Format::E4M3FN;
  p.xStrideB = o.tokenMajorX ? k : m * k;
  p.xStrideM = o.tokenMajorX ? b * k : k;
  p.yStrideB = o.tokenMajorY ? n : m * n;
  p.yStrideM = o.tokenMajorY ? b * n : n;
  for (int64_t v : {m, n, k, p.xStrideB, p.xStrideM, p.yStrideB, p.yStrideM,
                    n * k, b * m})
    if (v > kMaxI32)
      return makeError("the kernel's i32 sizes and strides cannot hold this "
                       "problem");
  fillInputs(kernel, p, o.seed);
  // A NaN pattern no kernel writes: unwritten elements show.
  constexpr uint16_t kSentinel = 0x7fc1;
  p.y.assign(b * m * n, kSentinel);

  emu::DeviceMemory memory;
  auto upload = [&](StringRef name, const void *data, uint64_t bytes,
                    bool readOnly) -> llvm::Expected<uint64_t> {
    uint64_t address = memory.allocate(name, bytes, 256);
    if (llvm::Error err = memory.write(
            address,
            llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(data), bytes)))
      return std::move(err);
    memory.lookup(name)->readOnly = readOnly;
    return address;
  };
  std::array<uint64_t, 6> addresses{};
  struct Buffer {
    ForeignArgRole role;
    const void *data;
    uint64_t bytes;
    bool readOnly;
  };
  const Buffer buffers[] = {
      {ForeignArgRole::X, p.x.data(), p.x.size(), true},
      {ForeignArgRole::W, p.w.data(), p.w.size(), true},
      {ForeignArgRole::Y, p.y.data(), p.y.size() * 2, false},
      {ForeignArgRole::XScale, p.xScale.data(), p.xScale.size(), true},
      {ForeignArgRole::WScale, p.wScale.data(), p.wScale.size(), true},
      {ForeignArgRole::Bias, p.bias.data(), p.bias.size(), true}};
  const char *names[] = {"X", "W", "Y", "x_scale", "w_scale", "bias"};
  for (unsigned i = 0; i < 6; ++i) {
    if (buffers[i].bytes == 0)
      continue;
    llvm::Expected<uint64_t> address = upload(
        names[i], buffers[i].data, buffers[i].bytes, buffers[i].readOnly);
    if (!address)
      return address.takeError();
    addresses[i] = *address;
  }
  auto valueOf = [&](ForeignArgRole role) -> uint64_t {
    using R = ForeignArgRole;
    switch (role) {
    case R::X:
      return addresses[0];
    case R::W:
      return addresses[1];
    case R::Y:
      return addresses[2];
    case R::XScale:
      return addresses[3];
    case R::WScale:
      return addresses[4];
    case R::Bias:
      return kernel.hasBias ? addresses[5] : 0;
    case R::M:
      return uint64_t(m);
    case R::N:
      return uint64_t(n);
    case R::K:
      return uint64_t(k);
    case R::XStrideB:
      return uint64_t(p.xStrideB);
    case R::XStrideM:
      return uint64_t(p.xStrideM);
    case R::WStrideB:
      return uint64_t(n * k);
    case R::WStrideN:
      return uint64_t(k);
    case R::YStrideB:
      return uint64_t(p.yStrideB);
    case R::YStrideM:
      return uint64_t(p.yStrideM);
    case R::YStrideK:
      return 0; // one K split: the split index is always 0
    case R::BiasStrideB:
      return uint64_t(n);
    case R::XScaleStrideB:
      return uint64_t(m);
    case R::WScaleStrideB:
      return uint64_t(n);
    case R::Null:
      return 0;
    }
    return 0;
  };
  std::vector<uint8_t> kernargs(
      std::max<size_t>(info->kernargSegmentSize, 8), 0);
  for (const ForeignArg &a : kernel.args) {
    uint64_t v = valueOf(a.role);
    std::memcpy(kernargs.data() + a.offset, &v, a.size);
  }

  emu::DispatchConfig config;
  for (unsigned d = 0; d < 3; ++d)
    config.gridWorkgroups[d] = uint32_t(result.grid[d]);
  config.workgroupSize = {kernel.workgroupSize, 1, 1};
  config.dynamicLdsBytes = kernel.dynamicLdsBytes;
  config.threads = o.threads;
  emu::TimingOptions timing;
  if (o.timing) {
    timing.device = o.timing;
    // The AITER grids (B, tiles of M x tiles of N, 1), y = pid_m * nTiles +
    // pid_n: one workgroup per (batch edge, M-tile edge, N tile). Other
    // grids are timed whole.
    uint64_t nTiles = kernel.blockN ? (n + kernel.blockN - 1) / kernel.blockN
                                    : 0;
    uint64_t mTiles = kernel.blockM ? (m + kernel.blockM - 1) / kernel.blockM
                                    : 0;
    if (nTiles && mTiles && result.grid[0] == uint64_t(b) &&
        result.grid[1] == mTiles * nTiles && result.grid[2] == 1)
      timing.classify = [=](const emu::WorkgroupId &id) {
        uint64_t pidM = id[1] / nTiles, pidN = id[1] % nTiles;
        return (emu::getEdgeClass(id[0], b) * 3 +
                emu::getEdgeClass(pidM, mTiles)) *
                   nTiles +
               pidN;
      };
    config.timing = &timing;
  }
  llvm::Expected<emu::ExecStats> stats =
      emulator.dispatch(kernel.symbol, config, kernargs, memory);
  if (!stats)
    return stats.takeError();
  result.stats = *stats;
  if (o.timing && timing.classify)
    return result; // Y is incomplete: one workgroup per class ran
  if (llvm::Error err = memory.read(
          addresses[2], llvm::MutableArrayRef<uint8_t>(
                            reinterpret_cast<uint8_t *>(p.y.data()),
                            p.y.size() * 2)))
    return std::move(err);

  std::vector<double> ref = referenceY(kernel, p, o.aiterBiasRounding);
  double maxRef = 0;
  for (double r : ref)
    maxRef = std::max(maxRef, std::fabs(r));
  double tolerance = relativeTolerance(kernel.math) * maxRef;
  result.compared = true;
  result.elements = b * m * n;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t mi = 0; mi < m; ++mi)
      for (int64_t ni = 0; ni < n; ++ni) {
        uint16_t bits = p.y[at3(p.yStrideB, p.yStrideM, bi, mi, ni)];
        double expected = ref[(bi * m + mi) * n + ni];
        double got = bf16ToFloat(bits);
        double err = std::fabs(got - expected);
        if (maxRef > 0 && std::isfinite(err))
          result.maxRelativeError =
              std::max(result.maxRelativeError, err / maxRef);
        bool bad = bits == kSentinel || !std::isfinite(got) ||
                   !(err <= getOutputUlp(expected, OutType::BF16) + tolerance);
        if (bad && result.failures++ == 0)
          result.message = llvm::formatv(
              "{0}: Y[{1},{2},{3}] = {4}, reference {5}{6}", kernel.symbol,
              bi, mi, ni, got, expected,
              bits == kSentinel ? " (never written)" : "");
      }
  return result;
}
