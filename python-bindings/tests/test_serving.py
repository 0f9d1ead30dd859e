"""The drop-in call on the emulator against the reference, for both
DeepSeek-R1 TP8 projections, every layout option and every argument error."""

import re

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import _mla_fp8_compiler, serving

call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501

B = 16
K_UP = (512, 128)
V_UP = (128, 512)
FNUZ = "f8E4M3FNUZ"


@pytest.fixture(autouse=True)
def bundle(session_bundle, monkeypatch):
    """Every test sees the session bundle through $MLA_FP8_BUNDLE."""
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(session_bundle))
    monkeypatch.delenv("MLA_FP8_EMULATE_CHIP", raising=False)
    serving.set_bundle(None)
    yield session_bundle
    serving.set_bundle(None)


def operands(rng, n, k, m, chip="gfx942", per_batch=False, b=B):
    x = mla_fp8.to_bf16_bits(rng.standard_normal((b, m, k)) * 0.5)
    w, ws = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((b, n, k)) * 0.1, chip, per_batch=per_batch)
    return x, w, ws


def reference(x, w, ws, fmt=FNUZ, **kwargs):
    return mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format=fmt, **kwargs)


def assert_close(y, ref, out_type="bf16", acc_overflow=None):
    """Within one output ulp plus fp32 accumulation noise (SPEC.md), where
    the fp32 accumulator does not overflow. Outputs in `acc_overflow` (from
    reference_prequant_bmm(..., acc_overflow=True)) may be Inf or NaN: SPEC's
    accumulator is fp32. Returns how many of those were."""
    to_float = (mla_fp8.from_bf16_bits if out_type == "bf16" else
                mla_fp8.from_f16_bits)
    a, b = to_float(y).astype(np.float64), to_float(ref).astype(np.float64)
    ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(b), 1e-30))) -
                  (7 if out_type == "bf16" else 10))
    with np.errstate(invalid="ignore"):
        close = np.abs(a - b) <= ulp + 1e-3 * np.abs(b) + 1e-6
    if acc_overflow is None:
        assert np.all(close)
        return 0
    overflowed = acc_overflow & ~np.isfinite(a)
    assert np.all(close | overflowed)
    return int(overflowed.sum())


@pytest.mark.parametrize("n,k", [K_UP, V_UP], ids=["k_up", "v_up"])
@pytest.mark.parametrize("m", [1, 17, 64])
@pytest.mark.parametrize("transpose_bm", [False, True])
def test_against_reference(rng, n, k, m, transpose_bm):
    x, w, ws = operands(rng, n, k, m)
    y = call(x, w, ws, transpose_bm=transpose_bm)
    assert y.shape == ((m, B, n) if transpose_bm else (B, m, n))
    assert y.dtype == np.uint16
    assert_close(y, reference(x, w, ws, transpose_bm=transpose_bm))


@pytest.mark.parametrize("n,k", [K_UP, V_UP], ids=["k_up", "v_up"])
def test_transpose_bm_in_strided_view(rng, n, k):
    """K-up reads q_nope out of (M, H, P + R): X is (M, B, K) with a row
    stride larger than K."""
    m, rope = 5, 64
    full = mla_fp8.to_bf16_bits(rng.standard_normal((m, B, k + rope)))
    x_in = full[:, :, :k]
    _, w, ws = operands(rng, n, k, m)
    y = call(x_in, w, ws, transpose_bm_in=True, transpose_bm=True)
    ref = reference(np.ascontiguousarray(x_in.transpose(1, 0, 2)), w, ws,
                    transpose_bm=True)
    assert_close(y, ref)


@pytest.mark.parametrize("n,k", [K_UP, V_UP], ids=["k_up", "v_up"])
def test_yq_slice_of_larger_array(rng, n, k):
    m = 3
    x, w, ws = operands(rng, n, k, m)
    big = np.full((m, B + 2, n + 8), 0x7777, dtype=np.uint16)
    yq = big[:, 1:B + 1, 4:n + 4]
    out = call(x, w, ws, YQ=yq, transpose_bm=True)
    assert out is yq
    assert_close(yq, reference(x, w, ws, transpose_bm=True))
    untouched = big.copy()
    untouched[:, 1:B + 1, 4:n + 4] = 0x7777
    assert np.all(untouched == 0x7777)


def test_gfx950_and_unavailable_options(rng):
    """The chip keyword selects gfx950 (OCP weights); options that the
    bundle's kernels lack are refused by name."""
    m = 2
    x, w, ws = operands(rng, *K_UP, m, chip="gfx950")
    y = np.zeros((B, m, K_UP[0]), np.uint16)
    call(x, w, ws, YQ=y, chip="gfx950", splitK=None)
    assert_close(y, reference(x, w, ws, fmt="f8E4M3FN"))
    _, wb, wsb = operands(rng, *K_UP, m, per_batch=True)
    with pytest.raises(ValueError, match="^w_scale: .*per_tensor"):
        call(x, wb, wsb)
    with pytest.raises(ValueError, match="^dtype: .*out_type bf16"):
        call(x, w, ws, dtype="f16")
    bias = mla_fp8.to_bf16_bits(rng.standard_normal((B, K_UP[0])))
    with pytest.raises(ValueError, match="^bias: .*without a bias"):
        call(x, w, ws, bias=bias)


def test_emulate_chip_env(rng, monkeypatch):
    x, w, ws = operands(rng, *V_UP, 1, chip="gfx950")
    monkeypatch.setenv("MLA_FP8_EMULATE_CHIP", "gfx950")
    assert_close(call(x, w, ws), reference(x, w, ws, fmt="f8E4M3FN"))
    monkeypatch.setenv("MLA_FP8_EMULATE_CHIP", "gfx90a")
    with pytest.raises(ValueError, match="^MLA_FP8_EMULATE_CHIP: .*gfx90a"):
        call(x, w, ws)


def test_m_zero(rng):
    x, w, ws = operands(rng, *K_UP, 0)
    y = call(x, w, ws, transpose_bm=True)
    assert y.shape == (0, B, K_UP[0])


def test_bundle_lookup_order(tmp_path, monkeypatch, session_bundle):
    monkeypatch.delenv("MLA_FP8_BUNDLE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(serving, "default_bundle_paths",
                        lambda: [str(tmp_path / "none"),
                                 str(tmp_path / "mla-fp8" / "bundle")])
    with pytest.raises(mla_fp8.BundleNotFoundError,
                       match="set_bundle.*MLA_FP8_BUNDLE"):
        serving.get_bundle()
    # Defaults, then the environment, then set_bundle win in that order.
    default = tmp_path / "mla-fp8" / "bundle"
    default.parent.mkdir()
    default.symlink_to(session_bundle)
    assert serving.get_bundle().directory == str(default)
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(session_bundle))
    assert serving.get_bundle().directory == str(session_bundle)
    explicit = mla_fp8.load_bundle(session_bundle)
    assert mla_fp8.set_bundle(explicit) is explicit
    assert serving.get_bundle() is explicit
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(tmp_path / "missing"))
    mla_fp8.set_bundle(None)
    with pytest.raises(mla_fp8.BundleError):
        serving.get_bundle()
    with pytest.raises(TypeError, match="^bundle"):
        mla_fp8.set_bundle(3)


def test_never_compiles(rng, tmp_path):
    """The call only looks kernels up: the compiler's own counter of lowered
    kernel groups does not move, while a compilation does move it."""
    before = _mla_fp8_compiler.compiled_group_count()
    for n, k in (K_UP, V_UP):
        for m in (1, 20):
            x, w, ws = operands(rng, n, k, m)
            call(x, w, ws)
    assert _mla_fp8_compiler.compiled_group_count() == before
    mla_fp8.compile_spec(512, 128, "gfx942", max_m=16, with_isa=False)
    assert _mla_fp8_compiler.compiled_group_count() == before + 1


def test_argument_errors(rng):
    m = 2
    x, w, ws = operands(rng, *K_UP, m)
    cases = [
        (TypeError, "^X: ", dict(X=[[1]])),
        (TypeError, "^X: .*uint16", dict(X=x.astype(np.float32))),
        (ValueError, "^X: expected 3", dict(X=x[0])),
        (ValueError, "^X: the K stride", dict(X=np.asfortranarray(x))),
        (TypeError, "^WQ: .*uint8", dict(WQ=w.astype(np.int8))),
        (ValueError, "^WQ: shape", dict(WQ=w[:8])),
        (ValueError, "^WQ: must be C-contiguous .*once, when they are loaded",
         dict(WQ=np.asfortranarray(w))),
        (ValueError, "^WQ: the bundle has no kernel for N=256",
         dict(WQ=np.ascontiguousarray(w[:, :256]))),
        (ValueError, "^w_scale: expected 1 value", dict(w_scale=ws.repeat(3))),
        (TypeError, "^w_scale: expected float32", dict(
            w_scale=np.array([1], np.int32))),
        (TypeError, "^w_scale", dict(w_scale="one")),
        (ValueError, "^group_size: .*power of two", dict(group_size=100)),
        (ValueError, "^group_size: .*group_size 128", dict(group_size=64)),
        (ValueError, "^dtype: expected", dict(dtype="fp32")),
        (ValueError, "^splitK: expected None, got 4 .*AITER", dict(splitK=4)),
        (ValueError, "^splitK: expected None", dict(splitK=1)),
        (ValueError, "^splitK: expected None", dict(splitK=1.5)),
        (TypeError, "^config: expected None or a dict", dict(config=[64])),
        (ValueError, "^bias: expected 2 dimensions",
         dict(bias=np.zeros((B, 2, 512), np.uint16))),
        (TypeError, "^transpose_bm: ", dict(transpose_bm=1)),
        (TypeError, "^transpose_bm_in: ", dict(transpose_bm_in="no")),
        (ValueError, "^bias: expected shape",
         dict(bias=np.zeros((B, 7), np.uint16))),
        (TypeError, "^bias: ", dict(bias=np.zeros((B, 512), np.float32))),
        (ValueError, "^YQ: expected shape",
         dict(YQ=np.zeros((m, B, 512), np.uint16))),
        (TypeError, "^YQ: ", dict(YQ=np.zeros((B, m, 512), np.float32))),
        (ValueError, "^YQ: the N stride",
         dict(YQ=np.zeros((B, m, 1024), np.uint16)[:, :, ::2])),
        (TypeError, "^chip: ", dict(chip=942)),
        (ValueError, "^chip: .*gfx90a", dict(chip="gfx90a")),
    ]
    for error, pattern, override in cases:
        kwargs = dict(X=x, WQ=w, w_scale=ws)
        kwargs.update(override)
        with pytest.raises(error, match=pattern):
            call(**kwargs)
    readonly = np.zeros((B, m, 512), np.uint16)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="^YQ: .*read-only"):
        call(x, w, ws, YQ=readonly)


def test_config_is_ignored_with_a_warning(rng):
    """AITER's config holds Triton tile sizes: refused silently by nothing,
    used by nothing, and said so."""
    x, w, ws = operands(rng, *V_UP, 3)
    with pytest.warns(RuntimeWarning, match="config argument is ignored"):
        y = call(x, w, ws, config={"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64})
    assert_close(y, reference(x, w, ws))


def test_run_kernel_emulated(rng, session_bundle):
    bundle = mla_fp8.load_bundle(session_bundle)
    m = 4
    x, w, ws = operands(rng, *V_UP, m)
    kernel = bundle.find_kernel("gfx942", *V_UP, m, B)
    assert kernel.serves(m, B)
    y = np.zeros((m, B, V_UP[0]), np.uint16)
    count = mla_fp8.run_kernel_emulated(bundle, kernel, x, w, ws,
                                        y.transpose(1, 0, 2))
    assert count > 0
    assert_close(y, reference(x, w, ws, transpose_bm=True))
    other = mla_fp8.load_bundle(session_bundle)
    with pytest.raises(TypeError, match="^kernel"):
        mla_fp8.run_kernel_emulated(other, kernel, x, w, ws, y)
    with pytest.raises(ValueError, match="^y: expected shape"):
        mla_fp8.run_kernel_emulated(bundle, kernel, x, w, ws, y)
    with pytest.raises(ValueError, match="^w_scale"):
        mla_fp8.run_kernel_emulated(bundle, kernel, x, w, ws.repeat(B),
                                    y.transpose(1, 0, 2))
    # A kernel runs only the launches its range of rows (B * M) holds:
    # gfx942's first K-up kernel, 1 to 512 here (the bundle's V-up kernel
    # serves every B * M), whatever B and M make them.
    assert (kernel.min_rows, kernel.max_rows) == (1, 0)
    kernel = bundle.find_kernel("gfx942", *K_UP, m, B)
    assert (kernel.min_rows, kernel.max_rows) == (1, 512)
    for b, rows in ((1, 512), (2, 256), (B, 32)):
        x, w, ws = operands(rng, *K_UP, rows, b=b)
        y = np.zeros((b, rows, K_UP[0]), np.uint16)
        assert mla_fp8.run_kernel_emulated(bundle, kernel, x, w, ws, y) > 0
        assert_close(y, reference(x, w, ws))
    for b, rows in ((B, 33), (1, 513), (2, 257)):
        x, w, ws = operands(rng, *K_UP, rows, b=b)
        with pytest.raises(RuntimeError, match=re.escape(
                f"kernel '{kernel.symbol}' serves the launches of 1 to 512 "
                f"rows (B * M), not B = {b}, M = {rows}")):
            mla_fp8.run_kernel_emulated(
                bundle, kernel, x, w, ws,
                np.zeros((b, rows, K_UP[0]), np.uint16))


def test_quantize_weights_for_chip(rng):
    w = rng.standard_normal((2, 4, 8)).astype(np.float32)
    q942, s942 = mla_fp8.quantize_weights_for_chip(w, "gfx942")
    q950, s950 = mla_fp8.quantize_weights_for_chip(w, "gfx950",
                                                   per_batch=True)
    assert s942.shape == (1,) and s950.shape == (2,)
    assert np.allclose(mla_fp8.dequantize_fp8(q942, "f8E4M3FNUZ") * s942, w,
                       rtol=0.07, atol=1e-3)
    assert np.allclose(mla_fp8.dequantize_fp8(q950, "f8E4M3FN") *
                       s950[:, None, None], w, rtol=0.07, atol=1e-3)
    # A checkpoint's OCP weights, re-encoded for gfx942, keep their values.
    ocp, scale = mla_fp8.quantize_weights_for_chip(w, "gfx950")
    fnuz, scale942 = mla_fp8.convert_ocp_weights_for_chip(ocp, scale,
                                                          "gfx942")
    assert np.array_equal(
        mla_fp8.dequantize_fp8(fnuz, "f8E4M3FNUZ") * scale942,
        mla_fp8.dequantize_fp8(ocp, "f8E4M3FN") * scale)
    same, _ = mla_fp8.convert_ocp_weights_for_chip(ocp, scale, "gfx950")
    assert np.array_equal(same, ocp)
    with pytest.raises(ValueError, match="^chip"):
        mla_fp8.quantize_weights_for_chip(w, "gfx90a")


@pytest.fixture(scope="module")
def bias_bundle(tmp_path_factory):
    """A small bundle that also holds the kernels adding a bias."""
    directory = tmp_path_factory.mktemp("bias") / "deepseek-r1-tp8-bias"
    mla_fp8.generate_bundle(directory, tp=[8], chips=["gfx942"], max_m=16,
                            bias=True)
    return directory


@pytest.mark.parametrize("n,k", [K_UP, V_UP], ids=["k_up", "v_up"])
def test_bias(rng, n, k, bias_bundle):
    """With a bias the call picks the kernels that add it; without one, the
    plain kernels of the same bundle."""
    serving.set_bundle(str(bias_bundle))
    m = 3
    x, w, ws = operands(rng, n, k, m)
    bias = mla_fp8.to_bf16_bits(rng.standard_normal((B, n)))
    assert_close(call(x, w, ws, bias=bias), reference(x, w, ws, bias=bias))
    # AITER's (B, 1, N) bias is the same bias.
    assert_close(call(x, w, ws, bias=bias[:, None, :]),
                 reference(x, w, ws, bias=bias))
    assert_close(call(x, w, ws), reference(x, w, ws))
    kernel = mla_fp8.load_bundle(bias_bundle).find_kernel(
        "gfx942", n, k, m, B, has_bias=True)
    assert kernel.has_bias and "_bias_" in kernel.symbol


@pytest.mark.parametrize("chip", ["gfx942", "gfx950"])
def test_fp32_accumulator_overflow_is_flagged(rng, chip):
    """With |x| near 1e36 SPEC's fp32 accumulator overflows for some
    outputs: the kernel gives Inf where the f64 reference is finite. The
    reference flags exactly those (one K-group per row), and the check
    accepts them as accumulator overflow, not as a mismatch."""
    m = 8
    fmt = mla_fp8.fp8_format_for_chip(chip)
    x = mla_fp8.to_bf16_bits(rng.standard_normal((B, m, 128)) * 1e36)
    w, ws = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((B, 512, 128)) * 0.05, chip)
    y = call(x, w, ws, chip=chip)
    ref, overflow = reference(x, w, ws, fmt=fmt, acc_overflow=True)
    assert 0 < overflow.sum() < overflow.size
    assert np.isfinite(mla_fp8.from_bf16_bits(ref)).all()
    np.testing.assert_array_equal(np.isinf(mla_fp8.from_bf16_bits(y)),
                                  overflow)
    assert assert_close(y, ref, acc_overflow=overflow) == overflow.sum()
    # Without the mask the same comparison fails: the flag is what passes it.
    with pytest.raises(AssertionError):
        assert_close(y, ref)
    # At ordinary magnitudes nothing is flagged.
    x_small, w, ws = operands(rng, 512, 128, m, chip)
    _, none = reference(x_small, w, ws, fmt=fmt, acc_overflow=True)
    assert not none.any()
