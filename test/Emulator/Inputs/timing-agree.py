"""Checks that two `mla-fp8-emu --timing --json` outputs of one launch agree.

Usage: timing-agree.py REPRESENTATIVE.json FULL.json TOLERANCE

The representative run simulates one workgroup per class; the full run
simulates every workgroup. Their kernel times (nominal and each latency
scale) and HBM bytes must agree within TOLERANCE (relative).
"""

import json
import sys


def main():
    rep_path, full_path, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(rep_path) as f:
        rep = json.load(f)
    with open(full_path) as f:
        full = json.load(f)
    if rep["mode"] != "representative" or full["mode"] != "full":
        sys.exit(f"modes are {rep['mode']} and {full['mode']}")
    if rep["simulated_workgroups"] >= full["simulated_workgroups"]:
        sys.exit("the representative run simulated no fewer workgroups")
    pairs = [("kernel_us", rep["kernel_us"], full["kernel_us"]),
             ("hbm_bytes", rep["hbm_bytes"], full["hbm_bytes"])]
    for r, f in zip(rep["sensitivity"], full["sensitivity"]):
        pairs.append((f"kernel_us x{r['latency_scale']}", r["kernel_us"],
                      f["kernel_us"]))
    for name, a, b in pairs:
        if abs(a - b) > tolerance * max(abs(a), abs(b)):
            sys.exit(f"{name}: representative {a} vs full {b}")
    print(f"agree: {rep['kernel_us']:.4f} us vs {full['kernel_us']:.4f} us, "
          f"{rep['simulated_workgroups']} of {full['simulated_workgroups']} "
          "workgroups")


if __name__ == "__main__":
    main()
