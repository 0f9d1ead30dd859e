#!/usr/bin/python3
"""Per-kernel quality report of an mla-fp8-aot bundle, from its manifest.

Usage: bench/kernel-report.py <bundle-dir> [batch]

Prints, per kernel: registers, LDS, static instruction and MFMA counts, the
split-K workspace, and the workgroups launched at M = 1 (and at the range's
lower edge) for the given batch (default 16: DeepSeek-R1 at TP 8).
"""
import json
import math
import sys


def workgroups(kernel, m, batch):
    """Workgroups of the launch grid for m tokens and batch heads."""
    total = 1
    for dim in ("x", "y", "z"):
        value = kernel["grid"][dim]
        if isinstance(value, int):
            total *= value
        elif value == "B":
            total *= batch
        elif value == "M":
            total *= m
        else:  # "ceil(M/<n>)"
            total *= math.ceil(m / int(value[len("ceil(M/"):-1]))
    return total


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    with open(f"{sys.argv[1]}/manifest.json") as f:
        manifest = json.load(f)
    header = (f"{'kernel':48} {'rows B*M':>11} {'VGPR':>5} {'AGPR':>5} "
              f"{'SGPR':>5} {'LDS':>6} {'instr':>6} {'MFMA':>5} {'split':>5} "
              f"{'WGs@M=1':>8} {'WGs@min':>8} {'spill':>5} {'scratch':>7}")
    print(f"batch B = {batch}")
    print(header)
    for chip in manifest["chips"]:
        for k in chip["kernels"]:
            rows = f"{k['min_rows']}-{k['max_rows'] or 'inf'}"
            # The first M of the range at this batch.
            first_m = -(-k["min_rows"] // batch)
            first = workgroups(k, 1, batch) if first_m == 1 else 0
            print(f"{k['symbol']:48} {rows:>11} {k['vgprs']:>5} "
                  f"{k['agprs']:>5} {k['sgprs']:>5} {k['lds_bytes']:>6} "
                  f"{k['instructions']:>6} {k['mfma_instructions']:>5} "
                  f"{k['tile']['split_k']:>5} {first or '-':>8} "
                  f"{workgroups(k, first_m, batch):>8} "
                  f"{k['vgpr_spills'] + k['sgpr_spills']:>5} "
                  f"{k['scratch_bytes']:>7}")


if __name__ == "__main__":
    main()
