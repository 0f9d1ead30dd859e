"""The calls vLLM's and SGLang's MLA decode paths make to AITER's
batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant, for
DeepSeek-R1 at TP 8 (16 heads per GPU), replayed in their order through
mla_fp8's AITER shim on the tests' fake torch modules.

Read from these upstream snapshots (repository, commit, file: what):

* vllm-project/vllm 00a817ada81626793c9e2432903ee4c5b33ab33a,
  vllm/v1/attention/backends/mla/common.py: the import from AITER's flat
  module path; dynamic_per_batched_tensor_quant (one fp8 scale per weight
  tensor, DTYPE_MAX = torch.finfo(fp8).max, descale = 1 / (DTYPE_MAX /
  amax)); process_weights_after_loading (W_K = W_UK.transpose(0, 1),
  W_V = W_UV.permute(1, 2, 0), the warm-up over M = 1..1024); forward
  (q.view(-1, N, qk_head_dim), q[:num_decode_tokens], split into nope/pe,
  q_nope.transpose(0, 1) as X with transpose_bm=True).
* vllm-project/vllm 3c62301d3b2d357d2ae630ab50550315cd4f14c9,
  vllm/model_executor/layers/attention/mla_attention.py: the same q_nope
  view into mla_bmm.qk; _v_up_proj: x.view(-1, N, L).transpose(0, 1) and
  out.view(-1, N, V) into mla_bmm.uv, out = output[:num_decode_tokens].
* vllm-project/vllm 2d3de1491ef1a18812327ca75efce8c7e0e671e6,
  vllm/model_executor/layers/attention/mla_bmm.py: Fp8MLABmm.qk (K-up,
  transpose_bm=True), .uv (V-up, transpose_bm=True, YQ=out), ._warm_up
  (for m in 1..1024: X = torch.empty((B, m, K)) for W_K then W_V).
* vllm-project/vllm 0002bde560dd9adcabb28b0da32f47d4c020e799,
  vllm/_aiter_ops.py: triton_fp8_bmm passes group_size, bias, dtype
  (bf16), splitK, YQ, transpose_bm and config through, by keyword.
* sgl-project/sglang 005ffc65dc0f72d42a1436c31ef129ed98cccc58,
  python/sglang/srt/models/deepseek_common/attention_forward_methods/
  forward_mla.py: forward_absorb_prepare (K-up: X=q_nope as (M, B, K),
  WQ=w_kc.transpose(-1, -2), transpose_bm_in=True, YQ=None; the fp8 Triton
  kernel always on gfx950, on gfx942 only while a graph is captured) and
  forward_absorb_core (V-up on gfx950: X=attn_output.view(-1, N, L),
  WQ=w_vc.transpose(-1, -2), the same w_scale; torch.bmm on gfx942).
* sgl-project/sglang 0201c04e983820f371aedd97154d07453badd814,
  python/sglang/srt/models/deepseek_common/deepseek_weight_loader.py:
  post_load_weights (block_quant_to_tensor_quant of kv_b_proj, one scale
  for w_kc and w_vc; w_kc stored transpose(1, 2).contiguous().transpose(1,
  2), w_vc contiguous().transpose(1, 2)); the per-tensor step,
  input_to_float8 in python/sglang/srt/layers/quantization/fp8_utils.py,
  quantizes with an fp8 max of 224 for e4m3fnuz on ROCm (fp8_kernel's
  fp8_max) and finfo.max for e4m3fn.
* ROCm/aiter e4048607a535ace3a2b51ded31b1c8c2d45c0879: the wrapper's
  argument order and meaning (X (B, M, K) or (M, B, K), WQ (B, N, K)).

The weights start from DeepSeek-R1's kv_b_proj as float values (what vLLM's
dequantization and SGLang's block dequantization give), so the fp8 block
format of the checkpoint is not replayed; everything after it is.
"""

import importlib

import numpy as np

import mla_fp8

FUNCTION = ("batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_"
            "tensor_quant")
#: AITER's module vLLM and SGLang import the function from at the commits.
FLAT = "aiter.ops.triton." + FUNCTION

# DeepSeek-R1 at TP 8.
HEADS, KV_LORA_RANK, QK_NOPE, QK_ROPE, V_HEAD = 16, 512, 128, 64, 128
QK_HEAD = QK_NOPE + QK_ROPE
#: vLLM's pre-compilation loop.
WARMUP_M = range(1, 1024 + 1)

# torch.finfo(dtype).max (vLLM); SGLang's input_to_float8 uses 224 for
# e4m3fnuz on ROCm and finfo.max for e4m3fn.
FP8 = {"gfx942": ("float8_e4m3fnuz", "f8E4M3FNUZ", 240.0, 224.0),
       "gfx950": ("float8_e4m3fn", "f8E4M3FN", 448.0, 448.0)}


def aiter_function():
    """The function as vLLM and SGLang get it, after install_aiter_shim."""
    mla_fp8.install_aiter_shim()
    return getattr(importlib.import_module(FLAT), FUNCTION)


def _bf16(values):
    """float -> the bf16 value torch would hold (RNE)."""
    return mla_fp8.from_bf16_bits(mla_fp8.to_bf16_bits(
        np.asarray(values, dtype=np.float32)))


def kv_b_proj_weight(rng):
    """DeepSeek-R1's kv_b_proj at TP 8 as (out, in) = (N * (P + V), L)
    floats: bf16 values, normal with deviation 0.02 (any scale would do:
    the per-tensor quantization takes it out)."""
    return _bf16(rng.standard_normal(
        (HEADS * (QK_NOPE + V_HEAD), KV_LORA_RANK)) * 0.02)


def vllm_quantize(w, chip):
    """dynamic_per_batched_tensor_quant on a bf16 tensor: amax, the scale
    DTYPE_MAX / amax and x * scale are bf16 (torch keeps the tensor's dtype),
    the fp8 conversion rounds that bf16 value, the descale is the float32
    reciprocal of the bf16 scale. Returns (uint8 bits, float32 descale)."""
    _, fmt, dtype_max, _ = FP8[chip]
    amax = max(float(np.abs(w).max()), 1e-10)
    scale = float(_bf16(dtype_max / amax))
    scaled = np.clip(_bf16(w * np.float32(scale)), -dtype_max, dtype_max)
    bits = mla_fp8.quantize_fp8(scaled, fmt)
    return (np.ascontiguousarray(bits),
            np.float32(1.0) / np.float32(scale))


def vllm_weights(w, chip):
    """process_weights_after_loading: (W_K, W_K_scale, W_V, W_V_scale),
    W_K (B, L, P) = (16, 512, 128), W_V (B, V, L) = (16, 128, 512)."""
    kv_b = w.T.reshape(KV_LORA_RANK, HEADS, QK_NOPE + V_HEAD)
    w_uk, w_uv = kv_b[..., :QK_NOPE], kv_b[..., QK_NOPE:]
    w_k, w_k_scale = vllm_quantize(w_uk.transpose(1, 0, 2), chip)
    w_v, w_v_scale = vllm_quantize(w_uv.transpose(1, 2, 0), chip)
    return w_k, w_k_scale, w_v, w_v_scale


def sglang_weights(w, chip):
    """post_load_weights on a block-quantized checkpoint dequantized to
    `w`: input_to_float8 in float32 (one scale for the whole kv_b_proj),
    then w_kc (B, P, L) and w_vc (B, L, V) in their stored layouts.
    Returns (w_kc, w_vc, w_scale) as arrays with those strides."""
    _, fmt, _, fp_max = FP8[chip]
    x = w.astype(np.float32)
    amax = max(float(np.abs(x).max()), 1e-12)
    scale = np.float32(fp_max) / np.float32(amax)
    bits = mla_fp8.quantize_fp8(np.clip(x * scale, -fp_max, fp_max), fmt)
    per_head = bits.reshape(HEADS, QK_NOPE + V_HEAD, KV_LORA_RANK)
    w_kc, w_vc = per_head[:, :QK_NOPE], per_head[:, QK_NOPE:]
    # w_kc.transpose(1, 2).contiguous().transpose(1, 2)
    w_kc = np.ascontiguousarray(w_kc.transpose(0, 2, 1)).transpose(0, 2, 1)
    # w_vc.contiguous().transpose(1, 2)
    w_vc = np.ascontiguousarray(w_vc).transpose(0, 2, 1)
    return w_kc, w_vc, np.float32(1.0) / scale


def add_cpu_view_ops(torch):
    """The tensor views the upstream code uses, on the numpy-backed CPU
    fake torch of test_torch_op (which has only dtype views and indexing):
    transpose, view(*shape) without a copy, empty."""
    tensor = torch.Tensor
    dtype_view = tensor.view

    def view(self, *args):
        if len(args) == 1 and isinstance(args[0], torch.dtype):
            return dtype_view(self, args[0])
        array = self.array.view()
        array.shape = args  # a view, or an AttributeError where it cannot
        return tensor(array, self.dtype)

    tensor.view = view
    tensor.transpose = lambda self, a, b: tensor(self.array.swapaxes(a, b),
                                                 self.dtype)
    torch.empty = lambda shape, dtype, device=None: tensor(
        np.zeros(shape, np.uint16 if dtype.name == "bfloat16" else
                 np.float32), dtype)
    return torch


def add_hip_view_ops(torch):
    """The same views on test_hip's fake torch, whose tensors are shapes,
    strides and addresses: t[:n], t[..., :n] and view(*shape) of a
    contiguous tensor."""
    tensor = torch.Tensor

    def getitem(self, index):
        shape = list(self.shape)
        if isinstance(index, slice):
            shape[0] = len(range(shape[0])[index])
        else:
            assert index[0] is Ellipsis and len(index) == 2, index
            shape[-1] = len(range(shape[-1])[index[1]])
        return tensor(shape, self.dtype, self.device, self.stride(),
                      self.data_ptr())

    def view(self, *shape):
        assert self.is_contiguous(), "view of a non-contiguous tensor"
        shape = list(shape)
        if -1 in shape:
            rest = int(np.prod([s for s in shape if s != -1]))
            shape[shape.index(-1)] = self.numel() // rest
        assert int(np.prod(shape)) == self.numel(), shape
        return tensor(shape, self.dtype, self.device, ptr=self.data_ptr())

    tensor.__getitem__ = getitem
    tensor.view = view
    return torch


def triton_fp8_bmm(function, torch):
    """vLLM's rocm_aiter_ops.triton_fp8_bmm: every argument by keyword."""
    def call(X, WQ, w_scale, group_size=128, bias=None, dtype=None,
             splitK=None, YQ=None, transpose_bm=False, config=None):
        return function(X, WQ, w_scale, group_size=group_size, bias=bias,
                        dtype=torch.bfloat16 if dtype is None else dtype,
                        splitK=splitK, YQ=YQ, transpose_bm=transpose_bm,
                        config=config)
    return call


class VllmMla:
    """One vLLM MLA layer on one GPU: its weights and its decode calls."""

    def __init__(self, torch, function, w_k, w_k_scale, w_v, w_v_scale):
        self.torch, self.call = torch, triton_fp8_bmm(function, torch)
        self.w_k, self.w_k_scale = w_k, w_k_scale
        self.w_v, self.w_v_scale = w_v, w_v_scale

    def warm_up(self, ms=WARMUP_M, fill=None):
        """_warm_up: per m, an empty (B, m, K) X for W_K, then for W_V.
        `fill(x)` may give the empty tensor values; returns
        [(x, y)] per call."""
        torch, calls = self.torch, []
        for m in ms:
            for w, scale in ((self.w_k, self.w_k_scale),
                             (self.w_v, self.w_v_scale)):
                x = torch.empty((w.shape[0], m, w.shape[2]),
                                dtype=torch.bfloat16, device=w.device)
                if fill is not None:
                    fill(x)
                calls.append((x, self.call(x, w, scale, group_size=128,
                                           transpose_bm=True)))
        return calls

    def qk(self, q, num_decode_tokens):
        """forward's K-up: q (tokens, N * qk_head_dim) from q_b_proj."""
        q = q.view(-1, HEADS, QK_HEAD)[:num_decode_tokens]
        q_nope = q[..., :QK_NOPE]
        # Convert from (B, N, P) to (N, B, P)
        x = q_nope.transpose(0, 1)
        return x, self.call(x, self.w_k, self.w_k_scale, group_size=128,
                            transpose_bm=True)

    def uv(self, attn_out, output, num_decode_tokens):
        """_v_up_proj into output[:num_decode_tokens] (tokens, N * V)."""
        x = attn_out.view(-1, HEADS, KV_LORA_RANK).transpose(0, 1)
        out = output[:num_decode_tokens].view(-1, HEADS, V_HEAD)
        return x, out, self.call(x, self.w_v, self.w_v_scale,
                                 group_size=128, transpose_bm=True, YQ=out)


class SglangMla:
    """One SGLang DeepseekV2AttentionMLA on one GPU (w_kc, w_vc as
    post_load_weights stores them)."""

    def __init__(self, torch, function, w_kc, w_vc, w_scale):
        self.torch, self.call = torch, function
        self.w_kc, self.w_vc, self.w_scale = w_kc, w_vc, w_scale

    def k_up(self, q):
        """forward_absorb_prepare's fp8 Triton K-up (gfx950, or gfx942
        while capturing); returns (X, the (M, B, L) q_nope_out)."""
        q = q.view(-1, HEADS, QK_HEAD)
        q_nope = q[..., :QK_NOPE]
        out = self.call(X=q_nope, WQ=self.w_kc.transpose(-1, -2),
                        w_scale=self.w_scale, group_size=128, YQ=None,
                        transpose_bm=False, transpose_bm_in=True,
                        dtype=self.torch.bfloat16)
        return q_nope, out, out.transpose(0, 1)

    def v_up(self, attn_output):
        """forward_absorb_core's fp8 Triton V-up (gfx950); returns (X, the
        (B, M, V) result)."""
        x = attn_output.view(-1, HEADS, KV_LORA_RANK)
        return x, self.call(X=x, WQ=self.w_vc.transpose(-1, -2),
                            w_scale=self.w_scale, group_size=128, YQ=None,
                            transpose_bm=False, transpose_bm_in=True,
                            dtype=self.torch.bfloat16)
