"""One kernels[] entry of a manifest: every field range-checked, then
checked against what the kernel ABI implies and against the code object's
own metadata (lib/Runtime/ManifestKernel.cpp, with its messages)."""

import bisect
import re

from . import _abi
from ._codeobject import printable

__all__ = ["DESCRIPTION_FIELDS", "as_integer", "check_overlaps",
           "read_checked_kernel"]

#: The fields of a kernel's description, in the manifest's order: two
#: entries with equal descriptions compute the same thing.
DESCRIPTION_FIELDS = ("chip", "n", "k", "group_size", "in_type", "fp8_type",
                      "out_type", "w_scale", "has_bias")

_U32_MAX = 0xffffffff
_TRIM = " \t\n\v\f\r"
_DIGITS = re.compile(r"[0-9]+")


def as_integer(value):
    """A JSON number as the C++ loader's integers read it: an int64, an
    integral double within int64's range (64.0, 1e2), else None. Integers
    past int64 are unsigned (none is an integer) up to 2^64 and doubles
    beyond; the double 2^63 converts to -2^63, as the C++ conversion does on
    x86-64."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if -(1 << 63) <= value < (1 << 63):
            return value
        if 0 < value < (1 << 64):
            return None
        try:
            value = float(value)
        except OverflowError:
            return None
    if isinstance(value, float) and value.is_integer() and \
            -2.0 ** 63 <= value <= 2.0 ** 63:
        return -(1 << 63) if value == 2.0 ** 63 else int(value)
    return None


def _parse_grid_dim(value):
    """An integer below 2^32, "M", "B" or "ceil(M/<n>)" / "ceil(B/<n>)"
    with 1 <= n < 2^32, as (variable or None, value); None if neither."""
    if not isinstance(value, str):
        i = as_integer(value)
        return (None, i) if i is not None and 0 <= i <= _U32_MAX else None
    text = value.strip(_TRIM)
    if text in ("M", "B"):
        return (text, 1)
    if not (text.startswith("ceil(") and text.endswith(")")):
        return None
    name, _, divisor = text[len("ceil("):-1].partition("/")
    name, divisor = name.strip(_TRIM), divisor.strip(_TRIM)
    if name not in ("M", "B") or not _DIGITS.fullmatch(divisor):
        return None
    d = int(divisor)
    return (name, d) if 1 <= d <= _U32_MAX else None


def _read_tile(r, o, path, e):
    tile = r.get_object(o, "tile", path)
    if tile is None:
        return
    tile_path = r.join(path, "tile")
    e["block_m"] = r.get_int(tile, "block_m", tile_path, 1, _abi.MAX_TILE_DIM)
    e["block_n"] = r.get_int(tile, "block_n", tile_path, 1, _abi.MAX_TILE_DIM)
    e["waves"] = r.get_int(tile, "waves", tile_path, 1, _abi.MAX_WAVES)
    e["split_k"] = r.get_int(tile, "split_k", tile_path, 1, _abi.MAX_SPLIT_K)
    # What the tile verifier accepts, so that a bundle never claims a tile
    # the compiler would refuse.
    r.get_int(tile, "stages", tile_path, 1, _abi.MAX_TILE_STAGES)
    r.get_int(tile, "occupancy", tile_path, _abi.TILE_OCCUPANCY,
              _abi.TILE_OCCUPANCY)
    mfma = r.get_string(tile, "mfma", tile_path)
    if not r.failed():
        record = _abi.MFMAS_BY_SHAPE.get(mfma)
        chip = _abi.CHIPS_BY_NAME[e["chip"]]
        if record is None:
            r.fail(r.join(tile_path, "mfma"),
                   f"'{mfma}' is not an fp8 MFMA shape")
        elif chip["architecture"] not in record.archs:
            r.fail(r.join(tile_path, "mfma"),
                   f"{e['chip']} has no {record.mnemonic}")
        elif e["block_m"] % record.m or e["block_n"] % record.n:
            r.fail(r.join(tile_path, "mfma"),
                   f"a {e['block_m']}x{e['block_n']} block is not made of "
                   f"{record.m}x{record.n} MFMA tiles")
    if r.get_int(tile, "min_rows", tile_path, 1, _abi.MAX_MANIFEST_ROWS) != \
            e["min_rows"] and not r.failed():
        r.fail(r.join(tile_path, "min_rows"),
               "differs from the kernel's min_rows")
    if r.get_int(tile, "max_rows", tile_path, 0, _abi.MAX_MANIFEST_ROWS) != \
            e["max_rows"] and not r.failed():
        r.fail(r.join(tile_path, "max_rows"),
               "differs from the kernel's max_rows")


def _read_geometry(r, o, path, e, grid):
    wg = r.get_array(o, "workgroup_size", path, 3)
    if wg is not None:
        wg_path = r.join(path, "workgroup_size")
        if len(wg) != 3:
            r.fail(wg_path, "expected 3 integers")
        size = list(e["workgroup_size"])
        for i, item in enumerate(wg[:3]):
            v = as_integer(item)
            if v is None or v < 1 or v > 1024:
                r.fail(f"{wg_path}[{i}]", "expected an integer in [1, 1024]")
            else:
                size[i] = v
        e["workgroup_size"] = tuple(size)
    dims = r.get_object(o, "grid", path)
    if dims is not None:
        grid_path = r.join(path, "grid")
        for i, name in enumerate("xyz"):
            if name not in dims:
                r.get(dims, name, grid_path)
                continue
            dim = _parse_grid_dim(dims[name])
            if dim is None:
                r.fail(r.join(grid_path, name),
                       'expected an integer below 2^32, "M", "B" or '
                       '"ceil(M/<n>)" with 1 <= n < 2^32')
            else:
                grid[i] = dim


def _read_args(r, o, path, e):
    args = r.get_array(o, "args", path, _abi.MAX_MANIFEST_ARGS)
    if args is None or r.failed():
        return
    args_path = r.join(path, "args")
    explicit = 0
    for i, a in enumerate(args):
        if r.failed():
            break
        arg_path = f"{args_path}[{i}]"
        if not isinstance(a, dict):
            r.fail(arg_path, "expected an object")
            break
        offset = r.get_int(a, "offset", arg_path, 0,
                           _abi.MAX_MANIFEST_KERNARG_BYTES)
        size = r.get_int(a, "size", arg_path, 1,
                         _abi.MAX_MANIFEST_KERNARG_BYTES)
        kind = r.get_string(a, "kind", arg_path)
        if r.failed():
            break
        if offset + size > e["kernarg_size"]:
            r.fail(arg_path, f"ends at {offset + size}, past kernarg_size "
                   f"{e['kernarg_size']}")
            break
        arg = {"name": kind, "offset": offset, "size": size, "kind": kind,
               "meaning": "", "hidden": kind.startswith("hidden_")}
        if not arg["hidden"]:
            # Explicit arguments come first, in the kernel ABI's order. Each
            # is named by its `name`, whose ABI row gives its place, offset,
            # size and kind; `meaning` is for people and never parsed.
            name = r.get_string(a, "name", arg_path)
            if r.failed():
                break
            expected = _abi.KERNEL_ARGS_BY_NAME.get(name)
            if expected is None:
                r.fail(r.join(arg_path, "name"),
                       f"'{name}' is not an argument of the kernel ABI")
                break
            if expected.index != i:
                r.fail(r.join(arg_path, "name"),
                       f"'{name}' is argument {expected.index} of the kernel "
                       f"ABI, not {i}")
                break
            if (offset, size, kind) != (expected.offset, expected.size,
                                        expected.value_kind):
                r.fail(arg_path, f"expected the ABI's '{expected.name}' "
                       f"argument: offset {expected.offset}, size "
                       f"{expected.size}, kind {expected.value_kind}")
                break
            if "meaning" in a:
                if not isinstance(a["meaning"], str):
                    r.fail(r.join(arg_path, "meaning"), "expected a string")
                    break
                arg["meaning"] = a["meaning"]
            arg["name"] = name
            explicit += 1
        e["args"].append(arg)
    if not r.failed() and explicit != len(_abi.KERNEL_ARGS):
        r.fail(args_path, f"{explicit} explicit arguments, the kernel ABI "
               f"has {len(_abi.KERNEL_ARGS)}")


def _read_kernel(r, o, path, e, grid):
    e["symbol"] = r.get_string(o, "symbol", path)
    e["projection"] = r.get_choice(o, "projection", path,
                                   ("k_up", "v_up", "wo_a"))
    e["n"] = r.get_int(o, "n", path, 1, _abi.MAX_MANIFEST_N)
    e["k"] = r.get_int(o, "k", path, 1, _abi.MAX_MANIFEST_K)
    e["group_size"] = r.get_int(o, "group_size", path, _abi.MIN_GROUP_SIZE,
                                _abi.MAX_MANIFEST_GROUP_SIZE)
    group = e["group_size"]
    if not r.failed() and group & (group - 1):
        r.fail(r.join(path, "group_size"),
               f"expected a power of two, got {group}")
    # The symbol names the input type (checkKernelFields), so an entry whose
    # in_type contradicts its code is refused there.
    e["in_type"] = r.get_choice(o, "in_type", path, ("bf16", "f16"))
    e["fp8_type"] = r.get_string(o, "fp8_type", path)
    e["out_type"] = r.get_choice(o, "out_type", path, ("bf16", "f16"))
    w_scale = r.get_choice(o, "w_scale", path, ("per_tensor", "per_batch"))
    e["w_scale"] = w_scale if w_scale == "per_batch" else "per_tensor"
    e["has_bias"] = r.get_bool(o, "has_bias", path)
    e["min_rows"] = r.get_int(o, "min_rows", path, 1, _abi.MAX_MANIFEST_ROWS)
    e["max_rows"] = r.get_int(o, "max_rows", path, 0, _abi.MAX_MANIFEST_ROWS)
    if not r.failed() and e["max_rows"] != 0 and \
            e["max_rows"] < e["min_rows"]:
        r.fail(r.join(path, "max_rows"),
               f"{e['max_rows']} is below min_rows {e['min_rows']}")
    _read_tile(r, o, path, e)
    _read_geometry(r, o, path, e, grid)
    e["kernarg_size"] = r.get_int(o, "kernarg_size", path, 1,
                                  _abi.MAX_MANIFEST_KERNARG_BYTES)
    e["kernarg_align"] = r.get_int(o, "kernarg_align", path, 1, 256)
    align = e["kernarg_align"]
    if not r.failed() and align & (align - 1):
        r.fail(r.join(path, "kernarg_align"), "expected a power of two")
    e["lds_bytes"] = r.get_int(o, "lds_bytes", path, 0,
                               _abi.MAX_MANIFEST_LDS_BYTES)
    e["scratch_bytes"] = r.get_int(o, "scratch_bytes", path, 0,
                                   _abi.MAX_MANIFEST_SCRATCH_BYTES)
    # Bounded by what any tile within the limits above implies; checked
    # against the tile below.
    e["workspace_bytes_per_block"] = r.get_int(
        o, "workspace_bytes_per_block", path, 0, 1 << 50)
    _read_args(r, o, path, e)


def _symbol_of(e, **change):
    fields = {"n": e["n"], "k": e["k"], "group_size": e["group_size"],
              "in_type": e["in_type"], "out_type": e["out_type"],
              "per_batch": e["w_scale"] == "per_batch",
              "has_bias": e["has_bias"], "chip": e["chip"],
              "min_rows": e["min_rows"], "max_rows": e["max_rows"]}
    fields.update(change)
    return _abi.kernel_symbol(**fields)


def _other_half(name):
    return "f16" if name == "bf16" else "bf16"


def _check_fields(r, path, e, grid):
    chip = _abi.CHIPS_BY_NAME[e["chip"]]
    if e["fp8_type"] != chip["fp8_e4m3_type"]:
        r.fail(r.join(path, "fp8_type"),
               f"{e['chip']} kernels use \"{chip['fp8_e4m3_type']}\", got "
               f"\"{e['fp8_type']}\"")
        return
    if e["lds_bytes"] > chip["lds_bytes_per_workgroup"]:
        r.fail(r.join(path, "lds_bytes"),
               f"{e['lds_bytes']} is more than the "
               f"{chip['lds_bytes_per_workgroup']} bytes a workgroup of "
               f"{e['chip']} may allocate")
        return
    expected = _symbol_of(e)
    if e["symbol"] != expected:
        # Blame the one field whose other value would name the symbol.
        for field, change in (
                ("has_bias", {"has_bias": not e["has_bias"]}),
                ("w_scale", {"per_batch": e["w_scale"] != "per_batch"}),
                ("out_type", {"out_type": _other_half(e["out_type"])}),
                ("in_type", {"in_type": _other_half(e["in_type"])})):
            if _symbol_of(e, **change) == e["symbol"]:
                r.fail(r.join(path, field),
                       f"contradicts the symbol '{e['symbol']}'")
                return
        r.fail(r.join(path, "symbol"),
               f"'{e['symbol']}' is not the kernel the entry's fields name "
               f"('{expected}')")
        return
    shape = e["launch"]
    wg = _abi.workgroup_size(shape)
    if e["workgroup_size"] != wg:
        got = e["workgroup_size"]
        r.fail(r.join(path, "workgroup_size"),
               f"expected [{wg[0]}, {wg[1]}, {wg[2]}] for {e['waves']} "
               f"waves, got [{got[0]}, {got[1]}, {got[2]}]")
        return
    for name, want, have in zip("xyz", _abi.grid_dims(shape), grid):
        if want != have:
            r.fail(r.join(r.join(path, "grid"), name),
                   f"expected {_abi.grid_dim_text(want)} (the kernel ABI's "
                   f"grid for the tile), got {_abi.grid_dim_text(have)}")
            return
    workspace = _abi.workspace_bytes_per_block(shape)
    if workspace is None or workspace != e["workspace_bytes_per_block"]:
        r.fail(r.join(path, "workspace_bytes_per_block"),
               f"expected {-1 if workspace is None else workspace} for the "
               f"tile, got {e['workspace_bytes_per_block']}")


def _check_metadata(r, path, e, metadata, code_object_file):
    k = metadata.find_kernel(e["symbol"])
    descriptor = e["symbol"] + ".kd"
    if k is None or k.symbol != descriptor or \
            descriptor not in metadata.defined_symbols:
        r.fail(r.join(path, "symbol"),
               f"no kernel '{e['symbol']}' in {code_object_file}")
        return

    def mismatch(field, manifest, code_object, what):
        r.fail(field, f"{manifest}, but the code object's {what} is "
               f"{code_object}")

    for field, attribute, what in (
            ("kernarg_size", "kernarg_segment_size", ".kernarg_segment_size"),
            ("kernarg_align", "kernarg_segment_align",
             ".kernarg_segment_align"),
            ("lds_bytes", "group_segment_fixed_size",
             ".group_segment_fixed_size"),
            ("scratch_bytes", "private_segment_fixed_size",
             ".private_segment_fixed_size")):
        if e[field] != getattr(k, attribute):
            return mismatch(r.join(path, field), e[field],
                            getattr(k, attribute), what)
    wg = e["workgroup_size"]
    items = wg[0] * wg[1] * wg[2]
    if k.max_flat_workgroup_size and items > k.max_flat_workgroup_size:
        return mismatch(r.join(path, "workgroup_size"), items,
                        k.max_flat_workgroup_size, ".max_flat_workgroup_size")
    reqd = k.reqd_workgroup_size
    if reqd is not None and reqd != wg:
        r.fail(r.join(path, "workgroup_size"),
               f"[{wg[0]}, {wg[1]}, {wg[2]}], but the code object's "
               f".reqd_workgroup_size is [{reqd[0]}, {reqd[1]}, {reqd[2]}]")
        return None
    if k.wavefront_size and k.wavefront_size != _abi.WAVE_SIZE:
        return mismatch(r.join(path, "symbol"), _abi.WAVE_SIZE,
                        k.wavefront_size, ".wavefront_size")
    args_path = r.join(path, "args")
    if len(e["args"]) != len(k.args):
        return mismatch(args_path, len(e["args"]), len(k.args),
                        "argument count")
    for i, (a, m) in enumerate(zip(e["args"], k.args)):
        arg_path = f"{args_path}[{i}]"
        if a["offset"] != m.offset:
            return mismatch(r.join(arg_path, "offset"), a["offset"],
                            m.offset, ".offset")
        if a["size"] != m.size:
            return mismatch(r.join(arg_path, "size"), a["size"], m.size,
                            ".size")
        if a["kind"] != m.value_kind:
            r.fail(r.join(arg_path, "kind"),
                   f"\"{a['kind']}\", but the code object's .value_kind is "
                   f"\"{printable(m.value_kind)}\"")
            return None
    return None


def read_checked_kernel(r, o, path, chip, metadata, code_object_file):
    """The entry `o` of `chip`'s kernels as a dict of the manifest's fields
    and its `launch` shape, checked; on an error, r.failed() says so."""
    e = {"chip": chip, "symbol": "", "projection": "", "n": 0, "k": 0,
         "group_size": 0, "in_type": "", "fp8_type": "", "out_type": "",
         "w_scale": "per_tensor", "has_bias": False, "min_rows": 0,
         "max_rows": 0,
         "block_m": 0, "block_n": 0, "waves": 0, "split_k": 1,
         "workgroup_size": (0, 0, 0), "kernarg_size": 0, "kernarg_align": 0,
         "lds_bytes": 0, "scratch_bytes": 0, "workspace_bytes_per_block": 0,
         "args": []}
    grid = [(None, 0)] * 3
    _read_kernel(r, o, path, e, grid)
    e["launch"] = _abi.LaunchShape(e["n"], e["block_m"], e["block_n"],
                                   e["waves"], e["split_k"])
    if not r.failed():
        _check_fields(r, path, e, grid)
    if not r.failed():
        _check_metadata(r, path, e, metadata, code_object_file)
    return e


def check_overlaps(r, kernels_path, kernels):
    """Two entries of one description and projection that a lookup could
    both pick for some launch rows B * M. (Entries of two projections of the same shape
    compute the same thing, so either may serve a lookup.) Reports the
    first entry that overlaps an earlier one of another symbol, and the
    first such earlier one, as the C++ loader does, without comparing every
    pair: within a group, entries of one symbol have one range, so the
    ranges kept (sorted, by their symbol) are disjoint until one is not."""
    groups = {}
    for i, a in enumerate(kernels):
        key = tuple(a[f] for f in DESCRIPTION_FIELDS) + (a["projection"],)
        symbols, starts, ends = groups.setdefault(key, ({}, [], []))
        low, high = a["min_rows"], a["max_rows"] or _abi.MAX_MANIFEST_ROWS
        known = symbols.get((low, high))
        if known == a["symbol"]:
            continue
        at = bisect.bisect_right(starts, high) - 1
        if known is not None or (at >= 0 and ends[at] >= low):
            # max_rows 0 and 2^31 - 1 name one range by two symbols.
            j = next(j for j, b in enumerate(kernels[:i])
                     if all(b[f] == a[f] for f in DESCRIPTION_FIELDS) and
                     b["projection"] == a["projection"] and
                     b["symbol"] != a["symbol"] and b["min_rows"] <= high and
                     low <= (b["max_rows"] or _abi.MAX_MANIFEST_ROWS))
            r.fail(f"{kernels_path}[{i}].min_rows",
                   f"its range of rows overlaps that of kernels[{j}] "
                   f"('{kernels[j]['symbol']}')")
            return
        symbols[(low, high)] = a["symbol"]
        starts.insert(at + 1, low)
        ends.insert(at + 1, high)
