"""Load an AOT bundle (what mla-fp8-aot writes) and pick kernels.

A launcher needs, per kernel: the code object (one per chip, shared by its
kernels), the symbol, the workgroup size, the grid for (M, B) and the kernarg
layout. docs/manifest.md describes the bundle.

Pure Python (_manifest.py checks what the C++ loader checks), so that
serving needs no native module; the native loader is used only to run
kernels on the emulator.
"""

import os
import threading

from . import _abi, _manifest
from ._checks import (HALF_TYPES, W_SCALE_MODES, check_choice,
                      check_group_size, check_int)
from ._manifest import BundleError
from ._native import native_module

__all__ = ["Bundle", "BundleError", "Kernel", "load_bundle"]


def _serves(min_rows, max_rows, m, b):
    """Whether min_rows <= b * m <= max_rows (max_rows 0: unbounded) for a
    launch of b >= 1 batches of m >= 1 tokens, as KernelEntry::serves."""
    if m < 1 or b < 1:
        return False
    rows = m * b
    return rows >= min_rows and (max_rows == 0 or rows <= max_rows)


# What find_kernel matches (the description but the fp8 type, which the
# chip decides).
_SHAPE_FIELDS = ("chip", "n", "k", "group_size", "in_type", "out_type",
                 "w_scale", "has_bias")


class Kernel:
    """One kernel of a bundle; attributes mirror the manifest's fields.

    Attributes:
      chip, symbol, projection, fp8_type, in_type, out_type, w_scale (str)
      n, k, group_size, block_m (int)
      min_rows, max_rows (0: unbounded): the kernel serves the launches of
        min_rows <= B * M <= max_rows rows (int)
      workgroup_size: (x, y, z)
      kernarg_size, kernarg_align, lds_bytes, scratch_bytes (int)
      args: list of dicts (name, offset, size, kind, meaning, hidden); an
        explicit argument's name is the manifest's `name` field, which the
        loader checked against the kernel ABI (`meaning` is prose for people)
      arg_offsets: {name: offset} of the explicit arguments (x, x_stride_b,
        x_stride_m, m, w, w_scale, y, bias, y_stride_b, y_stride_m,
        workspace): launchers pack by these names
      workspace_bytes_per_block: bytes of zeroed scratch memory per
        (batch, M block) the kernel's `workspace` argument needs; 0: none
      has_bias: whether the kernel adds its bias argument
      code_object: bytes of the chip's code object
    """

    def __init__(self, bundle, info):
        self._bundle = bundle
        info = dict(info)
        self._key = info.pop("key")
        self._launch = info.pop("launch")
        for name in ("block_n", "waves", "split_k"):
            info.pop(name)
        self.__dict__.update(info)
        self.arg_offsets = {a["name"]: a["offset"] for a in self.args
                            if not a["hidden"]}

    @property
    def code_object(self):
        """The chip's code object (bytes, shared by its kernels)."""
        return self._bundle._code_object(self._key[0])

    def workspace_bytes(self, m, b):
        """Bytes of the zeroed workspace for `m` tokens and `b` batches, as
        the kernel ABI gives them: b * ceil(m / block_m) *
        workspace_bytes_per_block (0: none)."""
        m = check_int(m, "m", minimum=0)
        b = check_int(b, "b", minimum=0)
        bytes_ = b * -(-m // self.block_m) * self.workspace_bytes_per_block
        if bytes_ >= 1 << 63:
            raise ValueError(f"{self.symbol}: the split-K workspace for M = "
                             f"{m}, B = {b} does not fit in 64 bits")
        return bytes_

    def serves(self, m, b):
        """Whether this kernel's range of rows holds a launch of `b`
        batches of `m` tokens (B * M rows)."""
        return _serves(self.min_rows, self.max_rows, m, b)

    def grid(self, m, b):
        """Workgroups (x, y, z) for `m` tokens and `b` batches; y is 0 when
        m is 0 (launch nothing)."""
        m = check_int(m, "m", minimum=0)
        b = check_int(b, "b", minimum=0)
        # The geometry is checked against the kernel's metadata here, as
        # every launcher asks for the grid first.
        if m > _abi.MAX_MANIFEST_M:
            raise ValueError(f"{self.symbol}: M = {m} is above the largest M "
                             f"a kernel indexes, {_abi.MAX_MANIFEST_M}")
        (_, x), (_, y_divisor), _ = _abi.grid_dims(self._launch)
        grid = (x, -(-m // y_divisor), b)
        for name, count, size in zip("xyz", grid, self.workgroup_size):
            # The dispatch packet holds work-items per axis in 32 bits.
            if count > _abi.MAX_GRID_WORK_ITEMS // size:
                raise ValueError(f"{self.symbol}: grid.{name} = {count} "
                                 f"workgroups of {size} work-items does not "
                                 f"fit in 32 bits")
        self.workspace_bytes(m, b)
        return grid

    def __repr__(self):
        upper = "inf" if self.max_rows == 0 else self.max_rows
        return (f"Kernel({self.symbol!r}, chip={self.chip!r}, n={self.n}, "
                f"k={self.k}, rows={self.min_rows}..{upper})")


def _path_bytes(path, what):
    """`path` as the bytes the file system sees (any str os.fsdecode made
    included); a NUL, which no path can hold, is refused."""
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise BundleError(f"{what}: a path cannot contain a NUL byte: "
                          f"{path!r}")
    return raw


class Bundle:
    """A loaded bundle. Immutable; lookups are cheap."""

    def __init__(self, directory):
        directory = os.fspath(directory)
        self._loaded = _manifest.load(_path_bytes(directory, "directory"))
        self.directory = directory
        self._kernels = {}
        self._native_bundle = None
        self._native_lock = threading.Lock()
        # The kernels of each description, in manifest order: a lookup
        # reads only its shape's.
        self._by_shape = {}
        for loaded in self._loaded.chips:
            for info in loaded.kernels:
                self._by_shape.setdefault(
                    tuple(info[f] for f in _SHAPE_FIELDS), []).append(info)

    @property
    def schema_version(self):
        """The manifest's schema version."""
        return self._loaded.schema_version

    @property
    def model(self):
        """The model preset the bundle was generated for."""
        return self._loaded.model

    @property
    def compiler_version(self):
        """The mla-fp8 version that generated the bundle."""
        return self._loaded.compiler_version

    @property
    def max_m(self):
        """The M the ranges were planned for (larger M still finds one)."""
        return self._loaded.max_m

    @property
    def chips(self):
        """The chips of the bundle, in manifest order."""
        return [c.chip for c in self._loaded.chips]

    def kernels(self):
        """Every kernel of every chip."""
        return [self._wrap(info) for chip in self._loaded.chips
                for info in chip.kernels]

    def find_kernel(self, chip, n, k, m, b, *, out_type="bf16",
                    w_scale="per_tensor", group_size=128, in_type="bf16",
                    has_bias=False):
        """The kernel of `chip` for the (n, k) shape whose range of rows
        holds a launch of `b` batches of `m` tokens (B * M rows).

        M = 0 or B = 0 (nothing to compute) gets the lowest range's kernel,
        whose grid is empty. Returns None when the bundle has no such
        kernel.
        """
        if not isinstance(chip, str):
            raise TypeError(f"chip: expected a string, got "
                            f"{type(chip).__name__}")
        n = check_int(n, "n", minimum=1)
        k = check_int(k, "k", minimum=1)
        m = check_int(m, "m", minimum=0)
        b = check_int(b, "b", minimum=0)
        out_type = check_choice(out_type, HALF_TYPES, "out_type")
        in_type = check_choice(in_type, HALF_TYPES, "in_type")
        w_scale = check_choice(w_scale, W_SCALE_MODES, "w_scale")
        group_size = check_group_size(group_size)
        # Past the M and B a kernel indexes no kernel serves the launch, as
        # in the native lookup (LoadedBundle::findKernel), which bounds both
        # so that B * M fits in 64 bits.
        if m > _abi.MAX_MANIFEST_M or b > _abi.MAX_MANIFEST_M:
            return None
        lowest = None
        for info in self._by_shape.get((chip, n, k, group_size, in_type,
                                        out_type, w_scale, bool(has_bias)),
                                       ()):
            if _serves(info["min_rows"], info["max_rows"], m, b):
                return self._wrap(info)
            if lowest is None or info["min_rows"] < lowest["min_rows"]:
                lowest = info
        # M = 0 or B = 0 launches nothing; any kernel of the shape describes
        # that (empty) launch, not to be mistaken for an unsupported shape.
        return (self._wrap(lowest) if (m == 0 or b == 0) and lowest is not
                None else None)

    def _wrap(self, info):
        key = info["key"]
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = Kernel(self, info)
        return kernel

    def _chip_sha256(self, chip_index):
        """The SHA-256 of a chip's code object (hex)."""
        return self._loaded.chips[chip_index].sha256

    def _code_object(self, chip_index):
        return self._loaded.chips[chip_index].code_object

    @property
    def _native(self):
        """The native module's load of the same bundle, for the emulator:
        loaded on first use, and refused if the files changed since this
        object read them."""
        with self._native_lock:
            if self._native_bundle is None:
                module = native_module("running kernels on the emulator")
                try:
                    loaded = module.Bundle(_path_bytes(self.directory,
                                                       "directory"))
                except ValueError as error:
                    raise BundleError(str(error)) from None
                now = [(c["chip"], c["sha256"]) for c in loaded.chips()]
                then = [(c.chip, c.sha256) for c in self._loaded.chips]
                if now != then or [k["symbol"] for k in loaded.kernels()] != \
                        [k.symbol for k in self.kernels()]:
                    raise BundleError(f"{self.directory}: the bundle changed "
                                      f"on disk since it was loaded; load it "
                                      f"again")
                self._native_bundle = loaded
            return self._native_bundle

    def __repr__(self):
        return (f"Bundle({self.directory!r}, model={self.model!r}, "
                f"chips={self.chips})")


def load_bundle(directory):
    """Loads the bundle in `directory` (manifest.json + code objects).

    The schema version and each code object's SHA-256 are checked.

    Raises:
      BundleError (a ValueError): naming the file and the field at fault.
    """
    if not isinstance(directory, (str, bytes, os.PathLike)):
        raise TypeError(f"directory: expected a path, got "
                        f"{type(directory).__name__}")
    return Bundle(directory)
