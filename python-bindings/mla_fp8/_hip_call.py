"""The drop-in call on ROCm tensors: checked once per call shape, then
launched from a cached plan.

A decode step calls the drop-in twice per layer, 122 times per token, and
pays its host work each time that graphs are not replayed. The first call
with a given signature (the bundle, the device, and each argument's type,
shape, strides, dtype and device, the flags, group size, dtype and chip)
runs every check and leaves a Plan in its runtime's cache: the kernel and
its loaded function, the grid, and a kernarg buffer with every argument
but the pointers packed (mla_fp8.hip.PreparedLaunch). A later call with
that signature does only what depends on values that can differ between
calls:

* the tensors' addresses, patched into the buffer's pointer slots;
* whether YQ overlaps an input: byte ranges from the extents cached per
  signature, the exact test (_limits.check_views_disjoint) where they meet;
* the stream (the device's current one) and, for split-K kernels, the
  workspace of that stream or of the capture under way (mla_fp8.workspace,
  which asks for the stream's capture state each time);
* the calling thread's current device, switched for the launch and
  restored.

Plans live on the HipRuntime whose function handles they hold, so
replacing the runtime drops them; past MAX_PLANS the cache starts again.
Two threads may share a plan: its launch's lock is held from patching the
pointers to the launch's return. With
``MLA_FP8_LOG=1``, building a plan logs which kernel serves the call's
shape, once per (kernel, device) (see mla_fp8._log).
"""

import sys

from . import _limits, _log, hip, serving, workspace
from ._checks import check_w_scale_given

__all__ = ["call"]

#: The pointer arguments of every kernel, in Plan.slot's order.
_POINTERS = ("x", "w", "w_scale", "bias", "y", "workspace")
#: The inputs YQ must not overlap, in Plan.disjoint's order.
_NAMES = ("X", "WQ", "w_scale", "bias")
#: Plans a runtime keeps at most; past that the cache starts again (a
#: serving process sees a few per M of its batch sizes; only callers whose
#: strides keep changing reach this).
MAX_PLANS = 8192


def _raw_stream_getter(torch):
    """torch's C function giving a device's current hipStream_t as an int
    (what torch.compile's generated code uses), else None: then
    torch.cuda.current_stream(device).cuda_stream, which builds a Stream
    object per call."""
    getter = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream",
                     None)
    return getter if callable(getter) else None


class Plan:
    """A checked launch of one call signature (see the module doc)."""

    __slots__ = ("torch", "device", "index", "launch", "slot", "y_shape",
                 "y_dtype", "scale_is_float", "nbytes", "shape",
                 "disjoint", "raw_stream")

    def __init__(self, torch, device, index, runtime, kernel, function, grid,
                 kernargs):
        """`grid` None: an empty launch, which launches nothing (and
        needs neither `runtime` nor `function`)."""
        self.torch, self.device, self.index = torch, device, index
        self.raw_stream = _raw_stream_getter(torch)
        self.y_shape = self.y_dtype = None
        self.scale_is_float = False
        self.nbytes = 0
        self.shape = None  # (M, B), for a workspace error's message
        # ((YQ's extent in bytes, view without address), ((input index,
        # extent, view), ...)): what the overlap test needs but addresses.
        self.disjoint = None
        self.launch = self.slot = None
        if grid is not None:
            self.launch = hip.PreparedLaunch(runtime, index, function, grid,
                                             kernel.workgroup_size, kernargs)
            self.slot = self._slots(kernel)

    @staticmethod
    def _slots(kernel):
        """The 64-bit word of each of _POINTERS in the kernargs (None for
        a workspace the kernel does not take)."""
        slot = {}
        for arg in kernel.args:
            name = arg["name"] if not arg["hidden"] else None
            if name in _POINTERS:
                if arg["size"] != 8 or arg["offset"] % 8:
                    raise ValueError(
                        f"kernel {kernel.symbol}: pointer argument '{name}' "
                        f"at offset {arg['offset']}, size {arg['size']}; "
                        f"expected 8 bytes at a multiple of 8")
                slot[name] = arg["offset"] // 8
        missing = [n for n in _POINTERS[:5] if n not in slot]
        if missing:
            raise ValueError(f"kernel {kernel.symbol}: no argument "
                             f"'{missing[0]}'")
        return tuple(slot.get(name) for name in _POINTERS)

    def run(self, runtime, X, WQ, w_scale, bias, YQ):
        """The call's launch: the per-call checks, then patch and launch.
        Returns Y."""
        launch = self.launch
        if launch is None:
            # M = 0 or B = 0: nothing is launched, and nothing else either
            # (no fill of a float w_scale, which a graph capture would
            # record); a new Y has no elements, so allocates no memory.
            if YQ is not None:
                return YQ
            return self.torch.empty(self.y_shape, dtype=self.y_dtype,
                                    device=self.device)
        x, w = X.data_ptr(), WQ.data_ptr()
        b = 0 if bias is None else bias.data_ptr()
        if self.scale_is_float:
            s = -1  # a new tensor, overlapping nothing
        else:
            s = w_scale.data_ptr()
        if YQ is None:
            Y = self.torch.empty(self.y_shape, dtype=self.y_dtype,
                                 device=self.device)
            y = Y.data_ptr()
        else:
            Y, y = YQ, YQ.data_ptr()
            if self.disjoint is not None:
                self._check_disjoint(y, (x, w, s, b))
        if s < 0:
            torch = self.torch
            w_scale = torch.full((1,), float(w_scale), dtype=torch.float32,
                                 device=self.device)
            s = w_scale.data_ptr()
        if self.raw_stream is not None:
            stream = self.raw_stream(self.index)
        else:
            stream = self.torch.cuda.current_stream(self.device).cuda_stream
        sx, sw, ss, sb, sy, sws = self.slot
        with launch.lock:
            slots = launch.slots
            slots[sx] = x
            slots[sw] = w
            slots[ss] = s
            slots[sb] = b
            slots[sy] = y
            if not self.nbytes:
                launch(stream)
                return Y
            # The stream's or the capture's (mla_fp8.workspace); under the
            # lock, as launches of one plan use the slot in turn. Held
            # until the launch is issued: another thread's larger launch on
            # the stream may replace it meanwhile, and must not free it.
            held, cache = workspace.acquire_workspace(
                runtime, self.index, stream, self.nbytes, self.device,
                self.shape)
            slots[sws] = held.pointer
            try:
                launch(stream)
            finally:
                cache.release(held)
        return Y

    def _check_disjoint(self, y0, pointers):
        """Refuses a YQ at `y0` that overlaps an input at `pointers` (X,
        WQ, w_scale, bias): exact where the byte ranges meet."""
        (out_end, out_view), inputs = self.disjoint
        for index, end, view in inputs:
            start = pointers[index]
            if start < y0 + out_end and y0 < start + end:
                _limits.check_views_disjoint(
                    "YQ", (y0,) + out_view,
                    [(_NAMES[index], (start,) + view)])


def is_rocm_build(torch):
    """Whether `torch` is a ROCm build, whose "cuda" devices are HIP's."""
    return getattr(torch.version, "hip", None) is not None


def _view(tensor):
    """(shape, element strides, itemsize) of a tensor."""
    return (tuple(tensor.shape), tuple(tensor.stride()),
            tensor.element_size())


def _torch_strides(tensor, name, last):
    strides = list(tensor.stride())
    if any(s < 0 for s in strides):
        raise ValueError(f"{name}: negative strides are not supported")
    if strides[-1] != 1 and last > 1 and tensor.numel():
        raise ValueError(f"{name}: the last stride must be 1 element, got "
                         f"{strides[-1]}")
    return strides


def call(X, WQ, w_scale, group_size, bias, dtype, YQ, transpose_bm,
         transpose_bm_in, chip):
    """The torch path: the bundle's kernel on the tensors' ROCm GPU
    (arguments as serving's call passes them: bias (B, N), group_size and
    the flags checked)."""
    torch = sys.modules["torch"]
    runtime = hip._runtime  # pylint: disable=protected-access
    plan = key = None
    if runtime is not None:
        # What the checks depend on (see the module doc); an argument of a
        # wrong type has no attribute or hash it needs, and is left to the
        # checks, which say what is wrong.
        try:
            key = (serving.get_bundle(), X.device, X.shape, X.stride(),
                   X.dtype, type(WQ), WQ.device, WQ.shape, WQ.stride(),
                   WQ.dtype, (type(w_scale), w_scale.device, w_scale.shape,
                    w_scale.stride(), w_scale.dtype)
                   if isinstance(w_scale, torch.Tensor) else type(w_scale),
                   None if bias is None else
                   (type(bias), bias.device, bias.shape, bias.stride(),
                    bias.dtype),
                   None if YQ is None else
                   (type(YQ), YQ.device, YQ.shape, YQ.stride(), YQ.dtype),
                   group_size, dtype, transpose_bm, transpose_bm_in, chip)
            plan = runtime.launches.get(key)
        except (AttributeError, TypeError, ValueError, OSError):
            # Or no bundle: the checks come first, then get_bundle's error.
            key = None
    if plan is None:
        plan, runtime, cacheable = _plan(torch, X, WQ, w_scale, group_size,
                                         bias, dtype, YQ, transpose_bm,
                                         transpose_bm_in, chip)
        if key is not None and cacheable and runtime is not None and \
                runtime is hip._runtime:
            if len(runtime.launches) >= MAX_PLANS:
                runtime.launches.clear()
            runtime.launches.setdefault(key, plan)
    return plan.run(runtime, X, WQ, w_scale, bias, YQ)


def _plan(torch, X, WQ, w_scale, group_size, bias, dtype, YQ, transpose_bm,
          transpose_bm_in, chip):
    """Every check of the call; (Plan, runtime, whether the plan may be
    cached). Raises naming the argument at fault."""
    # pylint: disable=protected-access
    device = X.device
    if device.type != "cuda" or not is_rocm_build(torch):
        raise ValueError(f"X: expected a tensor on a ROCm GPU device, got "
                         f"device {device} (pass numpy arrays to run on the "
                         f"emulator)")
    for name, value in (("WQ", WQ), ("bias", bias), ("YQ", YQ)):
        if value is None and name != "WQ":
            continue
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name}: expected a torch tensor like X, got "
                            f"{type(value).__name__}")
        if value.device != device:
            raise ValueError(f"{name}: on device {value.device}, X on "
                             f"{device}")
    in_type = serving._TORCH_HALF.get(str(X.dtype).replace("torch.", ""))
    if in_type is None:
        raise TypeError(f"X: expected dtype bfloat16 or float16, got "
                        f"{X.dtype}")
    batch, m, k, n = serving._shapes(tuple(X.shape), tuple(WQ.shape),
                                     transpose_bm_in)
    xs = _torch_strides(X, "X", k)
    check_w_scale_given(w_scale)
    x_stride_b, x_stride_m = (xs[1], xs[0]) if transpose_bm_in else (xs[0],
                                                                     xs[1])
    if not WQ.is_contiguous():
        raise ValueError("WQ: must be contiguous (B, N, K); weights do not "
                         "change between calls, so make them contiguous "
                         "(WQ.contiguous()) once, when they are loaded")
    w_name = str(WQ.dtype).replace("torch.", "")
    if w_name not in serving._TORCH_FP8 and w_name != "uint8":
        raise TypeError(f"WQ: expected dtype float8_e4m3fnuz (gfx942), "
                        f"float8_e4m3fn (gfx950) or uint8 bits, got "
                        f"{WQ.dtype}")
    scale_is_float = False
    if isinstance(w_scale, (float, int)) and not isinstance(w_scale, bool):
        scale_is_float = True
        mode = serving._w_scale_mode(1, batch)
    elif not isinstance(w_scale, torch.Tensor):
        raise TypeError(f"w_scale: expected a float32 tensor or a float, got "
                        f"{type(w_scale).__name__}")
    else:
        if w_scale.device != device:
            raise ValueError(f"w_scale: on device {w_scale.device}, X on "
                             f"{device}")
        if str(w_scale.dtype).replace("torch.", "") != "float32":
            raise TypeError(f"w_scale: expected dtype float32, got "
                            f"{w_scale.dtype}")
        if not w_scale.is_contiguous():
            raise ValueError("w_scale: must be contiguous")
        mode = serving._w_scale_mode(w_scale.numel(), batch)

    out_type = serving._out_type(dtype)
    y_shape = (m, batch, n) if transpose_bm else (batch, m, n)
    if YQ is not None:
        y_type = serving._TORCH_HALF.get(str(YQ.dtype).replace("torch.", ""))
        if y_type is None or (out_type is not None and y_type != out_type):
            raise TypeError(f"YQ: dtype {YQ.dtype} does not match the "
                            f"output type {out_type or 'bf16/f16'}")
        out_type = y_type
        if tuple(YQ.shape) != y_shape:
            raise ValueError(f"YQ: expected shape {y_shape}, got "
                             f"{tuple(YQ.shape)}")
    out_type = out_type or "bf16"
    if YQ is None:
        y_end = batch * m * n
        ys = [batch * n, n, 1] if transpose_bm else [m * n, n, 1]
    else:
        ys = _torch_strides(YQ, "YQ", n)
        y_end = _limits.view_end(y_shape, ys)
        stride_b, stride_m = ((ys[1], ys[0]) if transpose_bm else
                              (ys[0], ys[1]))
        _limits.check_rows_disjoint("YQ", stride_b, batch, stride_m, m, n)
    if bias is not None:
        if tuple(bias.shape) != (batch, n) or not bias.is_contiguous():
            raise ValueError(f"bias: expected a contiguous (B={batch}, "
                             f"N={n}) tensor, got shape {tuple(bias.shape)}")
        if serving._TORCH_HALF.get(str(bias.dtype).replace("torch.", "")) \
                != out_type:
            raise TypeError(f"bias: expected the output type {out_type}, "
                            f"got {bias.dtype}")

    _limits.check_kernel_sizes(batch, m, n, k,
                               _limits.view_end(tuple(X.shape), xs), y_end,
                               "X" if YQ is None else "YQ", bias is not None)
    inputs = [(i, t) for i, t in enumerate((X, WQ, w_scale, bias))
              if isinstance(t, torch.Tensor)]
    disjoint = None
    if YQ is not None:
        _limits.check_views_disjoint(
            "YQ", (YQ.data_ptr(),) + _view(YQ),
            [(_NAMES[i], (t.data_ptr(),) + _view(t)) for i, t in inputs])
        disjoint = ((_extent(YQ), _view(YQ)),
                    tuple((i, _extent(t), _view(t)) for i, t in inputs))

    if chip is None:
        arch = torch.cuda.get_device_properties(device).gcnArchName
        chip, chip_source = arch.split(":")[0], "X (the device's chip)"
    else:
        chip_source = "chip"
    bundle = serving.get_bundle()
    kernel = serving._find_kernel(bundle, chip, n, k, m, batch, out_type, mode,
                                  group_size, in_type, chip_source,
                                  bias is not None)
    # A compiled miss lives in a bundle of its own; it is not cached, so
    # that every call asks again whether compiling misses is enabled.
    cacheable = kernel._bundle is bundle
    bundle = kernel._bundle
    if w_name in serving._TORCH_FP8 and \
            serving._TORCH_FP8[w_name] != kernel.fp8_type:
        raise TypeError(f"WQ: {chip} kernels take {kernel.fp8_type} weights, "
                        f"got {WQ.dtype} (see quantize_weights_for_chip)")
    grid = _limits.check_launch(kernel, m, batch)

    empty = batch == 0 or m == 0 or 0 in grid
    # Nothing to launch needs no GPU runtime.
    runtime = hip._runtime if empty else hip.get_runtime()
    index = device.index if device.index is not None else \
        torch.cuda.current_device()
    y_stride_b, y_stride_m = (ys[1], ys[0]) if transpose_bm else (ys[0],
                                                                  ys[1])
    values = dict.fromkeys(_POINTERS, 0)
    values.update(m=m, x_stride_b=x_stride_b, x_stride_m=x_stride_m,
                  y_stride_b=y_stride_b, y_stride_m=y_stride_m)
    kernargs = hip.pack_kernel_args(kernel, values)
    code_key = (bundle.directory, kernel.chip,
                bundle._chip_sha256(kernel._key[0]))
    function = None if empty else runtime.get_function(
        index, code_key, kernel.code_object, kernel.symbol)
    plan = Plan(torch, device, index, runtime, kernel, function,
                None if empty else grid, kernargs)
    plan.y_shape = y_shape
    plan.y_dtype = torch.bfloat16 if out_type == "bf16" else torch.float16
    plan.scale_is_float = scale_is_float
    plan.disjoint = disjoint
    if "workspace" in kernel.arg_offsets:
        plan.nbytes = kernel.workspace_bytes(m, batch)
        plan.shape = (m, batch)
    if not empty:
        # The log says which kernel runs: at M = 0 or B = 0 none does.
        _log.kernel_serves(kernel, f"{device.type}:{index}",
                           _log.shape(batch, m, n, k, transpose_bm_in,
                                      transpose_bm))
    return plan, runtime, cacheable


def _extent(tensor):
    """Bytes from a tensor's address to one past its last element."""
    return _limits.view_end(tuple(tensor.shape), tuple(tensor.stride())) * \
        tensor.element_size()
