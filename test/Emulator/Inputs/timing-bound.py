"""Fails unless an `mla-fp8-emu --timing --json` result meets its bound.

Usage: timing-bound.py RESULT.json BOUND_US

The timing model is deterministic, so a modelled kernel time is a stable
figure to hold the kernels to: a change that makes one slower than its bound
fails here, and a change that makes one faster may lower the bound.
"""

import json
import sys


def main():
    path, bound = sys.argv[1], float(sys.argv[2])
    with open(path) as f:
        result = json.load(f)
    us = result["kernel_us"]
    if us > bound:
        sys.exit(f"{result['kernel']}: modelled {us:.3f} us exceeds the "
                 f"bound of {bound:.3f} us (limited by {result['limiter']})")
    print(f"within bound: {result['kernel']} {us:.3f} us <= {bound:.3f} us")


if __name__ == "__main__":
    main()
