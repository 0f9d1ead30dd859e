"""f16 activations and code-object versions through the Python API: the
options of mla-fp8-aot (in_type, code_object_version), and numpy float16 X
served end to end on the emulator by the f16 kernels of a bundle."""

import json

import numpy as np
import pytest

import mla_fp8

CHIPS = (("gfx942", "f8E4M3FNUZ"), ("gfx950", "f8E4M3FN"))
call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501


def _within_one_ulp(got_bits, ref_bits):
    """SPEC.md's accuracy: each bf16 output within one ulp of the reference
    plus fp32 accumulation noise; NaN exactly where the reference has it."""
    got = mla_fp8.from_bf16_bits(got_bits).astype(np.float64)
    ref = mla_fp8.from_bf16_bits(ref_bits).astype(np.float64)
    if not np.array_equal(np.isnan(got), np.isnan(ref)):
        return False
    finite = np.isfinite(ref)
    magnitude = np.abs(ref[finite])
    ulp = np.exp2(np.floor(np.log2(np.maximum(magnitude, 2.0 ** -126))) - 7)
    noise = 2.0 ** -20 * np.max(magnitude, initial=0.0)
    return bool(np.all(np.abs(got[finite] - ref[finite]) <= ulp + noise))


@pytest.mark.parametrize("chip,fp8", CHIPS)
@pytest.mark.parametrize("m", [1, 16, 17, 64, 65])
def test_float16_x_runs_the_f16_kernel(session_bundle, rng, chip, fp8, m):
    """numpy float16 X (q_nope as (M, B, K)) picks the f16 kernel; Y matches
    the reference computed on the same f16 bits, at M-range edges."""
    mla_fp8.set_bundle(session_bundle)
    b, n, k = 16, 512, 128
    x = rng.standard_normal((m, b, k)).astype(np.float16)
    wq, w_scale = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((b, n, k)) * 0.05, chip)
    y = call(x, wq, w_scale, transpose_bm_in=True, transpose_bm=True,
             chip=chip)
    ref = mla_fp8.reference_prequant_bmm(
        x.view(np.uint16).transpose(1, 0, 2), wq, w_scale, fp8_format=fp8,
        in_type="f16", transpose_bm=True)
    assert y.shape == (m, b, n)
    assert _within_one_ulp(y, ref)


@pytest.mark.parametrize("chip,fp8", CHIPS)
def test_float16_nan_and_inf_rows(session_bundle, rng, chip, fp8):
    """A NaN or an Inf in an f16 row makes that row of Y NaN, and only it
    (V-up at M = 3: the 16x64 tile over all four K-groups; the tile table
    splits no K)."""
    mla_fp8.set_bundle(session_bundle)
    b, m, n, k = 16, 3, 128, 512
    x = rng.standard_normal((b, m, k)).astype(np.float16)
    x[0, 0, 7] = np.nan
    x[1, 2, 300] = np.inf
    wq, w_scale = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((b, n, k)) * 0.05, chip)
    y = mla_fp8.from_bf16_bits(call(x, wq, w_scale, chip=chip))
    nan_rows = np.isnan(y).all(axis=2)
    expected = np.zeros((b, m), dtype=bool)
    expected[0, 0] = expected[1, 2] = True
    assert np.array_equal(nan_rows, expected)
    assert not np.isnan(y[~expected]).any()


def test_bf16_and_f16_kernels_differ(session_bundle, rng):
    """The same values as bf16 bits and as float16 run different kernels,
    each matching its own reference."""
    mla_fp8.set_bundle(session_bundle)
    bundle = mla_fp8.load_bundle(session_bundle)
    bf16 = bundle.find_kernel("gfx942", 512, 128, 5, 16, in_type="bf16")
    f16 = bundle.find_kernel("gfx942", 512, 128, 5, 16, in_type="f16")
    assert bf16.symbol != f16.symbol and "_xf16_" in f16.symbol
    values = rng.standard_normal((16, 5, 128))
    wq, w_scale = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((16, 512, 128)) * 0.05, "gfx942")
    for x, in_type in ((mla_fp8.to_bf16_bits(values), "bf16"),
                       (values.astype(np.float16), "f16")):
        y = call(x, wq, w_scale, chip="gfx942")
        ref = mla_fp8.reference_prequant_bmm(
            x.view(np.uint16), wq, w_scale, fp8_format="f8E4M3FNUZ",
            in_type=in_type)
        assert _within_one_ulp(y, ref)


def test_float16_x_without_f16_kernels(tmp_path, rng):
    """A bundle generated for bf16 only says that X's type is what it
    lacks."""
    out = tmp_path / "bf16-only"
    mla_fp8.generate_bundle(out, tp=[8], chips=["gfx942"], max_m=16,
                            in_type="bf16")
    mla_fp8.set_bundle(out)
    x = rng.standard_normal((16, 2, 128)).astype(np.float16)
    wq = np.zeros((16, 512, 128), dtype=np.uint8)
    with pytest.raises(ValueError, match="^X: .*in_type bf16, not f16"):
        call(x, wq, 1.0, chip="gfx942")


def test_generate_bundle_in_types_and_version(tmp_path):
    out = tmp_path / "f16-v6"
    result = mla_fp8.generate_bundle(out, tp=[8], chips=["gfx950"], max_m=16,
                                     in_type=["f16"], code_object_version=6)
    manifest = json.loads(result["manifest"])
    chip = manifest["chips"][0]
    assert chip["code_object_version"] == 6
    assert {k["in_type"] for k in chip["kernels"]} == {"f16"}
    assert all("_xf16_" in s for s in result["chips"][0]["symbols"])
    # The ELF header says v6: ABI version byte 4.
    assert (out / "gfx950.hsaco").read_bytes()[8] == 4
    default = tmp_path / "default"
    result = mla_fp8.generate_bundle(default, tp=[8], chips=["gfx942"],
                                     max_m=16)
    chip = json.loads(result["manifest"])["chips"][0]
    assert chip["code_object_version"] == 5
    assert {k["in_type"] for k in chip["kernels"]} == {"bf16", "f16"}
    assert (default / "gfx942.hsaco").read_bytes()[8] == 3


def test_compile_spec_in_type_and_version():
    result = mla_fp8.compile_spec(128, 512, "gfx942", max_m=16,
                                  in_type="f16", with_isa=False)
    assert result["code_object_version"] == 5
    assert all(k["in_type"] == "f16" and "_xf16_" in k["symbol"]
               for k in result["kernels"])
    result = mla_fp8.compile_spec(128, 512, "gfx942", max_m=16,
                                  with_isa=False, code_object_version=6)
    assert result["code_object_version"] == 6


@pytest.mark.parametrize("generate", [
    lambda: mla_fp8.generate_bundle("/nonexistent/x", in_type=["bf16", "f32"]),
    lambda: mla_fp8.compile_spec(512, 128, "gfx942", in_type="f32"),
])
def test_bad_in_type(generate):
    with pytest.raises(ValueError, match="in_type"):
        generate()


@pytest.mark.parametrize("generate", [
    lambda: mla_fp8.generate_bundle("/nonexistent/x", code_object_version=4),
    lambda: mla_fp8.compile_spec(512, 128, "gfx942", code_object_version=7),
])
def test_bad_code_object_version(generate):
    with pytest.raises(ValueError, match=r"^code_object_version must be 5 "
                                         r"\(ROCm 6.0 and later\) or 6"):
        generate()
