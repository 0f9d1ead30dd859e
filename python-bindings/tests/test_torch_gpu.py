"""The custom op with a real, recent torch and its tensors on a real GPU:
what vLLM's torch.compile and CUDA/HIP graph capture do with it.

On a ROCm machine the kernels would run on the GPU. Where these tests run
(a CUDA GPU: there is no AMD GPU here) the launches go to hip_mock's mocked
libamdhip64, with two of its answers made real: a launch writes zeros into
the rows of Y that the kernel arguments describe, on the real stream (so
that a wrong pointer or stride shows, and torch sees a deterministic
output), and a stream's capture status and id are the CUDA runtime's
(the launcher is told that torch is a ROCm build). What
is checked is torch's side, for real: the op's registration and schema,
its fake implementation under opcheck, torch.compile with a dynamic token
count, graph capture and replay. The numbers are the emulator tests'.

Needs a torch with torch.library.custom_op, a CUDA device, the CUDA
runtime library, and a bundle: the session's where the compiler is built,
else $MLA_FP8_TEST_BUNDLE (and $MLA_FP8_TEST_SPLIT_K_BUNDLE, a bundle of
split-K kernels, for the workspace test). Skips visibly without them; CI
has no GPU.
"""

import ctypes
import importlib.util
import os
import struct

import pytest

import mla_fp8
from mla_fp8 import _abi, _hip_call, hip, serving, torch_op
from hip_mock import FakeHip, _value

call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501

B, L, P, ROPE = 16, 512, 128, 64


def _torch():
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        pytest.skip(f"not run: torch is not installed ({error})")
    reason = torch_op.unavailable_reason(torch)
    if reason:
        pytest.skip(f"not run: {reason}")
    if not torch.cuda.is_available() or torch.version.cuda is None:
        pytest.skip("not run: no CUDA device (on ROCm the real HIP runtime "
                    "launches; test_torch_op.py covers the op on the CPU)")
    return torch


def _cudart():
    with open("/proc/self/maps", encoding="utf-8") as maps:
        paths = {line.split()[-1] for line in maps if "libcudart.so" in line}
    for name in sorted(paths) + ["libcudart.so.13", "libcudart.so.12",
                                 "libcudart.so"]:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    pytest.skip("not run: no CUDA runtime library (libcudart) to load")
    return None


def _bundle(request, variable, fixture):
    if os.environ.get(variable):
        return os.environ[variable]
    if importlib.util.find_spec("mla_fp8._mla_fp8_compiler") is None:
        pytest.skip(f"not run: no compiler to generate a bundle, and "
                    f"${variable} is not set")
    return request.getfixturevalue(fixture)


def _arg(kernargs, name):
    arg = _abi.KERNEL_ARGS_BY_NAME[name]
    return struct.unpack_from("<Q", kernargs, arg.offset)[0]


class CudaBackedHip(FakeHip):
    """hip_mock's runtime whose launches clear Y's rows and whose capture
    answers are CUDA's for the same stream."""

    def __init__(self, cudart, bundle):
        super().__init__()
        self.cudart, self.bundle = cudart, bundle
        self.symbols = {}
        cudart.cudaMemset2DAsync.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_size_t,
            ctypes.c_size_t, ctypes.c_void_p]
        cudart.cudaStreamGetCaptureInfo.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_ulonglong)] + [ctypes.c_void_p] * 4

    def _capture(self, stream):
        status, capture = ctypes.c_int(), ctypes.c_ulonglong()
        # Unused trailing outputs are null, in every version's signature.
        assert self.cudart.cudaStreamGetCaptureInfo(
            stream.value or None, ctypes.byref(status), ctypes.byref(capture),
            None, None, None, None) == 0
        return status.value, capture.value

    def _hipModuleGetFunction(self, out, module, name):
        # A handle per symbol (the mock's own is per name length), which
        # still says its module's.
        handle = (_value(module) << 8) + len(self.symbols) % 256
        self.symbols[handle] = getattr(name, "decode", lambda: name)()
        out._obj.value = handle
        return 0

    def _hipStreamIsCapturing(self, stream, status):
        status._obj.value = self._capture(stream)[0]
        return 0

    def _hipStreamGetCaptureInfo(self, stream, status, capture):
        status._obj.value, capture._obj.value = self._capture(stream)
        return 0

    def _hipModuleLaunchKernel(self, *args):
        result = super()._hipModuleLaunchKernel(*args)
        launch = self.launches[-1]
        kernargs, (_, _, batch) = launch["kernargs"], launch["grid"]
        symbol = self.symbols[launch["function"]]
        n = next(k.n for k in self.bundle.kernels() if k.symbol == symbol)
        y, m = _arg(kernargs, "y"), _arg(kernargs, "m")
        stride_b, stride_m = (_arg(kernargs, "y_stride_b"),
                              _arg(kernargs, "y_stride_m"))
        for b in range(batch):
            assert self.cudart.cudaMemset2DAsync(
                y + 2 * b * stride_b, 2 * stride_m, 0, 2 * n, m,
                launch["stream"] or None) == 0
        return result


@pytest.fixture
def gpu(request, monkeypatch):
    """(torch, the mocked runtime) with the bundle set as the drop-in's."""
    torch = _torch()
    directory = _bundle(request, "MLA_FP8_TEST_BUNDLE", "session_bundle")
    serving.set_bundle(directory)
    # The launcher takes "cuda" tensors for a ROCm device's where torch is
    # a ROCm build; this one is CUDA's, and the runtime is the mock.
    monkeypatch.setattr(_hip_call, "is_rocm_build", lambda torch: True)
    lib = CudaBackedHip(_cudart(), serving.get_bundle())
    monkeypatch.setattr(hip, "find_hip_library", lambda: "libamdhip64.so")
    hip.reset_runtime()
    hip.get_runtime(loader=lambda path: lib)
    yield torch, lib
    hip.reset_runtime()
    serving.set_bundle(None)


# The device is not an AMD GPU, so every call names the chip whose kernels
# it takes (the bundle's gfx942 ones).


def _weights(torch, n, k):
    w = torch.randn((B, n, k), device="cuda") * 0.1
    return (w.to(torch.float8_e4m3fnuz),
            torch.ones((), dtype=torch.float32, device="cuda"))


def test_the_op_registers_with_this_torch(gpu):
    torch, _ = gpu
    torch_op.register()
    schema = str(torch.ops.mla_fp8.prequant_bmm.default._schema)
    assert schema.startswith("mla_fp8::prequant_bmm(Tensor X, Tensor WQ, ")
    schema = str(torch.ops.mla_fp8.prequant_bmm_out.default._schema)
    assert "Tensor(a" in schema and "YQ" in schema


def test_opcheck_on_the_gpu(gpu):
    torch, lib = gpu
    torch_op.register()
    X = torch.randn((B, 5, P), dtype=torch.bfloat16, device="cuda")
    WQ, scale = _weights(torch, L, P)
    # opcheck compares inputs with allclose, which float8 lacks: the
    # weights go in as their bits, with the chip named.
    bits = WQ.view(torch.uint8)
    torch.library.opcheck(torch.ops.mla_fp8.prequant_bmm.default,
                          (X, bits, scale, 128, None, torch.bfloat16, False,
                           False, "gfx942"))
    out = torch.full((B, 5, L), 7.0, dtype=torch.bfloat16, device="cuda")
    torch.library.opcheck(torch.ops.mla_fp8.prequant_bmm_out.default,
                          (X, bits, scale, 128, None, out, False, False,
                           "gfx942"))
    assert lib.launches


def test_compile_with_a_dynamic_token_count(gpu, monkeypatch):
    """vLLM's K-up, compiled whole (inductor) once for every token count:
    q_nope a strided view of q, written in place into a slice of a larger
    buffer whose margins must survive."""
    torch, lib = gpu
    WQ, scale = _weights(torch, L, P)

    def k_up(q_nope, out):
        return call(q_nope, WQ, scale, group_size=128, bias=None,
                    dtype=torch.bfloat16, splitK=None, YQ=out,
                    transpose_bm=True, transpose_bm_in=True, config=None,
                    chip="gfx942")

    torch._dynamo.reset()  # pylint: disable=protected-access
    compiled = torch.compile(k_up, fullgraph=True, dynamic=True)
    for m in (3, 5, 9, 17):
        q = torch.randn((m, B, P + ROPE), dtype=torch.bfloat16, device="cuda")
        big = torch.full((m, B, L + 8), 7.0, dtype=torch.bfloat16,
                         device="cuda")
        out = big[:, :, 4:L + 4]
        compiled(q[:, :, :P], out)
        torch.cuda.synchronize()
        # One graph serves every M after the first.
        monkeypatch.setattr(torch._dynamo.config, "error_on_recompile", True)
        launch = lib.launches[-1]["kernargs"]
        assert _arg(launch, "m") == m
        assert _arg(launch, "x") == q.data_ptr()
        assert _arg(launch, "y") == out.data_ptr()
        assert not bool(out.any()), m
        assert bool((big[:, :, :4] == 7).all()) and \
            bool((big[:, :, L + 4:] == 7).all()), m
    assert len(lib.launches) == 4


def test_graph_capture_and_replay(gpu):
    """Decode's K-up and V-up captured once and replayed: the launches are
    made at capture, on the capturing stream, with nothing allocated."""
    torch, lib = gpu
    w_k, scale = _weights(torch, L, P)
    w_v, _ = _weights(torch, P, L)
    m = 8
    q = torch.randn((m, B, P), dtype=torch.bfloat16, device="cuda")
    latent = torch.randn((B, m, L), dtype=torch.bfloat16, device="cuda")
    out = torch.full((m, B * P), 7.0, dtype=torch.bfloat16, device="cuda")

    def decode():
        ql = call(q, w_k, scale, transpose_bm=True, transpose_bm_in=True,
                  chip="gfx942")
        call(latent, w_v, scale, YQ=out.view(m, B, P), transpose_bm=True,
             chip="gfx942")
        return ql

    decode()  # warm-up: plans and modules outside the capture
    torch.cuda.synchronize()
    mallocs, before = lib.mallocs, len(lib.launches)
    out.fill_(7.0)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ql = decode()
    assert len(lib.launches) == before + 2 and lib.mallocs == mallocs
    assert lib.launches[-1]["stream"] != 0
    graph.replay()
    torch.cuda.synchronize()
    assert not bool(out.any()) and not bool(ql.any())


def test_split_k_workspace_under_capture(gpu, request):
    """A split-K kernel's workspace: refused while capturing unless
    prepare() reserved it, and never allocated during the capture."""
    torch, lib = gpu
    serving.set_bundle(_bundle(request, "MLA_FP8_TEST_SPLIT_K_BUNDLE",
                               "split_k_bundle"))
    lib.bundle = serving.get_bundle()
    w_v, scale = _weights(torch, P, L)
    latent = torch.randn((B, 8, L), dtype=torch.bfloat16, device="cuda")

    def v_up():
        return call(latent, w_v, scale, chip="gfx942")

    graph = torch.cuda.CUDAGraph()
    with pytest.raises(hip.GraphCaptureError,
                       match="prepare"):
        with torch.cuda.graph(graph):
            v_up()
    assert mla_fp8.prepare(max_m=8, captures=1) > 0
    mallocs = lib.mallocs
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = v_up()
    assert lib.mallocs == mallocs
    graph.replay()
    torch.cuda.synchronize()
    assert not bool(y.any())


def test_empty_batches_launch_nothing(gpu, request):
    """M = 0 (a data-parallel rank without tokens) and B = 0: eager,
    compiled and captured calls launch nothing, a float w_scale is not
    filled into a tensor, YQ's buffer keeps its values, and a capture that
    makes only such calls records nothing (torch says the graph is empty),
    even with split-K kernels and no workspace reserved."""
    torch, lib = gpu
    serving.set_bundle(_bundle(request, "MLA_FP8_TEST_SPLIT_K_BUNDLE",
                               "split_k_bundle"))
    lib.bundle = serving.get_bundle()
    w_k, scale = _weights(torch, L, P)
    w_v, _ = _weights(torch, P, L)
    big = torch.full((2, B, L), 7.0, dtype=torch.bfloat16, device="cuda")
    q = torch.randn((2, B, P + ROPE), dtype=torch.bfloat16,
                    device="cuda")[:0, :, :P]
    latent = torch.randn((B, 0, L), dtype=torch.bfloat16, device="cuda")
    no_heads = torch.randn((0, 3, L), dtype=torch.bfloat16, device="cuda")

    def calls(q, latent, no_heads, out):
        # vLLM's K-up into YQ with a float scale, its V-up, and B = 0.
        return (call(q, w_k, 0.5, YQ=out, transpose_bm=True,
                     transpose_bm_in=True, chip="gfx942"),
                call(latent, w_v, scale, transpose_bm=True, chip="gfx942"),
                call(no_heads, w_v[:0], 0.5, chip="gfx942"))

    def check(results, yq=None):
        ql, out, none = results
        assert tuple(ql.shape) == (0, B, L) and (yq is None or ql is yq)
        assert tuple(out.shape) == (0, B, P) and out.dtype == torch.bfloat16
        assert tuple(none.shape) == (0, 3, P)

    yq = big[:0]
    check(calls(q, latent, no_heads, yq), yq)
    torch._dynamo.reset()  # pylint: disable=protected-access
    compiled = torch.compile(calls, fullgraph=True, dynamic=True)
    check(compiled(q, latent, no_heads, yq))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with pytest.warns(UserWarning, match="CUDA Graph is empty"):
        with torch.cuda.graph(graph):
            results = calls(q, latent, no_heads, yq)
    check(results, yq)
    assert not lib.launches and not lib.mallocs and not lib.memset
    torch.cuda.synchronize()
    assert bool((big == 7).all())
