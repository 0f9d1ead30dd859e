"""vLLM's and SGLang's MLA decode calls for DeepSeek-R1 TP8, in their order
and with their arguments (upstream_mla says from which commits), through
the AITER shim: on the emulator with the numpy-backed CPU fake torch,
checked against the reference, and against the mocked HIP runtime, vLLM's
whole 1..1024 warm-up included."""

import os
import pathlib
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import hip, serving
import upstream_mla as up
from test_aiter_shim import clean_aiter  # noqa: F401 (autouse fixture)
from test_hip import FakeDevice, fake, unpack  # noqa: F401
from test_serving import assert_close
from test_torch_op import make_cpu_torch

B = up.HEADS
K_UP, V_UP = (512, 128), (128, 512)
TOKENS, PADDED = 5, 8  # decode tokens; rows of vLLM's graph-padded buffers


@pytest.fixture(scope="module")
def tp8_bundle(tmp_path_factory):
    """The default kernel set for DeepSeek-R1 TP8 (M up to 1024), as a
    server would be given."""
    directory = tmp_path_factory.mktemp("tp8") / "bundle"
    mla_fp8.generate_bundle(directory, model="deepseek-r1", tp=[8],
                            chips=["gfx942", "gfx950"])
    return directory


@pytest.fixture
def session_bundle(tp8_bundle):
    """Here the bundle that test_hip's `fake` fixture serves is tp8_bundle
    (the session one stops at M = 64)."""
    return tp8_bundle


@pytest.fixture
def cpu_torch(monkeypatch, tp8_bundle):
    """A torch with torch.library.custom_op whose CPU tensors are numpy
    arrays: the calls go through mla_fp8::prequant_bmm to the emulator."""
    torch = up.add_cpu_view_ops(make_cpu_torch(with_library=True))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.delenv("MLA_FP8_EMULATE_CHIP", raising=False)
    serving.set_bundle(tp8_bundle)
    yield torch
    serving.set_bundle(None)


@pytest.fixture(params=["gfx942", "gfx950"])
def hip_torch(request, fake):
    """test_hip's fake torch (tensors are addresses and strides) and mocked
    libamdhip64, on a device of the chip."""
    torch, lib = fake
    up.add_hip_view_ops(torch)
    torch.cuda.get_device_properties = lambda device: types.SimpleNamespace(
        gcnArchName=request.param + ":sramecc+:xnack-")
    return request.param, torch, lib


def mocked_vllm_layer(torch, chip):
    """A VllmMla whose weights are test_hip's fake tensors."""
    dev = FakeDevice()
    fp8 = getattr(torch, up.FP8[chip][0])
    return up.VllmMla(
        torch, up.aiter_function(), torch.Tensor((B, 512, 128), fp8, dev),
        torch.Tensor((), torch.float32, dev),
        torch.Tensor((B, 128, 512), fp8, dev),
        torch.Tensor((), torch.float32, dev))


def bf16_tensor(torch, rng, shape, scale=1.0):
    bits = mla_fp8.to_bf16_bits(rng.standard_normal(shape) * scale)
    return torch.Tensor(bits, torch.bfloat16)


def fp8_tensor(torch, bits, chip):
    return torch.Tensor(bits, getattr(torch, up.FP8[chip][0]))


def scale_tensor(torch, value):
    return torch.Tensor(np.array(value, dtype=np.float32), torch.float32)


def emulated_vllm_layer(torch, chip, w_k, w_k_scale, w_v, w_v_scale):
    """A VllmMla whose weights are CPU tensors of vllm_weights' values."""
    return up.VllmMla(torch, up.aiter_function(),
                      fp8_tensor(torch, w_k, chip),
                      scale_tensor(torch, w_k_scale),
                      fp8_tensor(torch, w_v, chip),
                      scale_tensor(torch, w_v_scale))


def reference(x, w, scale, chip, **kwargs):
    return mla_fp8.reference_prequant_bmm(x, w, scale,
                                          fp8_format=up.FP8[chip][1],
                                          **kwargs)


def test_vllm_weight_quantization(rng):
    """dynamic_per_batched_tensor_quant's convention: one descale per
    tensor, amax / finfo.max up to bf16 rounding, fp8 values within
    rounding of W / descale."""
    w = up.kv_b_proj_weight(rng)
    for chip in ("gfx942", "gfx950"):
        w_k, w_k_scale, w_v, w_v_scale = up.vllm_weights(w, chip)
        assert w_k.shape == (B, 512, 128) and w_v.shape == (B, 128, 512)
        assert w_k.flags.c_contiguous and w_v.flags.c_contiguous
        kv_b = w.T.reshape(512, B, 256)
        for bits, descale, original in (
                (w_k, w_k_scale, kv_b[..., :128].transpose(1, 0, 2)),
                (w_v, w_v_scale, kv_b[..., 128:].transpose(1, 2, 0))):
            amax = np.abs(original).max()
            assert descale.dtype == np.float32
            assert abs(descale - amax / up.FP8[chip][2]) <= 0.01 * descale
            values = mla_fp8.dequantize_fp8(bits, up.FP8[chip][1]) * descale
            assert np.all(np.abs(values - original) <=
                          0.07 * np.abs(original) + 2 * descale)


@pytest.mark.parametrize("chip", ["gfx942", "gfx950"])
def test_vllm_decode_step_emulated(cpu_torch, rng, chip):
    torch = cpu_torch
    w_k, w_k_scale, w_v, w_v_scale = weights = up.vllm_weights(
        up.kv_b_proj_weight(rng), chip)
    layer = emulated_vllm_layer(torch, chip, *weights)
    # K-up: X is (N, B, P) = q[:5].view(...)[..., :128].transpose(0, 1).
    q = bf16_tensor(torch, rng, (PADDED, B * up.QK_HEAD))
    x, ql_nope = layer.qk(q, TOKENS)
    assert x.array.strides == (2 * up.QK_HEAD, 2 * B * up.QK_HEAD, 2)
    assert np.shares_memory(x.array, q.array)
    assert ql_nope.shape == (TOKENS, B, 512)
    assert_close(ql_nope.array, reference(x.array, w_k, w_k_scale, chip,
                                          transpose_bm=True))
    # V-up: into output[:5] seen as (tokens, N, V); the padding rows stay.
    attn_out = bf16_tensor(torch, rng, (TOKENS, B, up.KV_LORA_RANK), 0.5)
    output = torch.Tensor(np.zeros((PADDED, B * up.V_HEAD), np.uint16),
                          torch.bfloat16)
    x, out, result = layer.uv(attn_out, output, TOKENS)
    assert result is out and out.shape == (TOKENS, B, up.V_HEAD)
    assert np.shares_memory(out.array, output.array)
    expected = reference(x.array, w_v, w_v_scale, chip, transpose_bm=True)
    assert_close(output.array[:TOKENS].reshape(TOKENS, B, up.V_HEAD),
                 expected)
    assert not output.array[TOKENS:].any()


@pytest.mark.parametrize("chip", ["gfx942", "gfx950"])
def test_sglang_decode_step_emulated(cpu_torch, rng, chip):
    """K-up on both chips (gfx942 takes the fp8 kernel only while a graph
    is captured, which the emulator does not model); V-up on gfx950 only,
    where SGLang calls it (torch.bmm on gfx942)."""
    torch = cpu_torch
    w_kc, w_vc, w_scale = up.sglang_weights(up.kv_b_proj_weight(rng), chip)
    layer = up.SglangMla(torch, up.aiter_function(),
                         fp8_tensor(torch, w_kc, chip),
                         fp8_tensor(torch, w_vc, chip),
                         scale_tensor(torch, w_scale))
    # WQ = w_kc.transpose(-1, -2) is contiguous as post_load_weights
    # stores w_kc; the same holds for w_vc.
    assert w_kc.transpose(0, 2, 1).flags.c_contiguous
    assert w_vc.transpose(0, 2, 1).flags.c_contiguous
    q = bf16_tensor(torch, rng, (TOKENS, B * up.QK_HEAD))
    q_nope, out, q_nope_out = layer.k_up(q)
    assert q_nope.shape == (TOKENS, B, 128)
    assert out.shape == (B, TOKENS, 512)
    assert q_nope_out.shape == (TOKENS, B, 512)
    assert_close(out.array, reference(q_nope.array.transpose(1, 0, 2),
                                      w_kc.transpose(0, 2, 1).copy(),
                                      w_scale, chip))
    if chip != "gfx950":
        return
    attn_output = bf16_tensor(torch, rng, (TOKENS, B * up.KV_LORA_RANK), 0.5)
    x, y = layer.v_up(attn_output)
    assert y.shape == (B, TOKENS, up.V_HEAD)
    assert_close(y.array, reference(x.array.transpose(1, 0, 2),
                                    w_vc.transpose(0, 2, 1).copy(), w_scale,
                                    chip))


def test_vllm_warm_up_emulated(cpu_torch, rng, tp8_bundle):
    """The warm-up's calls at the smallest M whose rows (B * M, B = 16)
    reach each kernel's range, up to M = 256, K-up's and V-up's (on the
    emulator one call costs about 0.3 s at M = 1 and grows with M to about
    18 s at M = 1024, so the whole loop is left to the mocked runtime
    below). Each M picks another kernel of one projection or both; within a
    range only the grid and the row guard change with M. torch.empty's
    contents are whatever memory held: here they are random, to check the
    results."""
    torch = cpu_torch
    chip = "gfx942"
    w_k, w_k_scale, w_v, w_v_scale = weights = up.vllm_weights(
        up.kv_b_proj_weight(rng), chip)
    layer = emulated_vllm_layer(torch, chip, *weights)
    kernels = [k for k in mla_fp8.load_bundle(tp8_bundle).kernels()
               if k.chip == chip and (k.n, k.k) in (K_UP, V_UP) and
               k.in_type == "bf16"]
    # The smallest M at B = 16 whose rows reach the kernel's range.
    ms = sorted({-(-k.min_rows // B) for k in kernels
                 if k.min_rows <= 256 * B})
    # K-up's ranges start at rows 1, 513, 2049 and 8193 (M 1, 33, 129, 513:
    # past M = 256); V-up's at 1, 2049, 4097 and 8193 (M 1, 129, 257, 513:
    # the last two past M = 256; 16385 up is not planned for 1024 * 16 rows).
    assert sorted({(k.n, k.min_rows) for k in kernels}) == [
        (128, 1), (128, 2049), (128, 4097), (128, 8193),
        (512, 1), (512, 513), (512, 2049), (512, 8193)]
    assert ms == [1, 33, 129], ms
    bundle = mla_fp8.load_bundle(tp8_bundle)
    # Each M but the first begins a range of one projection.
    for m in ms[1:]:
        assert any(bundle.find_kernel(chip, n, k, m, B) is not
                   bundle.find_kernel(chip, n, k, m - 1, B)
                   for n, k in (K_UP, V_UP)), m

    def fill(x):
        x.array[...] = mla_fp8.to_bf16_bits(
            rng.standard_normal(x.shape) * 0.5)

    calls = layer.warm_up(ms, fill)
    assert len(calls) == 2 * len(ms)
    for (x, y), (w, scale) in zip(calls, [(w_k, w_k_scale),
                                          (w_v, w_v_scale)] * len(ms)):
        m = x.shape[1]
        assert y.shape == (m, B, w.shape[1])
        assert_close(y.array, reference(x.array, w, scale, chip,
                                        transpose_bm=True))


def test_vllm_warm_up_mocked_hip(hip_torch, tp8_bundle):
    """The whole loop, M = 1..1024, on the mocked HIP runtime: one launch
    per call, each with the bundle's kernel for M, its grid and the
    layout (B, M, K) in, (M, B, N) out; nothing compiled, allocated with
    hipMalloc or loaded twice."""
    chip, torch, lib = hip_torch
    calls = mocked_vllm_layer(torch, chip).warm_up()
    assert len(calls) == len(lib.launches) == 2 * len(up.WARMUP_M)
    bundle = mla_fp8.load_bundle(tp8_bundle)
    used = set()
    for (x, y), launch, (n, k) in zip(calls, lib.launches,
                                      [K_UP, V_UP] * len(up.WARMUP_M)):
        m = x.shape[1]
        kernel = bundle.find_kernel(chip, n, k, m, B)
        assert kernel.serves(m, B)
        used.add(kernel.symbol)
        # hip_mock's handle: the module's, then the symbol's length.
        assert launch["function"] & 0xff == len(kernel.symbol) & 0xff
        assert launch["function"] >> 8 in lib.module_devices
        assert launch["grid"] == kernel.grid(m, B)
        values = unpack(kernel, launch["kernargs"])
        assert values["m"] == m and values["x"] == x.data_ptr()
        assert (values["x_stride_b"], values["x_stride_m"]) == (m * k, k)
        assert y.shape == (m, B, n) and values["y"] == y.data_ptr()
        assert (values["y_stride_b"], values["y_stride_m"]) == (n, B * n)
    # Every bf16 kernel of the chip (the bundle also has f16 ones).
    assert used == {c.symbol for c in bundle.kernels()
                    if c.chip == chip and c.in_type == "bf16"}
    loads = [c for c in lib.calls if c[0] == "hipModuleLoadData"]
    assert len(loads) == 1 and not lib.mallocs


def test_vllm_decode_step_mocked_hip(hip_torch, tp8_bundle):
    """K-up reads q_nope in place (strides of q); V-up writes the rows of
    vLLM's output buffer through YQ=out."""
    chip, torch, lib = hip_torch
    dev = FakeDevice()
    layer = mocked_vllm_layer(torch, chip)
    q = torch.Tensor((PADDED, B * up.QK_HEAD), torch.bfloat16, dev)
    _, ql_nope = layer.qk(q, TOKENS)
    attn_out = torch.Tensor((TOKENS, B, 512), torch.bfloat16, dev)
    output = torch.Tensor((PADDED, B * up.V_HEAD), torch.bfloat16, dev)
    _, out, result = layer.uv(attn_out, output, TOKENS)
    assert result is out and ql_nope.shape == (TOKENS, B, 512)
    bundle = mla_fp8.load_bundle(tp8_bundle)
    k_up, v_up = lib.launches
    values = unpack(bundle.find_kernel(chip, *K_UP, TOKENS, B),
                    k_up["kernargs"])
    assert values["x"] == q.data_ptr() and values["m"] == TOKENS
    assert (values["x_stride_b"], values["x_stride_m"]) == (
        up.QK_HEAD, B * up.QK_HEAD)
    assert values["y"] == ql_nope.data_ptr()
    values = unpack(bundle.find_kernel(chip, *V_UP, TOKENS, B),
                    v_up["kernargs"])
    assert values["x"] == attn_out.data_ptr()
    assert (values["x_stride_b"], values["x_stride_m"]) == (512, B * 512)
    assert values["y"] == output.data_ptr()
    assert (values["y_stride_b"], values["y_stride_m"]) == (
        up.V_HEAD, B * up.V_HEAD)
    assert k_up["stream"] == v_up["stream"] == torch.streams[0]


def test_sglang_decode_step_mocked_hip(hip_torch, tp8_bundle):
    """SGLang's K-up (on gfx942 while a decode graph is captured: reserved
    with mla_fp8.prepare first, nothing allocated during the capture) and,
    on gfx950, its V-up."""
    chip, torch, lib = hip_torch
    dev = FakeDevice()
    fp8 = getattr(torch, up.FP8[chip][0])
    # post_load_weights' layouts: WQ = w.transpose(-1, -2) is contiguous.
    w_kc = torch.Tensor((B, 512, 128), fp8, dev).transpose(1, 2)
    w_vc = torch.Tensor((B, 128, 512), fp8, dev).transpose(1, 2)
    layer = up.SglangMla(torch, up.aiter_function(), w_kc, w_vc,
                         torch.Tensor((), torch.float32, dev))
    stream = torch.streams[0]
    if chip == "gfx942":
        mla_fp8.prepare(captures=1)
        lib.capturing[stream] = (hip.CAPTURE_ACTIVE, 7)
        allocations = len(torch.allocations)
    q = torch.Tensor((TOKENS, B * up.QK_HEAD), torch.bfloat16, dev)
    q_nope, out, _ = layer.k_up(q)
    bundle = mla_fp8.load_bundle(tp8_bundle)
    values = unpack(bundle.find_kernel(chip, *K_UP, TOKENS, B),
                    lib.launches[0]["kernargs"])
    assert values["x"] == q.data_ptr() and q_nope.shape == (TOKENS, B, 128)
    assert (values["x_stride_b"], values["x_stride_m"]) == (
        up.QK_HEAD, B * up.QK_HEAD)
    assert out.shape == (B, TOKENS, 512) and values["y"] == out.data_ptr()
    assert (values["y_stride_b"], values["y_stride_m"]) == (
        TOKENS * 512, 512)
    if chip == "gfx942":
        assert not lib.mallocs
        # Only the output tensor comes from torch's allocator meanwhile.
        assert [t.dtype for t, _ in torch.allocations[allocations:]] == [
            torch.bfloat16]
        assert len(lib.launches) == 1
        return
    attn_output = torch.Tensor((TOKENS, B * 512), torch.bfloat16, dev)
    x, y = layer.v_up(attn_output)
    values = unpack(bundle.find_kernel(chip, *V_UP, TOKENS, B),
                    lib.launches[1]["kernargs"])
    assert values["x"] == attn_output.data_ptr() and x.shape == (TOKENS, B,
                                                                  512)
    assert (values["x_stride_b"], values["x_stride_m"]) == (512, B * 512)
    assert y.shape == (B, TOKENS, up.V_HEAD)


def test_warm_up_bench(tp8_bundle):
    """bench/warmup.py runs the same loop and reports its times."""
    script = pathlib.Path(__file__).resolve().parents[2] / "bench" / \
        "warmup.py"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(
        os.path.dirname(mla_fp8.__file__)))
    child = subprocess.run(
        [sys.executable, str(script), "--bundle", str(tp8_bundle), "--chip",
         "gfx950", "--repeat", "1"], env=env, capture_output=True,
        text=True, timeout=300, check=False)
    assert child.returncode == 0, child.stderr
    lines = child.stdout.splitlines()
    assert lines[0] == ("vLLM warm-up, DeepSeek-R1 TP8 on gfx950 (mocked "
                        "HIP): 2048 calls (M = 1..1024, K-up and V-up)")
    assert re.fullmatch(r"  first pass: +[\d.]+ ms total, +[\d.]+ us median "
                        r"per call \(loads the code object\)", lines[1])
    assert re.fullmatch(r"  later passes: +[\d.]+ ms total \(median of 1\), "
                        r"+[\d.]+ us median per call, +[\d.]+ us p99",
                        lines[2])
