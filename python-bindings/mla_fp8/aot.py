"""Ahead-of-time generation from Python: the options of mla-fp8-aot.

Importing this module loads the compiler (_mla_fp8_compiler, which maps
libMLIR); serving never needs it.
"""

import os

from ._native import compiler_module
from ._checks import (HALF_TYPES, W_SCALE_MODES, check_choice,
                      check_group_size, check_int, check_str)

_mla_fp8_compiler = compiler_module(
    "mla_fp8.aot (compile_spec, generate_bundle)")

__all__ = ["compile_spec", "generate_bundle"]


def _int_list(values, name, minimum=1):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a list of integers")
    return [check_int(v, f"{name}[{i}]", minimum=minimum)
            for i, v in enumerate(values)]


def _str_list(values, name):
    if isinstance(values, str):
        values = [values]
    if not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a list of strings")
    values = list(values)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise TypeError(f"{name}[{i}]: expected a string")
    return values


def _path_bytes(path, what):
    """`path` as the bytes the file system sees; a NUL is refused."""
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise ValueError(f"{what}: a path cannot contain a NUL byte: {path!r}")
    return raw


def generate_bundle(output_dir, *, model="deepseek-r1", heads=0,
                    kv_lora_rank=0, qk_nope_head_dim=0, v_head_dim=0,
                    tp=(), max_m=1024, chips=(), weight_scale="per_tensor",
                    out_type="bf16", in_type=("bf16", "f16"), group_size=128,
                    bias=False, code_object_version=5, cache_dir=None,
                    jobs=0, force=False, tiles=None):
    """Writes a bundle directory as `mla-fp8-aot -o output_dir` does.

    Dimension arguments of 0 keep the preset's; empty `tp` and `chips` mean
    the tool's defaults (TP 1, 2, 4, 8; gfx942 and gfx950). `in_type` is
    one activation type or a list of them ("bf16", "f16"; each gets its own
    kernels, as `--in-type=bf16,f16`). `bias` also generates the kernels
    that add a (B, N) bias. `code_object_version` 5 loads on ROCm 6.0 and
    later, 6 only on ROCm 6.3 and later. `cache_dir` None disables
    the cache. `output_dir` may be missing, empty or an mla-fp8 bundle;
    `force` also replaces a bundle that holds other files (deleting them),
    never a directory that is not a bundle. `tiles` maps a projection
    ("k_up", "v_up", or "wo_a" for a DeepSeek-V4 model) to an explicit tile
    "BMxBNxWAVES:MFMA[:SPLIT_K[:STAGES]]"
    that serves every launch of it instead of the tile table (as `--tile`).

    The options are resolved and checked by the same code as mla-fp8-aot's
    (lib/AOT/Options.cpp): a bad value raises ValueError with the message the
    tool prints. Here only the Python types are checked.

    Returns:
      dict: chips (chip, symbols, code_object_bytes, sha256, from_cache),
      manifest (text), bytes_written.
    """
    options = {
        "output_dir": _path_bytes(output_dir, "output_dir"),
        "model": check_str(model, "model"),
        "heads": check_int(heads, "heads"),
        "kv_lora_rank": check_int(kv_lora_rank, "kv_lora_rank"),
        "qk_nope_head_dim": check_int(qk_nope_head_dim, "qk_nope_head_dim"),
        "v_head_dim": check_int(v_head_dim, "v_head_dim"),
        "tp": _int_list(tp, "tp", minimum=None),
        "max_m": check_int(max_m, "max_m"),
        "chips": _str_list(chips, "chips"),
        "weight_scale": check_str(weight_scale, "weight_scale"),
        "out_type": check_str(out_type, "out_type"),
        "in_types": _str_list(in_type, "in_type"),
        "group_size": check_int(group_size, "group_size"),
        "bias": bool(bias),
        "code_object_version": check_int(code_object_version,
                                         "code_object_version"),
        "cache_dir": b"" if cache_dir is None else _path_bytes(cache_dir,
                                                                "cache_dir"),
        "jobs": check_int(jobs, "jobs", minimum=0, maximum=(1 << 32) - 1),
        "force": bool(force),
        "tiles": _tile_list(tiles),
    }
    return _mla_fp8_compiler.generate_bundle(options)


def _tile_list(tiles):
    """{projection: tile} as the tool's "projection:tile" strings."""
    if tiles is None:
        return []
    if not isinstance(tiles, dict):
        raise TypeError("tiles: expected a dict {projection: tile string}")
    return [f"{check_str(projection, 'tiles key')}:"
            f"{check_str(tile, f'tiles[{projection!r}]')}"
            for projection, tile in tiles.items()]


def compile_spec(n, k, chip, *, projection="custom", batches=(),
                 group_size=128, in_type="bf16", out_type="bf16",
                 weight_scale="per_tensor", bias=False, max_m=1024,
                 with_isa=True, code_object_version=5):
    """Compiles the kernels of one (n, k) shape on `chip`, one per range of
    launch rows (B * M, planned up to max_m times the largest of `batches`,
    or 128 without them);
    `in_type` is the activation type, `bias` makes them add a (B, N) bias,
    and `code_object_version` is 5 (ROCm 6.0+) or 6 (ROCm 6.3+).

    Returns:
      dict: code_object (bytes), isa (str, empty without `with_isa`),
      target_id (e.g. "amdgcn-amd-amdhsa--gfx942"), code_object_version,
      kernels (list of dicts: the kernel description under its manifest
      keys: chip, n, k, group_size, in_type, fp8_type, out_type, w_scale,
      has_bias; symbol and the tile: min_rows, max_rows, block_m,
      block_n, waves, mfma, split_k, stages, occupancy; and metadata: the
      code object's kernarg_size, lds_bytes, scratch_bytes, vgprs, agprs,
      sgprs, vgpr_spills, sgpr_spills, wavefront_size,
      max_workgroup_size).
    """
    check_str(chip, "chip")
    check_str(projection, "projection")
    options = {
        "n": check_int(n, "n", minimum=1),
        "k": check_int(k, "k", minimum=1),
        "chip": chip,
        "projection": projection,
        "batches": _int_list(batches, "batches"),
        "group_size": check_group_size(group_size),
        "in_type": check_choice(in_type, HALF_TYPES, "in_type"),
        "out_type": check_choice(out_type, HALF_TYPES, "out_type"),
        "weight_scale": check_choice(weight_scale, W_SCALE_MODES,
                                     "weight_scale"),
        "bias": bool(bias),
        "max_m": check_int(max_m, "max_m", minimum=1),
        "with_isa": bool(with_isa),
        "code_object_version": check_int(code_object_version,
                                         "code_object_version"),
    }
    return _mla_fp8_compiler.compile_spec(options)
