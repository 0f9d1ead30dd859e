"""Weights in the format a chip's kernels take (SPEC.md, weight
quantization): e4m3fnuz on gfx942, OCP e4m3fn on gfx950."""

import numpy as np

from ._abi import CHIPS
from ._checks import as_float32, check_bits, check_bool, check_str
from .reference import quantize_weights, reencode_e4m3fn_to_fnuz

__all__ = ["CHIP_FP8_FORMATS", "supported_chips", "fp8_format_for_chip",
           "quantize_weights_for_chip", "convert_ocp_weights_for_chip"]

#: The fp8 weight format of each supported chip's kernels, from the chip
#: table (lib/Hardware).
CHIP_FP8_FORMATS = {c["name"]: c["fp8_e4m3_type"] for c in CHIPS}


def supported_chips():
    """The chip table (lib/Hardware): one dict per supported chip with its
    name, marketing_names, architecture, fp8_e4m3_type, fp8_e5m2_type,
    wave_size, lds_bytes_per_workgroup, num_cus and mfmas (mnemonics)."""
    return [dict(c, mfmas=list(c["mfmas"])) for c in CHIPS]


def fp8_format_for_chip(chip):
    """The fp8 format name of `chip`'s kernels."""
    check_str(chip, "chip")
    if chip not in CHIP_FP8_FORMATS:
        raise ValueError(f"chip: expected one of "
                         f"{', '.join(CHIP_FP8_FORMATS)}, got '{chip}'")
    return CHIP_FP8_FORMATS[chip]


def quantize_weights_for_chip(w, chip, per_batch=False):
    """Quantizes float (B, N, K) weights for `chip`'s kernels.

    Args:
      w: float weights, e.g. (B, N, K) float32.
      chip: "gfx942" (e4m3fnuz) or "gfx950" (e4m3fn).
      per_batch: one descale per batch element instead of one per tensor.

    Returns:
      (uint8 bits shaped like w, float32 descales of shape (1,) or (B,)):
      the WQ and w_scale arguments of the drop-in call.
    """
    return quantize_weights(w, fp8_format_for_chip(chip),
                            per_batch=check_bool(per_batch, "per_batch"))


def convert_ocp_weights_for_chip(bits, w_scale, chip):
    """Makes checkpoint weights (OCP e4m3fn bits and their descale) fit
    `chip`: re-encoded as e4m3fnuz with the descale doubled for gfx942,
    unchanged for gfx950.

    Returns:
      (uint8 bits, float32 descale array)
    """
    check_bits(bits, np.uint8, "bits")
    scales = as_float32(w_scale, "w_scale").reshape(-1)
    if fp8_format_for_chip(chip) == "f8E4M3FN":
        return np.ascontiguousarray(bits), scales.copy()
    out, factor = reencode_e4m3fn_to_fnuz(bits)
    return out, (scales * np.float32(factor)).astype(np.float32)
