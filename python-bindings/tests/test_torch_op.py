"""The torch path's dispatch: the custom op mla_fp8::prequant_bmm, CPU
tensors on the emulator, AITER's dtype/YQ precedence.

Where a torch with torch.library.custom_op is installed, the tests at the end
run the real op (registration, fake implementation, opcheck, torch.compile).
Elsewhere (no torch, or Debian's torch 1.13) they skip with the reason, and a
numpy-backed fake torch module covers the same dispatch logic."""

import subprocess
import sys
import types

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import serving, torch_op

call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501

B, N, K = 16, 512, 128
FNUZ = "f8E4M3FNUZ"

# numpy storage of each fake dtype: bits for the narrow floats, as torch's
# .view(int16/uint8).numpy() gives them.
_STORAGE = {"bfloat16": np.uint16, "float16": np.uint16, "int16": np.int16,
            "uint8": np.uint8, "float8_e4m3fnuz": np.uint8,
            "float8_e4m3fn": np.uint8, "float32": np.float32}


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


def make_cpu_torch(with_library):
    """A torch module whose CPU tensors are numpy arrays; with_library adds
    a torch.library whose custom_op records registrations and calls the
    implementation eagerly, as the dispatcher does outside compilation, and
    the functions telling whether torch traces, which answer what
    `torch.tracing` says."""
    torch = types.ModuleType("torch")
    torch.__version__ = "2.99-fake" if with_library else "1.13-fake"
    dtypes = {name: FakeDtype(name) for name in _STORAGE}
    for name, dtype in dtypes.items():
        setattr(torch, name, dtype)

    class Tensor:
        def __init__(self, array, dtype, layout="torch.strided"):
            self.array, self.dtype, self.layout = array, dtype, layout
            self.device = types.SimpleNamespace(type="cpu")

        shape = property(lambda self: self.array.shape)

        def stride(self):
            return tuple(s // self.array.itemsize for s in self.array.strides)

        def detach(self):
            return self

        def view(self, dtype):
            return Tensor(self.array.view(_STORAGE[dtype.name]), dtype)

        def numpy(self):
            return self.array

        def new_empty(self, shape, dtype):
            return Tensor(np.empty(shape, _STORAGE[dtype.name]), dtype)

        def __getitem__(self, index):
            return Tensor(self.array[index], self.dtype)

    class Parameter(Tensor):
        pass

    torch.Tensor, torch.dtype = Tensor, FakeDtype
    torch.strided, torch.sparse_coo = "torch.strided", "torch.sparse_coo"
    torch.nn = types.SimpleNamespace(Parameter=Parameter)
    torch.from_numpy = lambda a: Tensor(a, dtypes[a.dtype.name])
    torch.full = lambda shape, value, dtype, device: Tensor(
        np.full(shape, value, _STORAGE[dtype.name]), dtype)
    torch.registered, torch.calls = {}, []
    if with_library:
        add_fake_library(torch)
    else:
        torch.library = types.SimpleNamespace()  # 1.13: define/impl only
    return torch


def add_fake_library(torch):
    """Gives a fake torch module a torch.library whose custom_op records
    registrations (torch.registered) and op calls (torch.calls) and calls
    the implementation eagerly, as the dispatcher does outside compilation,
    and the functions telling whether torch traces, which answer what
    `torch.tracing` says. Returns the module."""
    torch.registered, torch.calls = {}, []

    class OpDef:
        def __init__(self, name, mutates_args, fn):
            self.name, self.mutates_args, self.fn = name, mutates_args, fn
            self.fake = None

        def register_fake(self, fn):
            self.fake = fn

        def __call__(self, *args):
            torch.calls.append((self.name, args))
            return self.fn(*args)

    def custom_op(name, mutates_args):
        def register(fn):
            assert name not in torch.registered, "registered twice"
            torch.registered[name] = OpDef(name, mutates_args, fn)
            return torch.registered[name]
        return register

    torch.library = types.SimpleNamespace(custom_op=custom_op,
                                          register_fake=object())
    state = torch.tracing = dict(compiling=False, modes=0, interpreter=None,
                                 jit=None)
    torch.compiler = types.SimpleNamespace(
        is_compiling=lambda: state["compiling"])
    c = getattr(torch, "_C", None) or types.SimpleNamespace()
    c._len_torch_dispatch_stack = lambda: state["modes"]
    c._functorch = types.SimpleNamespace(
        peek_interpreter_stack=lambda: state["interpreter"])
    c._get_tracing_state = lambda: state["jit"]
    torch._C = c
    return torch


def tensor(torch, bits, dtype):
    return torch.Tensor(bits, getattr(torch, dtype))


def use_fake_torch(monkeypatch, session_bundle, with_library):
    module = make_cpu_torch(with_library)
    monkeypatch.setitem(sys.modules, "torch", module)
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(session_bundle))
    monkeypatch.delenv("MLA_FP8_EMULATE_CHIP", raising=False)
    serving.set_bundle(None)
    return module


@pytest.fixture(params=[True, False], ids=["custom_op", "torch_1_13"])
def torch(request, monkeypatch, session_bundle):
    """Each test runs with both: through the op, and directly."""
    yield use_fake_torch(monkeypatch, session_bundle, request.param)
    serving.set_bundle(None)


@pytest.fixture
def torch_with_library(monkeypatch, session_bundle):
    yield use_fake_torch(monkeypatch, session_bundle, True)
    serving.set_bundle(None)


def operands(torch, rng, m, chip="gfx942", n=N, k=K):
    x = mla_fp8.to_bf16_bits(rng.standard_normal((B, m, k)) * 0.5)
    w, ws = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((B, n, k)) * 0.1, chip)
    w_dtype = "float8_e4m3fnuz" if chip == "gfx942" else "float8_e4m3fn"
    return (x, w, ws, tensor(torch, x, "bfloat16"), tensor(torch, w, w_dtype),
            tensor(torch, ws, "float32"))


def assert_close(y_bits, ref_bits, out_type="bf16"):
    to_float = (mla_fp8.from_bf16_bits if out_type == "bf16" else
                mla_fp8.from_f16_bits)
    np.testing.assert_allclose(to_float(y_bits), to_float(ref_bits),
                               rtol=2e-2, atol=1e-2)


def test_import_registers_nothing():
    """Registration waits for the first torch call (and a torch that has
    custom_op): importing mla_fp8 never touches torch.library."""
    fake = make_cpu_torch(True)
    assert torch_op.unavailable_reason(fake) is None
    assert not fake.registered
    old = make_cpu_torch(False)
    assert "1.13-fake has no torch.library.custom_op" in \
        torch_op.unavailable_reason(old)
    assert torch_op.unavailable_reason(types.ModuleType("torch")) is not None


def test_import_imports_no_torch():
    """A fresh interpreter: importing mla_fp8 (and its shim) loads no
    torch, so a process without torch, or with an old one, imports it."""
    code = ("import sys, mla_fp8\n"
            "mla_fp8.install_aiter_shim()\n"
            "print('torch' in sys.modules)\n")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=120, check=False)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "False"


@pytest.mark.parametrize("name", ["X", "WQ", "w_scale", "bias", "YQ"])
def test_a_sparse_tensor_is_a_type_error_naming_it(torch, rng, name):
    """A sparse tensor has no strides: refused by name before anything
    reads it (torch's own error, NotImplementedError from .stride(), named
    no argument)."""
    m = 3
    _, _, _, X, WQ, WS = operands(torch, rng, m)
    args = dict(X=X, WQ=WQ, w_scale=WS, bias=None, YQ=None)
    dense = {"bias": tensor(torch, np.zeros((B, 1, N), np.uint16),
                            "bfloat16"),
             "YQ": tensor(torch, np.zeros((B, m, N), np.uint16),
                          "bfloat16")}
    args.update({k: v for k, v in dense.items() if k == name})
    value = args[name]
    args[name] = torch.Tensor(value.array, value.dtype, torch.sparse_coo)
    with pytest.raises(TypeError, match=f"^{name}: expected a dense tensor "
                       f"\\(torch.strided layout\\), got layout "
                       f"torch.sparse_coo"):
        call(args["X"], args["WQ"], args["w_scale"], bias=args["bias"],
             YQ=args["YQ"])


@pytest.mark.parametrize("transpose_bm", [False, True])
def test_cpu_tensors_run_on_the_emulator(torch, rng, transpose_bm):
    m = 5
    x, w, ws, X, WQ, WS = operands(torch, rng, m)
    Y = call(X, WQ, WS, group_size=128, transpose_bm=transpose_bm)
    assert str(Y.dtype) == "torch.bfloat16"
    assert Y.shape == ((m, B, N) if transpose_bm else (B, m, N))
    ref = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format=FNUZ,
                                         transpose_bm=transpose_bm)
    assert_close(Y.view(torch.int16).numpy().view(np.uint16), ref)
    # Registered once, whatever the number of calls; an eager call does
    # not go through it (see test_traced_calls_go_through_the_op).
    call(X, WQ, 0.5)
    assert len(torch.registered) in (0, 2) and not torch.calls


def test_yq_is_written_in_place_in_its_own_dtype(torch, rng, tmp_path_factory):
    """dtype=bf16 with an fp16 YQ does what AITER does: YQ's dtype wins."""
    directory = tmp_path_factory.mktemp("f16") / "f16"
    mla_fp8.generate_bundle(directory, tp=[8], chips=["gfx942"], max_m=16,
                            out_type="f16")
    serving.set_bundle(str(directory))
    m = 3
    x, w, ws, X, WQ, WS = operands(torch, rng, m)
    big = np.full((m, B + 2, N), 0x7777, np.uint16)
    YQ = tensor(torch, big, "float16")[:, 1:B + 1, :]
    out = call(X, WQ, WS, dtype=torch.bfloat16, YQ=YQ, transpose_bm=True)
    assert out is YQ
    ref = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format=FNUZ,
                                         transpose_bm=True, out_type="f16")
    assert_close(big[:, 1:B + 1], ref, "f16")
    assert np.all(big[:, 0] == 0x7777) and np.all(big[:, B + 1] == 0x7777)
    with pytest.raises(ValueError, match="^dtype: expected bfloat16"):
        call(X, WQ, WS, dtype="fp32", YQ=YQ, transpose_bm=True)
    with pytest.raises(TypeError, match="^YQ: expected dtype bfloat16"):
        call(X, WQ, WS, YQ=tensor(torch, np.zeros((B, m, N), np.float32),
                                  "float32"))


def test_bias_b1n_and_the_weights_chip(torch, rng, tmp_path_factory):
    """AITER's (B, 1, N) bias; e4m3fn weights select gfx950's kernels."""
    directory = tmp_path_factory.mktemp("bias") / "bias"
    mla_fp8.generate_bundle(directory, tp=[8], chips=["gfx950"], max_m=16,
                            bias=True)
    serving.set_bundle(str(directory))
    m = 2
    x, w, ws, X, WQ, WS = operands(torch, rng, m, chip="gfx950")
    bias = mla_fp8.to_bf16_bits(rng.standard_normal((B, N)))
    Y = call(X, WQ, WS, bias=tensor(torch, bias[:, None, :], "bfloat16"))
    ref = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format="f8E4M3FN",
                                         bias=bias)
    assert_close(Y.view(torch.int16).numpy().view(np.uint16), ref)
    with pytest.raises(TypeError, match="^WQ: gfx942 kernels take "
                                        "f8E4M3FNUZ weights"):
        call(X, WQ, WS, chip="gfx942")
    with pytest.raises(TypeError, match="^bias: expected the output type"):
        call(X, WQ, WS, bias=tensor(torch, bias.view(np.uint16)[:, None],
                                    "float16"))


def test_argument_errors(torch, rng):
    m = 2
    _, w, _, X, WQ, WS = operands(torch, rng, m)
    cases = [
        (TypeError, "^WQ: expected a torch tensor", dict(WQ=w)),
        (TypeError, "^X: expected dtype bfloat16 or float16",
         dict(X=tensor(torch, np.zeros((B, m, K), np.float32), "float32"))),
        (TypeError, "^WQ: expected dtype float8",
         dict(WQ=tensor(torch, np.zeros((B, N, K), np.float32), "float32"))),
        (TypeError, "^w_scale: expected dtype float32",
         dict(w_scale=tensor(torch, np.zeros(1, np.int16), "int16"))),
        (ValueError, "^WQ: shape", dict(WQ=WQ[:4])),
        (ValueError, "^splitK: expected None", dict(splitK=2)),
    ]
    for error, pattern, override in cases:
        kwargs = dict(X=X, WQ=WQ, w_scale=WS)
        kwargs.update(override)
        with pytest.raises(error, match=pattern):
            call(**kwargs)


@pytest.mark.parametrize("tracing", ["compiling", "dispatch_mode",
                                     "functorch", "jit", "subclass",
                                     "no_probe"])
def test_traced_calls_go_through_the_op(torch_with_library, rng, tracing):
    """Eager calls launch directly (torch's dispatch costs host time); a
    call that torch traces goes through the op, and so does every call
    with a torch that cannot say whether it traces."""
    torch = torch_with_library
    m = 5
    x, w, ws, X, WQ, WS = operands(torch, rng, m)
    ref = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format=FNUZ)
    if tracing == "no_probe":
        del torch.compiler
    else:
        eager = call(X, torch.nn.Parameter(WQ.array, WQ.dtype), WS)
        assert_close(eager.view(torch.int16).numpy().view(np.uint16), ref)
        assert not torch.calls and len(torch.registered) == 2
        if tracing == "subclass":
            class FakeTensor(torch.Tensor):
                pass
            X = FakeTensor(X.array, X.dtype)
        else:
            torch.tracing.update(dict(compiling=dict(compiling=True),
                                      dispatch_mode=dict(modes=1),
                                      functorch=dict(interpreter=object()),
                                      jit=dict(jit=object()))[tracing])
    Y = call(X, WQ, WS)
    assert_close(Y.view(torch.int16).numpy().view(np.uint16), ref)
    (name, args), = torch.calls
    assert name == torch_op.OP and args[0] is X and args[5] is torch.bfloat16
    assert torch.registered[torch_op.OP].mutates_args == ()
    YQ = tensor(torch, np.zeros((B, m, N), np.uint16), "bfloat16")
    assert call(X, WQ, WS, YQ=YQ) is YQ
    assert_close(YQ.numpy(), ref)
    (name, args) = torch.calls[-1]
    assert name == torch_op.OUT_OP and args[5] is YQ
    assert torch.registered[torch_op.OUT_OP].mutates_args == ("YQ",)


def test_fake_implementations_give_shapes_without_running(
        torch_with_library, rng):
    torch = torch_with_library
    _, _, _, X, WQ, WS = operands(torch, rng, 7)
    call(X, WQ, WS)
    op, out_op = (torch.registered[torch_op.OP],
                  torch.registered[torch_op.OUT_OP])
    Xt = X.view(torch.int16).numpy().transpose(1, 0, 2)
    Xt = tensor(torch, Xt.view(np.uint16), "bfloat16")
    Y = op.fake(Xt, WQ, WS, 128, None, torch.float16, True, True, None)
    assert Y.shape == (7, B, N) and Y.dtype is torch.float16
    assert Y.stride() == (B * N, N, 1)
    with pytest.raises(ValueError, match="^WQ: shape"):
        op.fake(X, WQ[:3], WS, 128, None, torch.bfloat16, False, False, None)
    out = tensor(torch, np.zeros((B, 7, N), np.uint16), "bfloat16")
    assert out_op.fake(X, WQ, WS, 128, None, out, False, False, None) is None
    with pytest.raises(ValueError,
                       match=r"^YQ: expected shape \(7, 16, 512\)"):
        out_op.fake(X, WQ, WS, 128, None, out, True, False, None)


# --- A real torch: CPU tensors with any version; the op where torch has
# torch.library.custom_op. ---

def real_torch(need_op):
    try:
        import torch  # noqa: E501 pylint: disable=import-outside-toplevel,redefined-outer-name
    except ImportError as error:
        pytest.skip(f"not run: torch is not installed ({error}); the fake "
                    f"torch tests above cover the dispatch")
    reason = torch_op.unavailable_reason(torch)
    if need_op and reason:
        pytest.skip(f"not run: {reason}; the fake torch tests above cover "
                    f"the dispatch")
    return torch


def use_real_torch(monkeypatch, session_bundle, need_op):
    torch = real_torch(need_op)
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(session_bundle))
    monkeypatch.delenv("MLA_FP8_EMULATE_CHIP", raising=False)
    serving.set_bundle(None)
    return torch


@pytest.fixture
def real(session_bundle, monkeypatch):
    yield use_real_torch(monkeypatch, session_bundle, True)
    serving.set_bundle(None)


@pytest.fixture
def real_any(session_bundle, monkeypatch):
    yield use_real_torch(monkeypatch, session_bundle, False)
    serving.set_bundle(None)


def test_real_cpu_tensors_any_torch(real_any, rng):
    """vLLM's K-up on CPU tensors: q_nope a strided (M, H, P) view of a
    larger tensor, the weights as uint8 bits (torch 1.13 has no float8),
    the output written into a slice of a larger tensor."""
    torch = real_any
    m, rope = 6, 64
    full = mla_fp8.to_bf16_bits(rng.standard_normal((m, B, K + rope)))
    w, ws = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((B, N, K)) * 0.1, "gfx942")
    X = torch.from_numpy(full.view(np.int16)).view(torch.bfloat16)[:, :, :K]
    big = torch.zeros((m, B, N + 8), dtype=torch.bfloat16)
    out = big[:, :, 4:N + 4]
    got = call(X, torch.from_numpy(w), torch.from_numpy(ws), YQ=out,
               transpose_bm=True, transpose_bm_in=True)
    assert got is out
    ref = mla_fp8.reference_prequant_bmm(
        np.ascontiguousarray(full[:, :, :K].transpose(1, 0, 2)), w, ws,
        fp8_format=FNUZ, transpose_bm=True)
    assert_close(out.view(torch.int16).numpy().view(np.uint16), ref)
    assert not big[:, :, :4].any() and not big[:, :, N + 4:].any()
    Y = call(X, torch.from_numpy(w), float(ws[0]), transpose_bm_in=True)
    assert Y.dtype == torch.bfloat16 and tuple(Y.shape) == (B, m, N)
    assert_close(Y.view(torch.int16).numpy().view(np.uint16),
                 ref.transpose(1, 0, 2))


def real_operands(torch, rng, m):
    x = mla_fp8.to_bf16_bits(rng.standard_normal((m, B, K)) * 0.5)
    w, ws = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((B, N, K)) * 0.1, "gfx942")
    X = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    WQ = torch.from_numpy(w).view(torch.float8_e4m3fnuz)
    return x, w, ws, X, WQ, torch.from_numpy(ws)


def test_real_op_against_the_reference(real, rng):
    torch = real
    x, w, ws, X, WQ, WS = real_operands(torch, rng, 9)
    Y = torch.ops.mla_fp8.prequant_bmm(X, WQ, WS, 128, None, torch.bfloat16,
                                       True, True, None)
    ref = mla_fp8.reference_prequant_bmm(
        np.ascontiguousarray(x.transpose(1, 0, 2)), w, ws, fp8_format=FNUZ,
        transpose_bm=True)
    assert_close(Y.view(torch.int16).numpy().view(np.uint16), ref)
    # opcheck's schema test compares inputs with allclose, which float8 CPU
    # tensors lack: the weights go in as their uint8 bits.
    bits = WQ.view(torch.uint8)
    torch.library.opcheck(torch.ops.mla_fp8.prequant_bmm.default,
                          (X, bits, WS, 128, None, torch.bfloat16, True, True,
                           None))
    out = torch.empty((9, B, N), dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.mla_fp8.prequant_bmm_out.default,
                          (X, bits, WS, 128, None, out, True, True, None))


def test_real_torch_compile_traces_through(real, rng):
    torch = real
    x, w, ws, X, WQ, WS = real_operands(torch, rng, 4)

    def k_up(q_nope, out):
        # vLLM's K-up: q_nope (M, H, P) in, (M, H, L) written in place.
        return call(q_nope, WQ, WS, group_size=128, bias=None,
                    dtype=torch.bfloat16, splitK=None, YQ=out,
                    transpose_bm=True, transpose_bm_in=True, config=None)

    compiled = torch.compile(k_up, backend="aot_eager", fullgraph=True)
    out = torch.empty((4, B, N), dtype=torch.bfloat16)
    compiled(X, out)
    ref = mla_fp8.reference_prequant_bmm(
        np.ascontiguousarray(x.transpose(1, 0, 2)), w, ws, fp8_format=FNUZ,
        transpose_bm=True)
    assert_close(out.view(torch.int16).numpy().view(np.uint16), ref)
