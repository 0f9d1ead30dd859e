"""Concurrent calls from several threads on two devices and several streams
(hip_mock's fakes): every launch gets its own call's arguments, its
device's module and its stream's workspace; nothing is shared that one
thread's call could corrupt for another's."""

import struct
import sys
import threading

import pytest

import mla_fp8
from mla_fp8 import _abi, hip, serving
from hip_mock import FakeDevice, FakeHip, FakeStream, make_torch
from test_launch_cache import k_up, v_up

call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501

#: (device, stream) of each thread: two threads per stream.
WORKERS = [(0, 0xA000), (0, 0xA000), (0, 0xA100), (1, 0xB000), (1, 0xB000),
           (1, 0xB100)]
CALLS = 400


@pytest.fixture
def split_k(monkeypatch, session_bundle):
    """(fake torch, fake libamdhip64), V-up kernels taking a workspace of
    8192 bytes (the bundle has no split-K tile)."""
    torch = make_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    lib = FakeHip()
    hip.reset_runtime(hip.HipRuntime(lib, "fake"))
    serving.set_bundle(session_bundle)
    monkeypatch.setattr(mla_fp8.Kernel, "workspace_bytes",
                        lambda self, m, b: 8192 if self.n == 128 else 0)
    yield torch, lib
    hip.reset_runtime()
    serving.set_bundle(None)


def test_threads_on_two_devices(monkeypatch, split_k):
    torch, lib = split_k
    # Switch threads often, so that a race has chances to show.
    monkeypatch.setattr(sys, "getswitchinterval", sys.getswitchinterval)
    sys.setswitchinterval(1e-6)
    start = threading.Barrier(len(WORKERS))
    errors = []
    owners = {}  # address of a tensor -> the worker whose tensor it is

    def work(number, index, stream):
        try:
            dev = FakeDevice("cuda", index)
            # The same shapes on a device: its threads share the plans.
            kx, kw, ks = k_up(torch, m=1 + index, dev=dev)
            vx, vw, vs, out = v_up(torch, m=1 + index, dev=dev)
            for tensor in (kx, kw, ks, vx, vw, vs, out):
                owners[tensor.data_ptr()] = number
            lib.device = number % 2  # whatever the caller's device is
            start.wait()
            with torch.cuda.stream(FakeStream(stream, dev)):
                for _ in range(CALLS):
                    y = call(kx, kw, ks, transpose_bm_in=True,
                             transpose_bm=True)
                    owners[y.data_ptr()] = number
                    call(vx, vw, vs, YQ=out, transpose_bm=True)
            assert lib.device == number % 2
        except Exception as error:  # pylint: disable=broad-except
            errors.append(error)

    threads = [threading.Thread(target=work, args=(number, index, stream))
               for number, (index, stream) in enumerate(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(lib.launches) == 2 * CALLS * len(WORKERS)

    spaces = {}
    for launch in lib.launches:
        x, w, scale, bias, y, m = (
            struct.unpack_from("<Q", launch["kernargs"],
                               _abi.KERNEL_ARGS_BY_NAME[name].offset)[0]
            for name in ("x", "w", "w_scale", "bias", "y", "m"))
        number = owners[x]
        index, stream = WORKERS[number]
        # One call's arguments, launched on its device and stream, with the
        # module loaded on that device.
        assert {owners[w], owners[scale], owners[y]} == {number}
        assert bias == 0 and m == 1 + index
        assert launch["stream"] == stream and launch["device"] == index
        assert launch["module_device"] == index
        space = struct.unpack_from("<Q", launch["kernargs"], 80)[0]
        if space:
            spaces.setdefault((index, stream), set()).add(space)
    # V-up launches: one workspace per (device, stream), none shared, each
    # made on its own stream.
    assert set(spaces) == {(i, s) for i, s in WORKERS}
    assert all(len(used) == 1 for used in spaces.values())
    assert len({next(iter(u)) for u in spaces.values()}) == len(spaces)
    made = {t.data_ptr(): s for t, s in torch.allocations
            if t.dtype is torch.uint8}
    for (index, stream), used in spaces.items():
        assert made[next(iter(used))] == stream
    # One module per device, loaded once each.
    loads = [c for c in lib.calls if c[0] == "hipModuleLoadData"]
    assert len(loads) == 2 and len(set(lib.module_devices.values())) == 2


def test_prepare_per_device(split_k):
    """Workspaces reserved for graph captures on one device (what
    prepare() does) are never handed to another."""
    torch, lib = split_k
    devices = (0, 1)
    cache = mla_fp8.workspace._cache_of(hip.get_runtime())
    for index in devices:
        cache.reserve(index, torch.streams[index], 8192, 1,
                      FakeDevice("cuda", index))
    reserved = {index: [t.data_ptr() for t, s in torch.allocations
                        if t.dtype is torch.uint8 and
                        t.device.index == index]
                for index in devices}
    # Device 1 captures first: a pool shared by the devices would hand it
    # device 0's spare, reserved first.
    for index in reversed(devices):
        lib.capturing[torch.streams[index]] = (hip.CAPTURE_ACTIVE,
                                               10 + index)
        x, w, s, out = v_up(torch, dev=FakeDevice("cuda", index))
        call(x, w, s, YQ=out, transpose_bm=True)
        space = struct.unpack_from("<Q", lib.launches[-1]["kernargs"],
                                   80)[0]
        # The device's spare (the eager one is the first reserved).
        assert space == reserved[index][1]
