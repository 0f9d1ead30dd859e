//===- KernelDescriptionTest.cpp - one kernel description -----------------===//

#include "mla-fp8/ABI/KernelDescription.h"
#include "mla-fp8/ABI/KernelABI.h"

#include "../KernelDescriptionFields.h"

#include "gtest/gtest.h"

#include <set>

using namespace mlir::mlafp8;
using kernel_abi::KernelDescription;
using kernel_abi::WeightScaleMode;

namespace {

KernelDescription kUpGfx942() {
  KernelDescription d;
  d.chip = "gfx942";
  d.n = 512;
  d.k = 128;
  d.fp8Type = "f8E4M3FNUZ";
  return d;
}

// The counter behind the static_assert that every field is listed: it sees
// each kind of field a description holds, so a field added without listing
// it fails to compile.
struct FieldCountProbe {
  std::string text;
  int64_t number = 0;
  WeightScaleMode mode = WeightScaleMode::PerTensor;
  bool flag = false;
};
static_assert(kernel_abi::detail::countAggregateFields<FieldCountProbe>() == 4);
static_assert(kernel_abi::detail::countAggregateFields<KernelDescription>() ==
              kernel_abi::kNumKernelDescriptionFields);

TEST(KernelDescription, SerializationListsEveryFieldInOrder) {
  KernelDescription d = kUpGfx942();
  d.weightScale = WeightScaleMode::PerBatch;
  d.hasBias = true;
  EXPECT_EQ(kernel_abi::serialize(d),
            R"({"chip":"gfx942","n":512,"k":128,"group_size":128,)"
            R"("in_type":"bf16","fp8_type":"f8E4M3FNUZ","out_type":"bf16",)"
            R"("w_scale":"per_batch","has_bias":true})");
}

// Through the visitor: a field added later is covered without editing this.
TEST(KernelDescription, EveryFieldChangesSerializationAndEquality) {
  KernelDescription base = kUpGfx942();
  std::set<std::string> texts = {kernel_abi::serialize(base)};
  std::set<std::string> names;
  for (size_t i = 0; i < kernel_abi::kNumKernelDescriptionFields; ++i) {
    std::string name;
    KernelDescription changed = test::withFieldChanged(base, i, name);
    EXPECT_TRUE(names.insert(name).second) << "field name twice: " << name;
    EXPECT_NE(changed, base) << name;
    EXPECT_EQ(changed, changed) << name;
    EXPECT_TRUE(texts.insert(kernel_abi::serialize(changed)).second) << name;
  }
  EXPECT_EQ(names.size(), kernel_abi::kNumKernelDescriptionFields);
}

TEST(KernelDescription, WeightScaleSpellings) {
  EXPECT_EQ(kernel_abi::parseWeightScaleMode("per_tensor"),
            WeightScaleMode::PerTensor);
  EXPECT_EQ(kernel_abi::parseWeightScaleMode("per-batch"),
            WeightScaleMode::PerBatch);
  EXPECT_EQ(kernel_abi::parseWeightScaleMode("per_row"), std::nullopt);
  EXPECT_EQ(kernel_abi::stringifyWeightScaleMode(WeightScaleMode::PerBatch),
            "per_batch");
}

TEST(KernelDescription, SymbolOfARangeOfRows) {
  KernelDescription d = kUpGfx942();
  EXPECT_EQ(kernel_abi::getKernelSymbol(kernel_abi::getNameFields(d, 1, 16)),
            "mla_fp8_n512_k128_g128_bf16_gfx942_r1_16");
  d.weightScale = WeightScaleMode::PerBatch;
  d.hasBias = true;
  d.outType = "f16";
  EXPECT_EQ(kernel_abi::getKernelSymbol(kernel_abi::getNameFields(d, 513, 0)),
            "mla_fp8_n512_k128_g128_f16_pb_bias_gfx942_r513_inf");
  // Kernels that differ only in the activation type share a code object.
  d.inType = "f16";
  EXPECT_EQ(kernel_abi::getKernelSymbol(kernel_abi::getNameFields(d, 513, 0)),
            "mla_fp8_n512_k128_g128_xf16_f16_pb_bias_gfx942_r513_inf");
}

} // namespace
