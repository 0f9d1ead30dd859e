"""Load an AOT bundle (what mla-fp8-aot writes) and pick kernels.

A launcher needs, per kernel: the code object (one per chip, shared by its
kernels), the symbol, the workgroup size, the grid for (M, B) and the kernarg
layout. docs/manifest.md describes the bundle.
"""

import os

from . import _mla_fp8
from ._checks import (HALF_TYPES, W_SCALE_MODES, check_choice,
                      check_group_size, check_int)

__all__ = ["Bundle", "BundleError", "Kernel", "load_bundle"]


class BundleError(ValueError):
    """A bundle cannot be loaded: the message names the file and field."""


class Kernel:
    """One kernel of a bundle; attributes mirror the manifest's fields.

    Attributes:
      chip, symbol, projection, fp8_type, in_type, out_type, w_scale (str)
      n, k, group_size, min_m, max_m (0: unbounded), block_m (int)
      workgroup_size: (x, y, z)
      kernarg_size, kernarg_align, lds_bytes, scratch_bytes (int)
      args: list of dicts (name, offset, size, kind, meaning, hidden); an
        explicit argument's name is the manifest's `name` field, which the
        loader checked against the kernel ABI (`meaning` is prose for people)
      arg_offsets: {name: offset} of the explicit arguments (x, w, w_scale,
        bias, y, m, x_stride_b, x_stride_m, y_stride_b, y_stride_m,
        workspace): launchers pack by these names
      workspace_bytes_per_block: bytes of zeroed scratch memory per
        (batch, M block) the kernel's `workspace` argument needs; 0: none
      has_bias: whether the kernel adds its bias argument
      code_object: bytes of the chip's code object
    """

    def __init__(self, bundle, info):
        self._bundle = bundle
        self._key = info.pop("key")
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
        return self._bundle._native.workspace_bytes(self._key[0], self._key[1],
                                                    m, b)

    def serves(self, m):
        """Whether this kernel's M range holds `m`."""
        return m >= self.min_m and (self.max_m == 0 or m <= self.max_m)

    def grid(self, m, b):
        """Workgroups (x, y, z) for `m` tokens and `b` batches; y is 0 when
        m is 0 (launch nothing)."""
        m = check_int(m, "m", minimum=0)
        b = check_int(b, "b", minimum=0)
        return self._bundle._native.grid(self._key[0], self._key[1], m, b)

    def __repr__(self):
        upper = "inf" if self.max_m == 0 else self.max_m
        return (f"Kernel({self.symbol!r}, chip={self.chip!r}, n={self.n}, "
                f"k={self.k}, m={self.min_m}..{upper})")


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
        try:
            self._native = _mla_fp8.Bundle(_path_bytes(directory, "directory"))
        except ValueError as error:
            raise BundleError(str(error)) from None
        self.directory = directory
        self._kernels = {}
        self._code_objects = {}

    @property
    def schema_version(self):
        """The manifest's schema version."""
        return self._native.schema_version

    @property
    def model(self):
        """The model preset the bundle was generated for."""
        return self._native.model

    @property
    def compiler_version(self):
        """The mla-fp8 version that generated the bundle."""
        return self._native.compiler_version

    @property
    def max_m(self):
        """The M the ranges were planned for (larger M still finds one)."""
        return self._native.max_m

    @property
    def chips(self):
        """The chips of the bundle, in manifest order."""
        return [c["chip"] for c in self._native.chips()]

    def kernels(self):
        """Every kernel of every chip."""
        return [self._wrap(info) for info in self._native.kernels()]

    def find_kernel(self, chip, n, k, m, *, out_type="bf16",
                    w_scale="per_tensor", group_size=128, in_type="bf16",
                    has_bias=False):
        """The kernel of `chip` for the (n, k) shape whose M range holds m.

        M = 0 (nothing to compute) gets the lowest range's kernel, whose grid
        is empty. Returns None when the bundle has no such kernel.
        """
        if not isinstance(chip, str):
            raise TypeError(f"chip: expected a string, got "
                            f"{type(chip).__name__}")
        n = check_int(n, "n", minimum=1)
        k = check_int(k, "k", minimum=1)
        m = check_int(m, "m", minimum=0)
        out_type = check_choice(out_type, HALF_TYPES, "out_type")
        in_type = check_choice(in_type, HALF_TYPES, "in_type")
        w_scale = check_choice(w_scale, W_SCALE_MODES, "w_scale")
        group_size = check_group_size(group_size)
        info = self._native.find_kernel(chip, n, k, m, out_type, w_scale,
                                        group_size, in_type, bool(has_bias))
        return None if info is None else self._wrap(info)

    def _wrap(self, info):
        key = info["key"]
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = Kernel(self, info)
        return kernel

    def _chip_sha256(self, chip_index):
        """The SHA-256 of a chip's code object (hex)."""
        return self._native.chips()[chip_index]["sha256"]

    def _code_object(self, chip_index):
        data = self._code_objects.get(chip_index)
        if data is None:
            data = self._code_objects[chip_index] = self._native.code_object(
                chip_index)
        return data

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
