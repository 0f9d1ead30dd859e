"""Split-K workspaces with the fake torch and fake libamdhip64: a
workspace replaced while a launch holds it outlives that launch; prepare()
checks its arguments with any bundle; a capture takes the largest reserved
workspace."""

import threading
import weakref

import pytest

import mla_fp8
from mla_fp8 import hip, serving, workspace
from test_graph_capture import spaces, unpack_workspace, v_up
from test_hip import FakeDevice, FakeStream, call, fake  # noqa: F401

STREAM = 0xAA00  # device 0's current stream in the fake torch


def test_replaced_workspace_outlives_the_launch_holding_it(fake,
                                                            split_k_bundle):
    """Thread B grows the stream's workspace between thread A's taking it
    and A's launch: the old one stays alive until A's launch is issued."""
    torch, lib = fake
    serving.set_bundle(split_k_bundle)
    call(*v_up(torch))
    (tensor,) = [t for t, _ in torch.allocations if t.dtype is torch.uint8]
    small, address = weakref.ref(tensor), tensor.data_ptr()
    # Only the cache keeps the workspace's tensor now.
    del tensor
    torch.allocations.clear()
    launch = lib.hipModuleLaunchKernel
    issue, alive = launch.impl, []

    def grow_then_issue(*args):
        if not alive:
            alive.append(None)
            other = threading.Thread(target=call, args=v_up(torch, m=64))
            other.start()
            other.join()
            alive.append(small() is not None)
        return issue(*args)

    launch.impl = grow_then_issue
    call(*v_up(torch))
    assert alive == [None, True], "freed before the launch holding it"
    first, grown, held = (unpack_workspace(x) for x in lib.launches)
    assert first == held == address and grown != address
    assert [p for p, _, _ in spaces(torch)] == [grown]
    # Given back once the launch holding it was issued.
    assert small() is None
    call(*v_up(torch))
    assert unpack_workspace(lib.launches[-1]) == grown


def test_hipmalloc_workspace_freed_by_its_last_holder(fake):
    _, lib = fake
    cache = workspace.WorkspaceCache(hip.get_runtime())
    held = cache.acquire(0, 0xE000, 100)
    again = cache.acquire(0, 0xE000, 50)
    assert again is held and held.users == 2
    larger = cache.get(0, 0xE000, 200)
    assert larger != held.pointer and not lib.frees and not lib.syncs
    cache.release(again)
    assert not lib.frees
    cache.release(held)
    # Freed once its stream is done with it.
    assert lib.syncs == [0xE000] and lib.frees == [held.pointer]
    # Not held: replaced and freed at once, as before.
    assert cache.get(0, 0xE000, 300) not in (larger, held.pointer)
    assert lib.frees == [held.pointer, larger]


@pytest.fixture(params=["session_bundle", "split_k_bundle"])
def any_bundle(request, fake):
    """The default bundle (no split-K kernel) and one with split-K."""
    serving.set_bundle(request.getfixturevalue(request.param))
    return request.param


@pytest.mark.parametrize("kwargs,error,pattern", [
    (dict(device="cpu"), ValueError, "^device: expected a ROCm GPU device"),
    (dict(streams="s"), TypeError, "^streams: expected torch streams"),
    (dict(streams=[]), ValueError, "^streams: empty"),
    (dict(streams=[FakeStream(1, FakeDevice("cuda", 1))]), ValueError,
     "^streams: a stream of cuda:1, not of device 0"),
    (dict(batch=0), ValueError, "^batch: expected at least 1"),
])
def test_prepare_checks_arguments_with_any_bundle(fake, any_bundle, kwargs,
                                                   error, pattern):
    torch, lib = fake
    with pytest.raises(error, match=pattern):
        mla_fp8.prepare(captures=1, **kwargs)
    assert not spaces(torch) and not lib.mallocs


def test_prepare_during_capture_with_any_bundle(fake, any_bundle):
    torch, lib = fake
    lib.capturing[0xD200] = (hip.CAPTURE_ACTIVE, 3)
    with pytest.raises(hip.GraphCaptureError,
                       match="^stream 0xd200 on device 0 is capturing a "
                       r"graph: call mla_fp8.prepare\(\.\.\.\) before"):
        mla_fp8.prepare(streams=[STREAM, 0xD200], captures=1)
    assert not spaces(torch)
    lib.capturing.clear()
    nbytes = mla_fp8.prepare(streams=[STREAM, 0xD200], captures=1)
    assert (nbytes == 0) == (any_bundle == "session_bundle")
    assert len(spaces(torch)) == (3 if nbytes else 0)


def test_capture_takes_the_largest_reserved(fake, split_k_bundle):
    """Reserved workspaces of two sizes: a capture whose first launch fits
    the smaller takes the larger, which its later launch needs."""
    torch, lib = fake
    serving.set_bundle(split_k_bundle)
    large = mla_fp8.prepare(captures=1)
    small = mla_fp8.prepare(max_m=5, batch=8, captures=2)
    assert small < large
    (_, large_spare, small_spare) = [(p, n) for p, n, _ in spaces(torch)]
    assert large_spare[1] == large and small_spare[1] == small
    lib.capturing[STREAM] = (hip.CAPTURE_ACTIVE, 7)
    call(*v_up(torch, batch=8))
    call(*v_up(torch, m=64))
    assert [unpack_workspace(x) for x in lib.launches] == [large_spare[0]] * 2
    # The smaller one is left for the next capture.
    assert hip.get_runtime().workspaces.spare_count(0) == 1
    lib.capturing[STREAM] = (hip.CAPTURE_ACTIVE, 8)
    call(*v_up(torch, batch=8))
    assert unpack_workspace(lib.launches[-1]) == small_spare[0]
