"""The drop-in call on torch tensors, as the custom op mla_fp8::prequant_bmm.

torch.compile cannot trace into a ctypes launch: called directly, the HIP
path would break the graph at every call. Registered with torch.library, the
call is one node of the graph; its fake implementation gives the output's
shape, dtype and strides without running anything.

Two ops, since a custom op may not return an alias of its input:

* ``mla_fp8::prequant_bmm(X, WQ, w_scale, group_size, bias, out_dtype,
  transpose_bm, transpose_bm_in, chip) -> Tensor`` allocates Y;
* ``mla_fp8::prequant_bmm_out(X, WQ, w_scale, group_size, bias, YQ,
  transpose_bm, transpose_bm_in, chip) -> ()`` writes YQ (declared mutated).

w_scale is always a tensor there (the drop-in call turns a float into one).
Both run ``run``: tensors on a ROCm device launch through HIP
(mla_fp8.serving), CPU tensors run the bundle's kernel on the gfx9 emulator.

Only a traced call needs the op; torch's dispatch of it costs more host time
than the launch itself. An eager call therefore runs ``run`` directly, and
the op is called when torch is tracing: torch.compile (dynamo) compiling,
a torch dispatch mode active (FakeTensorMode, functionalization, make_fx),
a functorch transform (vmap, grad, functionalize), torch.jit tracing, or an
argument of a tensor subclass (a FakeTensor, say). A torch lacking one of
the functions that tell these apart always calls the op. A traced call with
M = 0 or B = 0 has nothing to run: it gives the empty Y (or YQ) without the
op.

The ops are registered on the first call with torch tensors, never at
import, and only where torch.library has custom_op and register_fake
(torch 2.4 and later). With an older torch (Debian's 1.13) or none, importing
mla_fp8 works and torch calls run ``run`` directly.
"""

import os
import sys
import threading
from typing import Optional

import numpy as np

# serving imports this module first: its attributes are read at call time.
from . import serving
from .weights import CHIP_FP8_FORMATS

__all__ = ["register", "unavailable_reason", "run", "OP", "OUT_OP"]

#: The ops' qualified names.
OP = "mla_fp8::prequant_bmm"
OUT_OP = "mla_fp8::prequant_bmm_out"

_lock = threading.Lock()
# The last torch module seen with its ops (None: it cannot register them)
# and tracing test (see _tracing_test), then every module seen: a module
# registers once per process even when tests swap it for another and back.
_last = (None, None, None)
_by_module = {}

_HALF_DTYPES = ("bfloat16", "float16")


def _torch():
    return sys.modules.get("torch")


def unavailable_reason(torch=None):
    """Why the ops cannot be registered with this torch (None: they can)."""
    torch = torch or _torch()
    if torch is None:
        return "torch is not imported"
    library = getattr(torch, "library", None)
    missing = [name for name in ("custom_op", "register_fake")
               if not hasattr(library, name)]
    if missing:
        return (f"torch {getattr(torch, '__version__', '?')} has no "
                f"torch.library.{' or '.join(missing)} (torch 2.4 or later "
                f"has them)")
    return None


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _define(torch):
    """Registers both ops with their fake implementations."""
    Tensor = torch.Tensor

    def y_shape(X, WQ, transpose_bm, transpose_bm_in):
        batch, m, _, n = serving._shapes(tuple(X.shape), tuple(WQ.shape),
                                         transpose_bm_in)
        return (m, batch, n) if transpose_bm else (batch, m, n)

    def prequant_bmm(X: Tensor, WQ: Tensor, w_scale: Tensor, group_size: int,
                     bias: Optional[Tensor], out_dtype: torch.dtype,
                     transpose_bm: bool, transpose_bm_in: bool,
                     chip: Optional[str]) -> Tensor:
        return run(X, WQ, w_scale, group_size, bias, out_dtype, None,
                   transpose_bm, transpose_bm_in, chip)

    def prequant_bmm_fake(X, WQ, w_scale, group_size, bias, out_dtype,
                          transpose_bm, transpose_bm_in, chip):
        del w_scale, group_size, bias, chip
        # The real call returns a new contiguous tensor of this shape.
        return X.new_empty(y_shape(X, WQ, transpose_bm, transpose_bm_in),
                           dtype=out_dtype)

    def prequant_bmm_out(X: Tensor, WQ: Tensor, w_scale: Tensor,
                         group_size: int, bias: Optional[Tensor],
                         YQ: Tensor, transpose_bm: bool,
                         transpose_bm_in: bool,
                         chip: Optional[str]) -> None:
        run(X, WQ, w_scale, group_size, bias, None, YQ, transpose_bm,
            transpose_bm_in, chip)

    def prequant_bmm_out_fake(X, WQ, w_scale, group_size, bias, YQ,
                              transpose_bm, transpose_bm_in, chip):
        del w_scale, group_size, bias, chip
        expected = y_shape(X, WQ, transpose_bm, transpose_bm_in)
        if tuple(YQ.shape) != expected:
            raise ValueError(f"YQ: expected shape {expected}, got "
                             f"{tuple(YQ.shape)}")

    op = torch.library.custom_op(OP, mutates_args=())(prequant_bmm)
    op.register_fake(prequant_bmm_fake)
    out_op = torch.library.custom_op(OUT_OP, mutates_args=("YQ",))(
        prequant_bmm_out)
    out_op.register_fake(prequant_bmm_out_fake)
    return op, out_op


def _tracing_test(torch):
    """A function () -> whether torch is tracing the calling code (see the
    module doc), or None where this torch lacks one of the functions it
    asks: then every call goes through the op."""
    c = getattr(torch, "_C", None)
    probes = (getattr(getattr(torch, "compiler", None), "is_compiling", None),
              getattr(c, "_len_torch_dispatch_stack", None),
              getattr(getattr(c, "_functorch", None), "peek_interpreter_stack",
                      None),
              getattr(c, "_get_tracing_state", None))
    if not all(callable(probe) for probe in probes):
        return None
    compiling, modes, transforms, jit_tracing = probes

    def tracing():
        # is_compiling first: dynamo folds it to True, and then traces
        # none of the others.
        return bool(compiling() or modes() or transforms() is not None or
                    jit_tracing() is not None)
    return tracing


def _entry():
    """(torch, ops, tracing test) of the imported torch, registering the
    ops the first time (see register)."""
    global _last  # pylint: disable=global-statement
    torch = _torch()
    entry = _last
    if entry[0] is torch and torch is not None:
        return entry
    with _lock:
        entry = _by_module.get(id(torch))
        if entry is None or entry[0] is not torch:
            ops = tracing = None
            if unavailable_reason(torch) is None:
                ops, tracing = _define(torch), _tracing_test(torch)
            entry = _by_module[id(torch)] = (torch, ops, tracing)
        _last = entry
        return entry


def register():
    """Registers mla_fp8::prequant_bmm and mla_fp8::prequant_bmm_out with
    the imported torch, once. Returns the two ops (callables; also
    torch.ops.mla_fp8.prequant_bmm and .prequant_bmm_out), or None with a
    torch that cannot register them (unavailable_reason says why)."""
    return _entry()[1]


def _op_arguments(torch, WQ, w_scale, bias, YQ):
    """Whether the arguments fit the ops' schemas; others take the eager
    path, whose checks name the argument at fault."""
    if not isinstance(WQ, torch.Tensor):
        return False
    if not isinstance(w_scale, torch.Tensor) and (
            isinstance(w_scale, bool) or
            not isinstance(w_scale, (float, int))):
        return False
    return all(v is None or isinstance(v, torch.Tensor) for v in (bias, YQ))


def _plain(torch, values):
    """Whether every tensor of `values` is a torch.Tensor or Parameter, no
    subclass that wants the op (a FakeTensor, a FunctionalTensor)."""
    parameter = getattr(getattr(torch, "nn", None), "Parameter", None)
    plain = (torch.Tensor, parameter)
    return all(type(v) in plain for v in values  # noqa: E721
               if isinstance(v, torch.Tensor))


def call(X, WQ, w_scale, group_size, bias, dtype, YQ, transpose_bm,
         transpose_bm_in, chip):
    """The drop-in call with a torch X (arguments checked by the caller,
    bias already (B, N), dtype None when YQ is a tensor): through the op
    when torch traces it, else directly (see the module doc)."""
    torch, ops, tracing = _entry()
    if ops is None or (tracing is not None and not tracing() and
                       _plain(torch, (X, WQ, w_scale, bias, YQ))) or \
            not _op_arguments(torch, WQ, w_scale, bias, YQ):
        return run(X, WQ, w_scale, group_size, bias, dtype, YQ, transpose_bm,
                   transpose_bm_in, chip)
    op, out_op = ops
    out_dtype = None
    if YQ is None:
        out_dtype = (torch.float16 if serving._out_type(dtype) == "f16" else
                     torch.bfloat16)
    batch, m, _, n = serving._shapes(tuple(X.shape), tuple(WQ.shape),
                                     transpose_bm_in)
    y_shape = (m, batch, n) if transpose_bm else (batch, m, n)
    if (batch == 0 or m == 0) and (YQ is None or
                                   tuple(YQ.shape) == y_shape):
        # Nothing to compute (a data-parallel rank without tokens): no op
        # in the traced graph, and no fill of a float w_scale.
        return YQ if YQ is not None else X.new_empty(y_shape,
                                                     dtype=out_dtype)
    if not isinstance(w_scale, torch.Tensor):
        w_scale = torch.full((1,), float(w_scale), dtype=torch.float32,
                             device=X.device)
    if YQ is None:
        return op(X, WQ, w_scale, group_size, bias, out_dtype, transpose_bm,
                  transpose_bm_in, chip)
    out_op(X, WQ, w_scale, group_size, bias, YQ, transpose_bm,
           transpose_bm_in, chip)
    return YQ


def run(X, WQ, w_scale, group_size, bias, dtype, YQ, transpose_bm,
        transpose_bm_in, chip):
    """What the ops run: HIP for ROCm tensors, the emulator for CPU ones."""
    if X.device.type == "cpu":
        return _call_cpu(_torch(), X, WQ, w_scale, group_size, bias, dtype,
                         YQ, transpose_bm, transpose_bm_in, chip)
    return serving._call_hip(X, WQ, w_scale, group_size, bias, dtype, YQ,
                             transpose_bm, transpose_bm_in, chip)


def _bits(tensor, torch, int_dtype, np_dtype):
    """The tensor's memory as a numpy array of raw bits (shared, so that
    the emulator's writes land in the tensor)."""
    return tensor.detach().view(int_dtype).numpy().view(np_dtype)


def _call_cpu(torch, X, WQ, w_scale, group_size, bias, dtype, YQ,
              transpose_bm, transpose_bm_in, chip):
    """CPU tensors: the bundle's kernel on the gfx9 emulator."""
    for name, value in (("WQ", WQ), ("w_scale", w_scale), ("bias", bias),
                        ("YQ", YQ)):
        if value is None or (name == "w_scale" and
                             not isinstance(value, torch.Tensor)):
            continue
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name}: expected a torch tensor like X, got "
                            f"{type(value).__name__}")
        if value.device.type != "cpu":
            raise ValueError(f"{name}: on device {value.device}, X on cpu")
    in_type = {"bfloat16": "bf16", "float16": "f16"}.get(
        _dtype_name(X.dtype))
    if in_type is None:
        raise TypeError(f"X: expected dtype bfloat16 or float16, got "
                        f"{X.dtype}")
    x = _bits(X, torch, torch.int16, np.uint16)

    w_name = _dtype_name(WQ.dtype)
    w_format = serving._TORCH_FP8.get(w_name)
    if w_format is None and w_name != "uint8":
        raise TypeError(f"WQ: expected dtype float8_e4m3fnuz (gfx942), "
                        f"float8_e4m3fn (gfx950) or uint8 bits, got "
                        f"{WQ.dtype}")
    chip_source = "chip"
    if chip is None and not os.environ.get("MLA_FP8_EMULATE_CHIP") and \
            w_format is not None:
        # The weights' fp8 dtype says which chip's kernels take them.
        chip = next(c for c, f in CHIP_FP8_FORMATS.items() if f == w_format)
        chip_source = "WQ (its fp8 dtype)"
    emulated = chip or os.environ.get("MLA_FP8_EMULATE_CHIP") or \
        serving.DEFAULT_EMULATE_CHIP
    wanted = CHIP_FP8_FORMATS.get(emulated)
    if w_format is not None and wanted is not None and wanted != w_format:
        raise TypeError(f"WQ: {emulated} kernels take {wanted} weights, got "
                        f"{WQ.dtype} (see quantize_weights_for_chip)")
    w = _bits(WQ, torch, torch.uint8, np.uint8)

    if isinstance(w_scale, torch.Tensor):
        if _dtype_name(w_scale.dtype) != "float32":
            raise TypeError(f"w_scale: expected dtype float32, got "
                            f"{w_scale.dtype}")
        w_scale = w_scale.detach().numpy()

    out_type = serving._out_type(dtype)
    if YQ is not None:
        y_name = _dtype_name(YQ.dtype)
        if y_name not in _HALF_DTYPES:
            raise TypeError(f"YQ: expected dtype bfloat16 or float16, got "
                            f"{YQ.dtype}")
        out_type = "bf16" if y_name == "bfloat16" else "f16"
    out_type = out_type or "bf16"
    if bias is not None:
        if _dtype_name(bias.dtype) != ("bfloat16" if out_type == "bf16"
                                       else "float16"):
            raise TypeError(f"bias: expected the output type {out_type}, "
                            f"got {bias.dtype}")
        bias = _bits(bias, torch, torch.int16, np.uint16)
    y = None if YQ is None else _bits(YQ, torch, torch.int16, np.uint16)

    result = serving._call_emulated(x, w, w_scale, group_size, bias, out_type,
                                    y, transpose_bm, transpose_bm_in, chip,
                                    in_type=in_type, chip_source=chip_source)
    if YQ is not None:
        return YQ
    return torch.from_numpy(result.view(np.int16)).view(
        torch.bfloat16 if out_type == "bf16" else torch.float16)
