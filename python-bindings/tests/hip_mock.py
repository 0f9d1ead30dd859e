"""A fake torch module and a fake libamdhip64 for the HIP path without a
GPU, shared by the tests and bench/call-overhead.py.

The fake torch has just what mla_fp8 uses: tensors with a shape, strides,
a dtype, a device and an address (never any data), two devices with a
current stream each, and torch.empty recording which stream each
allocation was made for. The fake libamdhip64 answers the HIP calls of
mla_fp8.hip with fake handles and records them; with record=False it only
counts launches and keeps the last one, so that a long run holds no more
memory than a short one (the count is then not thread-safe).
"""

import contextlib
import ctypes
import functools
import threading
import types

import numpy as np


class FakeDtype:
    def __init__(self, name, size):
        self.name, self.itemsize = name, size

    def __str__(self):
        return f"torch.{self.name}"


class FakeDevice:
    """torch.device: one object per (type, index), so that equality and
    hashing are the object's own, in C, as fast as torch's."""

    _interned = {}

    def __new__(cls, kind="cuda", index=0):
        if ":" in kind:  # torch.device("cuda:1")
            kind, index = kind.split(":")[0], int(kind.split(":")[1])
        device = cls._interned.get((kind, index))
        if device is None:
            device = super().__new__(cls)
            device.type, device.index = kind, index
            device = cls._interned.setdefault((kind, index), device)
        return device

    def __str__(self):
        return f"{self.type}:{self.index}"


class FakeStream:
    def __init__(self, handle, device):
        self.cuda_stream, self.device = handle, device


def make_torch():
    """A module object with just what mla_fp8's HIP path uses."""
    torch = types.ModuleType("torch")
    # Addresses of new tensors: 1 MiB apart or more, never overlapping, also
    # when threads make tensors.
    next_address, lock = [0x10000], threading.Lock()

    def allocate(shape, strides, dtype):
        end = 1 + sum((d - 1) * s for d, s in zip(shape, strides))
        nbytes = end * getattr(dtype, "itemsize", 1) if all(shape) else 0
        with lock:
            address = next_address[0]
            next_address[0] += max(1, -(-nbytes // 0x100000)) * 0x100000
        return address

    class Tensor:
        def __init__(self, shape, dtype, device, strides=None, ptr=None):
            self.shape, self.dtype, self.device = tuple(shape), dtype, device
            if strides is None:
                strides, step = [], 1
                for size in reversed(self.shape):
                    strides.insert(0, step)
                    step *= size
            self._strides = tuple(strides)
            self._ptr = (allocate(self.shape, self._strides, dtype)
                         if ptr is None else ptr)

        def stride(self):
            return self._strides

        def data_ptr(self):
            return self._ptr

        def numel(self):
            return int(np.prod(self.shape))

        def element_size(self):
            return self.dtype.itemsize

        def is_contiguous(self):
            return self._strides == Tensor(self.shape, None, None,
                                           ptr=0)._strides

        def new_empty(self, shape, dtype):
            return torch.empty(shape, dtype, self.device)

        def transpose(self, a, b):
            shape, strides = list(self.shape), list(self._strides)
            shape[a], shape[b] = shape[b], shape[a]
            strides[a], strides[b] = strides[b], strides[a]
            return Tensor(shape, self.dtype, self.device, strides, self._ptr)

    torch.Tensor = Tensor
    for name, size in (("bfloat16", 2), ("float16", 2), ("float32", 4),
                       ("uint8", 1), ("float8_e4m3fnuz", 1),
                       ("float8_e4m3fn", 1)):
        setattr(torch, name, FakeDtype(name, size))
    torch.version = types.SimpleNamespace(hip="6.2")
    streams = {0: 0xAA00, 1: 0xBB00}
    torch.streams = streams  # tests switch a device's current stream
    # torch.cuda.stream(s) sets the calling thread's, as in torch.
    local = threading.local()

    def current(index):
        mine = getattr(local, "streams", None)
        return mine[index] if mine and index in mine else streams[index]

    # torch.empty's tensors with the device's current stream then: torch's
    # allocator hands a block to that stream.
    torch.allocations = []

    def empty(shape, dtype, device):
        tensor = Tensor(shape, dtype, device)
        torch.allocations.append((tensor, current(device.index)))
        return tensor

    @contextlib.contextmanager
    def use_stream(stream):
        index = stream.device.index
        if not hasattr(local, "streams"):
            local.streams = {}
        saved = local.streams.get(index)
        local.streams[index] = stream.cuda_stream
        try:
            yield
        finally:
            if saved is None:
                del local.streams[index]
            else:
                local.streams[index] = saved

    torch.empty = empty
    torch.full = lambda shape, value, dtype, device: Tensor(shape, dtype,
                                                            device)
    torch.device = FakeDevice
    torch.cuda = types.SimpleNamespace(
        current_stream=lambda device: FakeStream(current(device.index),
                                                 device),
        current_device=lambda: 0,
        stream=use_stream,
        ExternalStream=FakeStream,
        get_device_properties=lambda device: types.SimpleNamespace(
            gcnArchName="gfx942:sramecc+:xnack-"))
    # torch's C getter of a device's current stream handle (an int).
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=current)
    return torch


def _value(arg):
    """What a HIP function receives for a ctypes object or a plain int that
    ctypes converts by the argtypes (None for a null pointer)."""
    return getattr(arg, "value", arg)


class FakeFunction:
    """A recording stand-in for one HIP function (ctypes sets argtypes and
    restype on it)."""

    def __init__(self, lib, name):
        self.lib, self.name = lib, name
        self.impl = getattr(lib, "_" + name)

    def __call__(self, *args):
        self.lib.calls.append((self.name, args))
        return self.impl(*args)


class FakeHip:
    """Records every call; hands out fake handles. `capturing` maps a stream
    to its (hipStreamCaptureStatus, capture id). With record=False, calls
    and launches are not kept: `launch_count` and `last_launch` say what
    ran. hipGetDevice and hipSetDevice keep a current device per thread,
    as HIP does."""

    def __init__(self, record=True):
        self.record = record
        self.calls, self.launches = [], []
        self.memset, self.mallocs, self.frees, self.syncs = [], 0, [], []
        self.capturing = {}
        self.launch_count, self._last = 0, None
        self.status = 0  # what hipModuleLaunchKernel returns
        self._current = threading.local()
        self._lock = threading.Lock()
        # Module handles by the device they were loaded on.
        self.module_devices = {}

    @property
    def device(self):
        """The calling thread's current device."""
        return getattr(self._current, "device", 0)

    @device.setter
    def device(self, value):
        self._current.device = value

    def __getattr__(self, name):
        if name.startswith("hip"):
            function = (FakeFunction(self, name) if self.record else
                        functools.partial(getattr(self, "_" + name)))
            setattr(self, name, function)
            return function
        raise AttributeError(name)

    def _hipGetDevice(self, out):
        out._obj.value = getattr(self._current, "device", 0)
        return 0

    def _hipSetDevice(self, device):
        self.device = device
        return 0

    def _hipModuleLoadData(self, out, image):
        # A handle per load: a module is only valid on its device.
        handle = 0x100000 + 0x1000 * len(self.module_devices) + self.device
        self.module_devices[handle] = self.device
        out._obj.value = handle
        return 0

    def _hipModuleGetFunction(self, out, module, name):
        # The function's handle says its module's.
        out._obj.value = (_value(module) << 8) + len(name)
        return 0

    def _hipMalloc(self, out, size):
        out._obj.value = 0x5000 + 0x1000 * self.mallocs
        self.mallocs += 1
        return 0

    def _hipFree(self, pointer):
        self.frees.append(_value(pointer))
        return 0

    def _hipMemsetAsync(self, pointer, value, size, stream):
        self.memset.append((_value(pointer), value, size,
                            _value(stream) or 0))
        return 0

    def _hipStreamSynchronize(self, stream):
        self.syncs.append(_value(stream) or 0)
        return 0

    def _hipStreamIsCapturing(self, stream, status):
        status._obj.value = self.capturing.get(_value(stream) or 0,
                                               (0, 0))[0]
        return 0

    def _hipStreamGetCaptureInfo(self, stream, status, capture):
        state = self.capturing.get(_value(stream) or 0, (0, 0))
        status._obj.value, capture._obj.value = state
        return 0

    def _hipGetErrorString(self, status):
        return b"hipErrorInvalidValue"

    def _hipModuleLaunchKernel(self, *args):
        if not self.record:
            # Only what a long run can keep: the count and the arguments
            # of the last launch, read by last_launch.
            self.launch_count += 1
            self._last = (args, getattr(self._current, "device", 0))
            return self.status
        launch = self._decode(args, self.device)
        with self._lock:
            self.launch_count += 1
            self._last = (args, self.device)
            self.launches.append(launch)
        return self.status

    @property
    def last_launch(self):
        """The last launch, as an entry of `launches`; its kernargs are
        read now (the caller's buffer may have changed since)."""
        return None if self._last is None else self._decode(*self._last)

    def _decode(self, args, device):
        (function, gx, gy, gz, bx, by, bz, shared, stream, params,
         extra) = args
        assert params is None and extra[0] == 1 and extra[2] == 2 and \
            extra[4] == 3
        size = ctypes.c_size_t.from_address(extra[3]).value
        function = _value(function)
        return dict(
            function=function, grid=(gx, gy, gz), block=(bx, by, bz),
            shared=shared, stream=_value(stream) or 0, device=device,
            module_device=self.module_devices.get(function >> 8),
            kernargs=ctypes.string_at(extra[1], size))
