#!/usr/bin/env python3
"""Peak host memory of one emulation against the bound the emulator enforces.

Runs `mla-fp8-emu BUNDLE` (a bundle run: X, W and Y drawn, the kernel
emulated, Y compared with the exact reference, or with --timing only the
timing model's workgroups and no reference) at shapes where X, W or Y
dominates, and prints for each the peak resident memory of the process less
that of a B = 1, M = 1 run (the process itself), next to the bound
(include/mla-fp8/Runtime/Limits.h, getEmulatorHostBytes) and the measured
bytes per element of the dominant tensor.

    bench/emulator-memory.py [--build DIR] [--quick] [--json FILE]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (what dominates, B, M, N, K, --timing)
CASES = [
    ("W (timing run)", 2048, 5, 512, 128, True),
    ("W", 512, 1, 512, 128, False),
    ("Y", 16, 256, 512, 128, False),
    ("X", 16, 256, 128, 512, False),
]
QUICK = [CASES[0], CASES[2]]


def bound(b, m, n, k):
    """getEmulatorHostBytes, with the coefficients the native module
    reports (the same header)."""
    sys.path.insert(0, os.path.join(ARGS.build, "python-bindings"))
    from mla_fp8 import _limits  # pylint: disable=import-outside-toplevel
    return _limits.emulator_host_bytes(b, m, n, k)


def peak_rss(argv):
    """The peak resident bytes of `argv`, run in a child of its own (so
    that RUSAGE_CHILDREN is that run's alone), and its output."""
    probe = ("import resource, subprocess, sys\n"
             "done = subprocess.run(sys.argv[1:], capture_output=True, "
             "text=True)\n"
             "print(done.returncode, resource.getrusage("
             "resource.RUSAGE_CHILDREN).ru_maxrss)\n"
             "sys.stdout.write(done.stdout + done.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe, *argv],
                         capture_output=True, text=True, check=True).stdout
    first, _, rest = out.partition("\n")
    code, kib = first.split()
    return int(code), int(kib) * 1024, rest


def main():
    tool = os.path.join(ARGS.build, "bin", "mla-fp8-emu")
    aot = os.path.join(ARGS.build, "bin", "mla-fp8-aot")
    for path in (tool, aot):
        if not os.access(path, os.X_OK):
            sys.exit(f"emulator-memory: {path} is not built")
    with tempfile.TemporaryDirectory() as work:
        bundle = os.path.join(work, "bundle")
        subprocess.run([aot, "-o", bundle, "--chips=gfx942", "--tp=8",
                        "--max-m=16", "--in-type=bf16", "--quiet",
                        "--no-cache"], check=True)
        base_argv = [tool, bundle, "--chip=gfx942", "-N", "512", "-K", "128",
                     "-B", "1", "-M", "1"]
        _, base, _ = peak_rss(base_argv)
        rows = []
        for what, b, m, n, k, timing in (QUICK if ARGS.quick else CASES):
            argv = [tool, bundle, "--chip=gfx942", "-N", str(n), "-K", str(k),
                    "-B", str(b), "-M", str(m)] + (["--timing"] if timing
                                                    else [])
            code, peak, output = peak_rss(argv)
            if code != 0:
                sys.exit(f"emulator-memory: {' '.join(argv)} failed:\n"
                         f"{output}")
            elements = {"W": b * n * k, "X": b * m * k, "Y": b * m * n}[what[0]]
            rows.append({"dominant": what, "B": b, "M": m, "N": n, "K": k,
                         "measured_bytes": peak - base,
                         "bound_bytes": bound(b, m, n, k),
                         "bytes_per_dominant_element":
                             (peak - base) / elements})
    print(f"process itself (B=1, M=1): {base / 2**20:.1f} MiB resident")
    print(f"{'dominant':16} {'B':>5} {'M':>4} {'N':>4} {'K':>4} "
          f"{'measured MiB':>13} {'bound MiB':>10} {'bytes/elem':>10}")
    for r in rows:
        print(f"{r['dominant']:16} {r['B']:5} {r['M']:4} {r['N']:4} "
              f"{r['K']:4} {r['measured_bytes'] / 2**20:13.1f} "
              f"{r['bound_bytes'] / 2**20:10.1f} "
              f"{r['bytes_per_dominant_element']:10.2f}")
    within = all(r["measured_bytes"] <= r["bound_bytes"] for r in rows)
    print("every run within its bound" if within else
          "A RUN EXCEEDED ITS BOUND")
    if ARGS.json:
        with open(ARGS.json, "w", encoding="utf-8") as f:
            json.dump({"process_bytes": base, "cases": rows}, f, indent=1)
    return 0 if within else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--quick", action="store_true",
                        help="two cases instead of four")
    parser.add_argument("--json", help="write the figures here")
    ARGS = parser.parse_args()
    sys.exit(main())
