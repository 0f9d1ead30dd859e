"""The reference bmm against a naive numpy implementation of SPEC.md, weight
quantization, and argument errors."""

import numpy as np
import pytest

import mla_fp8

BIAS = {"f8E4M3FNUZ": 8, "f8E4M3FN": 7, "f8E5M2FNUZ": 16, "f8E5M2": 15}


def fp8_positive_grid(fmt):
    """The non-negative finite values of `fmt`, indexed by their code."""
    mant = 3 if "M3" in fmt else 2
    bias = BIAS[fmt]
    fmax = mla_fp8.fp8_max(fmt)
    values = []
    for code in range(128):
        e, f = code >> mant, code & ((1 << mant) - 1)
        if e == 0:
            v = f / 2**mant * 2.0**(1 - bias)
        else:
            v = (1 + f / 2**mant) * 2.0**(e - bias)
        if v > fmax:
            break
        values.append(v)
    return np.array(values)


def naive_fp8_round(v, fmt):
    """Rounds float32 values already clamped to +-FMAX to the nearest fp8
    value (ties to the even code), as float64."""
    grid = fp8_positive_grid(fmt)
    mag = np.abs(v.astype(np.float64))
    hi = np.clip(np.searchsorted(grid, mag), 0, len(grid) - 1)
    lo = np.clip(hi - 1, 0, None)
    d_lo, d_hi = mag - grid[lo], grid[hi] - mag
    pick = np.where(d_lo < d_hi, lo,
                    np.where(d_hi < d_lo, hi, np.where(lo % 2 == 0, lo, hi)))
    return np.sign(v) * grid[pick]


def naive_round_half(v, out_type):
    """float64 -> raw bits of bf16/f16, rounded once to nearest even (normal
    range only, which the test data stays in)."""
    digits = 8 if out_type == "bf16" else 11
    m, e = np.frexp(v)
    r = np.ldexp(np.rint(m * 2.0**digits), e - digits)
    if out_type == "bf16":
        return (r.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return r.astype(np.float16).view(np.uint16)


def half_values(bits, type_):
    if type_ == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return bits.view(np.float16).astype(np.float32)


def naive_prequant_bmm(x_bits, w_bits, w_scale, fmt, group, in_type,
                       out_type, bias=None):
    """SPEC.md literally: (B, M, K) x, (B, N, K) w -> (B, M, N) bits."""
    x = half_values(np.asarray(x_bits), in_type)
    grid_w = mla_fp8.dequantize_fp8(w_bits, fmt).astype(np.float64)
    batch, rows, k = x.shape
    n = w_bits.shape[1]
    fmax = np.float32(mla_fp8.fp8_max(fmt))
    inv_fmax = np.float32(1) / fmax
    acc = np.zeros((batch, rows, n))
    for g0 in range(0, k, group):
        xg = x[:, :, g0:g0 + group]
        amax = np.maximum(np.abs(xg).max(axis=2, keepdims=True),
                          np.float32(1e-10))
        s = (amax * inv_fmax).astype(np.float32)
        scaled = np.clip(xg * (np.float32(1) / s), -fmax, fmax)
        q = naive_fp8_round(scaled.astype(np.float32), fmt)
        partial = np.einsum("bmk,bnk->bmn", q, grid_w[:, :, g0:g0 + group])
        acc += s.astype(np.float64) * partial
    ws = np.asarray(w_scale, dtype=np.float32).reshape(-1).astype(np.float64)
    value = acc * (ws[:, None, None] if ws.size > 1 else ws[0])
    if bias is not None:
        value = value + half_values(bias, out_type)[:, None, :]
    return naive_round_half(value, out_type)


def make_inputs(rng, batch, rows, n, k, fmt, in_type, per_batch=False):
    x = (rng.standard_normal((batch, rows, k)) *
         rng.uniform(0.1, 4, (batch, rows, 1))).astype(np.float32)
    to_bits = (mla_fp8.to_bf16_bits if in_type == "bf16"
               else mla_fp8.to_f16_bits)
    w = rng.standard_normal((batch, n, k)).astype(np.float32) * 0.05
    w_bits, ws = mla_fp8.quantize_weights(w, fmt, per_batch=per_batch)
    return to_bits(x), w_bits, ws


@pytest.mark.parametrize("fmt", ["f8E4M3FNUZ", "f8E4M3FN"])
@pytest.mark.parametrize("in_type,out_type", [("bf16", "bf16"),
                                              ("f16", "f16"),
                                              ("bf16", "f16")])
@pytest.mark.parametrize("k,group", [(128, 128), (256, 128), (200, 64)])
def test_matches_naive(rng, fmt, in_type, out_type, k, group):
    x, w, ws = make_inputs(rng, 3, 5, 24, k, fmt, in_type)
    y = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format=fmt,
                                       group_size=group, in_type=in_type,
                                       out_type=out_type)
    assert y.dtype == np.uint16 and y.shape == (3, 5, 24)
    expected = naive_prequant_bmm(x, w, ws, fmt, group, in_type, out_type)
    np.testing.assert_array_equal(y, expected)


def test_bias_and_per_batch_scale(rng):
    fmt = "f8E4M3FNUZ"
    x, w, ws = make_inputs(rng, 4, 7, 16, 256, fmt, "bf16", per_batch=True)
    assert ws.shape == (4,)
    bias = mla_fp8.to_bf16_bits(rng.standard_normal((4, 16)))
    y = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format=fmt, bias=bias)
    np.testing.assert_array_equal(
        y, naive_prequant_bmm(x, w, ws, fmt, 128, "bf16", "bf16", bias))


def test_layouts(rng):
    """Strided X views, (M, B, N) output and caller-provided buffers give the
    same numbers as the contiguous case."""
    fmt = "f8E4M3FN"
    batch, rows, n, p, r = 4, 6, 32, 128, 64
    # K-up reads q_nope out of a (M, H, P + R) tensor: X is (H, M, P) with
    # strides (P + R, H * (P + R), 1).
    q = mla_fp8.to_bf16_bits(rng.standard_normal((rows, batch, p + r)))
    x_view = q[:, :, :p].transpose(1, 0, 2)
    _, w, ws = make_inputs(rng, batch, rows, n, p, fmt, "bf16")
    expected = mla_fp8.reference_prequant_bmm(np.ascontiguousarray(x_view), w,
                                              ws, fp8_format=fmt)
    np.testing.assert_array_equal(
        mla_fp8.reference_prequant_bmm(x_view, w, ws, fp8_format=fmt),
        expected)
    # Explicit strides into the storage.
    y = mla_fp8.reference_prequant_bmm(q, w, ws, fp8_format=fmt,
                                       x_strides=(p + r, batch * (p + r)),
                                       m=rows)
    np.testing.assert_array_equal(y, expected)
    # (M, B, N) output.
    y_mb = mla_fp8.reference_prequant_bmm(x_view, w, ws, fp8_format=fmt,
                                          transpose_bm=True)
    assert y_mb.shape == (rows, batch, n)
    np.testing.assert_array_equal(y_mb.transpose(1, 0, 2), expected)
    # In place, into a slice of a larger tensor.
    big = np.zeros((rows, batch, n + 8), dtype=np.uint16)
    out = big[:, :, 4:4 + n]
    result = mla_fp8.reference_prequant_bmm(x_view, w, ws, fp8_format=fmt,
                                            transpose_bm=True, out=out)
    assert result is out
    np.testing.assert_array_equal(big[:, :, 4:4 + n].transpose(1, 0, 2),
                                  expected)
    assert not big[:, :, :4].any() and not big[:, :, 4 + n:].any()


def test_zero_rows(rng):
    x, w, ws = make_inputs(rng, 2, 0, 16, 128, "f8E4M3FNUZ", "bf16")
    y = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format="f8E4M3FNUZ")
    assert y.shape == (2, 0, 16)


def test_quantize_weights():
    w = np.array([[0.5, -1.0, 2.0], [0.25, 0.0, -4.0]], dtype=np.float32)
    q, ws = mla_fp8.quantize_weights(w, "f8E4M3FNUZ")
    assert q.dtype == np.uint8 and q.shape == w.shape
    assert ws.dtype == np.float32 and ws.shape == (1,)
    assert ws[0] == np.float32(4.0) / np.float32(240.0)
    back = mla_fp8.dequantize_fp8(q, "f8E4M3FNUZ") * ws[0]
    np.testing.assert_allclose(back, w, rtol=2**-4)
    assert mla_fp8.dequantize_fp8(q, "f8E4M3FNUZ")[1, 2] == -240.0
    q_pb, ws_pb = mla_fp8.quantize_weights(w, "f8E4M3FN", per_batch=True)
    assert ws_pb.shape == (2,)
    np.testing.assert_array_equal(
        ws_pb, [np.float32(2) / np.float32(448),
                np.float32(4) / np.float32(448)])
    assert mla_fp8.dequantize_fp8(q_pb, "f8E4M3FN")[0, 2] == 448.0
    # All zeros: amax is floored, nothing divides by zero.
    q0, ws0 = mla_fp8.quantize_weights(np.zeros(4), "f8E4M3FN")
    assert not q0.any() and ws0[0] > 0


def test_reencode_e4m3fn_to_fnuz():
    w = np.linspace(-3, 3, 64, dtype=np.float32)
    q, ws = mla_fp8.quantize_weights(w, "f8E4M3FN")
    fnuz, factor = mla_fp8.reencode_e4m3fn_to_fnuz(q)
    assert factor == 2.0 and fnuz.dtype == np.uint8
    np.testing.assert_array_equal(
        mla_fp8.dequantize_fp8(fnuz, "f8E4M3FNUZ") * (ws[0] * factor),
        mla_fp8.dequantize_fp8(q, "f8E4M3FN") * ws[0])
    specials, _ = mla_fp8.reencode_e4m3fn_to_fnuz(
        np.array([0x7F, 0xFF, 0x80], dtype=np.uint8))
    np.testing.assert_array_equal(specials, [0x80, 0x80, 0x00])


@pytest.fixture
def args(rng):
    x, w, ws = make_inputs(rng, 2, 3, 16, 128, "f8E4M3FNUZ", "bf16")
    return x, w, ws


@pytest.mark.parametrize("change,error,name", [
    (dict(x_bits=np.zeros((2, 3, 128), np.float32)), TypeError, "x_bits"),
    (dict(x_bits=np.zeros((2, 128), np.uint16)), ValueError, "x_bits"),
    (dict(x_bits=np.zeros((2, 3, 64), np.uint16)), ValueError, "x_bits"),
    (dict(x_bits=np.zeros((2, 3, 256), np.uint16)[:, :, ::2]), ValueError,
     "x_bits"),
    (dict(x_bits=np.zeros((2, 3, 128), np.uint16)[:, ::-1]), ValueError,
     "x_bits"),
    (dict(w_bits=np.zeros((2, 16, 128), np.int8)), TypeError, "w_bits"),
    (dict(w_bits=np.zeros((3, 16, 128), np.uint8)), ValueError, "x_bits"),
    (dict(w_bits=[1, 2]), TypeError, "w_bits"),
    (dict(w_scale=np.ones(3, np.float32)), ValueError, "w_scale"),
    (dict(w_scale="1"), TypeError, "w_scale"),
    (dict(fp8_format="fp8"), ValueError, "fp8_format"),
    (dict(fp8_format=None), TypeError, "fp8_format"),
    (dict(group_size=100), ValueError, "group_size"),
    (dict(group_size=0), ValueError, "group_size"),
    (dict(group_size=128.0), TypeError, "group_size"),
    (dict(in_type="f32"), ValueError, "in_type"),
    (dict(out_type="fp8"), ValueError, "out_type"),
    (dict(bias=np.zeros((2, 16), np.float32)), TypeError, "bias"),
    (dict(bias=np.zeros((2, 8), np.uint16)), ValueError, "bias"),
    (dict(transpose_bm=1), TypeError, "transpose_bm"),
    (dict(x_strides=(1, 2)), ValueError, "m"),
    (dict(x_strides=(1,), m=3), TypeError, "x_strides"),
    (dict(x_strides=(1000, 128), m=3), ValueError, "x_strides"),
    (dict(x_strides=(-1, 128), m=3), ValueError, "x_strides"),
    (dict(m=3), ValueError, "m"),
    (dict(out=np.zeros((2, 3, 8), np.uint16)), ValueError, "out"),
    (dict(out=np.zeros((2, 3, 16), np.float32)), TypeError, "out"),
    (dict(out=np.zeros((2, 3, 32), np.uint16)[:, :, ::2]), ValueError, "out"),
])
def test_argument_errors(args, change, error, name):
    x, w, ws = args
    kwargs = dict(x_bits=x, w_bits=w, w_scale=ws, fp8_format="f8E4M3FNUZ")
    kwargs.update(change)
    with pytest.raises(error, match=rf"^{name}\b"):
        mla_fp8.reference_prequant_bmm(**kwargs)


def test_read_only_output_and_weight_errors(args):
    x, w, ws = args
    out = np.zeros((2, 3, 16), np.uint16)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="^out"):
        mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format="f8E4M3FNUZ",
                                       out=out)
    with pytest.raises(ValueError, match="^fp8_format"):
        mla_fp8.quantize_weights(np.ones(4), "int8")
    with pytest.raises(TypeError, match="^w"):
        mla_fp8.quantize_weights(np.array(["x"]), "f8E4M3FN")
    with pytest.raises(TypeError, match="^per_batch"):
        mla_fp8.quantize_weights(np.ones(4), "f8E4M3FN", per_batch=None)
    with pytest.raises(TypeError, match="^bits"):
        mla_fp8.reencode_e4m3fn_to_fnuz(np.ones(4, np.float32))
