"""Split-K workspaces with the fake torch and fake libamdhip64: a
workspace replaced while a launch holds it outlives that launch; prepare()
checks its arguments with any bundle; a capture takes the largest reserved
workspace."""

import copy
import threading
import weakref

import pytest

import mla_fp8
from mla_fp8 import hip, serving, workspace
from mla_fp8.bundle import Bundle
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
    (dict(batch=65537), ValueError, "^batch: expected at most 65536"),
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


class _RangedBundle(Bundle):
    """A bundle whose split-K kernels are copies of a real one with other
    ranges of rows and M tiles: generated bundles have none such (the tile
    table splits no K, and an explicit tile serves every launch)."""

    max_m = 64

    def __init__(self, kernels):  # pylint: disable=super-init-not-called
        self._ranged = kernels

    def kernels(self):
        return list(self._ranged)


@pytest.mark.parametrize("max_m,batch,blocks", [
    # At B = 16 and M <= 64 (1024 rows): 1-256 at M = 16 (16 x 1 blocks of
    # 16 rows), 257-1024 at M = 64 (16 x 2 of 32); 1025 up is out of reach.
    (64, 16, 32),
    # M = 65: 1040 rows reach 1025 up, at M = 65 (16 x 5 blocks of 16).
    (65, 16, 80),
    # B = 1: only 1-256, at M = 64 (4 blocks); B = 4: 256 rows, still only
    # it (4 x 4).
    (64, 1, 4), (64, 4, 16),
    # B = 5: 1-256 at M = 51 (5 x 4 blocks), 257-1024 at M = 64 (5 x 2).
    (64, 5, 20),
])
def test_prepare_sizes_each_kernel_at_the_rows_it_serves(
        fake, split_k_bundle, max_m, batch, blocks):
    """prepare() takes the split-K kernels a launch of B = batch and at most
    max_m tokens can pick (min_rows <= max_m * batch), each at the most
    tokens its range of rows serves at that batch: min(max_m,
    max_rows // batch)."""
    (real,) = [k for k in mla_fp8.load_bundle(split_k_bundle).kernels()
               if k.workspace_bytes_per_block]

    def ranged(low, high, block_m):
        kernel = copy.copy(real)
        kernel.min_rows, kernel.max_rows, kernel.block_m = low, high, block_m
        return kernel
    bundle = _RangedBundle([ranged(1, 256, 16), ranged(257, 1024, 32),
                            ranged(1025, 0, 16)])
    nbytes = mla_fp8.prepare(bundle=bundle, max_m=max_m, batch=batch)
    assert nbytes == blocks * real.workspace_bytes_per_block
    torch, _ = fake
    assert [size for _, size, _ in spaces(torch)] == [nbytes]
