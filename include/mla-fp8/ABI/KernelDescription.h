//===- KernelDescription.h - What decides one kernel's code -----*- C++ -*-===//
//
// The one description of a prequant-bmm kernel from the command line to
// Python: its shape, formats, epilogue and chip. AOT's kernel groups, the
// loaded bundle's KernelEntry and KernelQuery, and the embedding API hold
// it. Together with a range of rows (the tile table gives the tile of each range)
// it decides the kernel's code and symbol. Everything that goes over the
// fields goes through forEachField(): the serialization (the cache key hashes
// it), the equality (kernel lookups and the loader's overlap check use it)
// and the Python dictionaries. A field missing from the field list fails to
// compile (the static_assert at the end), so a new field cannot be forgotten
// by the cache key. getNameFields() picks the fields the symbol names.
//
// Plain C++17, like Runtime/KernelTable.h: embedders built with exceptions and
// RTTI include it without LLVM's headers.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_ABI_KERNELDESCRIPTION_H
#define MLA_FP8_ABI_KERNELDESCRIPTION_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace mlir::mlafp8::kernel_abi {

/// The largest N and K a kernel has: what the dialect's verifier accepts,
/// the generator's options and the loaders take (every dimension of an MLA
/// model is far below it, and its products stay inside a kernel's i32
/// element offsets per row and group).
inline constexpr int64_t kMaxKernelDimension = 65536;

struct KernelNameFields;

/// How the weight descale is given: one f32 or one per batch element.
enum class WeightScaleMode : uint8_t { PerTensor, PerBatch };

/// "per_tensor" or "per_batch": the manifest's spelling.
std::string_view stringifyWeightScaleMode(WeightScaleMode mode);
/// Parses the manifest's spelling, and the command line's "per-tensor" and
/// "per-batch"; nullopt for anything else.
std::optional<WeightScaleMode> parseWeightScaleMode(std::string_view text);

/// What decides one kernel's code besides its range of rows. Field names in
/// forEachField() are the manifest's keys.
struct KernelDescription {
  /// The target, e.g. "gfx942".
  std::string chip;
  /// Y[b] = X[b] W[b]^T with W (B, N, K).
  int64_t n = 0;
  int64_t k = 0;
  /// K elements per activation scale.
  int64_t groupSize = 128;
  /// "bf16" or "f16".
  std::string inType = "bf16";
  /// MLIR spelling of the fp8 type, e.g. "f8E4M3FNUZ": the chip decides it.
  std::string fp8Type;
  /// "bf16" or "f16".
  std::string outType = "bf16";
  WeightScaleMode weightScale = WeightScaleMode::PerTensor;
  /// The kernel adds a (B, N) bias in the output type.
  bool hasBias = false;
};

/// Every field of KernelDescription as (manifest key, member), in
/// serialization order. Adding a field to the struct: list it here too (the
/// static_assert below fails until you do); the cache key, equality, the
/// manifest's description fields and the embedders' dictionaries follow.
inline constexpr auto kKernelDescriptionFields =
    std::make_tuple(std::pair{"chip", &KernelDescription::chip},
                    std::pair{"n", &KernelDescription::n},
                    std::pair{"k", &KernelDescription::k},
                    std::pair{"group_size", &KernelDescription::groupSize},
                    std::pair{"in_type", &KernelDescription::inType},
                    std::pair{"fp8_type", &KernelDescription::fp8Type},
                    std::pair{"out_type", &KernelDescription::outType},
                    std::pair{"w_scale", &KernelDescription::weightScale},
                    std::pair{"has_bias", &KernelDescription::hasBias});

inline constexpr size_t kNumKernelDescriptionFields =
    std::tuple_size_v<decltype(kKernelDescriptionFields)>;

/// Calls `visit(name, field)` for every field of `description` (const or
/// not), in serialization order.
template <typename Description, typename Visitor>
void forEachField(Description &description, Visitor &&visit) {
  static_assert(
      std::is_same_v<std::remove_const_t<Description>, KernelDescription>);
  std::apply(
      [&](const auto &...field) {
        (visit(field.first, description.*(field.second)), ...);
      },
      kKernelDescriptionFields);
}

bool operator==(const KernelDescription &a, const KernelDescription &b);
inline bool operator!=(const KernelDescription &a, const KernelDescription &b) {
  return !(a == b);
}

/// The canonical serialization: one JSON object with every field under its
/// manifest key, in field order, without spaces. Equal descriptions give
/// equal text and different ones different text.
std::string serialize(const KernelDescription &description);

/// The symbol fields of the kernel of `description` serving the launches of
/// minRows..maxRows rows, B * M (maxRows 0: unbounded).
KernelNameFields getNameFields(const KernelDescription &description,
                               int64_t minRows, int64_t maxRows);

namespace detail {
/// Converts to any field type: brace-initializing an aggregate from N of
/// these compiles exactly when it has at least N fields.
struct AnyField {
  template <typename T> operator T() const;
};
template <typename T, typename Indices, typename = void>
struct IsBraceConstructible : std::false_type {};
template <typename T, size_t... I>
struct IsBraceConstructible<T, std::index_sequence<I...>,
                            std::void_t<decltype(T{(void(I), AnyField{})...})>>
    : std::true_type {};

/// The number of fields of the aggregate `T` (whose fields are not
/// themselves brace-elided aggregates).
template <typename T, size_t N = 0> constexpr size_t countAggregateFields() {
  if constexpr (IsBraceConstructible<T, std::make_index_sequence<N + 1>>::value)
    return countAggregateFields<T, N + 1>();
  else
    return N;
}
} // namespace detail

static_assert(detail::countAggregateFields<KernelDescription>() ==
                  kNumKernelDescriptionFields,
              "a KernelDescription field is missing from "
              "kKernelDescriptionFields: list it there, or the cache key and "
              "the serialization will not see it");

} // namespace mlir::mlafp8::kernel_abi

#endif // MLA_FP8_ABI_KERNELDESCRIPTION_H
