"""Split-K workspaces under graph capture, with the fake torch and fake
libamdhip64 of test_hip: capture state honoured, nothing allocated while a
stream captures, a clear error when unprepared, one workspace per capture,
prepare() reserving up front."""

import pytest

import mla_fp8
from mla_fp8 import hip, serving, workspace
from test_hip import (FakeDevice, FakeStream, call,  # noqa: F401 (fixture)
                      fake, unpack_workspace)

GraphCaptureError = hip.GraphCaptureError
STREAM = 0xAA00  # device 0's current stream in the fake torch


@pytest.fixture(autouse=True)
def split_k_served(fake, split_k_bundle):
    """Every test here serves the bundle whose V-up kernel splits K (the
    fake runtime's fixture installs the default one first)."""
    serving.set_bundle(split_k_bundle)


def v_up(torch, m=5, batch=16):
    """V-up operands (N = 128, K = 512): split-K in split_k_bundle."""
    dev = FakeDevice()
    return (torch.Tensor((batch, m, 512), torch.bfloat16, dev),
            torch.Tensor((batch, 128, 512), torch.float8_e4m3fnuz, dev),
            torch.Tensor((1,), torch.float32, dev))


def k_up(torch, m=5):
    """K-up operands (N = 512, K = 128): no split-K, no workspace."""
    dev = FakeDevice()
    return (torch.Tensor((16, m, 128), torch.bfloat16, dev),
            torch.Tensor((16, 512, 128), torch.float8_e4m3fnuz, dev),
            torch.Tensor((1,), torch.float32, dev))


def spaces(torch):
    """[(address, bytes, stream)] of the workspaces torch allocated."""
    return [(t.data_ptr(), t.shape[0], s) for t, s in torch.allocations
            if t.dtype is torch.uint8]


def split_k_bytes(bundle, m=16, batch=16):
    kernel = mla_fp8.load_bundle(bundle).find_kernel("gfx942", 128, 512, m,
                                                     batch)
    assert kernel.workspace_bytes_per_block, "V-up is split-K in this bundle"
    return kernel.workspace_bytes(m, batch)


def test_prepare_reserves_up_front(fake, split_k_bundle):
    torch, lib = fake
    nbytes = mla_fp8.prepare(captures=2)
    # TP8 has B = 16; the split-K kernel (an explicit tile) serves every
    # launch, 1 row up: sized at the bundle's max_m, 64, and B = 16.
    assert nbytes == split_k_bytes(split_k_bundle, 64)
    reserved = spaces(torch)
    assert [(size, stream) for _, size, stream in reserved] == \
        [(nbytes, STREAM)] * 3
    assert lib.memset == [(p, 0, nbytes, STREAM) for p, _, _ in reserved]
    # Zeroed before prepare returns: a graph may replay on another stream.
    assert lib.syncs == [STREAM] and not lib.mallocs
    # Eager launches on the stream allocate and zero nothing more.
    call(*v_up(torch))
    call(*v_up(torch, m=16))
    assert [unpack_workspace(x) for x in lib.launches] == [reserved[0][0]] * 2
    assert spaces(torch) == reserved and len(lib.memset) == 3
    # Again with the same counts: nothing new; one more capture: one more.
    assert mla_fp8.prepare(captures=2) == nbytes
    assert spaces(torch) == reserved
    mla_fp8.prepare(captures=3)
    assert len(spaces(torch)) == 4
    assert hip.get_runtime().workspaces.spare_count(0) == 3
    # A smaller M or B reserves less.
    assert mla_fp8.prepare(max_m=5, batch=8) == \
        split_k_bytes(split_k_bundle, 5, 8)


def test_two_captures_get_distinct_workspaces(fake):
    torch, lib = fake
    mla_fp8.prepare(captures=2)
    reserved = spaces(torch)
    memsets = list(lib.memset)
    call(*v_up(torch))
    eager = unpack_workspace(lib.launches[-1])
    lib.capturing[STREAM] = (hip.CAPTURE_ACTIVE, 41)
    call(*v_up(torch))
    call(*v_up(torch, m=16))
    first = [unpack_workspace(x) for x in lib.launches[-2:]]
    lib.capturing[STREAM] = (hip.CAPTURE_ACTIVE, 42)
    call(*v_up(torch))
    second = unpack_workspace(lib.launches[-1])
    # Launches of one capture share its workspace; the two captures and the
    # eager launches each have their own.
    assert first[0] == first[1]
    assert len({eager, first[0], second}) == 3
    assert {first[0], second} == {p for p, _, _ in reserved[1:]}
    # The capture queries came before; no allocation or memset during them.
    assert spaces(torch) == reserved and lib.memset == memsets
    assert not lib.mallocs
    # Capture 42 forks onto a second stream: that branch may run at the same
    # time, and no reserved workspace is left for it.
    torch.streams[0] = 0xCC00
    lib.capturing[0xCC00] = (hip.CAPTURE_ACTIVE, 42)
    with pytest.raises(GraphCaptureError, match="stream 0xcc00 on device 0 "
                       r"is capturing a graph \(capture 42\)"):
        call(*v_up(torch))
    torch.streams[0] = STREAM
    # After the captures, eager launches use the stream's own again; a new
    # capture finds the reserved ones taken for good.
    lib.capturing.clear()
    call(*v_up(torch))
    assert unpack_workspace(lib.launches[-1]) == eager
    lib.capturing[STREAM] = (hip.CAPTURE_ACTIVE, 43)
    launches = len(lib.launches)
    with pytest.raises(GraphCaptureError,
                       match=r"capture 43\) and a split-K launch needs a "
                       r"\d+-byte workspace, but no workspace reserved for "
                       r"graph captures is left .*call mla_fp8.prepare\("
                       r"device=0, max_m=M, batch=B, captures=N\) before "
                       r"capturing, with M and B the largest M and B the "
                       r"graphs use \(this launch: M=5, B=16\)"):
        call(*v_up(torch))
    assert len(lib.launches) == launches and spaces(torch) == reserved


def test_unprepared_capture_is_refused(fake):
    """A split-K launch in a capture with nothing reserved raises before
    any allocation or launch; a launch without a workspace goes ahead."""
    torch, lib = fake
    lib.capturing[STREAM] = (hip.CAPTURE_ACTIVE, 7)
    with pytest.raises(GraphCaptureError,
                       match="no workspace reserved for graph captures is "
                       r"left \(nothing can be allocated during capture"):
        call(*v_up(torch))
    assert not lib.launches and not lib.mallocs and not spaces(torch)
    assert "hipStreamIsCapturing" in [name for name, _ in lib.calls]
    call(*k_up(torch))
    assert len(lib.launches) == 1 and unpack_workspace(lib.launches[0]) == 0


def test_invalidated_capture(fake):
    torch, lib = fake
    mla_fp8.prepare(captures=1)
    lib.capturing[STREAM] = (hip.CAPTURE_INVALIDATED, 0)
    with pytest.raises(GraphCaptureError, match="capture was invalidated"):
        call(*v_up(torch))
    assert not lib.launches


def test_reserved_too_small(fake, split_k_bundle):
    torch, lib = fake
    small = mla_fp8.prepare(max_m=5, batch=8, captures=1)
    lib.capturing[STREAM] = (hip.CAPTURE_ACTIVE, 9)
    with pytest.raises(GraphCaptureError,
                       match=f"needs a {split_k_bytes(split_k_bundle, 5)}-"
                       f"byte workspace, but the reserved ones have {small} "
                       f"bytes"):
        call(*v_up(torch))
    assert not lib.launches
    # Nor may a capture's later launch outgrow the one it holds.
    call(*v_up(torch, batch=8))
    with pytest.raises(GraphCaptureError, match=f"this capture holds a "
                       f"{small}-byte one"):
        call(*v_up(torch))


def test_prepare_streams(fake):
    """Each stream named gets its workspace, allocated and zeroed on it;
    the capture ones are made on the first."""
    torch, lib = fake
    first = FakeStream(0xD100, FakeDevice())
    nbytes = mla_fp8.prepare(device="cuda:0", streams=[first, 0xD200],
                             captures=1)
    assert [(size, stream) for _, size, stream in spaces(torch)] == [
        (nbytes, 0xD100), (nbytes, 0xD100), (nbytes, 0xD200)]
    assert [s for *_, s in lib.memset] == [0xD100, 0xD100, 0xD200]
    assert lib.syncs == [0xD100] and torch.streams[0] == STREAM
    torch.streams[0] = 0xD200
    call(*v_up(torch))
    assert unpack_workspace(lib.launches[0]) == spaces(torch)[2][0]
    assert len(spaces(torch)) == 3


@pytest.mark.parametrize("kwargs,error,pattern", [
    (dict(device="cpu"), ValueError, "^device: expected a ROCm GPU device"),
    (dict(device=1.5), TypeError, "^device: expected a torch device"),
    (dict(streams="s"), TypeError, "^streams: expected torch streams"),
    (dict(streams=3.0), TypeError, "^streams: expected a stream or a list"),
    (dict(streams=[]), ValueError, "^streams: empty"),
    (dict(streams=[FakeStream(1, FakeDevice("cuda", 1))]), ValueError,
     "^streams: a stream of cuda:1, not of device 0"),
    (dict(captures=-1), ValueError, "^captures: expected at least 0"),
    (dict(max_m=0), ValueError, "^max_m: expected at least 1"),
    (dict(batch=True), TypeError, "^batch: expected an integer"),
    (dict(bundle=3), TypeError, "^directory: expected a path"),
])
def test_prepare_errors(fake, kwargs, error, pattern):
    torch, lib = fake
    with pytest.raises(error, match=pattern):
        mla_fp8.prepare(**kwargs)
    assert not spaces(torch) and not lib.mallocs


def test_prepare_during_capture(fake):
    torch, lib = fake
    lib.capturing[STREAM] = (hip.CAPTURE_ACTIVE, 3)
    with pytest.raises(GraphCaptureError, match="call mla_fp8.prepare"
                       r"\(\.\.\.\) before the capture begins"):
        mla_fp8.prepare(captures=1)
    assert not spaces(torch)


def test_hipmalloc_never_runs_during_capture(fake):
    """Without torch's allocator the cache uses hipMalloc, after asking
    whether the stream captures; a grown workspace frees the old one once
    its stream is done with it."""
    _, lib = fake
    runtime = hip.get_runtime()
    lib.capturing[0xE000] = (hip.CAPTURE_ACTIVE, 5)
    with pytest.raises(GraphCaptureError, match="hipMalloc would invalidate "
                       r"the capture; call mla_fp8.prepare\(\.\.\.\) before"):
        runtime.malloc(0, 64, 0xE000)
    cache = workspace.WorkspaceCache(runtime)
    with pytest.raises(GraphCaptureError):
        cache.get(0, 0xE000, 64)
    assert not lib.mallocs
    lib.capturing.clear()
    small = cache.get(0, 0xE000, 100)
    assert cache.get(0, 0xE000, 50) == small and lib.mallocs == 1
    large = cache.get(0, 0xE000, 200)
    assert large != small and lib.mallocs == 2
    assert lib.syncs == [0xE000] and lib.frees == [small]
    assert [(p, n, s) for p, _, n, s in lib.memset] == [
        (small, 100, 0xE000), (large, 200, 0xE000)]
    # Reserved ahead, a capture then takes one without hipMalloc.
    cache.reserve(0, 0xE000, 256, captures=1)
    mallocs = lib.mallocs
    lib.capturing[0xE000] = (hip.CAPTURE_ACTIVE, 6)
    assert cache.get(0, 0xE000, 200) not in (small, large)
    assert lib.mallocs == mallocs
