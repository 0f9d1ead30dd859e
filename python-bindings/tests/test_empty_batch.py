"""M = 0 and B = 0 launch nothing, on every entry point.

A data-parallel attention rank whose batch has no tokens calls the kernel
with M = 0 (AITER's bmm crashed there: vLLM #51957). Every entry point
returns at once with the output in its empty shape, (B, 0, N), or (0, B, N)
with transpose_bm, or with YQ itself, untouched: no kernel launch, no
emulator run, no split-K workspace, no HIP call at all, no fill of a float
w_scale, nothing recorded in a graph capture, no log line saying a kernel
runs. The fakes are test_hip's (a fake torch and libamdhip64) and
test_torch_op's (CPU tensors over numpy, a recording torch.library)."""

import logging

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import _log, hip, serving, torch_op
from mla_fp8 import bundle as bundle_module
from hip_mock import FakeDtype
from test_hip import FakeDevice, call, fake  # noqa: F401 (fixture)
from test_torch_op import add_fake_library, tensor, use_fake_torch

#: (B, M) of the empty calls: no tokens, no batches, neither.
EMPTY = [(16, 0), (0, 5), (0, 0)]
#: (transpose_bm_in, transpose_bm): none, SGLang's K-up, vLLM's K-up, vLLM's
#: V-up.
LAYOUTS = [(False, False), (True, False), (True, True), (False, True)]
#: (N, K) of DeepSeek-R1's K-up and V-up (V-up splits K in split_k_bundle).
K_UP, V_UP = (512, 128), (128, 512)
STREAM = 0xAA00  # device 0's current stream in the fake torch
SENTINEL = 0x7777


def x_shape(batch, m, k, transpose_bm_in):
    return (m, batch, k) if transpose_bm_in else (batch, m, k)


def y_shape(batch, m, n, transpose_bm):
    return (m, batch, n) if transpose_bm else (batch, m, n)


def empty_view(shape):
    """An empty uint16 array of `shape` inside a buffer full of SENTINEL
    (each empty axis 2 long there): (view, buffer)."""
    buffer = np.full(tuple(d or 2 for d in shape), SENTINEL, np.uint16)
    view = buffer[tuple(slice(1, 1) if d == 0 else slice(None)
                        for d in shape)]
    assert view.shape == shape
    return view, buffer


@pytest.fixture
def no_emulator(monkeypatch):
    """Fails the test where a call reaches the emulator: every emulated
    launch goes through the native module's load of the bundle."""
    def reached(self):
        raise AssertionError("the call reached the emulator")
    monkeypatch.setattr(bundle_module.Bundle, "_native", property(reached))


@pytest.fixture
def runs_logged(monkeypatch, caplog):
    """MLA_FP8_LOG=1 with nothing logged yet: () -> the lines saying which
    kernel runs."""
    monkeypatch.setenv("MLA_FP8_LOG", "1")
    monkeypatch.setattr(_log, "_logged", set())
    monkeypatch.setattr(_log, "_configured", False)
    logger = logging.getLogger(_log.LOGGER)
    level = logger.level
    caplog.set_level(logging.INFO)
    yield lambda: [r.getMessage() for r in caplog.records
                   if r.name == _log.LOGGER]
    logger.setLevel(level)


@pytest.fixture
def fills(fake, monkeypatch):
    """The calls of torch.full: a fill kernel on the device (the drop-in
    makes a float w_scale a tensor with it)."""
    torch, _ = fake
    made, full = [], torch.full

    def record(*args, **kwargs):
        made.append(args)
        return full(*args, **kwargs)
    monkeypatch.setattr(torch, "full", record)
    return made


def device_operands(torch, batch, m, n, k, transpose_bm_in, dev):
    return (torch.Tensor(x_shape(batch, m, k, transpose_bm_in),
                         torch.bfloat16, dev),
            torch.Tensor((batch, n, k), torch.float8_e4m3fnuz, dev),
            torch.Tensor((1,), torch.float32, dev))


def assert_nothing_ran(torch, lib, hip_calls, fills):
    """No launch, no HIP call since `hip_calls` (no module load, memset,
    capture query or device switch), no split-K workspace, no fill, and
    only empty tensors allocated."""
    assert lib.launch_count == 0 and not lib.launches
    assert lib.calls == hip_calls
    assert not lib.memset and not lib.mallocs
    assert not [t for t, _ in torch.allocations if t.dtype is torch.uint8]
    assert not fills
    assert all(0 in t.shape for t, _ in torch.allocations)


# --- numpy arrays: the emulator ---

@pytest.mark.parametrize("batch,m", EMPTY)
@pytest.mark.parametrize("transpose_bm_in,transpose_bm", LAYOUTS)
@pytest.mark.parametrize("bundle,n,k", [("session_bundle", *K_UP),
                                        ("split_k_bundle", *V_UP)],
                         ids=["k_up", "split_k_v_up"])
def test_numpy_call_runs_nothing(request, no_emulator, runs_logged, bundle,
                                 n, k, batch, m, transpose_bm_in,
                                 transpose_bm):
    serving.set_bundle(request.getfixturevalue(bundle))
    try:
        layout = dict(transpose_bm_in=transpose_bm_in,
                      transpose_bm=transpose_bm)
        x = np.zeros(x_shape(batch, m, k, transpose_bm_in), np.uint16)
        w = np.zeros((batch, n, k), np.uint8)
        ws = np.ones(1, np.float32)
        y = call(x, w, ws, **layout)
        assert isinstance(y, np.ndarray) and y.dtype == np.uint16
        assert y.shape == y_shape(batch, m, n, transpose_bm)
        yq, buffer = empty_view(y_shape(batch, m, n, transpose_bm))
        assert call(x, w, ws, YQ=yq, **layout) is yq
        assert np.all(buffer == SENTINEL)
        assert not runs_logged()
        # A call with rows reaches the emulator: the check can fail.
        with pytest.raises(AssertionError, match="reached the emulator"):
            call(np.zeros(x_shape(16, 1, k, transpose_bm_in), np.uint16),
                 np.zeros((16, n, k), np.uint8), ws, **layout)
        assert len(runs_logged()) == 1
    finally:
        serving.set_bundle(None)


@pytest.mark.parametrize("batch,m", EMPTY)
def test_run_kernel_emulated_runs_nothing(split_k_bundle, no_emulator, batch,
                                          m):
    """The split-K kernel's empty launch: no emulator, so no workspace."""
    bundle = mla_fp8.load_bundle(split_k_bundle)
    n, k = V_UP
    kernel = bundle.find_kernel("gfx942", n, k, m, batch)
    assert kernel.workspace_bytes_per_block > 0
    assert kernel.workspace_bytes(m, batch) == 0
    y, buffer = empty_view((batch, m, n))
    assert mla_fp8.run_kernel_emulated(
        bundle, kernel, np.zeros((batch, m, k), np.uint16),
        np.zeros((batch, n, k), np.uint8), np.ones(1, np.float32), y) == 0
    assert np.all(buffer == SENTINEL)


# --- torch tensors on a ROCm device: the HIP path ---

@pytest.mark.parametrize("batch,m", EMPTY)
@pytest.mark.parametrize("transpose_bm_in,transpose_bm", LAYOUTS)
@pytest.mark.parametrize("bundle,n,k", [("session_bundle", *K_UP),
                                        ("split_k_bundle", *V_UP)],
                         ids=["k_up", "split_k_v_up"])
def test_torch_call_launches_nothing(request, fake, fills, runs_logged,
                                     bundle, n, k, batch, m, transpose_bm_in,
                                     transpose_bm):
    """The drop-in on device tensors (torch without custom_op, so the
    launcher's own path): a tensor or a float w_scale, a new Y or YQ, the
    first call of the signature and the cached one."""
    torch, lib = fake
    serving.set_bundle(request.getfixturevalue(bundle))
    dev = FakeDevice("cuda", 1)
    layout = dict(transpose_bm_in=transpose_bm_in, transpose_bm=transpose_bm)
    shape = y_shape(batch, m, n, transpose_bm)
    X, WQ, WS = device_operands(torch, batch, m, n, k, transpose_bm_in, dev)
    hip_calls = list(lib.calls)
    for _ in range(2):
        for w_scale in (WS, 0.5):
            Y = call(X, WQ, w_scale, **layout)
            assert Y.shape == shape and Y.dtype is torch.bfloat16
            assert Y.device is dev
            YQ = torch.Tensor(shape, torch.bfloat16, dev)
            assert call(X, WQ, w_scale, YQ=YQ, **layout) is YQ
    assert_nothing_ran(torch, lib, hip_calls, fills)
    assert not runs_logged()
    # A call with rows launches, and the fakes record it.
    call(*device_operands(torch, 16, 1, n, k, transpose_bm_in, dev), **layout)
    assert lib.launch_count == 1 and len(runs_logged()) == 1


def test_torch_call_needs_no_hip_runtime(fake, monkeypatch):
    """Nothing to launch loads no HIP runtime (none may be installed on a
    rank that only ever gets empty batches)."""
    torch, _ = fake
    hip.reset_runtime()

    def unavailable(loader=None):
        raise hip.HipUnavailableError("no HIP runtime here")
    monkeypatch.setattr(hip, "get_runtime", unavailable)
    dev = FakeDevice()
    for batch, m in EMPTY:
        X, WQ, WS = device_operands(torch, batch, m, *K_UP, True, dev)
        Y = call(X, WQ, WS, transpose_bm_in=True, transpose_bm=True)
        assert Y.shape == (m, batch, 512)
    assert hip._runtime is None  # pylint: disable=protected-access
    with pytest.raises(hip.HipUnavailableError):
        call(*device_operands(torch, 16, 1, *K_UP, True, dev),
             transpose_bm_in=True, transpose_bm=True)


@pytest.mark.parametrize("batch,m", EMPTY)
def test_graph_capture_records_nothing(fake, split_k_bundle, fills, batch,
                                       m):
    """Empty calls while the stream captures a graph, with no workspace
    reserved for captures (mla_fp8.prepare not called): no error, and
    nothing that the capture would record."""
    torch, lib = fake
    serving.set_bundle(split_k_bundle)
    lib.capturing[STREAM] = (hip.CAPTURE_ACTIVE, 21)
    dev = FakeDevice()
    hip_calls = list(lib.calls)
    for n, k in (K_UP, V_UP):
        for transpose_bm_in, transpose_bm in LAYOUTS:
            layout = dict(transpose_bm_in=transpose_bm_in,
                          transpose_bm=transpose_bm)
            shape = y_shape(batch, m, n, transpose_bm)
            X, WQ, WS = device_operands(torch, batch, m, n, k,
                                        transpose_bm_in, dev)
            for w_scale in (WS, 0.5):
                assert call(X, WQ, w_scale, **layout).shape == shape
                YQ = torch.Tensor(shape, torch.bfloat16, dev)
                assert call(X, WQ, w_scale, YQ=YQ, **layout) is YQ
    assert_nothing_ran(torch, lib, hip_calls, fills)
    # The capture is in effect: the split-K launch with rows is refused.
    with pytest.raises(hip.GraphCaptureError, match="capture 21"):
        call(*device_operands(torch, 16, 5, *V_UP, False, dev))
    assert not lib.launches


@pytest.fixture
def op_torch(fake):
    """The fake torch of the HIP path with a recording torch.library: the
    custom op on device tensors."""
    torch, lib = fake
    torch.dtype = FakeDtype  # named by the op's schema
    return add_fake_library(torch), lib


@pytest.mark.parametrize("batch,m", EMPTY)
@pytest.mark.parametrize("transpose_bm_in,transpose_bm", LAYOUTS)
def test_custom_op_launches_nothing(op_torch, split_k_bundle, fills, batch,
                                    m, transpose_bm_in, transpose_bm):
    """mla_fp8::prequant_bmm and prequant_bmm_out called directly, and the
    drop-in while torch traces it (the op's path) and eagerly."""
    torch, lib = op_torch
    serving.set_bundle(split_k_bundle)
    op, out_op = torch_op.register()
    dev = FakeDevice()
    layout = dict(transpose_bm_in=transpose_bm_in, transpose_bm=transpose_bm)
    hip_calls = list(lib.calls)
    for n, k in (K_UP, V_UP):
        shape = y_shape(batch, m, n, transpose_bm)
        X, WQ, WS = device_operands(torch, batch, m, n, k, transpose_bm_in,
                                    dev)
        Y = op(X, WQ, WS, 128, None, torch.bfloat16, transpose_bm,
               transpose_bm_in, None)
        assert Y.shape == shape and Y.dtype is torch.bfloat16
        YQ = torch.Tensor(shape, torch.bfloat16, dev)
        assert out_op(X, WQ, WS, 128, None, YQ, transpose_bm,
                      transpose_bm_in, None) is None
        direct = len(torch.calls)
        for compiling in (True, False):
            torch.tracing["compiling"] = compiling
            Y = call(X, WQ, 0.5, **layout)
            assert Y.shape == shape and Y.dtype is torch.bfloat16
            assert call(X, WQ, 0.5, YQ=YQ, **layout) is YQ
        # Traced, the call puts no op in the graph: there is nothing to run.
        assert len(torch.calls) == direct
    assert_nothing_ran(torch, lib, hip_calls, fills)


# --- torch CPU tensors: the emulator, through the op where torch has one --

@pytest.fixture(params=[True, False], ids=["custom_op", "torch_1_13"])
def cpu_torch(request, monkeypatch, session_bundle):
    yield use_fake_torch(monkeypatch, session_bundle, request.param)
    serving.set_bundle(None)


@pytest.mark.parametrize("batch,m", EMPTY)
@pytest.mark.parametrize("transpose_bm_in,transpose_bm", LAYOUTS)
def test_cpu_tensors_run_nothing(cpu_torch, no_emulator, batch, m,
                                 transpose_bm_in, transpose_bm):
    torch = cpu_torch
    n, k = K_UP
    layout = dict(transpose_bm_in=transpose_bm_in, transpose_bm=transpose_bm)
    shape = y_shape(batch, m, n, transpose_bm)
    X = tensor(torch, np.zeros(x_shape(batch, m, k, transpose_bm_in),
                               np.uint16), "bfloat16")
    WQ = tensor(torch, np.zeros((batch, n, k), np.uint8), "float8_e4m3fnuz")
    WS = tensor(torch, np.ones(1, np.float32), "float32")
    yq, buffer = empty_view(shape)
    YQ = tensor(torch, yq, "bfloat16")
    Y = call(X, WQ, WS, **layout)
    assert Y.shape == shape and Y.dtype is torch.bfloat16
    assert call(X, WQ, 0.5, YQ=YQ, **layout) is YQ
    ops = torch_op.register()
    if ops is not None:
        op, out_op = ops
        Y = op(X, WQ, WS, 128, None, torch.bfloat16, transpose_bm,
               transpose_bm_in, None)
        assert Y.shape == shape and Y.dtype is torch.bfloat16
        assert out_op(X, WQ, WS, 128, None, YQ, transpose_bm,
                      transpose_bm_in, None) is None
        torch.tracing["compiling"] = True
        assert call(X, WQ, 0.5, **layout).shape == shape
        assert call(X, WQ, WS, YQ=YQ, **layout) is YQ
    assert np.all(buffer == SENTINEL)
