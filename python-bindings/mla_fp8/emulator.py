"""Run a bundle's kernel on the gfx9 emulator with numpy arrays.

The launch goes through the C++ ``EmulatorLauncher``
(include/mla-fp8/Runtime/EmulatorLaunch.h): the manifest's kernarg offsets,
workgroup size and grid, exactly what a HIP launcher does on a GPU. Each
chip's code object is decoded once per loaded bundle.
"""

import numpy as np

from . import _limits
from ._checks import (check_bits, check_int, check_w_scale_given,
                      element_strides)
from .bundle import Bundle, Kernel

__all__ = ["run_kernel_emulated"]


def _check_view(array, name, shape, last):
    """Checks a 3-D uint16 view: its shape and a unit last stride."""
    check_bits(array, np.uint16, name, ndim=3)
    if array.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got "
                         f"{array.shape}")
    strides = element_strides(array, name)
    if strides[2] != 1 and last > 1 and array.size:
        raise ValueError(f"{name}: the last stride must be 1 element, got "
                         f"{strides[2]}")


def run_kernel_emulated(bundle, kernel, x, w, w_scale, y, *, bias=None,
                        threads=0):
    """Runs `kernel` of `bundle` on the emulator: y[b] = x[b] . w[b]^T.

    Args:
      bundle: the Bundle that `kernel` comes from.
      kernel: a Kernel of `bundle` (Bundle.find_kernel).
      x: uint16 (B, M, K) bits of the kernel's in_type; any non-negative
        strides with the K stride 1 (transposed or sliced views work).
      w: uint8 (B, N, K) C-contiguous bits of the kernel's fp8_type.
      w_scale: float32 weight descale, 1 value (per_tensor kernels) or B.
      y: uint16 (B, M, N) view of the output, written in place (N stride
        1); pass ``out.transpose(1, 0, 2)`` to write an (M, B, N) array.
      bias: optional uint16 (B, N) bits of the output type.
      threads: emulator worker threads (0: one per core).

    Returns:
      int: the number of instructions the emulator executed.
    """
    if not isinstance(bundle, Bundle):
        raise TypeError(f"bundle: expected an mla_fp8.Bundle, got "
                        f"{type(bundle).__name__}")
    if not isinstance(kernel, Kernel) or kernel._bundle is not bundle:
        raise TypeError("kernel: expected a Kernel of this bundle "
                        "(bundle.find_kernel)")
    threads = check_int(threads, "threads", minimum=0,
                        maximum=_limits.EMULATOR_MAX_THREADS)
    check_bits(x, np.uint16, "x", ndim=3)
    batch, m = x.shape[0], x.shape[1]
    _check_view(x, "x", (batch, m, kernel.k), kernel.k)
    _limits.check_emulator_sizes(batch, m, kernel.n, kernel.k, "x",
                                 "w")
    check_bits(w, np.uint8, "w", ndim=3)
    if w.shape != (batch, kernel.n, kernel.k):
        raise ValueError(f"w: expected shape (B={batch}, N={kernel.n}, "
                         f"K={kernel.k}), got {w.shape}")
    if not w.flags.c_contiguous:
        raise ValueError("w: must be C-contiguous (B, N, K)")
    check_w_scale_given(w_scale)
    scales = np.ascontiguousarray(np.asarray(w_scale, dtype=np.float32)
                                  .reshape(-1))
    expected = batch if kernel.w_scale == "per_batch" else 1
    if scales.size != expected:
        raise ValueError(f"w_scale: the {kernel.w_scale} kernel takes "
                         f"{expected} value(s), got {scales.size}")
    _check_view(y, "y", (batch, m, kernel.n), kernel.n)
    if not y.flags.writeable:
        raise ValueError("y: the array is read-only")
    if bias is not None:
        check_bits(bias, np.uint16, "bias", ndim=2)
        if bias.shape != (batch, kernel.n):
            raise ValueError(f"bias: expected shape (B={batch}, "
                             f"N={kernel.n}), got {bias.shape}")
        bias = np.ascontiguousarray(bias)
    y_strides = element_strides(y, "y")
    _limits.check_rows_disjoint("y", y_strides[0], batch, y_strides[1], m,
                                kernel.n)
    _limits.check_numpy_disjoint("y", y, (("x", x), ("w", w),
                                          ("bias", bias)))
    _limits.check_kernel_sizes(
        batch, m, kernel.n, kernel.k,
        _limits.view_end(x.shape, element_strides(x, "x")),
        _limits.view_end(y.shape, y_strides), "y", bias is not None, "x",
        "w")
    _limits.check_launch(kernel, m, batch, "x")
    _limits.check_emulator_sizes(batch, m, kernel.n, kernel.k, "x", "w",
                                 workspace=kernel.workspace_bytes(m, batch))
    if batch == 0 or m == 0:
        return 0
    try:
        return bundle._native.run_emulated(kernel._key[0], kernel._key[1], x,
                                           w, scales, bias, y, threads)
    except RuntimeError as error:
        raise RuntimeError(f"run_kernel_emulated: {kernel.symbol}: "
                           f"{error}") from None
