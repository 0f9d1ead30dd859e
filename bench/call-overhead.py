#!/usr/bin/python3
"""Host time per call of the drop-in, with the mocked HIP runtime.

Usage: bench/call-overhead.py [--bundle DIR] [--calls N] [--runs R]
           [--m M] [--batch B] [--warmup W]

A DeepSeek-R1 decode step calls
batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant
twice per layer (K-up, then V-up into the attention output): 122 calls per
token, each paying the call's host work whenever graphs are not replayed.
This times that work per call, for the two calls of a TP8 layer (B = 16):

* torch: torch-like tensors (python-bindings/tests/hip_mock.py's fake
  torch) on a fake ROCm device, launched through the fake libamdhip64. The
  time is the whole call: argument checks, kernel choice, output
  allocation (a fake torch.empty), kernarg packing and the launch's HIP
  calls, whose fake stand-ins are Python functions (a real runtime's own
  time inside hipModuleLaunchKernel is not included).
* numpy: uint16/uint8 arrays, which run on the gfx9 emulator. The time is
  the host work up to the emulator's kernel run, which is replaced by a
  no-op: argument checks, bounds, kernel choice and output allocation.

Each call is timed on its own with time.perf_counter_ns, after 200
untimed calls; the script prints the median and p99 per run (the timer's
own cost, printed as "timer", is included in each figure) and the fake HIP
calls' own share of the torch figures. The first call of a signature runs
every check: the torch calls of a warm-up over M = 1..W (vLLM's is
1..1024), each the first of its signature, are timed too. The bundle is
generated into a temporary directory (about a second) unless --bundle
names one.

Needs the Python package on the path, as the tests do:
PYTHONPATH=build/python-bindings (else $MLAFP8_BUILD_DIR/python-bindings or
build/python-bindings is added).
"""

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python-bindings", "tests"))
try:
    import mla_fp8  # noqa: E402
except ImportError:
    sys.path.insert(0, os.path.join(
        os.environ.get("MLAFP8_BUILD_DIR", os.path.join(ROOT, "build")),
        "python-bindings"))
    import mla_fp8  # noqa: E402
import numpy as np  # noqa: E402

import hip_mock  # noqa: E402
from mla_fp8 import hip, serving  # noqa: E402

CALL = mla_fp8.\
    batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant


def percentile(sorted_values, fraction):
    index = min(len(sorted_values) - 1, int(fraction * len(sorted_values)))
    return sorted_values[index]


def time_calls(function, calls):
    """Per-call times in ns of `calls` calls of function()."""
    clock = time.perf_counter_ns
    times = [0] * calls
    for i in range(calls):
        start = clock()
        function()
        times[i] = clock() - start
    return times


def timer_cost(calls):
    return statistics.median(time_calls(lambda: None, calls))


def fake_hip_cost(lib, calls):
    """Median ns of the two fake HIP calls a launch makes (hipGetDevice and
    hipModuleLaunchKernel), which a real runtime answers in C."""
    current = ctypes.c_int()
    ref = ctypes.byref(current)
    size = ctypes.c_size_t(8)
    buffer = ctypes.create_string_buffer(8)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buffer), 2,
                                  ctypes.addressof(size), 3)
    get, launch = lib.hipGetDevice, lib.hipModuleLaunchKernel
    count = lib.launch_count

    def both():
        get(ref)
        launch(0, 1, 1, 1, 256, 1, 1, 0, 0xAA00, None, extra)

    times = sorted(time_calls(both, calls))
    lib.launch_count = count
    return statistics.median(times)


def torch_cases(torch, m, batch):
    """The K-up and V-up calls of one layer, as vLLM and SGLang make them."""
    dev = hip_mock.FakeDevice("cuda", 0)
    bf16 = torch.bfloat16
    # K-up: q_nope, a (M, H, 128) slice of q (M, H, 192), gives (M, H, 512).
    q = torch.Tensor((m, batch, 192), bf16, dev)
    q_nope = torch.Tensor((m, batch, 128), bf16, dev, q.stride(),
                          q.data_ptr())
    w_kc = torch.Tensor((batch, 512, 128), torch.float8_e4m3fnuz, dev)
    scale = torch.Tensor((1,), torch.float32, dev)
    # V-up: the attention output (H, M, 512) into out (M, H * 128).
    attn = torch.Tensor((batch, m, 512), bf16, dev)
    w_vc = torch.Tensor((batch, 128, 512), torch.float8_e4m3fnuz, dev)
    out = torch.Tensor((m, batch, 128), bf16, dev)
    return [
        ("K-up, new Y",
         lambda: CALL(q_nope, w_kc, scale, group_size=128,
                      transpose_bm_in=True, transpose_bm=True)),
        ("V-up, YQ=out",
         lambda: CALL(attn, w_vc, scale, group_size=128, YQ=out,
                      transpose_bm=True)),
    ]


def first_calls(torch, warmup, batch):
    """ns of each call of a warm-up over M = 1..warmup, K-up then V-up:
    every one is the first of its signature and runs all the checks."""
    clock = time.perf_counter_ns
    times = []
    for m in range(1, warmup + 1):
        for _, function in torch_cases(torch, m, batch):
            start = clock()
            function()
            times.append(clock() - start)
    return times


def numpy_cases(m, batch):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 1 << 15, (m, batch, 128), dtype=np.uint16)
    w_kc = rng.integers(0, 1 << 7, (batch, 512, 128), dtype=np.uint8)
    attn = rng.integers(0, 1 << 15, (batch, m, 512), dtype=np.uint16)
    w_vc = rng.integers(0, 1 << 7, (batch, 128, 512), dtype=np.uint8)
    out = np.zeros((m, batch, 128), np.uint16)
    scale = np.ones(1, np.float32)
    return [
        ("K-up, new Y",
         lambda: CALL(x, w_kc, scale, group_size=128, transpose_bm_in=True,
                      transpose_bm=True)),
        ("V-up, YQ=out",
         lambda: CALL(attn, w_vc, scale, group_size=128, YQ=out,
                      transpose_bm=True)),
    ]


class _NoEmulation:
    """A native bundle whose kernel runs do nothing: everything else is the
    real one's."""

    def __init__(self, native):
        self._native = native

    def __getattr__(self, name):
        value = getattr(self._native, name)
        setattr(self, name, value)
        return value

    def run_emulated(self, *args):
        del args


def report(name, runs):
    for label, results in runs.items():
        medians = [r[0] for r in results]
        p99s = [r[1] for r in results]
        print(f"{name:6} {label:14} median "
              + " ".join(f"{v / 1000:5.2f}" for v in medians)
              + " us;  p99 " + " ".join(f"{v / 1000:5.2f}" for v in p99s)
              + " us")


def measure(cases, calls, runs):
    out = {}
    for label, function in cases:
        for _ in range(200):
            function()
        results = []
        for _ in range(runs):
            times = sorted(time_calls(function, calls))
            results.append((statistics.median(times),
                            percentile(times, 0.99)))
        out[label] = results
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundle", help="bundle directory (default: "
                        "generate DeepSeek-R1 TP8 for gfx942 into a "
                        "temporary one)")
    parser.add_argument("--calls", type=int, default=20000,
                        help="timed calls per run (default 20000)")
    parser.add_argument("--runs", type=int, default=5,
                        help="runs per case (default 5)")
    parser.add_argument("--m", type=int, default=8,
                        help="tokens per call (default 8)")
    parser.add_argument("--warmup", type=int, default=1024,
                        help="the largest M of the first-call pass "
                        "(default 1024)")
    parser.add_argument("--batch", type=int, default=16,
                        help="heads per rank, B (default 16: TP8)")
    args = parser.parse_args()
    if min(args.calls, args.runs, args.m, args.batch, args.warmup) < 1:
        parser.error("--calls, --runs, --m, --batch and --warmup must be at "
                     "least 1")
    os.environ.pop("MLA_FP8_LOG", None)

    with tempfile.TemporaryDirectory() as scratch:
        bundle = args.bundle
        if bundle is None:
            bundle = os.path.join(scratch, "bundle")
            mla_fp8.generate_bundle(bundle, model="deepseek-r1", tp=[8],
                                    chips=["gfx942"], max_m=64)
        loaded = serving.set_bundle(bundle)

        torch = hip_mock.make_torch()
        sys.modules["torch"] = torch
        lib = hip_mock.FakeHip(record=False)
        hip.reset_runtime(hip.HipRuntime(lib, "fake libamdhip64"))
        # torch.empty gives one tensor per shape: what is timed is the
        # call's work, not a fake allocator's, and the run holds no more
        # memory at the end than at the start.
        empties = {}
        torch.empty = lambda shape, dtype, device: empties.get(
            (shape, dtype)) or empties.setdefault(
                (shape, dtype), torch.Tensor(shape, dtype, device))
        print(f"M={args.m} B={args.batch}, {args.calls} calls per run, "
              f"{args.runs} runs; timer {timer_cost(args.calls):.0f} ns")
        print("path   call           figures per run")
        report("torch", measure(torch_cases(torch, args.m, args.batch),
                                args.calls, args.runs))
        print(f"       (of which the fake HIP calls: "
              f"{fake_hip_cost(lib, args.calls) / 1000:.2f} us per launch)")
        first = first_calls(torch, args.warmup, args.batch)
        print(f"torch  first calls    median "
              f"{statistics.median(first) / 1000:5.2f} us, total "
              f"{sum(first) / 1e6:.1f} ms: K-up and V-up at M = "
              f"1..{args.warmup} (vLLM's warm-up), each a new signature")
        launches = lib.launch_count
        del sys.modules["torch"]
        hip.reset_runtime()

        loaded._native_bundle = _NoEmulation(loaded._native)
        report("numpy", measure(numpy_cases(args.m, args.batch), args.calls,
                                args.runs))
        print(f"({launches} fake launches)")
        serving.set_bundle(None)


if __name__ == "__main__":
    main()
