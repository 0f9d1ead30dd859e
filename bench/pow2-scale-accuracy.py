#!/usr/bin/python3
"""Accuracy of a power-of-two (E8M0) activation scale against SPEC's.

gfx950's hardware-scaled converts and MFMAs take E8M0 scales, which cannot
carry SPEC.md's s = amax * (1 / FMAX). This measures what the nearest usable
variant, s2 = 2^ceil(log2(amax / FMAX)) (so that |x| / s2 <= FMAX), costs in
accuracy: both are run in fp64 on the same bf16 X and fp8 W (per group of
128, RNE to fp8 with saturation), and compared with the unquantized product
X W^T. Errors are relative to each output row's largest |Y|.

Usage: PYTHONPATH=build/python-bindings bench/pow2-scale-accuracy.py [--seed S]
"""

import argparse

import numpy as np

from mla_fp8 import formats


def run(x, wq, fmt, group, power_of_two):
    fmax = formats.fp8_max(fmt)
    y = np.zeros((x.shape[0], x.shape[1], wq.shape[1]))
    for g in range(0, x.shape[2], group):
        xg = x[:, :, g:g + group]
        amax = np.maximum(np.abs(xg).max(axis=2, keepdims=True), 1e-10)
        if power_of_two:
            s = np.exp2(np.ceil(np.log2(amax / fmax))).astype(np.float32)
        else:
            s = (amax * np.float32(1.0 / fmax)).astype(np.float32)
        q = formats.dequantize_fp8(
            formats.quantize_fp8(np.clip(xg / s, -fmax, fmax), fmt), fmt)
        y += np.einsum("bmk,bnk->bmn", q.astype(np.float64),
                       wq[:, :, g:g + group].astype(np.float64)) * s
    return y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    batch, m, n, k, group = 16, 64, 512, 128, 128
    print("activation scale: SPEC amax/FMAX against 2^ceil(log2(amax/FMAX));"
          " error of Y relative to its row's max |Y| (rms / max)")
    for fmt in ("f8E4M3FNUZ", "f8E4M3FN"):
        fmax = formats.fp8_max(fmt)
        for dist in ("normal", "heavy-tailed, rows 2^-8..2^8"):
            if dist == "normal":
                x = rng.standard_normal((batch, m, k))
            else:
                x = (rng.standard_t(3, (batch, m, k)) *
                     2.0 ** rng.uniform(-8, 8, (batch, m, 1)))
            x = formats.from_bf16_bits(formats.to_bf16_bits(
                x.astype(np.float32)))
            w = rng.standard_normal((batch, n, k)).astype(np.float32)
            wq = formats.dequantize_fp8(
                formats.quantize_fp8(w / (np.abs(w).max() / fmax), fmt), fmt)
            exact = np.einsum("bmk,bnk->bmn", x.astype(np.float64),
                              wq.astype(np.float64))
            row = np.abs(exact).max(axis=2, keepdims=True)
            errors = []
            for power_of_two in (False, True):
                rel = np.abs(run(x, wq, fmt, group, power_of_two) - exact) / row
                errors.append((np.sqrt((rel ** 2).mean()), rel.max()))
            (spec_rms, spec_max), (pow2_rms, pow2_max) = errors
            print(f"{fmt:11s} {dist:30s} SPEC {spec_rms:.2e} / {spec_max:.2e}"
                  f"  power of two {pow2_rms:.2e} / {pow2_max:.2e}"
                  f"  (rms x{pow2_rms / spec_rms:.2f})")


if __name__ == "__main__":
    main()
