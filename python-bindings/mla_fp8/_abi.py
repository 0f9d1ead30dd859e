"""The kernel ABI, the chip table and the loader's limits, in Python.

The serving path (bundle loading and checking, kernel lookup, launches on
HIP) needs no native module, so that a ROCm machine runs it without LLVM.
These are the facts it needs from the C++ side, each a copy of one
definition there:

  kernel arguments, grid, workgroup and workspace formulas, symbol names:
      include/mla-fp8/ABI/KernelABI.h, lib/ABI/KernelABI.cpp
  manifest limits: include/mla-fp8/Runtime/KernelTable.h, CodeObject/File.h
  launch limits: include/mla-fp8/Runtime/Limits.h
  chips and MFMAs: lib/Hardware/Chip.cpp, lib/Hardware/Mfma.cpp

tests/test_pure_loader.py compares every value and formula here with the
native module's, so a change on one side without the other fails there.
"""

from collections import namedtuple

# --- Kernel arguments --------------------------------------------------------

#: One explicit kernel argument: name, offset and size in bytes, and the
#: code-object metadata's .value_kind.
AbiArg = namedtuple("AbiArg", "index name offset size value_kind")

_POINTER, _I64 = "global_buffer", "by_value"
KERNEL_ARGS = tuple(AbiArg(i, name, 8 * i, 8, kind) for i, (name, kind) in
                    enumerate((("x", _POINTER), ("x_stride_b", _I64),
                               ("x_stride_m", _I64), ("m", _I64),
                               ("w", _POINTER), ("w_scale", _POINTER),
                               ("y", _POINTER), ("bias", _POINTER),
                               ("y_stride_b", _I64), ("y_stride_m", _I64),
                               ("workspace", _POINTER))))
KERNEL_ARGS_BY_NAME = {a.name: a for a in KERNEL_ARGS}
KERNARG_BYTES = 88

WAVE_SIZE = 64
WORKSPACE_ALIGNMENT = 256
MAX_TILE_DIM = 4096
MAX_SPLIT_K = 1024
MAX_WAVES = 16
MAX_N = 1 << 24
MIN_GROUP_SIZE = 16
MAX_TILE_STAGES = 4
TILE_OCCUPANCY = 2

# --- Manifest and file limits ------------------------------------------------

SUPPORTED_SCHEMA_VERSION = 5
MAX_MANIFEST_N = 65536
MAX_MANIFEST_K = 65536
MAX_MANIFEST_GROUP_SIZE = 65536
MAX_MANIFEST_M = (1 << 31) - 1
MAX_MANIFEST_ROWS = (1 << 31) - 1
MAX_MANIFEST_CHIPS = 16
MAX_MANIFEST_KERNELS_PER_CHIP = 4096
MAX_MANIFEST_ARGS = 64
MAX_MANIFEST_KERNARG_BYTES = 4096
MAX_MANIFEST_LDS_BYTES = 1 << 20
MAX_MANIFEST_SCRATCH_BYTES = 1 << 20
MAX_MANIFEST_JSON_DEPTH = 64
MAX_MANIFEST_BYTES = 16 << 20
MAX_CODE_OBJECT_BYTES = 256 << 20
MAX_METADATA_DEPTH = 16
MAX_METADATA_NOTE_BYTES = 8 << 20

# --- Launch limits (docs/limits.md) ------------------------------------------

KERNEL_MAX_ELEMENTS = 2147483647
MAX_GRID_WORK_ITEMS = 0xffffffff
EMULATOR_MAX_BATCH = 65535
EMULATOR_MAX_M = 1 << 20
EMULATOR_MAX_DIM = 65536
EMULATOR_MAX_HOST_BYTES = 4 << 30
EMULATOR_X_BYTES_PER_ELEMENT = 4
EMULATOR_W_BYTES_PER_ELEMENT = 1
EMULATOR_Y_BYTES_PER_ELEMENT = 16
EMULATOR_MAX_THREADS = 1024

# --- Chips and MFMAs ---------------------------------------------------------

#: The fp8 MFMA records: the tile's shape name, the mnemonic, M and N, and
#: the architectures that have it.
Mfma = namedtuple("Mfma", "shape mnemonic m n archs")
MFMAS = (
    Mfma("m16n16k32", "v_mfma_f32_16x16x32_fp8_fp8", 16, 16,
         ("CDNA3", "CDNA4")),
    Mfma("m32n32k16", "v_mfma_f32_32x32x16_fp8_fp8", 32, 32,
         ("CDNA3", "CDNA4")),
    Mfma("m16n16k128", "v_mfma_f32_16x16x128_f8f6f4", 16, 16, ("CDNA4",)),
    Mfma("m32n32k64", "v_mfma_f32_32x32x64_f8f6f4", 32, 32, ("CDNA4",)),
)
MFMAS_BY_SHAPE = {m.shape: m for m in MFMAS}


def _chip(name, marketing_names, architecture, fp8_e4m3_type, fp8_e5m2_type,
          lds_bytes_per_workgroup, num_cus):
    return {"name": name, "marketing_names": marketing_names,
            "architecture": architecture, "fp8_e4m3_type": fp8_e4m3_type,
            "fp8_e5m2_type": fp8_e5m2_type, "wave_size": WAVE_SIZE,
            "lds_bytes_per_workgroup": lds_bytes_per_workgroup,
            "num_cus": num_cus,
            "mfmas": [m.mnemonic for m in MFMAS if architecture in m.archs]}


#: The chip table, one dict per chip, as supported_chips() returns it.
CHIPS = (
    _chip("gfx942", "AMD Instinct MI300X, MI300A, MI325X", "CDNA3",
          "f8E4M3FNUZ", "f8E5M2FNUZ", 64 * 1024, 304),
    _chip("gfx950", "AMD Instinct MI350X, MI355X", "CDNA4", "f8E4M3FN",
          "f8E5M2", 160 * 1024, 256),
)
CHIPS_BY_NAME = {c["name"]: c for c in CHIPS}


def describe_unsupported_chip(name):
    return (f"unknown chip '{name}'; supported chips: "
            f"{', '.join(CHIPS_BY_NAME)}")


# --- Formulas ----------------------------------------------------------------

#: A launch's shape besides M and B.
LaunchShape = namedtuple("LaunchShape", "n block_m block_n waves split_k")


def _ceil_div(a, b):
    return -(-a // b)


def shape_is_valid(s):
    return (1 <= s.n <= MAX_N and 1 <= s.block_m <= MAX_TILE_DIM and
            1 <= s.block_n <= MAX_TILE_DIM and 1 <= s.waves <= MAX_WAVES and
            1 <= s.split_k <= MAX_SPLIT_K)


def grid_dims(s):
    """The grid as (variable, value) per axis: variable None (a constant),
    "M" or "B" (ceil(variable / value))."""
    return ((None, _ceil_div(s.n, s.block_n) * s.split_k), ("M", s.block_m),
            ("B", 1))


def grid_dim_text(dim):
    """A grid dimension as the manifest writes it (text quoted)."""
    var, value = dim
    if var is None:
        return str(value)
    return f'"{var}"' if value == 1 else f'"ceil({var}/{value})"'


def workgroup_size(s):
    return (WAVE_SIZE * s.waves, 1, 1)


def workspace_bytes_per_block(s):
    """Bytes of split-K workspace per (batch, M block); None for a shape
    outside the ABI's bounds."""
    if not shape_is_valid(s):
        return None
    if s.split_k == 1:
        return 0
    tiles = _ceil_div(s.n, s.block_n)
    counters = tiles * s.split_k * s.block_m * s.block_n * 4
    return _ceil_div(counters + 4 * tiles,
                     WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT


def kernel_symbol(n, k, group_size, in_type, out_type, per_batch, has_bias,
                  chip, min_rows, max_rows):
    name = f"mla_fp8_n{n}_k{k}_g{group_size}"
    if in_type != "bf16":
        name += "_x" + in_type
    name += "_" + out_type
    if per_batch:
        name += "_pb"
    if has_bias:
        name += "_bias"
    return name + f"_{chip}_r{min_rows}_" + ("inf" if max_rows == 0 else
                                             str(max_rows))


def rows_overlap(stride_b, extent_b, stride_m, extent_m, n):
    """Whether distinct (b, m) rows of n elements at these strides share an
    element (doRowsOverlap in lib/Reference/PrequantBmm.cpp)."""
    stride_b, stride_m = abs(stride_b), abs(stride_m)
    if extent_b <= 1 and extent_m <= 1:
        return False
    if extent_b <= 1:
        return stride_m < n
    if extent_m <= 1:
        return stride_b < n
    inner_stride, inner_extent, outer_stride = stride_m, extent_m, stride_b
    if stride_b < stride_m:
        inner_stride, inner_extent, outer_stride = stride_b, extent_b, stride_m
    return (inner_stride < n or
            outer_stride < (inner_extent - 1) * inner_stride + n)
