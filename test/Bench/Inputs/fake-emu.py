"""A stand-in for mla-fp8-emu --timing --json, for kernel-time tests of which
foreign kernel runs where.

Usage: fake-emu.py EMULATOR-ARGUMENTS...

Ours (BUNDLE --chip C ...) takes 1 us. A --foreign record takes its test-only
"fake_us". A record with "even_mn": true run where its config's BLOCK_SIZE_M
does not divide M or its BLOCK_SIZE_N does not divide N fails its Y check,
as the real kernel's unmasked stores would.
"""
import json
import sys


def option(args, flag):
    return args[args.index(flag) + 1]


def report(us, kernel):
    terms = {"latency_scale": 1, "kernel_us": us, "limiter": "latency",
             "lower_bound_us": us / 2, "floor_us": us / 2}
    return {"model_version": 3, "device": "MI300X", "kernel": kernel,
            "launch_overhead_us": 4,
            **terms, "sensitivity": [
                {**terms, "latency_scale": scale, "kernel_us": us * scale,
                 "floor_us": us * scale / 2}
                for scale in (0.5, 2)]}


def main():
    args = sys.argv[1:]
    m, n = int(option(args, "-M")), int(option(args, "-N"))
    record = {"file": "ours", "fake_us": 1.0}
    if "--foreign" in args:
        with open(option(args, "--foreign")) as f:
            record = next(r for r in json.load(f)["kernels"]
                          if r["file"] == option(args, "--file"))
    if record.get("even_mn"):
        tile_m, tile_n = (record["config"][key] for key in
                          ("BLOCK_SIZE_M", "BLOCK_SIZE_N"))
        if m % tile_m or n % tile_n:
            print(f"FAIL: {record['file']} at M={m} N={n}: its even_mn tile "
                  f"{tile_m}x{tile_n} does not divide M and N")
            return 1
    print(json.dumps(report(record["fake_us"], record["file"])))
    return 0

if __name__ == "__main__":
    sys.exit(main())
