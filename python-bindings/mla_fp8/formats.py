"""Bit conversions between float arrays and bf16, f16 and fp8 bits.

Encoding rounds to nearest even. Decoding is exact. See the package docstring
for the convention (uint16 for bf16/f16, uint8 for fp8).
"""

import numpy as np

from ._native import native_module
from ._checks import FP8_FORMATS, as_floats, check_bits, check_bool
from ._checks import check_fp8_format

__all__ = ["FP8_FORMATS", "fp8_max", "to_bf16_bits", "from_bf16_bits",
           "to_f16_bits", "from_f16_bits", "quantize_fp8", "dequantize_fp8"]


def _native():
    return native_module("the bf16, f16 and fp8 conversions")


def fp8_max(fp8_format):
    """Largest finite value of `fp8_format` (240.0 for f8E4M3FNUZ, ...)."""
    return float(_native().fp8_max(check_fp8_format(fp8_format)))


def _to_half_bits(values, name, from_float, from_double):
    array = as_floats(values, name)
    if array.dtype == np.float64:
        # Rounded once from float64, not through float32.
        return from_double(np.ascontiguousarray(array))
    return from_float(np.ascontiguousarray(array, dtype=np.float32))


def to_bf16_bits(values):
    """float array -> uint16 bf16 bits (RNE; overflow to +-Inf; NaN stays).

    float64 input is rounded once, directly to bf16.
    """
    return _to_half_bits(values, "values", _native().float_to_bf16,
                         _native().double_to_bf16)


def from_bf16_bits(bits):
    """uint16 bf16 bits -> float32 (exact)."""
    check_bits(bits, np.uint16, "bits")
    return _native().bf16_to_float(np.ascontiguousarray(bits))


def to_f16_bits(values):
    """float array -> uint16 IEEE binary16 bits (RNE, subnormals kept)."""
    return _to_half_bits(values, "values", _native().float_to_f16,
                         _native().double_to_f16)


def from_f16_bits(bits):
    """uint16 IEEE binary16 bits -> float32 (exact)."""
    check_bits(bits, np.uint16, "bits")
    return _native().f16_to_float(np.ascontiguousarray(bits))


def quantize_fp8(values, fp8_format, *, saturate=True):
    """float array -> uint8 bits of `fp8_format` (RNE).

    Values beyond the format's range clamp to +-max when `saturate` (what the
    kernels' clamp before the conversion gives), else become NaN like
    v_cvt_pk_fp8_f32 without saturation. float64 input is first rounded to
    float32.
    """
    fp8_format = check_fp8_format(fp8_format)
    saturate = check_bool(saturate, "saturate")
    array = np.ascontiguousarray(as_floats(values, "values"),
                                 dtype=np.float32)
    return _native().encode_fp8(array, fp8_format, saturate)


def dequantize_fp8(bits, fp8_format):
    """uint8 bits of `fp8_format` -> float32 (exact; NaN for NaN patterns)."""
    fp8_format = check_fp8_format(fp8_format)
    check_bits(bits, np.uint8, "bits")
    return _native().decode_fp8(np.ascontiguousarray(bits), fp8_format)
