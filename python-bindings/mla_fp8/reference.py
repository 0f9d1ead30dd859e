"""The exact reference of SPEC.md and offline weight quantization.

The computation is include/mla-fp8/Reference/PrequantBmm.h: activations
group-quantized in float32, products and sums in float64, one rounding to the
output type.
"""

import numpy as np

from ._native import native_module
from ._checks import (HALF_TYPES, as_float32, check_bits, check_bool,
                      check_choice, check_fp8_format, check_group_size,
                      check_int, element_strides)

__all__ = ["reference_prequant_bmm", "quantize_weights",
           "reencode_e4m3fn_to_fnuz"]


def _native():
    return native_module("the reference")


def _check_x_strides(x_strides, x_bits, batch, m, k):
    """Element strides (b, m) of an explicit view into `x_bits`' storage."""
    if not isinstance(x_strides, (tuple, list)) or len(x_strides) != 2:
        raise TypeError("x_strides: expected a pair (stride_b, stride_m) in "
                        "elements")
    stride_b = check_int(x_strides[0], "x_strides[0]", minimum=0)
    stride_m = check_int(x_strides[1], "x_strides[1]", minimum=0)
    if not x_bits.flags.c_contiguous:
        raise ValueError("x_bits: with x_strides, x_bits is the storage the "
                         "strides index and must be C-contiguous")
    if batch and m:
        end = (batch - 1) * stride_b + (m - 1) * stride_m + k
        if end > x_bits.size:
            raise ValueError(f"x_strides: the view ends at element {end}, "
                             f"past the {x_bits.size} elements of x_bits")
    return stride_b, stride_m


def reference_prequant_bmm(x_bits, w_bits, w_scale, *, fp8_format,
                           group_size=128, in_type="bf16", out_type="bf16",
                           bias=None, transpose_bm=False, x_strides=None,
                           m=None, out=None, acc_overflow=False):
    """Y[b] = X[b] . W[b]^T with group-quantized activations, exactly.

    Args:
      x_bits: uint16 (B, M, K) bits of `in_type`, any non-negative strides
        with the K stride 1 (transposed and sliced views work as they are).
        With `x_strides`, instead the C-contiguous storage that
        (stride_b, stride_m) index; then M is the `m` argument.
      w_bits: uint8 (B, N, K) bits of `fp8_format`.
      w_scale: the float32 weight descale: a scalar or one value (per
        tensor), or B values (per batch element).
      fp8_format: format of the weights and of the quantized activations.
      group_size: quantization group along K (a power of two).
      in_type, out_type: "bf16" or "f16".
      bias: optional uint16 (B, N) bits of `out_type`.
      transpose_bm: write Y as (M, B, N) instead of (B, M, N).
      x_strides: optional (stride_b, stride_m) in elements (see x_bits).
      m: the number of rows M when `x_strides` is given.
      out: optional uint16 array to write into, shaped like the result, with
        N stride 1; it is returned.
      acc_overflow: also return the outputs whose fp32 accumulation
        overflows. SPEC.md's accumulator is fp32 where this reference's is
        f64: there (|x| from about 2.6e35 on) a kernel gives Inf, or NaN
        from Inf - Inf, where this value is finite. With one K-group, or
        terms of one sign, the mask is exactly those outputs; with terms of
        mixed signs the kernel's order of the sum decides, so a flagged
        output may also come out finite.

    Returns:
      uint16 bits of `out_type`, (B, M, N), or (M, B, N) with transpose_bm;
      with `acc_overflow`, a pair (those bits, a bool mask of the same
      shape).
    """
    acc_overflow = check_bool(acc_overflow, "acc_overflow")
    fp8_format = check_fp8_format(fp8_format)
    group_size = check_group_size(group_size)
    in_type = check_choice(in_type, HALF_TYPES, "in_type")
    out_type = check_choice(out_type, HALF_TYPES, "out_type")
    transpose_bm = check_bool(transpose_bm, "transpose_bm")
    check_bits(w_bits, np.uint8, "w_bits", ndim=3)
    batch, n, k = w_bits.shape
    if k < 1:
        raise ValueError("w_bits: K (the last dimension) must be at least 1")

    if x_strides is None:
        if m is not None:
            raise ValueError("m: only given with x_strides; otherwise M is "
                             "x_bits.shape[1]")
        check_bits(x_bits, np.uint16, "x_bits", ndim=3)
        if x_bits.shape[0] != batch or x_bits.shape[2] != k:
            raise ValueError(f"x_bits: shape {x_bits.shape} does not match "
                             f"w_bits {w_bits.shape}: expected (B={batch}, "
                             f"M, K={k})")
        rows = x_bits.shape[1]
        stride_b, stride_m, stride_k = element_strides(x_bits, "x_bits")
        # numpy gives empty arrays arbitrary strides: nothing is read.
        if stride_k != 1 and k > 1 and x_bits.size:
            raise ValueError(f"x_bits: the K stride must be 1 element, got "
                             f"{stride_k}; pass np.ascontiguousarray(x_bits) "
                             f"or a view with contiguous rows")
    else:
        check_bits(x_bits, np.uint16, "x_bits")
        if m is None:
            raise ValueError("m: required with x_strides (the number of rows)")
        rows = check_int(m, "m", minimum=0)
        stride_b, stride_m = _check_x_strides(x_strides, x_bits, batch, rows,
                                              k)

    scales = as_float32(w_scale, "w_scale").reshape(-1)
    if scales.size == 1 and batch != 1:
        per_batch = False
    elif scales.size == batch:
        per_batch = batch > 1
    else:
        raise ValueError(f"w_scale: expected 1 value (per tensor) or "
                         f"B={batch} values (per batch), got {scales.size}")
    if not per_batch:
        scales = scales[:1]

    if bias is not None:
        check_bits(bias, np.uint16, "bias", ndim=2)
        if bias.shape != (batch, n):
            raise ValueError(f"bias: expected shape (B={batch}, N={n}), got "
                             f"{bias.shape}")
        bias = np.ascontiguousarray(bias)

    shape = (rows, batch, n) if transpose_bm else (batch, rows, n)
    if out is None:
        y = np.zeros(shape, dtype=np.uint16)
    else:
        y = check_bits(out, np.uint16, "out", ndim=3)
        if y.shape != shape:
            raise ValueError(f"out: expected shape {shape}, got {y.shape}")
        if not y.flags.writeable:
            raise ValueError("out: the array is read-only")
    y_strides = element_strides(y, "out" if out is not None else "y")
    if y_strides[2] != 1 and n > 1 and y.size:
        raise ValueError("out: the N stride must be 1 element")
    y_stride_b, y_stride_m = ((y_strides[1], y_strides[0]) if transpose_bm
                              else (y_strides[0], y_strides[1]))
    flags = np.zeros((batch, rows, n), np.uint8) if acc_overflow else None
    if batch and rows and n:
        w = np.ascontiguousarray(w_bits)
        try:
            _native().reference_prequant_bmm(
                x_bits, stride_b, stride_m, batch, rows, n, k, w, scales,
                per_batch, bias, y, y_stride_b, y_stride_m, group_size,
                fp8_format, in_type, out_type, flags)
        except ValueError as error:
            # The C++ validation names its own fields (e.g. overlapping rows).
            raise ValueError(f"reference_prequant_bmm: {error}") from None
    if not acc_overflow:
        return y
    mask = flags.astype(bool)
    return y, (mask.transpose(1, 0, 2) if transpose_bm else mask)


def quantize_weights(w, fp8_format, per_batch=False):
    """Quantizes float weights to fp8 as SPEC.md states.

    One scale for the whole tensor: amax = max(|w|) floored at 1e-10,
    q = fp8(clamp(w * (FMAX / amax))), descale = amax / FMAX. With
    `per_batch`, each index of the first axis gets its own scale.

    Args:
      w: float weights (float64 is first rounded to float32), e.g. (B, N, K).
      fp8_format: the fp8 format name.
      per_batch: one descale per batch element (first axis) instead of one.

    Returns:
      (uint8 bits shaped like w, float32 descales of shape (1,) or (B,)).
    """
    fp8_format = check_fp8_format(fp8_format)
    per_batch = check_bool(per_batch, "per_batch")
    array = as_float32(w, "w")
    if per_batch:
        if array.ndim < 1:
            raise ValueError("w: per_batch needs at least one dimension")
        batch = array.shape[0]
        if batch == 0:
            raise ValueError("w: per_batch needs a non-empty first axis")
    else:
        batch = 0
    return _native().quantize_weights(array, fp8_format, batch)


def reencode_e4m3fn_to_fnuz(bits):
    """Re-encodes OCP e4m3fn weights as e4m3fnuz (for gfx942).

    Every ordinary bit pattern is kept: its FNUZ value is half the OCP value,
    so the descale must be multiplied by the returned factor (2.0). NaN
    patterns become the FNUZ NaN 0x80 and -0 becomes +0.

    Returns:
      (uint8 bits of f8E4M3FNUZ shaped like `bits`, factor)
    """
    check_bits(bits, np.uint8, "bits")
    out, factor = _native().reencode_e4m3fn_to_fnuz(
        np.ascontiguousarray(bits))
    return out, float(factor)
