"""Argument checks shared by the package: each error names the argument."""

import numbers

import numpy as np

FP8_FORMATS = ("f8E4M3FNUZ", "f8E4M3FN", "f8E5M2FNUZ", "f8E5M2")
HALF_TYPES = ("bf16", "f16")
W_SCALE_MODES = ("per_tensor", "per_batch")


def check_choice(value, choices, name):
    """Returns `value` if it is one of the strings `choices`."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, one of "
                        f"{', '.join(choices)}; got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(choices)}; "
                         f"got '{value}'")
    return value


def check_fp8_format(value, name="fp8_format"):
    """Returns the fp8 format name `value` after checking it."""
    return check_choice(value, FP8_FORMATS, name)


#: The largest int the native module takes (C++ int64_t).
INT64_MAX = (1 << 63) - 1


def check_int(value, name, minimum=None, maximum=INT64_MAX):
    """Returns `value` as an int; bools and floats are refused.

    The default `maximum` is int64's, so that no value reaches the native
    module that it cannot take.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got "
                        f"{type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: expected at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: expected at most {maximum}, got {value}")
    return value


def check_str(value, name):
    """Returns `value` if it is a str."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, got "
                        f"{type(value).__name__}")
    return value


def check_bool(value, name):
    """Returns `value` if it is a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool, got "
                        f"{type(value).__name__}")
    return bool(value)


def check_group_size(value, name="group_size"):
    """Returns `value` if it is a positive power of two."""
    value = check_int(value, name, minimum=1)
    if value & (value - 1):
        raise ValueError(f"{name}: expected a power of two, got {value}")
    return value


def check_native_byte_order(array, name):
    """Refuses an array whose elements are stored in the other byte order:
    the kernels, the emulator and the reference read an element's bytes as
    this machine's (little-endian) bits, so a '>f2' or '>u2' array would be
    read as other numbers without any error."""
    if array.dtype.byteorder not in ("=", "|") and \
            array.dtype.byteorder != _NATIVE:
        raise TypeError(f"{name}: dtype {array.dtype.str} is big-endian; the "
                        f"kernels read little-endian bits: pass "
                        f"{name}.astype({name}.dtype.newbyteorder('='))")
    return array


_NATIVE = "<" if np.little_endian else ">"


def check_bits(array, dtype, name, ndim=None):
    """Returns `array` if it is a numpy array of raw bits of `dtype`, in
    native byte order."""
    dtype = np.dtype(dtype)
    kind = "bf16/f16" if dtype == np.uint16 else "fp8"
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array of {dtype.name} "
                        f"(raw {kind} bits), got {type(array).__name__}")
    check_native_byte_order(array, name)
    if array.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype.name} (raw {kind} "
                        f"bits), got {array.dtype.name}; convert floats with "
                        f"to_bf16_bits/to_f16_bits/quantize_fp8 first")
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape "
                         f"{array.shape}")
    return array


def as_floats(values, name):
    """Returns `values` as a float32 or float64 array (ints become float64).

    float16 and float32 stay float32 (exactly); float64 stays float64 so that
    conversions can round once from it.
    """
    array = np.asarray(values)
    if array.dtype.kind in "iub":
        return array.astype(np.float64)
    if array.dtype.kind != "f":
        raise TypeError(f"{name}: expected real numbers, got dtype "
                        f"{array.dtype.name}")
    if array.dtype == np.float64:
        return array
    if array.dtype.itemsize > 8:
        return array.astype(np.float64)
    return array.astype(np.float32, copy=False)


def as_float32(values, name):
    """Returns `values` as a C-contiguous float32 array (rounded RNE)."""
    array = as_floats(values, name)
    return np.ascontiguousarray(array, dtype=np.float32)


def element_strides(array, name):
    """The strides of `array` in elements; refuses negative or ragged ones."""
    strides = []
    for axis, stride in enumerate(array.strides):
        if stride < 0:
            raise ValueError(f"{name}: negative stride along axis {axis} is "
                             f"not supported; pass a copy")
        if stride % array.itemsize:
            raise ValueError(f"{name}: stride along axis {axis} is not a "
                             f"multiple of the element size")
        strides.append(stride // array.itemsize)
    return strides


def check_w_scale_given(w_scale):
    """Refuses a missing weight descale (numpy would turn None into NaN)."""
    if w_scale is None:
        raise TypeError("w_scale: required (the float32 weight descale, 1 "
                        "value or B values); got None")
