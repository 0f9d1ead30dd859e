"""Launch bundle kernels on an AMD GPU through the HIP runtime, via ctypes.

Nothing here is needed at build time: ``libamdhip64`` is found when the first
kernel is launched (find_hip_library gives the order). A process must hold
one HIP runtime: a second copy has its own devices, streams and allocations,
so torch's streams and pointers are invalid in it. The copy already mapped
into the process (torch's, on a ROCm build of torch) is therefore always the
one used; a path is searched only when none is mapped.

Code objects are loaded once per device with ``hipModuleLoadData``; kernel
arguments are packed at the manifest's offsets into one buffer passed with
the ``HIP_LAUNCH_PARAM_BUFFER_*`` extra parameters of
``hipModuleLaunchKernel``; a PreparedLaunch keeps that buffer for a launch
repeated with other pointers. Split-K workspaces are mla_fp8.workspace's.
"""

import ctypes
import ctypes.util
import os
import re
import struct
import sys
import threading

__all__ = ["HipError", "HipUnavailableError", "GraphCaptureError",
           "HipRuntime", "PreparedLaunch", "LIBRARY_ENV", "find_hip_library",
           "mapped_hip_libraries", "get_runtime", "pack_kernel_args"]

#: hip_runtime_api.h: the `extra` array's markers.
HIP_LAUNCH_PARAM_BUFFER_POINTER = 0x01
HIP_LAUNCH_PARAM_BUFFER_SIZE = 0x02
HIP_LAUNCH_PARAM_END = 0x03

#: hipStreamCaptureStatus.
CAPTURE_NONE, CAPTURE_ACTIVE, CAPTURE_INVALIDATED = 0, 1, 2

#: The environment variable naming the libamdhip64 to load when the process
#: has none mapped yet.
LIBRARY_ENV = "MLA_FP8_HIP_LIBRARY"

#: Where the process's mapped objects are listed (tests point it elsewhere).
_MAPS = "/proc/self/maps"
#: The HIP runtime's file names: libamdhip64.so and its versioned names
#: (libamdhip64.so.6, libamdhip64.so.6.4.60400), not other libraries whose
#: names start the same way.
_RUNTIME_NAME = re.compile(r"libamdhip64\.so(\.[0-9]+)*")
#: What the kernel appends in the maps to a file deleted since it was mapped.
_DELETED = " (deleted)"


class HipError(RuntimeError):
    """A HIP runtime call failed; the message names the call and status."""


class HipUnavailableError(RuntimeError):
    """There is no usable HIP runtime: libamdhip64 was not found, could not
    be loaded, or the explicit setting names a second copy."""


class GraphCaptureError(RuntimeError):
    """A launch or an allocation that a stream's graph capture cannot take;
    the message names the stream and the fix."""


def mapped_hip_libraries():
    """The libamdhip64 files mapped into this process, in address order.

    Reads the process's memory map (Linux); an empty list where there is
    none or it cannot be read. A copy whose file was deleted or replaced
    since it was mapped keeps the kernel's " (deleted)" suffix:
    find_hip_library then refuses to load another copy.
    """
    try:
        with open(_MAPS, encoding="utf-8", errors="surrogateescape") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    paths = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or not fields[5].startswith("/"):
            continue
        path = fields[5]
        name = os.path.basename(path)
        if name.endswith(_DELETED):
            name = name[:-len(_DELETED)]
        if _RUNTIME_NAME.fullmatch(name) and path not in paths:
            paths.append(path)
    return paths


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _torch_copy(paths):
    """The one of `paths` inside the imported torch package, or None."""
    torch = sys.modules.get("torch")
    root = getattr(torch, "__file__", None)
    if not root:
        return None
    root = os.path.realpath(os.path.dirname(root)) + os.sep
    inside = [p for p in paths if os.path.realpath(p).startswith(root)]
    return inside[0] if len(inside) == 1 else None


def _replaced(path):
    """The error for a mapped copy whose file is gone: its path now names
    another file, or none, so opening it would load a second runtime or
    fail on a missing file."""
    return HipUnavailableError(
        f"the HIP runtime this process loaded, {path[:-len(_DELETED)]}, was "
        f"deleted or replaced on disk since it was loaded (ROCm or torch "
        f"reinstalled?), so it cannot be opened again: restart the process")


def _from_mapped(mapped, explicit):
    """The mapped copy to use; an explicit setting may only pick one of
    them, never name another."""
    if explicit:
        for path in mapped:
            if _same_file(path, explicit):
                return path
        deleted = [p for p in mapped if p.endswith(_DELETED)]
        if deleted:
            raise _replaced(deleted[0])
        raise HipUnavailableError(
            f"{LIBRARY_ENV}={explicit} is not the libamdhip64 this process "
            f"already has mapped ({', '.join(mapped)}): a second HIP runtime "
            f"cannot use the first one's streams or memory; unset "
            f"{LIBRARY_ENV} or point it at the mapped copy")
    if len(mapped) == 1:
        return mapped[0]
    chosen = _torch_copy(mapped)
    if chosen is None:
        raise HipUnavailableError(
            f"this process has several libamdhip64 copies mapped "
            f"({', '.join(mapped)}) and none is torch's: set {LIBRARY_ENV} "
            f"to the one whose streams the kernels must use")
    return chosen


def _search():
    """(path or loader name, or None; the places tried in vain before it,
    for messages)."""
    explicit = os.environ.get(LIBRARY_ENV)
    mapped = mapped_hip_libraries()
    if mapped:
        chosen = _from_mapped(mapped, explicit)
        if chosen.endswith(_DELETED):
            raise _replaced(chosen)
        return chosen, []
    tried = ["the process's mapped libamdhip64 (none)"]
    if explicit:
        if not os.path.isfile(explicit):
            raise HipUnavailableError(
                f"{LIBRARY_ENV}={explicit}: no such file (it must name "
                f"libamdhip64.so itself)")
        return explicit, tried
    tried.append(f"${LIBRARY_ENV} (unset)")
    rocm = os.environ.get("ROCM_PATH")
    if rocm:
        path = os.path.join(rocm, "lib", "libamdhip64.so")
        if os.path.isfile(path):
            return path, tried
        tried.append(path)
    else:
        tried.append("$ROCM_PATH/lib (unset)")
    found = ctypes.util.find_library("amdhip64")
    if found:
        return found, tried
    tried.append("the loader's search path")
    path = "/opt/rocm/lib/libamdhip64.so"
    if os.path.isfile(path):
        return path, tried
    tried.append(path)
    return None, tried


def find_hip_library():
    """The path (or loader name) of the libamdhip64 to load, or None.

    In order:

    1. the copy already mapped into the process (torch's, once a ROCm torch
       is imported), found in /proc/self/maps. Opening that exact path gives
       the loaded library back, so no second runtime is ever opened. With
       several mapped, the one inside the torch package wins, else
       $MLA_FP8_HIP_LIBRARY must name one of them. A mapped copy whose
       file was deleted or replaced since is an error (the process must be
       restarted).
    2. $MLA_FP8_HIP_LIBRARY, the file itself;
    3. $ROCM_PATH/lib/libamdhip64.so;
    4. the loader's search path (ctypes.util.find_library("amdhip64"));
    5. /opt/rocm/lib/libamdhip64.so.

    Raises:
      HipUnavailableError: $MLA_FP8_HIP_LIBRARY names a missing file, or a
        copy other than the mapped one(s); the mapped copy's file was
        deleted or replaced.
    """
    return _search()[0]


def _declare(lib):
    """Sets the ctypes signatures of the HIP functions this module uses."""
    c_int, c_uint, c_size_t = ctypes.c_int, ctypes.c_uint, ctypes.c_size_t
    c_void_p, c_char_p = ctypes.c_void_p, ctypes.c_char_p
    signatures = {
        "hipGetDevice": [ctypes.POINTER(c_int)],
        "hipSetDevice": [c_int],
        "hipModuleLoadData": [ctypes.POINTER(c_void_p), c_void_p],
        "hipModuleGetFunction": [ctypes.POINTER(c_void_p), c_void_p, c_char_p],
        "hipModuleLaunchKernel": [c_void_p, c_uint, c_uint, c_uint, c_uint,
                                  c_uint, c_uint, c_uint, c_void_p,
                                  ctypes.POINTER(c_void_p),
                                  ctypes.POINTER(c_void_p)],
        "hipMalloc": [ctypes.POINTER(c_void_p), c_size_t],
        "hipFree": [c_void_p],
        "hipMemsetAsync": [c_void_p, c_int, c_size_t, c_void_p],
        "hipStreamSynchronize": [c_void_p],
        "hipStreamIsCapturing": [c_void_p, ctypes.POINTER(c_int)],
        "hipStreamGetCaptureInfo": [c_void_p, ctypes.POINTER(c_int),
                                    ctypes.POINTER(ctypes.c_ulonglong)],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = c_int
    lib.hipGetErrorString.argtypes = [c_int]
    lib.hipGetErrorString.restype = c_char_p


def pack_kernel_args(kernel, values):
    """Packs the explicit kernel arguments at the manifest's offsets.

    Args:
      kernel: a bundle Kernel (its `args` give offset, size and name).
      values: {argument name: int} (pointers as integers, 0 for null).

    Returns:
      bytes covering every explicit argument, little-endian; hidden
      arguments are the runtime's to fill.
    """
    explicit = [a for a in kernel.args if not a["hidden"]]
    end = max((a["offset"] + a["size"] for a in explicit), default=0)
    end = -(-end // 8) * 8
    buffer = bytearray(end)
    for arg in explicit:
        name = arg["name"]
        if name not in values:
            raise ValueError(f"kernel {kernel.symbol}: argument '{name}' "
                             f"({arg['meaning']}) is unknown to this "
                             f"launcher")
        value = int(values[name])
        size = arg["size"]
        if size not in (4, 8):
            raise ValueError(f"kernel {kernel.symbol}: argument '{name}' "
                             f"has size {size}; expected 4 or 8")
        if value < 0 or value >= 1 << (8 * size):
            raise ValueError(f"kernel {kernel.symbol}: argument '{name}' = "
                             f"{value} does not fit in {size} bytes")
        struct.pack_into("<Q" if size == 8 else "<I", buffer, arg["offset"],
                         value)
    return bytes(buffer)


class HipRuntime:
    """The HIP calls of a launch, over a ctypes library object.

    Caches loaded modules and functions per (device, code object).
    Thread-safe. `workspaces` is the runtime's mla_fp8.workspace cache,
    created on first use; `launches` is the drop-in's cache of checked
    launches (mla_fp8._hip_call), which lives and dies with the runtime
    whose function handles it holds; `path` is the library it was loaded
    from.
    """

    def __init__(self, lib, path=None):
        _declare(lib)
        self._lib = lib
        self.path = path
        self._lock = threading.Lock()
        self._modules = {}
        self._functions = {}
        self.workspaces = None
        self.launches = {}

    def _check(self, status, call):
        if status != 0:
            try:
                name = self._lib.hipGetErrorString(status)
                name = name.decode() if isinstance(name, bytes) else name
            except Exception:  # pylint: disable=broad-except
                name = "unknown error"
            raise HipError(f"{call} failed: {name} (hipError {status})")

    def _set_device(self, device):
        """Makes `device` current; returns the previous one."""
        current = ctypes.c_int(-1)
        self._check(self._lib.hipGetDevice(ctypes.byref(current)),
                    "hipGetDevice")
        if current.value != device:
            self._check(self._lib.hipSetDevice(device), "hipSetDevice")
        return current.value

    def _restore_device(self, previous, device):
        if previous != device and previous >= 0:
            self._check(self._lib.hipSetDevice(previous), "hipSetDevice")

    def current_device(self):
        """The calling thread's current device."""
        current = ctypes.c_int(-1)
        self._check(self._lib.hipGetDevice(ctypes.byref(current)),
                    "hipGetDevice")
        return current.value

    def get_function(self, device, code_key, code_object, symbol):
        """The hipFunction_t of `symbol`, loading `code_object` on `device`
        the first time (`code_key` identifies the code object)."""
        key = (device, code_key, symbol)
        with self._lock:
            function = self._functions.get(key)
            if function is not None:
                return function
            previous = self._set_device(device)
            try:
                module = self._modules.get((device, code_key))
                if module is None:
                    image = ctypes.create_string_buffer(code_object,
                                                        len(code_object))
                    handle = ctypes.c_void_p()
                    self._check(self._lib.hipModuleLoadData(
                        ctypes.byref(handle), image), "hipModuleLoadData")
                    module = self._modules[(device, code_key)] = (handle,
                                                                  image)
                handle = ctypes.c_void_p()
                self._check(self._lib.hipModuleGetFunction(
                    ctypes.byref(handle), module[0], symbol.encode()),
                    f"hipModuleGetFunction({symbol})")
            finally:
                self._restore_device(previous, device)
            self._functions[key] = handle
            return handle

    def capture_state(self, stream):
        """(hipStreamCaptureStatus, capture id) of `stream`: CAPTURE_NONE,
        CAPTURE_ACTIVE or CAPTURE_INVALIDATED; the id is 0 unless active.
        The id is unique per capture sequence in the process."""
        status = ctypes.c_int(CAPTURE_NONE)
        handle = ctypes.c_void_p(stream)
        self._check(self._lib.hipStreamIsCapturing(handle,
                                                   ctypes.byref(status)),
                    "hipStreamIsCapturing")
        if status.value != CAPTURE_ACTIVE:
            return status.value, 0
        capture = ctypes.c_ulonglong(0)
        self._check(self._lib.hipStreamGetCaptureInfo(
            handle, ctypes.byref(status), ctypes.byref(capture)),
            "hipStreamGetCaptureInfo")
        return status.value, capture.value

    def malloc(self, device, nbytes, stream):
        """hipMalloc of `nbytes` on `device`, for use on `stream`.

        Raises:
          GraphCaptureError: `stream` is capturing a graph; ROCm refuses
            the allocation there and invalidates the capture.
        """
        status, _ = self.capture_state(stream)
        if status != CAPTURE_NONE:
            raise GraphCaptureError(
                f"stream {stream:#x} on device {device} is capturing a "
                f"graph: hipMalloc would invalidate the capture; call "
                f"mla_fp8.prepare(...) before capturing")
        previous = self._set_device(device)
        try:
            handle = ctypes.c_void_p()
            self._check(self._lib.hipMalloc(ctypes.byref(handle), nbytes),
                        "hipMalloc")
        finally:
            self._restore_device(previous, device)
        return handle.value

    def free(self, device, pointer):
        """hipFree of a pointer from malloc (waits for the device)."""
        previous = self._set_device(device)
        try:
            self._check(self._lib.hipFree(ctypes.c_void_p(pointer)),
                        "hipFree")
        finally:
            self._restore_device(previous, device)

    def memset(self, device, pointer, nbytes, stream):
        """Zeroes `nbytes` at `pointer`, ordered on `stream` (a graph node
        when the stream is capturing)."""
        previous = self._set_device(device)
        try:
            self._check(self._lib.hipMemsetAsync(
                ctypes.c_void_p(pointer), 0, nbytes, ctypes.c_void_p(stream)),
                "hipMemsetAsync")
        finally:
            self._restore_device(previous, device)

    def synchronize(self, device, stream):
        """Waits until `stream`'s work has finished."""
        previous = self._set_device(device)
        try:
            self._check(self._lib.hipStreamSynchronize(
                ctypes.c_void_p(stream)), "hipStreamSynchronize")
        finally:
            self._restore_device(previous, device)

    def launch(self, device, function, grid, block, stream, kernargs):
        """Launches `function` on `stream` with the packed `kernargs`."""
        argbuffer = ctypes.create_string_buffer(kernargs, max(len(kernargs),
                                                              1))
        size = ctypes.c_size_t(len(kernargs))
        extra = (ctypes.c_void_p * 5)(
            HIP_LAUNCH_PARAM_BUFFER_POINTER,
            ctypes.cast(argbuffer, ctypes.c_void_p),
            HIP_LAUNCH_PARAM_BUFFER_SIZE,
            ctypes.cast(ctypes.pointer(size), ctypes.c_void_p),
            HIP_LAUNCH_PARAM_END)
        previous = self._set_device(device)
        try:
            self._check(self._lib.hipModuleLaunchKernel(
                function, grid[0], grid[1], grid[2], block[0], block[1],
                block[2], 0, ctypes.c_void_p(stream), None, extra),
                "hipModuleLaunchKernel")
        finally:
            self._restore_device(previous, device)


class PreparedLaunch:
    """A launch of one kernel with one grid on one device, ready to repeat.

    Holds the kernarg buffer (constants packed once; `slots` views it as
    64-bit words whose pointer slots the caller patches), the `extra` array
    that passes it and a place for hipGetDevice's answer, so that a launch
    makes no ctypes object. hipModuleLaunchKernel copies the arguments
    before it returns, so the buffer may be patched again right after.
    Callers hold `lock` from patching the slots until the launch returns.
    """

    __slots__ = ("lock", "slots", "_runtime", "_device", "_call", "_extra",
                 "_buffer", "_size", "_current", "_current_ref",
                 "_get_device", "_launch")

    def __init__(self, runtime, device, function, grid, block, kernargs):
        self.lock = threading.Lock()
        self._runtime, self._device = runtime, device
        self._get_device = runtime._lib.hipGetDevice
        self._launch = runtime._lib.hipModuleLaunchKernel
        words = max(-(-len(kernargs) // 8), 1)
        self._buffer = ctypes.create_string_buffer(bytes(kernargs),
                                                   8 * words)
        self.slots = (ctypes.c_uint64 * words).from_buffer(self._buffer)
        self._size = ctypes.c_size_t(len(kernargs))
        self._extra = (ctypes.c_void_p * 5)(
            HIP_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(self._buffer),
            HIP_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(self._size),
            HIP_LAUNCH_PARAM_END)
        self._current = ctypes.c_int(-1)
        self._current_ref = ctypes.byref(self._current)
        self._call = (function, int(grid[0]), int(grid[1]), int(grid[2]),
                      int(block[0]), int(block[1]), int(block[2]))

    def __call__(self, stream):
        """Launches on `stream` (a hipStream_t as an int) with the slots as
        they are, on the launch's device, restoring the calling thread's."""
        device = self._device
        status = self._get_device(self._current_ref)
        if status:
            self._runtime._check(status, "hipGetDevice")
        previous = self._current.value
        if previous != device:
            self._runtime._check(self._runtime._lib.hipSetDevice(device),
                                 "hipSetDevice")
        function, gx, gy, gz, bx, by, bz = self._call
        try:
            status = self._launch(function, gx, gy, gz, bx, by, bz, 0, stream,
                                  None, self._extra)
        finally:
            if previous != device:
                self._runtime._restore_device(previous, device)
        if status:
            self._runtime._check(status, "hipModuleLaunchKernel")


_runtime = None
_runtime_lock = threading.Lock()


def get_runtime(loader=None):
    """The process's HipRuntime, loading libamdhip64 on first use (see
    find_hip_library for which one).

    Args:
      loader: for tests, a callable (path) -> library object; default
        ctypes.CDLL.

    Raises:
      HipUnavailableError: no AMD GPU runtime (libamdhip64 not found or not
        loadable), naming every place tried.
    """
    global _runtime  # pylint: disable=global-statement
    with _runtime_lock:
        if _runtime is None:
            path = find_hip_library()
            if path is None:
                raise HipUnavailableError(
                    "no AMD GPU / libamdhip64.so not found (tried: " +
                    "; ".join(_search()[1]) + "); run on a ROCm machine, "
                    "or pass numpy arrays to run the kernels on the "
                    "emulator")
            try:
                lib = (loader or ctypes.CDLL)(path)
            except OSError as error:
                raise HipUnavailableError(
                    f"no AMD GPU / libamdhip64.so could not be loaded from "
                    f"{path}: {error}") from None
            _runtime = HipRuntime(lib, path)
        return _runtime


def reset_runtime(runtime=None):
    """Replaces the process's HipRuntime (tests install a mocked one)."""
    global _runtime  # pylint: disable=global-statement
    with _runtime_lock:
        _runtime = runtime
