#!/usr/bin/env python3
"""What vLLM's fp8 BMM warm-up costs with mla_fp8 in AITER's place.

vLLM pre-compiles AITER's Triton kernel at model load by calling it for
M = 1..1024, twice per M (K-up, then V-up), on every MLA layer; its comment
says this adds roughly 50 s on DeepSeek-R1. Through mla_fp8's AITER shim
the same 2048 calls only look up a bundle kernel and launch it. This runs
that loop (python-bindings/tests/upstream_mla.py replays it) on the tests'
fake torch against the mocked HIP runtime of python-bindings/tests/test_hip.py,
so it measures the host side of each call (checks, lookup, argument packing,
the ctypes launch into the mock); a real GPU adds its own launch latency.

  PYTHONPATH=build/python-bindings python3 bench/warmup.py [--bundle DIR]
      [--chip gfx942|gfx950] [--repeat N]

Without --bundle (or $MLA_FP8_BUNDLE) it generates the DeepSeek-R1 TP8
bundle into a temporary directory first (needs the compiler module).
"""

import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time
import types

TESTS = pathlib.Path(__file__).resolve().parents[1] / "python-bindings" / \
    "tests"
sys.path.insert(0, str(TESTS))

import mla_fp8  # noqa: E402
from mla_fp8 import hip, serving  # noqa: E402
import upstream_mla as up  # noqa: E402
from test_hip import FakeDevice, FakeHip, make_torch  # noqa: E402


def mock_runtime(chip):
    """test_hip's fake torch on a device of `chip`, and the mocked
    libamdhip64 as the process's HIP runtime."""
    torch = make_torch()
    torch.cuda.get_device_properties = lambda device: types.SimpleNamespace(
        gcnArchName=chip + ":sramecc+:xnack-")
    sys.modules["torch"] = torch
    lib = FakeHip()
    hip.find_hip_library = lambda: "libamdhip64.so"
    hip.reset_runtime()
    hip.get_runtime(loader=lambda path: lib)
    return torch, lib


def timed_warm_up(layer):
    """One pass of vLLM's loop; the seconds of each call."""
    times = []
    call = layer.call

    def timed(*args, **kwargs):
        start = time.perf_counter()
        result = call(*args, **kwargs)
        times.append(time.perf_counter() - start)
        return result

    layer.call = timed
    try:
        layer.warm_up()
    finally:
        layer.call = call
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", default=os.environ.get("MLA_FP8_BUNDLE"))
    parser.add_argument("--chip", default="gfx942",
                        choices=["gfx942", "gfx950"])
    parser.add_argument("--repeat", type=int, default=3,
                        help="passes after the first (default 3)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    with tempfile.TemporaryDirectory() as scratch:
        bundle = args.bundle
        if not bundle:
            bundle = os.path.join(scratch, "bundle")
            mla_fp8.generate_bundle(bundle, model="deepseek-r1", tp=[8],
                                    chips=[args.chip])
        serving.set_bundle(bundle)
        torch, lib = mock_runtime(args.chip)
        dev = FakeDevice()
        fp8 = getattr(torch, up.FP8[args.chip][0])
        layer = up.VllmMla(
            torch, up.aiter_function(),
            torch.Tensor((up.HEADS, up.KV_LORA_RANK, up.QK_NOPE), fp8, dev),
            torch.Tensor((), torch.float32, dev),
            torch.Tensor((up.HEADS, up.V_HEAD, up.KV_LORA_RANK), fp8, dev),
            torch.Tensor((), torch.float32, dev))
        first = timed_warm_up(layer)
        later = [timed_warm_up(layer) for _ in range(args.repeat)]

    calls = len(first)
    assert len(lib.launches) == calls * (1 + args.repeat), "a call launched" \
        " nothing"
    print(f"vLLM warm-up, DeepSeek-R1 TP8 on {args.chip} (mocked HIP): "
          f"{calls} calls (M = 1..{up.WARMUP_M[-1]}, K-up and V-up)")
    print(f"  first pass:  {sum(first) * 1e3:8.1f} ms total, "
          f"{statistics.median(first) * 1e6:6.1f} us median per call "
          f"(loads the code object)")
    every = [t for times in later for t in times]
    totals = [sum(times) for times in later]
    print(f"  later passes: {statistics.median(totals) * 1e3:7.1f} ms total "
          f"(median of {args.repeat}), "
          f"{statistics.median(every) * 1e6:6.1f} us median per call, "
          f"{sorted(every)[int(0.99 * (len(every) - 1))] * 1e6:6.1f} us p99")


if __name__ == "__main__":
    main()
