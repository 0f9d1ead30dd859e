"""Fails unless an `mla-fp8-emu --timing --json` result lies in its band.

Usage: timing-bound.py RESULT.json BOUND_US [--min MIN_US]
                       [--hbm-bytes B,M,N,K]

The timing model is deterministic, so a modelled kernel time is a stable
figure to hold the kernels to: a change that makes one slower than BOUND_US
fails here, and a change that makes one faster may lower the bound. With
--min, a time below MIN_US fails too: a model that forgot some cost (Y's
writes, a memory round trip) would model the kernel faster, and pass a
one-sided bound. --hbm-bytes pins the HBM traffic of a launch that streams
its operands once to the bytes of X (B*M*K bf16), W (B*N*K fp8) and Y
(B*M*N bf16), plus at most 64 bytes (the weight scale).
"""

import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("result")
    parser.add_argument("bound", type=float)
    parser.add_argument("--min", type=float, dest="minimum")
    parser.add_argument("--hbm-bytes", dest="hbm")
    args = parser.parse_args()
    with open(args.result) as f:
        result = json.load(f)
    us = result["kernel_us"]
    if us > args.bound:
        sys.exit(f"{result['kernel']}: modelled {us:.3f} us exceeds the "
                 f"bound of {args.bound:.3f} us (limited by "
                 f"{result['limiter']})")
    if args.minimum is not None and us < args.minimum:
        sys.exit(f"{result['kernel']}: modelled {us:.3f} us is below the "
                 f"band's floor of {args.minimum:.3f} us (limited by "
                 f"{result['limiter']}): the model counts less than it did")
    if args.hbm:
        b, m, n, k = (int(v) for v in args.hbm.split(","))
        operands = b * m * k * 2 + b * n * k + b * m * n * 2
        got = result["hbm_bytes"]
        if not operands <= got <= operands + 64:
            sys.exit(f"{result['kernel']}: hbm_bytes {got}, but X, W and Y "
                     f"are {operands} bytes")
    print(f"within bound: {result['kernel']} {us:.3f} us <= "
          f"{args.bound:.3f} us")


if __name__ == "__main__":
    main()
