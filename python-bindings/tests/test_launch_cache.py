"""The HIP path's cache of checked launches (mla_fp8._hip_call), with
hip_mock's fake torch and libamdhip64: a repeated call launches exactly
what a first call would, allocates nothing that outlives it, and still runs
every check whose answer can change between calls."""

import gc
import struct
import sys
import tracemalloc
import types

import pytest

import mla_fp8
from mla_fp8 import _abi, _hip_call, hip, serving
from hip_mock import FakeDevice, FakeHip, make_torch

call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501


@pytest.fixture
def mock(monkeypatch, session_bundle):
    """(torch, lib, make): `make(lib)` installs a runtime over another fake
    libamdhip64."""
    torch = make_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    serving.set_bundle(session_bundle)

    def make(lib):
        hip.reset_runtime(hip.HipRuntime(lib, "fake"))
        return lib

    lib = make(FakeHip())
    yield torch, lib, make
    hip.reset_runtime()
    serving.set_bundle(None)


def k_up(torch, m=8, batch=16, dev=None):
    """SGLang's K-up operands: q_nope, an (M, B, 128) slice of q."""
    dev = dev or FakeDevice()
    q = torch.Tensor((m, batch, 192), torch.bfloat16, dev)
    return (torch.Tensor((m, batch, 128), torch.bfloat16, dev, q.stride(),
                         q.data_ptr()),
            torch.Tensor((batch, 512, 128), torch.float8_e4m3fnuz, dev),
            torch.Tensor((1,), torch.float32, dev))


def v_up(torch, m=8, batch=16, dev=None):
    """V-up operands and an (M, B, 128) output."""
    dev = dev or FakeDevice()
    return (torch.Tensor((batch, m, 512), torch.bfloat16, dev),
            torch.Tensor((batch, 128, 512), torch.float8_e4m3fnuz, dev),
            torch.Tensor((1,), torch.float32, dev),
            torch.Tensor((m, batch, 128), torch.bfloat16, dev))


def pointers(launch):
    """Every explicit argument by its name, unpacked at the kernel ABI's
    offset (8 bytes each)."""
    return {a.name: struct.unpack_from("<Q", launch["kernargs"], a.offset)[0]
            for a in _abi.KERNEL_ARGS}


def test_repeated_call_launches_what_a_first_call_does(mock):
    torch, lib, make = mock
    x, w, s = k_up(torch)
    call(x, w, s, transpose_bm_in=True, transpose_bm=True)
    assert len(hip.get_runtime().launches) == 1
    # New tensors of the same shapes: the cached plan, new addresses.
    x2, w2, s2 = k_up(torch)
    checks = []
    real_plan = _hip_call._plan
    _hip_call._plan = lambda *a: checks.append(a) or real_plan(*a)
    try:
        y2 = call(x2, w2, s2, transpose_bm_in=True, transpose_bm=True)
    finally:
        _hip_call._plan = real_plan
    assert not checks, "the second call used the cached plan"
    cached = lib.launches[-1]
    # The same call on a fresh runtime checks everything and packs anew.
    fresh = make(FakeHip())
    y3 = call(x2, w2, s2, transpose_bm_in=True, transpose_bm=True)
    assert pointers(cached)["y"] == y2.data_ptr()
    assert pointers(fresh.launches[-1])["y"] == y3.data_ptr()
    others = dict(pointers(fresh.launches[-1]), y=y2.data_ptr())
    assert pointers(cached) == others
    for key in ("grid", "block", "stream", "device"):
        assert cached[key] == fresh.launches[-1][key]
    p = pointers(cached)
    assert (p["x"], p["w"], p["w_scale"], p["bias"]) == (x2.data_ptr(),
                                                         w2.data_ptr(),
                                                         s2.data_ptr(), 0)
    # hipGetDevice once per launch; no module loads after the first call.
    assert [c[0] for c in lib.calls].count("hipModuleLoadData") == 1


def test_per_call_checks_still_run(mock):
    """An overlap of YQ with an input depends on addresses: checked on
    every call; a cached call signature never excuses a bad value."""
    torch, lib, _ = mock
    dev = FakeDevice()
    x, w, s, out = v_up(torch)
    call(x, w, s, YQ=out, transpose_bm=True)
    # Same shapes and strides; YQ now inside X's memory.
    x2 = torch.Tensor(x.shape, torch.bfloat16, dev)
    inside = torch.Tensor(out.shape, torch.bfloat16, dev,
                          ptr=x2.data_ptr() + 64)
    with pytest.raises(ValueError, match="^YQ: its memory overlaps X's"):
        call(x2, w, s, YQ=inside, transpose_bm=True)
    # And inside w_scale's.
    on_scale = torch.Tensor(out.shape, torch.bfloat16, dev, ptr=s.data_ptr())
    with pytest.raises(ValueError, match="overlaps w_scale's"):
        call(x, w, s, YQ=on_scale, transpose_bm=True)
    assert len(lib.launches) == 1
    # Byte ranges that meet without a shared element: exact test, launched.
    big = torch.Tensor((8, 16, 640), torch.bfloat16, dev)
    xs = torch.Tensor((16, 8, 512), torch.bfloat16, dev, (640, 16 * 640, 1),
                      big.data_ptr())
    ys = torch.Tensor((8, 16, 128), torch.bfloat16, dev, (16 * 640, 640, 1),
                      big.data_ptr() + 2 * 512)
    call(xs, w, s, YQ=ys, transpose_bm=True)
    call(xs, w, s, YQ=ys, transpose_bm=True)
    assert len(lib.launches) == 3
    # Values equal to the cached ones as keys (1 == True, 128.0 == 128)
    # are still refused.
    with pytest.raises(TypeError, match="^transpose_bm: expected a bool"):
        call(x, w, s, YQ=out, transpose_bm=1)
    with pytest.raises(TypeError, match="^group_size: expected an integer"):
        call(x, w, s, group_size=128.0, YQ=out, transpose_bm=True)
    # Another dtype or device is another signature, checked in full.
    with pytest.raises(TypeError, match="^WQ: gfx942 kernels take"):
        call(x, torch.Tensor(w.shape, torch.float8_e4m3fn, dev), s, YQ=out,
             transpose_bm=True)
    with pytest.raises(ValueError, match="^WQ: on device cuda:1"):
        call(x, torch.Tensor(w.shape, torch.float8_e4m3fnuz,
                             FakeDevice("cuda", 1)), s, YQ=out,
             transpose_bm=True)
    assert len(lib.launches) == 3


def test_stream_device_and_float_scale_per_call(mock):
    torch, lib, _ = mock
    dev = FakeDevice("cuda", 1)
    x, w, _ = k_up(torch, dev=dev)
    for stream in (0xBB00, 0xCC00):
        torch.streams[1] = stream
        lib.device = 0
        call(x, w, 0.5, transpose_bm_in=True, transpose_bm=True)
        launch = lib.launches[-1]
        assert launch["stream"] == stream and launch["device"] == 1
        assert launch["module_device"] == 1
        assert lib.device == 0, "the caller's device is restored"
    # A float w_scale becomes a new device tensor on every call.
    scales = [pointers(launch)["w_scale"] for launch in lib.launches]
    assert len(set(scales)) == 2 and len(hip.get_runtime().launches) == 1


def test_workspace_and_capture_state_per_call(mock, monkeypatch):
    """A split-K kernel's cached launch still takes its stream's workspace
    and asks for the capture state on every call (kernels with a workspace
    stand in for the bundle's, which has no split-K tile)."""
    torch, lib, _ = mock
    monkeypatch.setattr(mla_fp8.Kernel, "workspace_bytes",
                        lambda self, m, b: 4096 if self.n == 128 else 0)
    x, w, s, out = v_up(torch)
    call(x, w, s, YQ=out, transpose_bm=True)
    call(x, w, s, YQ=out, transpose_bm=True)
    torch.streams[0] = 0xCC00
    call(x, w, s, YQ=out, transpose_bm=True)
    spaces = [pointers(launch)["workspace"] for launch in lib.launches]
    assert spaces[0] == spaces[1] != spaces[2] and 0 not in spaces
    assert [(t.shape, stream) for t, stream in torch.allocations
            if t.dtype is torch.uint8] == [((4096,), 0xAA00),
                                           ((4096,), 0xCC00)]
    lib.capturing[0xCC00] = (hip.CAPTURE_ACTIVE, 5)
    with pytest.raises(hip.GraphCaptureError, match="capture 5"):
        call(x, w, s, YQ=out, transpose_bm=True)
    assert len(lib.launches) == 3
    lib.capturing.clear()
    call(x, w, s, YQ=out, transpose_bm=True)
    assert pointers(lib.launches[-1])["workspace"] == spaces[2]
    # K-up (no workspace) never asks.
    asked = [c[0] for c in lib.calls].count("hipStreamIsCapturing")
    call(*k_up(torch), transpose_bm_in=True, transpose_bm=True)
    assert [c[0] for c in lib.calls].count("hipStreamIsCapturing") == asked


def test_new_runtime_or_bundle_new_plan(mock, session_bundle):
    torch, lib, make = mock
    x, w, s = k_up(torch)
    call(x, w, s, transpose_bm_in=True, transpose_bm=True)
    other = make(FakeHip())
    call(x, w, s, transpose_bm_in=True, transpose_bm=True)
    assert len(other.launches) == 1 and len(lib.launches) == 1
    # Another Bundle object (set_bundle): checked again, module loaded again.
    serving.set_bundle(mla_fp8.load_bundle(session_bundle))
    call(x, w, s, transpose_bm_in=True, transpose_bm=True)
    assert len(hip.get_runtime().launches) == 2


def test_no_allocation_per_call(mock):
    """After the first call of a signature, calls keep no Python memory:
    nothing allocated in mla_fp8 is left over (tracemalloc), and the
    interpreter's count of allocated blocks does not grow with the calls."""
    torch, _, make = mock
    lib = make(FakeHip(record=False))
    cases = [(k_up(torch), dict(transpose_bm_in=True, transpose_bm=True))]
    x, w, s, out = v_up(torch)
    cases.append(((x, w, s), dict(YQ=out, transpose_bm=True)))
    empties = {}  # torch.empty: one tensor per shape, kept by the test
    torch.empty = lambda shape, dtype, device: empties.setdefault(
        (shape, dtype), torch.Tensor(shape, dtype, device))

    def run(times):
        for _ in range(times):
            for args, kwargs in cases:
                call(*args, **kwargs)

    run(50)
    gc.collect()
    package = mla_fp8.__file__.rsplit("/", 1)[0]
    tracemalloc.start()
    try:
        run(10)
        before = tracemalloc.take_snapshot()
        blocks = sys.getallocatedblocks()
        run(2000)
        after_blocks = sys.getallocatedblocks()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = [stat for stat in after.compare_to(before, "lineno")
             if stat.traceback[0].filename.startswith(package) and
             stat.size_diff > 0]
    assert not grown, grown
    # 4000 calls: one block kept per call would show as 4000.
    assert after_blocks - blocks < 100
    assert lib.launch_count == 2 * 2060
    last = lib.last_launch
    p = pointers(last)
    assert (p["x"], p["w"], p["w_scale"], p["bias"], p["y"]) == (
        x.data_ptr(), w.data_ptr(), s.data_ptr(), 0, out.data_ptr())


def test_bundle_lookup_without_searching_each_call(monkeypatch, tmp_path,
                                                   session_bundle):
    """$MLA_FP8_BUNDLE is read on every call (a change takes effect); a
    bundle found at a default location is kept until set_bundle()."""
    serving.set_bundle(None)
    monkeypatch.delenv("MLA_FP8_BUNDLE", raising=False)
    searched = []
    monkeypatch.setattr(serving, "default_bundle_paths",
                        lambda: searched.append(1) or [
                            str(tmp_path / "none"), str(session_bundle)])
    found = serving.get_bundle()
    assert serving.get_bundle() is found and len(searched) == 1
    other = tmp_path / "other"
    other.symlink_to(session_bundle)
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(other))
    assert serving.get_bundle().directory == str(other)
    assert serving.get_bundle() is serving.get_bundle()
    monkeypatch.delenv("MLA_FP8_BUNDLE")
    assert serving.get_bundle() is found and len(searched) == 1
    serving.set_bundle(None)
    assert serving.get_bundle() is found and len(searched) == 2
    serving.set_bundle(None)


def test_raw_stream_and_bounded_cache(mock, monkeypatch):
    """torch's C getter of the current hipStream_t is used where torch has
    it, torch.cuda.current_stream elsewhere; the cache starts again past
    MAX_PLANS."""
    torch, lib, make = mock
    x, w, s = k_up(torch, dev=FakeDevice("cuda", 1))
    monkeypatch.setattr(torch, "_C", types.SimpleNamespace(
        _cuda_getCurrentRawStream=lambda index: 0xDD00 + index))
    call(x, w, s, transpose_bm_in=True, transpose_bm=True)
    assert lib.launches[-1]["stream"] == 0xDD01
    monkeypatch.delattr(torch, "_C")
    lib = make(FakeHip())
    call(x, w, s, transpose_bm_in=True, transpose_bm=True)
    assert lib.launches[-1]["stream"] == 0xBB00
    monkeypatch.setattr(_hip_call, "MAX_PLANS", 3)
    plans = hip.get_runtime().launches
    for m in range(1, 7):
        call(*k_up(torch, m=m), transpose_bm_in=True, transpose_bm=True)
        assert 1 <= len(plans) <= 3
    assert len(lib.launches) == 7
