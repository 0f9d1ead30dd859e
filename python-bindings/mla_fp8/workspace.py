"""Split-K workspaces of HIP launches, graph capture included.

A split-K kernel takes a workspace of zeroed memory (docs/manifest.md): it is
zeroed once when created, every launch leaves it zeroed, and launches that
share one must not run at the same time. These rules keep that true:

* A launch outside graph capture uses the workspace of its (device, stream),
  since one stream runs its launches in order. The first launch that needs
  one creates it (torch's caching allocator for torch callers, else
  hipMalloc) and zeroes it with hipMemsetAsync on that stream; a launch that
  needs more replaces it with a larger one. A launch holds its workspace
  from acquire() until its launch call has returned (release()): one
  replaced meanwhile by another thread's larger launch is given back only
  once the last launch holding it has been issued, so no launch is ever
  issued with a freed buffer (the old one stays allocated that long).
* A launch inside a graph capture is recorded, not run: the graph may be
  replayed later on any stream, at the same time as eager launches and other
  graphs. It therefore uses a workspace of its own, keyed by (device, stream,
  capture id), that nothing else ever uses: one of those prepare() reserved
  for the device, which then belongs to that capture's graph for the life of
  the process (no HIP call says when a graph is destroyed). The launches of
  one capture on one stream share it, as they run in order in the graph; a
  capture forked onto several streams takes one per stream. A capture takes
  the largest reserved one left, so that its later, larger launches fit
  whenever any reserved workspace would.
* Nothing is allocated while the stream captures: ROCm refuses hipMalloc
  there and invalidates the capture. With no reserved workspace left, or
  one too small, the launch raises GraphCaptureError naming the prepare(...)
  call that fixes it.
"""

import json
import os
import sys
import threading

from . import _abi, hip
from ._checks import check_int
from .bundle import Bundle, load_bundle

__all__ = ["WorkspaceCache", "prepare", "acquire_workspace"]

_cache_lock = threading.Lock()


class _Buffer:
    """A device buffer: its address, size and what keeps it alive (a torch
    tensor, or None for a hipMalloc one); `users`: the launches holding it
    (acquired, not yet released); `retired`: the (device, stream) whose
    workspace it was until replaced while held, else None."""

    __slots__ = ("pointer", "nbytes", "owner", "users", "retired")

    def __init__(self, pointer, nbytes, owner):
        self.pointer, self.nbytes, self.owner = pointer, nbytes, owner
        self.users, self.retired = 0, None


class WorkspaceCache:
    """The workspaces of one HipRuntime (see the module's rules).
    Thread-safe."""

    def __init__(self, runtime):
        self._runtime = runtime
        self._lock = threading.Lock()
        self._eager = {}      # (device, stream) -> _Buffer
        self._captured = {}   # (device, stream, capture id) -> _Buffer
        self._spare = {}      # device -> [_Buffer], reserved for captures

    def get(self, device, stream, nbytes, torch_device=None):
        """The address of a zeroed workspace of at least `nbytes` for a
        launch on `stream` of `device` (an index), for a caller that makes
        no other launch on that stream meanwhile: the address is valid
        until a larger one is asked for. Launchers use acquire()."""
        buffer = self.acquire(device, stream, nbytes, torch_device)
        self.release(buffer)
        return buffer.pointer

    def acquire(self, device, stream, nbytes, torch_device=None,
                shape=None):
        """A zeroed workspace of at least `nbytes` (its `pointer`) for a
        launch on `stream` of `device` (an index), held until release() is
        called with it, which the caller does once the launch call has
        returned. `torch_device` (a torch device) allocates through torch,
        on its current stream, which must be `stream`; None uses hipMalloc.
        `shape`: the launch's (M, B), named in a capture's error."""
        status, capture = self._runtime.capture_state(stream)
        if status == hip.CAPTURE_INVALIDATED:
            raise hip.GraphCaptureError(
                f"stream {stream:#x} on device {device}: its graph capture "
                f"was invalidated by an earlier call; end the capture and "
                f"capture again")
        with self._lock:
            if status == hip.CAPTURE_NONE:
                buffer = self._eager.get((device, stream))
                if buffer is None or buffer.nbytes < nbytes:
                    buffer = self._replace(device, stream, nbytes,
                                           torch_device)
                buffer.users += 1
                return buffer
            key = (device, stream, capture)
            buffer = self._captured.get(key)
            if buffer is None:
                buffer = self._take_spare(device, nbytes)
                if buffer is not None:
                    self._captured[key] = buffer
            if buffer is None or buffer.nbytes < nbytes:
                raise hip.GraphCaptureError(self._unprepared(
                    device, stream, capture, nbytes, buffer, shape))
            buffer.users += 1
            return buffer

    def release(self, buffer):
        """Ends acquire()'s hold on `buffer`; one replaced while held is
        given back by its last holder."""
        with self._lock:
            buffer.users -= 1
            if buffer.retired is not None and not buffer.users:
                device, stream = buffer.retired
                buffer.retired = None
                self._release(device, stream, buffer)

    def _unprepared(self, device, stream, capture, nbytes, held, shape):
        where = (f"stream {stream:#x} on device {device} is capturing a "
                 f"graph (capture {capture}) and a split-K launch needs a "
                 f"{nbytes}-byte workspace, ")
        if held is not None:
            what = f"but this capture holds a {held.nbytes}-byte one"
        else:
            sizes = sorted({b.nbytes for b in self._spare.get(device, [])})
            what = ("but no workspace reserved for graph captures is left"
                    if not sizes else
                    f"but the reserved ones have {sizes[-1]} bytes")
        this = "" if shape is None else \
            f" (this launch: M={shape[0]}, B={shape[1]})"
        return (where + what + " (nothing can be allocated during capture, "
                "and a captured workspace is its graph's alone): call "
                f"mla_fp8.prepare(device={device}, max_m=M, batch=B, "
                "captures=N) before capturing, with M and B the largest M "
                f"and B the graphs use{this} and N the number of graph "
                "captures with split-K launches")

    def _take_spare(self, device, nbytes):
        """The largest spare of `device` if it holds `nbytes`, else None:
        the capture keeps it for all its launches on that stream, and a
        later one may need more than the first."""
        spares = self._spare.get(device, [])
        if not spares:
            return None
        buffer = max(spares, key=lambda b: b.nbytes)
        if buffer.nbytes < nbytes:
            return None
        spares.remove(buffer)
        return buffer

    def _allocate(self, device, stream, nbytes, torch_device):
        """A new buffer of `nbytes` for `stream`, zeroed on it."""
        if torch_device is not None:
            torch = sys.modules["torch"]
            tensor = torch.empty((nbytes,), dtype=torch.uint8,
                                 device=torch_device)
            buffer = _Buffer(tensor.data_ptr(), nbytes, tensor)
        else:
            buffer = _Buffer(self._runtime.malloc(device, nbytes, stream),
                             nbytes, None)
        self._runtime.memset(device, buffer.pointer, nbytes, stream)
        return buffer

    def _release(self, device, stream, buffer):
        """Gives back a buffer that only `stream` used. A torch one returns
        to torch's allocator, which reuses it in that stream's order; a
        hipMalloc one is freed once the stream has finished with it."""
        if buffer.owner is None:
            self._runtime.synchronize(device, stream)
            self._runtime.free(device, buffer.pointer)

    def _replace(self, device, stream, nbytes, torch_device):
        """A larger workspace for `stream`; the old one is given back now,
        or by release() when a launch still holds it."""
        old = self._eager.get((device, stream))
        buffer = self._eager[(device, stream)] = self._allocate(
            device, stream, nbytes, torch_device)
        if old is not None:
            if old.users:
                old.retired = (device, stream)
            else:
                self._release(device, stream, old)
        return buffer

    def reserve(self, device, stream, nbytes, captures, torch_device=None):
        """Gives launches on `stream` a workspace of at least `nbytes` now,
        and keeps `captures` more of that size ready for graph captures on
        `device`, allocated and zeroed on `stream`, which is then
        synchronized: a graph replayed on any stream finds them zeroed."""
        status, _ = self._runtime.capture_state(stream)
        if status != hip.CAPTURE_NONE:
            raise hip.GraphCaptureError(
                f"stream {stream:#x} on device {device} is capturing a "
                f"graph: call mla_fp8.prepare(...) before the capture "
                f"begins")
        with self._lock:
            buffer = self._eager.get((device, stream))
            if buffer is None or buffer.nbytes < nbytes:
                self._replace(device, stream, nbytes, torch_device)
            spares = self._spare.setdefault(device, [])
            for small in [b for b in spares if b.nbytes < nbytes]:
                spares.remove(small)
                self._release(device, stream, small)
            added = [self._allocate(device, stream, nbytes, torch_device)
                     for _ in range(captures - len(spares))]
            if added:
                self._runtime.synchronize(device, stream)
                spares.extend(added)

    def spare_count(self, device):
        """How many workspaces reserved for graph captures on `device` no
        capture holds yet."""
        with self._lock:
            return len(self._spare.get(device, []))


def _cache_of(runtime):
    """`runtime`'s WorkspaceCache, created on first use."""
    cache = runtime.workspaces
    if cache is None:
        with _cache_lock:
            if runtime.workspaces is None:
                runtime.workspaces = WorkspaceCache(runtime)
            cache = runtime.workspaces
    return cache


def acquire_workspace(runtime, device, stream, nbytes, torch_device=None,
                      shape=None):
    """(WorkspaceCache.acquire on `runtime`'s cache, that cache): the
    caller passes the workspace to the cache's release() once its launch
    call has returned."""
    cache = _cache_of(runtime)
    return cache.acquire(device, stream, nbytes, torch_device, shape), cache


def _largest_batch(bundle):
    """The largest B the bundle's split-K kernels were generated for (the
    manifest's `batches`)."""
    path = os.path.join(bundle.directory, "manifest.json")
    try:
        with open(path, encoding="utf-8") as manifest:
            chips = json.load(manifest)["chips"]
        return max(b for chip in chips for kernel in chip["kernels"]
                   if kernel["workspace_bytes_per_block"]
                   for b in kernel["batches"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"batch: not given, and the split-K kernels' "
                         f"batches could not be read from {path} ({error}); "
                         f"pass batch=B") from None


def _torch_device(torch, device):
    """(index, torch device) of prepare's `device` argument."""
    if device is None:
        device = torch.cuda.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        device = torch.device("cuda", check_int(device, "device",
                                                minimum=0))
    elif isinstance(device, str):
        device = torch.device(device)
    elif not isinstance(device, torch.device):
        raise TypeError(f"device: expected a torch device, 'cuda:N' or an "
                        f"index, got {type(device).__name__}")
    if device.type != "cuda":
        raise ValueError(f"device: expected a ROCm GPU device, got {device}")
    index = (device.index if device.index is not None else
             torch.cuda.current_device())
    return index, torch.device("cuda", index)


def _streams(torch, index, device, streams):
    """[(hipStream_t, torch stream or None)] of prepare's `streams`."""
    if streams is None:
        streams = [torch.cuda.current_stream(device) if torch else 0]
    elif isinstance(streams, int) or hasattr(streams, "cuda_stream"):
        streams = [streams]
    elif not hasattr(streams, "__iter__"):
        raise TypeError(f"streams: expected a stream or a list of them, got "
                        f"{type(streams).__name__}")
    out = []
    for stream in streams:
        if isinstance(stream, int) and not isinstance(stream, bool):
            handle = check_int(stream, "streams", minimum=0)
            if torch is not None:
                stream = torch.cuda.ExternalStream(handle, device=device)
            out.append((handle, stream if torch else None))
            continue
        if not hasattr(stream, "cuda_stream"):
            raise TypeError(f"streams: expected torch streams or hipStream_t "
                            f"handles (int), got {type(stream).__name__}")
        own = getattr(stream, "device", device)
        if own != device:
            raise ValueError(f"streams: a stream of {own}, not of device "
                             f"{index}")
        out.append((stream.cuda_stream, stream))
    if not out:
        raise ValueError("streams: empty; pass None for the current stream")
    return out


def prepare(device=None, streams=None, max_m=None, bundle=None, *,
            batch=None, captures=0):
    """Reserves the split-K workspaces ahead, so that launches on `streams`
    and the next `captures` graph captures on `device` allocate nothing.

    Call it before capturing graphs: during a capture nothing can be
    allocated (see the module's rules). Calling it again only adds what is
    missing.

    Args:
      device: a torch device, "cuda:N" or an index; None: the current
        device.
      streams: the streams whose eager launches get their workspace now:
        torch streams or hipStream_t handles (int); None: the device's
        current stream.
      max_m: the largest M the calls use; None: the bundle's max_m.
      bundle: a Bundle or a directory; None: the drop-in's (get_bundle()).
      batch: the largest B (heads per rank, at most 65536); None: the
        largest the bundle's split-K kernels were generated for.
      captures: how many graph captures get a workspace of their own: the
        number of graphs whose capture launches a split-K kernel (the
        default bundle has none; `--tile` bundles may).

    Returns:
      the bytes of each workspace reserved: the most any split-K kernel of
      the bundle needs for M <= max_m and B <= batch; 0 when the bundle has no
      split-K kernel (nothing is reserved then).

    Raises:
      TypeError, ValueError: an argument is wrong (the message names it).
      GraphCaptureError: a stream named is capturing a graph.
      HipUnavailableError: there is no HIP runtime.
      All three also for a bundle without split-K kernels.
    """
    # serving imports this module for its launches.
    from . import serving  # pylint: disable=import-outside-toplevel
    if bundle is None:
        bundle = serving.get_bundle()
    elif not isinstance(bundle, Bundle):
        bundle = load_bundle(bundle)
    max_m = check_int(bundle.max_m if max_m is None else max_m, "max_m",
                      minimum=1)
    captures = check_int(captures, "captures", minimum=0)
    if batch is not None:
        # B is heads per rank: at most the largest model dimension.
        batch = check_int(batch, "batch", minimum=1,
                          maximum=_abi.MAX_MANIFEST_N)
    # Every argument and the capture state are checked first, also for a
    # bundle without split-K kernels, which reserves nothing.
    torch = sys.modules.get("torch")
    runtime = hip.get_runtime()
    if torch is not None:
        index, torch_device = _torch_device(torch, device)
    else:
        torch_device = None
        index = (runtime.current_device() if device is None else
                 check_int(device, "device", minimum=0))
    streams = _streams(torch, index, torch_device, streams)
    for handle, _ in streams:
        if runtime.capture_state(handle)[0] != hip.CAPTURE_NONE:
            raise hip.GraphCaptureError(
                f"stream {handle:#x} on device {index} is capturing a "
                f"graph: call mla_fp8.prepare(...) before the capture "
                f"begins")
    split_k = [k for k in bundle.kernels() if k.workspace_bytes_per_block]
    if batch is None and split_k:
        batch = check_int(_largest_batch(bundle), "batch", minimum=1)
    # Every launch of at most `batch` batches and max_m tokens: for each
    # split-K kernel and B, the most tokens its range of rows serves at that
    # B (M is rounded up to whole blocks, so a smaller B can need more).
    needs = [k.workspace_bytes(top, b) for k in split_k
             for b in range(1, batch + 1)
             for top in (max_m if k.max_rows == 0 else
                         min(max_m, k.max_rows // b),)
             if top >= 1 and b * top >= k.min_rows]
    if not needs:
        return 0
    nbytes = max(needs)
    cache = _cache_of(runtime)
    # The capture workspaces are allocated and zeroed on the first stream.
    for number, (handle, stream) in enumerate(streams):
        reserve = captures if number == 0 else 0
        if stream is not None:
            with torch.cuda.stream(stream):
                cache.reserve(index, handle, nbytes, reserve, torch_device)
        else:
            cache.reserve(index, handle, nbytes, reserve)
    return nbytes
