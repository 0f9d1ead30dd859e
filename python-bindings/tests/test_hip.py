"""The HIP path without a GPU: a fake torch module and a fake
libamdhip64 (hip_mock) check argument packing, grid, stream use, device
switching, module caching and workspaces."""

import struct
import sys

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import hip, serving
# Re-exported: other tests import the fakes from here.
from hip_mock import (FakeDevice, FakeDtype, FakeHip,  # noqa: F401
                      FakeStream, make_torch)

call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501


@pytest.fixture
def fake(monkeypatch, session_bundle):
    torch = make_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    lib = FakeHip()
    monkeypatch.setattr(hip, "find_hip_library", lambda: "libamdhip64.so")
    hip.reset_runtime()
    hip.get_runtime(loader=lambda path: lib)
    serving.set_bundle(session_bundle)
    yield torch, lib
    hip.reset_runtime()
    serving.set_bundle(None)


def unpack(kernel, kernargs):
    out = {}
    for arg in kernel.args:
        if not arg["hidden"]:
            fmt = "<Q" if arg["size"] == 8 else "<I"
            out[arg["name"]] = struct.unpack_from(fmt, kernargs,
                                                  arg["offset"])[0]
    return out


@pytest.mark.parametrize("n,k,m", [(512, 128, 7), (128, 512, 16),
                                   (128, 512, 17), (128, 512, 64)])
def test_launch(fake, session_bundle, n, k, m):
    torch, lib = fake
    batch, dev = 16, FakeDevice("cuda", 1)
    # q_nope read out of (M, H, P + R): X given as (M, B, K), strided.
    storage = torch.Tensor((m, batch, k + 64), torch.bfloat16, dev)
    x = torch.Tensor((m, batch, k), torch.bfloat16, dev,
                     storage.stride(), storage.data_ptr())
    w = torch.Tensor((batch, n, k), torch.float8_e4m3fnuz, dev)
    ws = torch.Tensor((1,), torch.float32, dev)
    y = call(x, w, ws, transpose_bm_in=True, transpose_bm=True)
    assert y.shape == (m, batch, n) and y.dtype is torch.bfloat16
    kernel = mla_fp8.load_bundle(session_bundle).find_kernel("gfx942", n, k,
                                                             m, batch)
    assert kernel.serves(m, batch)
    (launch,) = lib.launches
    assert launch["grid"] == kernel.grid(m, batch)
    assert launch["block"] == kernel.workgroup_size
    assert launch["stream"] == 0xBB00 and launch["device"] == 1
    values = unpack(kernel, launch["kernargs"])
    assert values["x"] == x.data_ptr() and values["w"] == w.data_ptr()
    assert values["w_scale"] == ws.data_ptr() and values["bias"] == 0
    assert values["y"] == y.data_ptr() and values["m"] == m
    assert (values["x_stride_b"], values["x_stride_m"]) == (k + 64,
                                                            batch * (k + 64))
    assert (values["y_stride_b"], values["y_stride_m"]) == (n, batch * n)
    nbytes = kernel.workspace_bytes(m, batch)
    if nbytes:
        # From torch's allocator, for the launch's stream; zeroed once on
        # that stream, before the launch.
        (space, stream), = [(t, s) for t, s in torch.allocations
                            if t.dtype is torch.uint8]
        assert space.shape == (nbytes,) and space.device == dev
        assert values["workspace"] == space.data_ptr() and stream == 0xBB00
        assert lib.memset == [(space.data_ptr(), 0, nbytes, 0xBB00)]
        assert not lib.mallocs
    assert lib.device == 0, "the caller's device is restored"
    # A second call reuses the module, function and workspace.
    loads = [c for c in lib.calls if c[0] == "hipModuleLoadData"]
    call(x, w, ws, transpose_bm_in=True, transpose_bm=True)
    assert [c for c in lib.calls if c[0] == "hipModuleLoadData"] == loads
    assert len(lib.memset) <= 1 and len(lib.launches) == 2


def test_workspace_per_stream(fake, split_k_bundle):
    """Split-K launches on another stream get their own workspace, zeroed on
    that stream; launches on one stream share one."""
    torch, lib = fake
    serving.set_bundle(split_k_bundle)
    batch, n, k, m, dev = 16, 128, 512, 5, FakeDevice("cuda", 1)
    x = torch.Tensor((batch, m, k), torch.bfloat16, dev)
    w = torch.Tensor((batch, n, k), torch.float8_e4m3fnuz, dev)
    ws = torch.Tensor((1,), torch.float32, dev)
    call(x, w, ws)
    call(x, w, ws)
    torch.streams[1] = 0xCC00
    call(x, w, ws)
    used = [unpack_workspace(launch) for launch in lib.launches]
    assert used[0] == used[1] != used[2]
    assert [(ptr, stream) for ptr, _, _, stream in lib.memset] == [
        (used[0], 0xBB00), (used[2], 0xCC00)]
    assert [(t.data_ptr(), s) for t, s in torch.allocations
            if t.dtype is torch.uint8] == [(used[0], 0xBB00),
                                           (used[2], 0xCC00)]


def unpack_workspace(launch):
    """The workspace pointer at its kernarg offset (80)."""
    return struct.unpack_from("<Q", launch["kernargs"], 80)[0]


def test_yq_and_float_scale(fake):
    torch, lib = fake
    dev = FakeDevice()
    x = torch.Tensor((16, 3, 128), torch.bfloat16, dev)
    w = torch.Tensor((16, 512, 128), torch.uint8, dev)
    big = torch.Tensor((16, 3, 1024), torch.bfloat16, dev)
    yq = torch.Tensor((16, 3, 512), torch.bfloat16, dev, big.stride(),
                      big.data_ptr() + 2 * 256)
    assert call(x, w, 0.5, YQ=yq) is yq
    (launch,) = lib.launches
    assert launch["stream"] == 0xAA00
    assert launch["kernargs"][48:56] == struct.pack("<Q", yq.data_ptr())
    assert struct.unpack_from("<QQ", launch["kernargs"], 64) == (3 * 1024,
                                                                  1024)


def test_errors(fake):
    torch, lib = fake
    dev = FakeDevice()
    x = torch.Tensor((16, 3, 128), torch.bfloat16, dev)
    w = torch.Tensor((16, 512, 128), torch.float8_e4m3fnuz, dev)
    ws = torch.Tensor((1,), torch.float32, dev)
    cases = [
        (ValueError, "^X: expected a tensor on a ROCm",
         dict(X=torch.Tensor((16, 3, 128), torch.bfloat16,
                             FakeDevice("xpu", 0)))),
        (TypeError, "^X: expected dtype",
         dict(X=torch.Tensor((16, 3, 128), torch.float32, dev))),
        (ValueError, "^WQ: on device",
         dict(WQ=torch.Tensor((16, 512, 128), torch.float8_e4m3fnuz,
                              FakeDevice("cuda", 1)))),
        (TypeError, "^WQ: gfx942 kernels take f8E4M3FNUZ",
         dict(WQ=torch.Tensor((16, 512, 128), torch.float8_e4m3fn, dev))),
        (TypeError, "^WQ: expected dtype",
         dict(WQ=torch.Tensor((16, 512, 128), torch.float16, dev))),
        (TypeError, "^WQ: expected a torch tensor", dict(WQ=np.zeros(3))),
        (ValueError, r"^WQ: must be contiguous .*once, when they are loaded",
         dict(WQ=torch.Tensor((16, 128, 512), torch.float8_e4m3fnuz,
                              dev).transpose(1, 2))),
        (TypeError, "^w_scale: expected dtype float32",
         dict(w_scale=torch.Tensor((1,), torch.float16, dev))),
        (ValueError, "^X: the last stride",
         dict(X=torch.Tensor((16, 3, 128), torch.bfloat16, dev,
                             (768, 256, 2)))),
        (TypeError, "^YQ: dtype",
         dict(YQ=torch.Tensor((16, 3, 512), torch.float32, dev),
              dtype=torch.bfloat16)),
        (ValueError, "^YQ: expected shape",
         dict(YQ=torch.Tensor((3, 16, 512), torch.bfloat16, dev))),
        (ValueError, "^bias: expected a contiguous",
         dict(bias=torch.Tensor((16, 7), torch.bfloat16, dev))),
        (ValueError, "^bias: .*without a bias",
         dict(bias=torch.Tensor((16, 512), torch.bfloat16, dev))),
    ]
    for error, pattern, override in cases:
        kwargs = dict(X=x, WQ=w, w_scale=ws)
        kwargs.update(override)
        with pytest.raises(error, match=pattern):
            call(**kwargs)
    assert not lib.launches
    lib.status = 1
    with pytest.raises(mla_fp8.HipError,
                       match="hipModuleLaunchKernel failed: "
                       "hipErrorInvalidValue"):
        call(x, w, ws)


def test_bounds(fake, monkeypatch):
    """What the kernels cannot run is refused before any allocation or
    launch (docs/limits.md), naming the argument."""
    torch, lib = fake
    allocations = []
    for name in ("empty", "full"):
        make = getattr(torch, name)
        monkeypatch.setattr(torch, name, lambda *args, make=make, **kw:
                            allocations.append(args) or make(*args, **kw))
    dev = FakeDevice()
    bf16 = torch.bfloat16
    w = torch.Tensor((16, 512, 128), torch.float8_e4m3fnuz, dev)
    ws = torch.Tensor((1,), torch.float32, dev)
    x = torch.Tensor((16, 3, 128), bf16, dev)
    big = torch.Tensor((16, 3, 1024), bf16, dev)
    cases = [
        # M = 2^40 used to truncate the grid to 0; M near 2^31 to run.
        (ValueError, r"^X: the \(B=16, M=1099511627776, K=128\) view "
         r"reaches element \d+; the kernels address at most 2147483647",
         dict(X=torch.Tensor((16, 2**40, 128), bf16, dev))),
        (ValueError, r"^X: the \(B=16, M=2147483648, K=128\) view",
         dict(X=torch.Tensor((16, 2**31, 128), bf16, dev))),
        # X broadcast along B and M is small; the new Y would not be.
        (ValueError, r"^X: the \(B=16, M=2147483648, N=512\) output",
         dict(X=torch.Tensor((16, 2**31, 128), bf16, dev, (0, 0, 1)))),
        (ValueError, r"^YQ: the \(B=16, M=3, N=512\) output reaches",
         dict(YQ=torch.Tensor((16, 3, 512), bf16, dev, (2**28, 2**26, 1)))),
        (TypeError, "^w_scale: required", dict(w_scale=None)),
        (ValueError, "^YQ: its strides .* overlap",
         dict(YQ=torch.Tensor((16, 3, 512), bf16, dev, (0, 0, 1)))),
        (ValueError, "^YQ: its memory overlaps X's",
         dict(X=torch.Tensor((16, 3, 128), bf16, dev, big.stride(),
                             big.data_ptr()),
              YQ=torch.Tensor((16, 3, 512), bf16, dev, big.stride(),
                              big.data_ptr() + 2 * 100))),
        (ValueError, "^YQ: its memory overlaps w_scale's",
         dict(YQ=torch.Tensor((16, 3, 512), bf16, dev, ptr=ws.data_ptr()))),
        (ValueError, "^group_size: expected at most", dict(group_size=2**70)),
    ]
    for error, pattern, override in cases:
        kwargs = dict(X=x, WQ=w, w_scale=ws)
        kwargs.update(override)
        with pytest.raises(error, match=pattern):
            call(**kwargs)
    # A grid past uint32 work-items (a kernel whose grid grows with M faster
    # than its buffers) is refused too; a float scale is not yet a tensor.
    grid = mla_fp8.Kernel.grid
    monkeypatch.setattr(mla_fp8.Kernel, "grid",
                        lambda self, m, b: (2**32, 1, 1))
    with pytest.raises(ValueError, match="^X: M=3, B=16 need 4294967296 "
                       "workgroups"):
        call(x, w, 0.5)
    assert not lib.launches and not lib.mallocs and not allocations
    # Disjoint columns of one tensor are fine (the overlap test is exact).
    monkeypatch.setattr(mla_fp8.Kernel, "grid", grid)
    yq = torch.Tensor((16, 3, 512), bf16, dev, big.stride(),
                      big.data_ptr() + 2 * 128)
    xq = torch.Tensor((16, 3, 128), bf16, dev, big.stride(), big.data_ptr())
    assert call(xq, w, ws, YQ=yq) is yq


def test_no_gpu(monkeypatch, session_bundle):
    """Without libamdhip64.so the HIP path says so clearly."""
    torch = make_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(hip, "find_hip_library", lambda: None)
    hip.reset_runtime()
    serving.set_bundle(session_bundle)
    try:
        dev = FakeDevice()
        with pytest.raises(mla_fp8.HipUnavailableError,
                           match="no AMD GPU / libamdhip64.so not found"):
            call(torch.Tensor((16, 3, 128), torch.bfloat16, dev),
                 torch.Tensor((16, 512, 128), torch.float8_e4m3fnuz, dev),
                 torch.Tensor((1,), torch.float32, dev))
    finally:
        serving.set_bundle(None)

