//===- KernelABI.h - The prequant-bmm kernel ABI ----------------*- C++ -*-===//
//
// The one owner of the contract between a generated kernel and whoever
// launches it: the symbol, the explicit arguments, the grid, the workgroup,
// the split-K workspace and the LDS size, all from a plain launch shape. The
// generator builds the kernel's signature from getKernelArgs(), the manifest
// and the C header print it, and the loaders, launchers, Python and the tests
// read it; nothing parses prose.
//
// Kernel semantics (every kernel of every shape alike):
// - X(b, m, k) is at x[b * x_stride_b + m * x_stride_m + k]; Y(b, m, n) at
//   y[b * y_stride_b + m * y_stride_m + n]; W is (B, N, K) row-major fp8;
//   w_scale holds 1 value (per-tensor) or B (per-batch); bias is (B, N) in
//   Y's type, or null (never read) when the kernel has no bias.
// - Grid in workgroups: x = ceil(N / block_n) * split_k, y = ceil(M /
//   block_m), z = B; M = 0 means no launch. Workgroup x runs N tile
//   x / split_k and split x % split_k, which covers K-groups
//   [s * G / split_k, (s + 1) * G / split_k) of the G = ceil(K / group_size)
//   groups (a partial last group goes to the last split).
// - When K is a multiple of 8, X rows are read with 16-byte loads: the X base
//   must be 16-byte aligned and x_stride_b, x_stride_m multiples of 8.
//
// Split-K workspace (split_k > 1). Blocks of getWorkspaceBytesPerBlock()
// bytes, one per (b, M tile), block index b * ceil(M / block_m) + M tile,
// the base kWorkspaceAlignment-aligned. A block holds, for each N tile t and
// split s, the f32 partial tile at element (t * split_k + s) * block_m *
// block_n (already multiplied by the row scales, before the descale and bias;
// lanes' accumulators in register order), then one u32 arrival counter per N
// tile at element ceil(N / block_n) * split_k * block_m * block_n + t. Each
// workgroup stores its partial, fences (release, agent scope) and adds 1 to
// its counter; the one that reads split_k - 1 is the last: it fences
// (acquire), sums the partials in split order 0, 1, ..., split_k - 1 (the
// same bits whatever order the workgroups ran in), applies the descale and
// bias, rounds once, stores Y and sets the counter back to 0.
// Zero-once contract: the caller zeroes the workspace once, when it allocates
// it; every launch leaves all counters at 0 again, so later launches (graph
// replays included) need no memset. Launches that share a workspace must not
// run concurrently.
//
// LLVM Support only: the run-time loader and embedders link it without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_ABI_KERNELABI_H
#define MLA_FP8_ABI_KERNELABI_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace mlir::mlafp8::kernel_abi {

/// Lanes per wave of every kernel.
inline constexpr int64_t kWaveSize = 64;

/// What an explicit argument carries.
enum class ArgKind {
  /// An 8-byte global pointer (metadata value kind "global_buffer").
  Pointer,
  /// An i64 passed by value (metadata value kind "by_value").
  I64,
};

/// The explicit arguments, by index: the generator binds them by these.
enum ArgIndex : unsigned {
  kArgX,
  kArgXStrideB,
  kArgXStrideM,
  kArgM,
  kArgW,
  kArgWScale,
  kArgY,
  kArgBias,
  kArgYStrideB,
  kArgYStrideM,
  kArgWorkspace,
  kNumArgs,
};

/// One explicit kernel argument.
struct KernelArg {
  unsigned index;
  /// The name launchers, the manifest and the C header use, e.g. "x_stride_b".
  llvm::StringRef name;
  ArgKind kind;
  unsigned offset;
  unsigned size;
  /// One line for people (the manifest and the C header print it).
  llvm::StringRef description;
};

/// The explicit arguments of every kernel, in kernarg order (index i at [i]).
llvm::ArrayRef<KernelArg> getKernelArgs();

/// The argument called `name`, or null.
const KernelArg *lookupKernelArg(llvm::StringRef name);

/// "pointer" or "i64": the manifest's and the C header's spelling.
llvm::StringRef stringifyArgKind(ArgKind kind);
/// The code-object metadata's .value_kind of an argument of `kind`.
llvm::StringRef getMetadataValueKind(ArgKind kind);

/// Bytes of explicit kernel arguments.
inline constexpr unsigned kKernargBytes = 88;

/// The leading arguments the kernels preload into SGPRs (gfx942 and gfx950
/// kernarg preloading: the command processor writes them after the user
/// SGPRs before the wave starts, and the code object begins with a 256-byte
/// prologue that loads them itself where the firmware does not): x, its
/// strides, m, w, w_scale and y, 14 dwords, as many as the 16 user SGPRs
/// hold beside the kernarg pointer. The first address a kernel computes,
/// X's, then waits for no scalar load.
inline constexpr unsigned kPreloadedArgs = 7;

/// Alignment in bytes of the split-K workspace and of each of its blocks.
inline constexpr int64_t kWorkspaceAlignment = 256;

/// Bounds of the launch fields the formulas below accept; beyond them they
/// could overflow.
inline constexpr int64_t kMaxTileDim = 4096;
inline constexpr int64_t kMaxSplitK = 1024;
inline constexpr int64_t kMaxWaves = 16;
inline constexpr int64_t kMaxN = int64_t(1) << 24;

/// The smallest group size (K elements per activation scale): a group is
/// quantized by lanes that each own 8 columns and pair up at least once.
inline constexpr int64_t kMinGroupSize = 16;

/// The most K-groups a kernel keeps in flight (a tile's `stages`): stages = s
/// issues the loads of group g + s - 1 before group g is computed.
inline constexpr int64_t kMaxTileStages = 4;

/// The one `occupancy` a tile may have: the generator does not size
/// registers by occupancy yet, so no other value would have an effect.
inline constexpr int64_t kTileOccupancy = 2;

/// What a launch of one kernel depends on besides M and B.
struct LaunchShape {
  int64_t n = 0;
  int64_t blockM = 0;
  int64_t blockN = 0;
  int64_t waves = 0;
  int64_t splitK = 1;

  /// Whether every field lies in the bounds above.
  bool isValid() const;
};

/// One grid dimension as a formula of the launch: a constant, or
/// ceil(M / divisor) or ceil(B / divisor). The manifest prints it.
struct GridDim {
  enum class Var : uint8_t { None, M, B };
  Var var = Var::None;
  /// The constant for Var::None, else the divisor (>= 1).
  int64_t value = 0;

  /// Workgroups for `m` tokens and `batch` batch elements (negative values
  /// count as 0); never overflows.
  int64_t evaluate(int64_t m, int64_t batch) const;
  /// The manifest's spelling: "12", "M", "B" or "ceil(M/16)".
  std::string str() const;
  bool operator==(const GridDim &other) const {
    return var == other.var && value == other.value;
  }
};

/// The grid of every launch of `shape`, (x, y, z): (ceil(N / block_n) *
/// split_k, ceil(M / block_m), B).
std::array<GridDim, 3> getGridDims(const LaunchShape &shape);

/// The grid in workgroups (x, y, z) for `m` tokens and `batch` batch
/// elements; y is 0 when M is 0 (launch nothing).
std::array<int64_t, 3> getGrid(const LaunchShape &shape, int64_t m,
                               int64_t batch);

/// The workgroup size in work-items: (64 * waves, 1, 1).
std::array<int64_t, 3> getWorkgroupSize(const LaunchShape &shape);

/// The split-K workspace bytes of one (batch element, M tile) block: the f32
/// partials of every N tile and split, one u32 arrival counter per N tile,
/// rounded up to kWorkspaceAlignment; 0 without split-K. nullopt when the
/// shape is out of bounds.
std::optional<int64_t> getWorkspaceBytesPerBlock(const LaunchShape &shape);

/// Bytes from the start of a workspace block to its first arrival counter
/// (the partials before it); nullopt when the shape is out of bounds.
std::optional<int64_t> getWorkspaceCountersOffset(const LaunchShape &shape);

/// The workspace bytes a launch needs: B * ceil(M / block_m) blocks.
std::optional<int64_t> getWorkspaceBytes(const LaunchShape &shape, int64_t m,
                                         int64_t batch);

/// LDS bytes a kernel allocates statically: the fp8 activation tile of one
/// K-group in MFMA operand order, then one f32 scale per row.
int64_t getLDSBytes(int64_t blockM, int64_t groupSize);

/// What names a kernel: the shape, the types, the epilogue and the range of
/// launch rows (B * M) it serves.
struct KernelNameFields {
  int64_t n = 0, k = 0, groupSize = 0;
  /// The activation type, "bf16" or "f16": bf16 is not named (the symbols
  /// predate f16 activations), f16 adds `_xf16`.
  std::string inType = "bf16";
  /// "bf16" or "f16".
  std::string outType;
  bool perBatchScale = false;
  bool hasBias = false;
  std::string chip;
  /// maxRows 0: no upper bound ("inf").
  int64_t minRows = 0, maxRows = 0;
};

/// The kernel's symbol, e.g. `mla_fp8_n512_k128_g128_bf16_gfx942_r1_256`,
/// with `_xf16` before the output type for f16 activations (two kernels
/// that differ only in their input type share a code object), `_pb` for a
/// per-batch descale, `_bias` for a bias and `r8193_inf` for
/// an unbounded range of rows.
std::string getKernelSymbol(const KernelNameFields &fields);

} // namespace mlir::mlafp8::kernel_abi

#endif // MLA_FP8_ABI_KERNELABI_H
