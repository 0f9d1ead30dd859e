"""MLA_FP8_LOG=1: which kernel served which call shape, once per (kernel,
device), on the HIP path (hip_mock's fakes) and on the emulator."""

import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import _log, hip, serving
from hip_mock import FakeDevice, FakeHip, make_torch
from test_launch_cache import k_up, v_up

call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501


@pytest.fixture
def fresh_log(monkeypatch):
    """Nothing logged yet in this process; the logger as it was after."""
    monkeypatch.setattr(_log, "_logged", set())
    monkeypatch.setattr(_log, "_configured", False)
    logger = logging.getLogger(_log.LOGGER)
    level = logger.level
    yield
    logger.setLevel(level)


def lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "mla_fp8"]


def numpy_k_up(m=1, batch=1):
    x = np.zeros((batch, m, 128), np.uint16)
    w = np.zeros((batch, 512, 128), np.uint8)
    return x, w, np.ones(1, np.float32)


def test_once_per_kernel_and_device(monkeypatch, session_bundle, caplog,
                                    fresh_log):
    torch = make_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    lib = FakeHip()
    hip.reset_runtime(hip.HipRuntime(lib, "fake"))
    serving.set_bundle(session_bundle)
    caplog.set_level(logging.INFO)
    try:
        monkeypatch.delenv("MLA_FP8_LOG", raising=False)
        call(*k_up(torch, m=3), transpose_bm_in=True, transpose_bm=True)
        assert not lines(caplog)

        monkeypatch.setenv("MLA_FP8_LOG", "1")
        hip.reset_runtime(hip.HipRuntime(lib, "fake"))  # shapes unseen
        bundle = mla_fp8.load_bundle(session_bundle)
        kernel = bundle.find_kernel("gfx942", 512, 128, 8, 16)
        call(*k_up(torch, m=8), transpose_bm_in=True, transpose_bm=True)
        (line,) = lines(caplog)
        # K-up at 128 rows: the table's first range (1-512); the second
        # (513-2048) is the last one planned for 64 * 16 rows, made
        # unbounded.
        assert (kernel.min_rows, kernel.max_rows) == (1, 512)
        assert line.startswith(f"cuda:0 runs {kernel.symbol} (gfx942, B*M "
                               f"1..512, from ")
        assert line.endswith("for B=16 M=8 N=512 K=128 (transpose_bm_in, "
                             "transpose_bm)")
        # The same kernel for another M or B, the same call again: nothing
        # new.
        assert kernel.serves(3, 16) and kernel.serves(64, 2)
        call(*k_up(torch, m=8), transpose_bm_in=True, transpose_bm=True)
        call(*k_up(torch, m=3), transpose_bm_in=True, transpose_bm=True)
        call(*k_up(torch, m=64, batch=2), transpose_bm_in=True,
             transpose_bm=True)
        assert len(lines(caplog)) == 1
        # Other kernels: V-up's at B * M = 128 (its one range, 1 up: the
        # same kernel again at 256 and 272 rows) and K-up's one range up, at
        # 528 rows (512 rows are still the first K-up kernel's); then the
        # first one on another device.
        low = bundle.find_kernel("gfx942", 128, 512, 8, 16)
        high = bundle.find_kernel("gfx942", 512, 128, 33, 16)
        assert (low.min_rows, low.max_rows, high.min_rows, high.max_rows) \
            == (1, 0, 513, 0)
        assert bundle.find_kernel("gfx942", 512, 128, 32, 16) is kernel
        for m in (8, 16, 17):
            x, w, s, out = v_up(torch, m=m)
            call(x, w, s, YQ=out, transpose_bm=True)
        for m in (32, 33):
            call(*k_up(torch, m=m), transpose_bm_in=True, transpose_bm=True)
        call(*k_up(torch, m=8, dev=FakeDevice("cuda", 1)),
             transpose_bm_in=True, transpose_bm=True)
        new = lines(caplog)[1:]
        assert len(new) == 3
        assert new[0].startswith(f"cuda:0 runs {low.symbol} (gfx942, B*M "
                                 f"1..inf, from ")
        assert "for B=16 M=8 N=128 K=512" in new[0]
        assert new[1].startswith(f"cuda:0 runs {high.symbol} (gfx942, B*M "
                                 f"513..inf, from ")
        assert "for B=16 M=33 N=512 K=128" in new[1]
        assert new[2].startswith(f"cuda:1 runs {kernel.symbol} ")

        # numpy: the emulator is a device of its own.
        call(*numpy_k_up())
        call(*numpy_k_up())
        emulated = lines(caplog)[4:]
        assert len(emulated) == 1
        assert emulated[0].startswith("emulator runs mla_fp8_n512_k128")
        assert emulated[0].endswith("for B=1 M=1 N=512 K=128")

        monkeypatch.setenv("MLA_FP8_LOG", "0")
        call(*numpy_k_up(m=64))
        assert len(lines(caplog)) == 5
    finally:
        hip.reset_runtime()
        serving.set_bundle(None)


def test_unconfigured_logging_goes_to_stderr(session_bundle):
    """A process that set up no logging still gets the line, on stderr."""
    code = ("import numpy as np, mla_fp8\n"
            "f = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_"
            "per_batched_tensor_quant\n"
            "x = np.zeros((1, 1, 128), np.uint16)\n"
            "w = np.zeros((1, 512, 128), np.uint8)\n"
            "f(x, w, np.ones(1, np.float32))\n"
            "f(x, w, np.ones(1, np.float32))\n")
    env = dict(os.environ, MLA_FP8_LOG="1",
               MLA_FP8_BUNDLE=str(session_bundle))
    result = subprocess.run([sys.executable, "-c", code], env=env,
                            capture_output=True, text=True, timeout=120,
                            check=True)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mla_fp8: emulator runs mla_fp8_n512_k128")
