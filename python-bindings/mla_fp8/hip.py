"""Launch bundle kernels on an AMD GPU through the HIP runtime, via ctypes.

Nothing here is needed at build time: ``libamdhip64.so`` is looked up when
the first kernel is launched (``ROCM_PATH``, then the loader's search path,
then /opt/rocm). Code objects are loaded once per device with
``hipModuleLoadData``; kernel arguments are packed at the manifest's offsets
into one buffer passed with the ``HIP_LAUNCH_PARAM_BUFFER_*`` extra
parameters of ``hipModuleLaunchKernel``.
"""

import ctypes
import ctypes.util
import os
import struct
import threading

__all__ = ["HipError", "HipUnavailableError", "HipRuntime",
           "find_hip_library", "get_runtime", "pack_kernel_args"]

#: hip_runtime_api.h: the `extra` array's markers.
HIP_LAUNCH_PARAM_BUFFER_POINTER = 0x01
HIP_LAUNCH_PARAM_BUFFER_SIZE = 0x02
HIP_LAUNCH_PARAM_END = 0x03


class HipError(RuntimeError):
    """A HIP runtime call failed; the message names the call and status."""


class HipUnavailableError(RuntimeError):
    """There is no HIP runtime (no AMD GPU / libamdhip64.so not found)."""


def find_hip_library():
    """The path or name of libamdhip64.so to load, or None.

    Looks in $ROCM_PATH/lib, then asks ctypes.util.find_library("amdhip64"),
    then /opt/rocm/lib.
    """
    rocm = os.environ.get("ROCM_PATH")
    if rocm:
        path = os.path.join(rocm, "lib", "libamdhip64.so")
        if os.path.exists(path):
            return path
    found = ctypes.util.find_library("amdhip64")
    if found:
        return found
    path = "/opt/rocm/lib/libamdhip64.so"
    return path if os.path.exists(path) else None


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
        "hipMemsetAsync": [c_void_p, c_int, c_size_t, c_void_p],
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

    Caches loaded modules and functions per (device, code object) and zeroed
    workspaces per (device, size). Thread-safe.
    """

    def __init__(self, lib):
        _declare(lib)
        self._lib = lib
        self._lock = threading.Lock()
        self._modules = {}
        self._functions = {}
        self._workspaces = {}

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

    def get_workspace(self, device, stream, nbytes):
        """A device buffer of `nbytes` for launches on `stream`, zeroed once
        on that stream (kernels leave it zeroed, so it is reused across
        launches). One per stream: launches sharing a workspace must not run
        concurrently, and launches on one stream never do."""
        key = (device, stream, nbytes)
        with self._lock:
            pointer = self._workspaces.get(key)
            if pointer is not None:
                return pointer
            previous = self._set_device(device)
            try:
                handle = ctypes.c_void_p()
                self._check(self._lib.hipMalloc(ctypes.byref(handle), nbytes),
                            "hipMalloc")
                self._check(self._lib.hipMemsetAsync(
                    handle, 0, nbytes, ctypes.c_void_p(stream)),
                    "hipMemsetAsync")
            finally:
                self._restore_device(previous, device)
            pointer = self._workspaces[key] = handle.value
            return pointer

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


_runtime = None
_runtime_lock = threading.Lock()


def get_runtime(loader=None):
    """The process's HipRuntime, loading libamdhip64.so on first use.

    Args:
      loader: for tests, a callable (path) -> library object; default
        ctypes.CDLL.

    Raises:
      HipUnavailableError: no AMD GPU runtime (libamdhip64.so not found or
        not loadable).
    """
    global _runtime  # pylint: disable=global-statement
    with _runtime_lock:
        if _runtime is None:
            path = find_hip_library()
            if path is None:
                raise HipUnavailableError(
                    "no AMD GPU / libamdhip64.so not found (looked in "
                    "$ROCM_PATH/lib, the loader's search path and "
                    "/opt/rocm/lib); run on a ROCm machine, or pass numpy "
                    "arrays to run the kernels on the emulator")
            try:
                lib = (loader or ctypes.CDLL)(path)
            except OSError as error:
                raise HipUnavailableError(
                    f"no AMD GPU / libamdhip64.so could not be loaded from "
                    f"{path}: {error}") from None
            _runtime = HipRuntime(lib)
        return _runtime


def reset_runtime(runtime=None):
    """Replaces the process's HipRuntime (tests install a mocked one)."""
    global _runtime  # pylint: disable=global-statement
    with _runtime_lock:
        _runtime = runtime
