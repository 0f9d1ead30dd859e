"""The drop-in kernel call of the serving frameworks, on AOT kernels.

``batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant``
takes the arguments of the Triton kernel it replaces and runs the bundle's
kernel for the chip and M. Nothing is compiled at call time, unless a kernel
missing from the bundle is, on explicit opt-in (``MLA_FP8_COMPILE_MISSING=1``,
see mla_fp8._missing); otherwise a miss is an error naming the mla-fp8-aot
command that generates the kernel.

Where the kernel runs depends on the arrays:

* numpy arrays (bf16/f16 as uint16 bits, fp8 as uint8 bits in the chip's
  format) run on the gfx9 emulator through the C++ EmulatorLauncher. The
  chip emulated is the `chip` keyword, else ``$MLA_FP8_EMULATE_CHIP``, else
  gfx942.
* PyTorch tensors go through the custom op mla_fp8::prequant_bmm where
  torch has torch.library.custom_op (mla_fp8.torch_op), directly otherwise.
  On a ROCm device they run on the GPU through HIP (mla_fp8.hip), on the
  current stream of the tensors' device; the chip is the `chip` keyword,
  else the device's gcnArchName. The checks run once per call signature
  (mla_fp8._hip_call caches the checked launch). CPU tensors run on the
  emulator, as numpy arrays do, the chip defaulting to the one whose format
  WQ's fp8 dtype is.

The bundle is loaded once per directory. Lookup order:

1. the bundle given to ``set_bundle(path)``;
2. the directory in ``$MLA_FP8_BUNDLE``;
3. the default locations, in order: ``<mla_fp8 package>/bundle`` and
   ``$XDG_CACHE_HOME/mla-fp8/bundle`` (``~/.cache/mla-fp8/bundle``).

When none holds a manifest.json, BundleNotFoundError says what was tried.
A bundle found at a default location stays the one used until
``set_bundle`` is called (the locations are not searched on every call).
"""

import os
import sys
import threading
import warnings
from collections.abc import Mapping

import numpy as np

from . import _hip_call, _limits, _log, _missing, torch_op
from ._checks import (check_bits, check_bool, check_group_size,
                      check_native_byte_order, check_w_scale_given,
                      element_strides)
from .bundle import Bundle
from .weights import CHIP_FP8_FORMATS

__all__ = [
    "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
    "set_bundle", "get_bundle", "default_bundle_paths", "BundleNotFoundError",
    "DEFAULT_EMULATE_CHIP",
]

#: The chip numpy calls emulate unless told otherwise.
DEFAULT_EMULATE_CHIP = "gfx942"

_lock = threading.Lock()
_explicit = None
_found = None  # the bundle found at a default location
_bundles = {}

_TORCH_HALF = {"bfloat16": "bf16", "float16": "f16"}
#: A numpy X's dtype names its kernel's in_type: numpy has float16 but no
#: bfloat16, so uint16 arrays hold bf16 bits.
_NUMPY_HALF = {"uint16": "bf16", "float16": "f16"}
_TORCH_FP8 = {"float8_e4m3fnuz": "f8E4M3FNUZ", "float8_e4m3fn": "f8E4M3FN"}


class BundleNotFoundError(FileNotFoundError):
    """No AOT bundle was configured or found at the default locations."""


def default_bundle_paths():
    """The default bundle directories, in lookup order."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return [os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "bundle"),
            os.path.join(cache, "mla-fp8", "bundle")]


def _load(path):
    # Keyed by absolute paths: one given as such is found without
    # normalizing it (the drop-in looks $MLA_FP8_BUNDLE up on every call).
    bundle = _bundles.get(path)
    if bundle is not None:
        return bundle
    path = os.path.abspath(os.fspath(path))
    with _lock:
        bundle = _bundles.get(path)
        if bundle is None:
            bundle = _bundles[path] = Bundle(path)
        return bundle


def set_bundle(bundle):
    """Sets the bundle the drop-in call uses: a directory or a Bundle.

    The bundle is loaded (and checked) now. None restores the lookup of
    $MLA_FP8_BUNDLE and the default locations.
    """
    global _explicit, _found  # pylint: disable=global-statement
    _found = None
    if bundle is None or isinstance(bundle, Bundle):
        _explicit = bundle
        return bundle
    if not isinstance(bundle, (str, bytes, os.PathLike)):
        raise TypeError(f"bundle: expected a path or an mla_fp8.Bundle, got "
                        f"{type(bundle).__name__}")
    _explicit = _load(bundle)
    return _explicit


def get_bundle():
    """The bundle the drop-in call uses (see the module's lookup order)."""
    global _found  # pylint: disable=global-statement
    if _explicit is not None:
        return _explicit
    env = os.environ.get("MLA_FP8_BUNDLE")
    if env:
        return _load(env)
    if _found is not None:
        return _found
    tried = []
    for path in default_bundle_paths():
        if os.path.isfile(os.path.join(path, "manifest.json")):
            _found = _load(path)
            return _found
        tried.append(path)
    raise BundleNotFoundError(
        "no mla-fp8 kernel bundle: call mla_fp8.set_bundle(path), set "
        "MLA_FP8_BUNDLE to a bundle directory, or generate one (mla-fp8-aot "
        "-o DIR, or mla_fp8.generate_bundle(DIR)) into one of: " +
        ", ".join(tried))


def _out_type(dtype):
    """'bf16' or 'f16' from the `dtype` argument (strings, numpy or torch
    dtypes)."""
    if dtype is None:
        return None
    name = str(dtype).replace("torch.", "")
    names = {"bf16": "bf16", "bfloat16": "bf16", "f16": "f16",
             "float16": "f16", "half": "f16"}
    if name not in names:
        raise ValueError(f"dtype: expected bfloat16 or float16 ('bf16' or "
                         f"'f16'), got {dtype}")
    return names[name]


def _find_kernel(bundle, chip, n, k, m, batch, out_type, w_scale,
                 group_size, in_type, chip_source, has_bias):
    """The bundle's kernel; on a miss, the one compiled into the cache when
    that is enabled (mla_fp8._missing), else a ValueError naming the
    argument at fault and the way forward."""
    kernel = bundle.find_kernel(chip, n, k, m, batch, out_type=out_type,
                                w_scale=w_scale, group_size=group_size,
                                in_type=in_type, has_bias=has_bias)
    if kernel is not None:
        return kernel

    def reason():
        return _miss_reason(bundle, chip, n, k, m, batch, out_type, w_scale,
                            group_size, in_type, chip_source, has_bias)

    if chip not in CHIP_FP8_FORMATS:
        raise ValueError(reason()[1])
    miss = _missing.Miss(chip, n, k, group_size, in_type, out_type, w_scale,
                         has_bias)
    if _missing.compile_missing_enabled():
        # Every call for a compiled miss comes here: the reason is only
        # worked out if compiling fails.
        return _missing.find_compiled(miss, m, batch, bundle.max_m,
                                      lambda: reason()[0])
    raise ValueError(reason()[1] + _missing.hint(bundle, miss))


def _miss_reason(bundle, chip, n, k, m, batch, out_type, w_scale, group_size,
                 in_type, chip_source, has_bias):
    """(argument, message) saying why the bundle has no kernel."""
    if chip not in bundle.chips:
        return chip_source, (f"{chip_source}: the bundle at "
                             f"{bundle.directory} has no kernels for {chip} "
                             f"(it has {', '.join(bundle.chips)})")
    same = [c for c in bundle.kernels() if c.chip == chip and c.n == n and
            c.k == k]
    if not same:
        shapes = sorted({(c.n, c.k) for c in bundle.kernels()
                         if c.chip == chip})
        return "WQ", (f"WQ: the bundle has no kernel for N={n}, K={k} on "
                      f"{chip} (its (N, K) shapes: {shapes})")
    for attr, value, name in (("group_size", group_size, "group_size"),
                              ("in_type", in_type, "X"),
                              ("out_type", out_type, "dtype"),
                              ("w_scale", w_scale, "w_scale")):
        have = sorted({str(getattr(c, attr)) for c in same})
        if str(value) not in have:
            return name, (f"{name}: the bundle's kernels for N={n}, K={k} "
                          f"on {chip} have {attr} {', '.join(have)}, not "
                          f"{value}")
    if not any(c.has_bias == has_bias for c in same):
        return "bias", (
            f"bias: the bundle's kernels for N={n}, K={k} on {chip} were "
            + ("generated without a bias" if has_bias else
               "all generated with a bias"))
    return "WQ", (f"WQ: the bundle has no kernel for N={n}, K={k}, B={batch}, "
                  f"M={m} (B * M = {batch * m} rows) on {chip} with these "
                  f"options")


def _w_scale_mode(count, batch):
    if count == 1 and batch != 1:
        return "per_tensor"
    if count == batch:
        return "per_batch" if batch > 1 else "per_tensor"
    raise ValueError(f"w_scale: expected 1 value (per tensor) or B={batch} "
                     f"values (per batch), got {count}")


def _check_common(group_size, splitK, transpose_bm, transpose_bm_in,
                  config):
    # The common case first, without the general checks' calls: every call
    # of a decode step comes here.
    if type(group_size) is not int or group_size < 1 or \
            group_size & (group_size - 1):
        group_size = check_group_size(group_size)
    if splitK is None and config is None and \
            (transpose_bm is True or transpose_bm is False) and \
            (transpose_bm_in is True or transpose_bm_in is False):
        return group_size, transpose_bm, transpose_bm_in
    # AITER's wrapper asserts splitK is None too; here each kernel's split
    # over K was fixed ahead of time by the chip's tile table.
    if splitK is not None:
        raise ValueError(f"splitK: expected None, got {splitK!r} (as in "
                         f"AITER's call: the bundle's kernels split K as "
                         f"their tile was chosen for the chip and M)")
    if config is not None:
        if not isinstance(config, Mapping):
            raise TypeError(f"config: expected None or a dict, got "
                            f"{type(config).__name__}")
        # Triton meta-parameters (BLOCK_SIZE_M, ...) have no meaning for
        # kernels compiled ahead of time; say so once instead of silently.
        warnings.warn("mla_fp8: the config argument is ignored: the bundle's "
                      "kernels have their tiles chosen ahead of time",
                      RuntimeWarning, stacklevel=3)
    return (group_size, check_bool(transpose_bm, "transpose_bm"),
            check_bool(transpose_bm_in, "transpose_bm_in"))


def _bias_2d(bias):
    """AITER's (B, 1, N) bias as the (B, N) view the kernels take."""
    shape = getattr(bias, "shape", None)
    if shape is not None and len(shape) == 3 and shape[1] == 1:
        return bias[:, 0, :]
    return bias


def batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant(
        X, WQ, w_scale, group_size=128, bias=None, dtype=None, splitK=None,
        YQ=None, transpose_bm=False, transpose_bm_in=False, config=None, *,
        chip=None):
    """Y[b] = quant(X[b]) . WQ[b]^T * w_scale (+ bias), as SPEC.md defines.

    Activations are quantized to fp8 per token and group of `group_size`
    columns inside the kernel; the weights are fp8 already. With a torch
    recent enough for torch.library.custom_op, torch tensors go through
    the custom op mla_fp8::prequant_bmm (mla_fp8.torch_op), which
    torch.compile traces; CPU tensors run on the emulator.

    Args:
      X: (B, M, K) activations, bf16 (or f16 where the bundle has such
        kernels); (M, B, K) when `transpose_bm_in`. Any strides with the K
        stride 1. numpy: uint16 bits.
      WQ: (B, N, K) fp8 weights in the chip's format (e4m3fnuz on gfx942,
        e4m3fn on gfx950), C-contiguous. numpy: uint8 bits.
      w_scale: float32 weight descale: 1 value (per tensor) or B (per
        batch element). numpy: anything float32 converts; torch: a device
        tensor or a Python float.
      group_size: activation quantization group; must be the bundle's.
      bias: optional (B, N) or (B, 1, N) (AITER's shape), contiguous, in
        the output type.
      dtype: output type, bfloat16 (default) or float16 (torch dtypes,
        numpy float16 or the strings 'bf16' / 'f16'). As in AITER, a torch
        `YQ` is written in its own dtype, whatever `dtype` says (which
        must still be one of these). numpy: names the format of the bits.
      splitK: must be None, as in AITER; anything else raises ValueError
        (the bundle's tile table chose each kernel's split per chip and M).
      YQ: optional output written in place: (B, M, N), or (M, B, N) with
        `transpose_bm`; any strides with the N stride 1 (a slice of a
        larger array works). numpy: uint16 bits.
      transpose_bm: produce Y as (M, B, N) instead of (B, M, N).
      transpose_bm_in: X is given as (M, B, K).
      config: None, or a dict of Triton tile parameters, which are ignored
        with a RuntimeWarning: the kernels' tiles were chosen ahead of time.
      chip: the chip whose kernel runs (numpy and CPU tensors: which chip
        to emulate, default $MLA_FP8_EMULATE_CHIP, else the chip of WQ's
        fp8 dtype for CPU tensors, else gfx942; ROCm tensors: default the
        device's architecture).

    Returns:
      Y (the same object as `YQ` when given).

    Raises:
      TypeError / ValueError: naming the argument at fault.
      BundleNotFoundError: no bundle is configured (see the module doc).
      mla_fp8.hip.HipUnavailableError: torch tensors without an AMD GPU.
    """
    group_size, transpose_bm, transpose_bm_in = _check_common(
        group_size, splitK, transpose_bm, transpose_bm_in, config)
    if chip is not None and not isinstance(chip, str):
        raise TypeError(f"chip: expected a string such as 'gfx942', got "
                        f"{type(chip).__name__}")
    torch = sys.modules.get("torch")
    if torch is not None:
        _check_dense(torch, X, WQ, w_scale, bias, YQ)
    if bias is not None:
        bias = _bias_2d(bias)
    if torch is not None and isinstance(X, torch.Tensor):
        # AITER writes YQ in YQ's own dtype whatever `dtype` says; `dtype`
        # must still name a supported type.
        if dtype is not None:
            _out_type(dtype)
            if isinstance(YQ, torch.Tensor):
                dtype = None
        if torch_op.register() is None and X.device.type != "cpu":
            # No custom op to go through: straight to the launch (what
            # torch_op.call would do, one layer less on every call).
            return _hip_call.call(X, WQ, w_scale, group_size, bias, dtype,
                                  YQ, transpose_bm, transpose_bm_in, chip)
        return torch_op.call(X, WQ, w_scale, group_size, bias, dtype, YQ,
                             transpose_bm, transpose_bm_in, chip)
    if isinstance(X, np.ndarray):
        return _call_emulated(X, WQ, w_scale, group_size, bias, dtype, YQ,
                              transpose_bm, transpose_bm_in, chip)
    raise TypeError(f"X: expected a numpy array (uint16 bits, run on the "
                    f"emulator) or a torch tensor on a ROCm device, got "
                    f"{type(X).__name__}")


def _check_dense(torch, X, WQ, w_scale, bias, YQ):
    """Refuses a sparse or other non-strided tensor by name: the kernels
    read dense memory with strides, and torch's own error for such a tensor
    (NotImplementedError or RuntimeError from .stride()) names none."""
    strided = getattr(torch, "strided", None)
    for name, value in (("X", X), ("WQ", WQ), ("w_scale", w_scale),
                        ("bias", bias), ("YQ", YQ)):
        if isinstance(value, torch.Tensor) and strided is not None and \
                getattr(value, "layout", strided) != strided:
            raise TypeError(f"{name}: expected a dense tensor "
                            f"(torch.strided layout), got layout "
                            f"{value.layout}; pass {name}.to_dense()")


def _shapes(x_shape, w_shape, transpose_bm_in):
    """(B, M, K, N) from X's and WQ's shapes."""
    if len(x_shape) != 3:
        layout = "(M, B, K)" if transpose_bm_in else "(B, M, K)"
        raise ValueError(f"X: expected 3 dimensions {layout}, got shape "
                         f"{tuple(x_shape)}")
    if transpose_bm_in:
        m, batch, k = x_shape
    else:
        batch, m, k = x_shape
    if len(w_shape) != 3:
        raise ValueError(f"WQ: expected 3 dimensions (B, N, K), got shape "
                         f"{tuple(w_shape)}")
    if w_shape[0] != batch or w_shape[2] != k:
        raise ValueError(f"WQ: shape {tuple(w_shape)} does not match X: "
                         f"expected (B={batch}, N, K={k})")
    if k < 1 or w_shape[1] < 1:
        raise ValueError(f"WQ: N and K must be at least 1, got shape "
                         f"{tuple(w_shape)}")
    return batch, m, k, w_shape[1]


def _call_emulated(X, WQ, w_scale, group_size, bias, dtype, YQ, transpose_bm,
                   transpose_bm_in, chip, in_type=None, chip_source=None):
    """The numpy path: the bundle's kernel on the gfx9 emulator. X is
    float16 (f16) or uint16 bits of `in_type` (bf16 when None: numpy has no
    bfloat16); `chip_source` names where a given `chip` came from."""
    if chip is None:
        chip = os.environ.get("MLA_FP8_EMULATE_CHIP") or DEFAULT_EMULATE_CHIP
        chip_source = "MLA_FP8_EMULATE_CHIP"
    else:
        chip_source = chip_source or "chip"
    check_native_byte_order(X, "X")
    dtype_in_type = _NUMPY_HALF.get(X.dtype.name)
    if dtype_in_type == "bf16" and in_type is not None:
        dtype_in_type = in_type  # the torch path's bits of either type
    in_type = dtype_in_type
    if in_type is None:
        raise TypeError(f"X: expected dtype uint16 (bf16 bits) or float16, "
                        f"got {X.dtype.name}")
    check_bits(WQ, np.uint8, "WQ", ndim=None)
    batch, m, k, n = _shapes(X.shape, WQ.shape, transpose_bm_in)
    # Sizes first: nothing below allocates or launches beyond the bounds.
    _limits.check_emulator_sizes(batch, m, n, k)
    x = X.transpose(1, 0, 2) if transpose_bm_in else X
    x_strides = element_strides(X, "X")
    if x_strides[2] != 1 and k > 1 and X.size:
        raise ValueError("X: the K stride must be 1 element; pass a view "
                         "with contiguous rows")
    if not WQ.flags.c_contiguous:
        raise ValueError("WQ: must be C-contiguous (B, N, K); weights do "
                         "not change between calls, so make them contiguous "
                         "once, when they are loaded")
    check_w_scale_given(w_scale)
    if isinstance(w_scale, np.ndarray) and w_scale.dtype.kind != "f":
        raise TypeError(f"w_scale: expected float32 values, got dtype "
                        f"{w_scale.dtype.name}")
    try:
        scales = np.ascontiguousarray(
            np.asarray(w_scale, dtype=np.float32).reshape(-1))
    except (TypeError, ValueError):
        raise TypeError(f"w_scale: expected float32 values, got "
                        f"{type(w_scale).__name__}") from None
    mode = _w_scale_mode(scales.size, batch)
    out_type = _out_type(dtype) or "bf16"
    if bias is not None:
        check_bits(bias, np.uint16, "bias", ndim=2)
        if bias.shape != (batch, n):
            raise ValueError(f"bias: expected shape (B={batch}, N={n}), got "
                             f"{bias.shape}")
    y_shape = (m, batch, n) if transpose_bm else (batch, m, n)
    if YQ is None:
        y_end = batch * m * n
    else:
        Y = check_bits(YQ, np.uint16, "YQ", ndim=None)
        if Y.shape != y_shape:
            layout = "(M, B, N)" if transpose_bm else "(B, M, N)"
            raise ValueError(f"YQ: expected shape {y_shape} {layout}, got "
                             f"{Y.shape}")
        if not Y.flags.writeable:
            raise ValueError("YQ: the array is read-only")
        y_strides = element_strides(Y, "YQ")
        if y_strides[2] != 1 and n > 1 and Y.size:
            raise ValueError("YQ: the N stride must be 1 element")
        y_end = _limits.view_end(Y.shape, y_strides)
        stride_b, stride_m = ((y_strides[1], y_strides[0]) if transpose_bm
                              else (y_strides[0], y_strides[1]))
        _limits.check_rows_disjoint("YQ", stride_b, batch, stride_m, m, n)
        _limits.check_numpy_disjoint("YQ", Y, (("X", X), ("WQ", WQ),
                                               ("bias", bias)))
    _limits.check_kernel_sizes(batch, m, n, k,
                               _limits.view_end(X.shape, x_strides), y_end,
                               "X" if YQ is None else "YQ", bias is not None)
    bundle = get_bundle()
    kernel = _find_kernel(bundle, chip, n, k, m, batch, out_type, mode,
                          group_size, in_type, chip_source, bias is not None)
    _limits.check_launch(kernel, m, batch)
    _limits.check_emulator_sizes(batch, m, n, k,
                                 workspace=kernel.workspace_bytes(m, batch))
    Y = np.zeros(y_shape, dtype=np.uint16) if YQ is None else YQ
    if batch == 0 or m == 0:
        return Y  # nothing to compute: no emulator run, no log line
    _log.kernel_serves(kernel, "emulator", _log.shape(
        batch, m, n, k, transpose_bm_in, transpose_bm))
    y = Y.transpose(1, 0, 2) if transpose_bm else Y
    x = x.view(np.uint16)
    try:
        # The kernel's own bundle: a compiled miss lives in another one.
        kernel._bundle._native.run_emulated(
            kernel._key[0], kernel._key[1], x, WQ, scales,
            None if bias is None else np.ascontiguousarray(bias), y, 0)
    except RuntimeError as error:
        raise RuntimeError(f"{kernel.symbol} on the emulator: {error}") \
            from None
    return Y


# The torch path (kept here by this name: mla_fp8.torch_op calls it).
_call_hip = _hip_call.call
