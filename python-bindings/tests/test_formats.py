"""Bit conversions: round trips over every pattern, rounding, errors."""

import numpy as np
import pytest

import mla_fp8


def test_bf16_round_trip_every_pattern():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    values = mla_fp8.from_bf16_bits(bits)
    assert values.dtype == np.float32
    # Independent decoding: bf16 is the top half of a float32.
    expected = (bits.astype(np.uint32) << 16).view(np.float32)
    nan = np.isnan(expected)
    np.testing.assert_array_equal(values[~nan], expected[~nan])
    assert np.isnan(values[nan]).all()
    back = mla_fp8.to_bf16_bits(values)
    assert back.dtype == np.uint16
    np.testing.assert_array_equal(back[~nan], bits[~nan])
    assert np.isnan(mla_fp8.from_bf16_bits(back[nan])).all()


def test_f16_round_trip_every_pattern():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    values = mla_fp8.from_f16_bits(bits)
    expected = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(expected)
    np.testing.assert_array_equal(values[~nan], expected[~nan])
    back = mla_fp8.to_f16_bits(values)
    np.testing.assert_array_equal(back[~nan], bits[~nan])
    assert np.isnan(mla_fp8.from_f16_bits(back[nan])).all()


@pytest.mark.parametrize("fmt", mla_fp8.FP8_FORMATS)
def test_fp8_round_trip_every_pattern(fmt):
    bits = np.arange(256, dtype=np.uint16).astype(np.uint8)
    values = mla_fp8.dequantize_fp8(bits, fmt)
    finite = np.isfinite(values)
    back = mla_fp8.quantize_fp8(values[finite], fmt)
    np.testing.assert_array_equal(back, bits[finite])
    assert np.nanmax(np.abs(values[finite])) == mla_fp8.fp8_max(fmt)


def test_fp8_max():
    assert mla_fp8.fp8_max("f8E4M3FNUZ") == 240.0
    assert mla_fp8.fp8_max("f8E4M3FN") == 448.0


def test_rounding_is_to_nearest_even():
    # 1 + 2^-8 lies halfway between bf16 1.0 and 1 + 2^-7: even is 1.0.
    tie = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8], dtype=np.float32)
    np.testing.assert_array_equal(mla_fp8.to_bf16_bits(tie), [0x3F80, 0x3F82])
    # float64 rounds once: just above the tie goes up, where rounding
    # through float32 first would have made it a tie and gone down.
    above = np.array([1 + 2.0**-8 + 2.0**-30])
    np.testing.assert_array_equal(mla_fp8.to_bf16_bits(above), [0x3F81])
    np.testing.assert_array_equal(
        mla_fp8.to_f16_bits(np.float32(1 + 2.0**-11)), 0x3C00)
    # fp8 e4m3: 1.0625 is halfway between 1.0 and 1.125 -> 1.0 (even).
    np.testing.assert_array_equal(
        mla_fp8.quantize_fp8([1.0625, 1.1875], "f8E4M3FN"), [0x38, 0x3A])


def test_fp8_saturation():
    assert mla_fp8.quantize_fp8([1000.0], "f8E4M3FNUZ")[0] == 0x7F
    assert mla_fp8.quantize_fp8([-1000.0], "f8E4M3FN")[0] == 0xFE
    assert mla_fp8.quantize_fp8([1000.0], "f8E4M3FNUZ",
                                saturate=False)[0] == 0x80
    assert mla_fp8.quantize_fp8([1000.0], "f8E4M3FN",
                                saturate=False)[0] == 0x7F


def test_shapes_are_kept():
    values = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    assert mla_fp8.to_bf16_bits(values).shape == (2, 3, 4)
    bits = mla_fp8.quantize_fp8(values, "f8E4M3FNUZ")
    assert bits.shape == (2, 3, 4) and bits.dtype == np.uint8
    # Non-contiguous input works too.
    np.testing.assert_array_equal(mla_fp8.to_bf16_bits(values[:, ::2]),
                                  mla_fp8.to_bf16_bits(values)[:, ::2])


def test_errors_name_the_argument():
    with pytest.raises(TypeError, match="bits"):
        mla_fp8.from_bf16_bits(np.zeros(3, dtype=np.float32))
    with pytest.raises(TypeError, match="bits"):
        mla_fp8.from_f16_bits([1, 2])
    with pytest.raises(TypeError, match="bits"):
        mla_fp8.dequantize_fp8(np.zeros(3, dtype=np.uint16), "f8E4M3FN")
    with pytest.raises(ValueError, match="fp8_format"):
        mla_fp8.quantize_fp8([1.0], "e4m3")
    with pytest.raises(TypeError, match="fp8_format"):
        mla_fp8.dequantize_fp8(np.zeros(3, dtype=np.uint8), 3)
    with pytest.raises(TypeError, match="values"):
        mla_fp8.to_bf16_bits(np.array(["a"]))
    with pytest.raises(TypeError, match="saturate"):
        mla_fp8.quantize_fp8([1.0], "f8E4M3FN", saturate="yes")


def test_chip_table_comes_from_the_native_table():
    chips = {c["name"]: c for c in mla_fp8.supported_chips()}
    assert list(chips) == ["gfx942", "gfx950"]
    assert chips["gfx942"]["fp8_e4m3_type"] == "f8E4M3FNUZ"
    assert chips["gfx950"]["fp8_e4m3_type"] == "f8E4M3FN"
    assert chips["gfx950"]["lds_bytes_per_workgroup"] == 160 * 1024
    assert all(c["wave_size"] == 64 for c in chips.values())
    # gfx950's f8f6f4 MFMAs follow from its architecture's records.
    assert "v_mfma_f32_16x16x128_f8f6f4" in chips["gfx950"]["mfmas"]
    assert "v_mfma_f32_16x16x128_f8f6f4" not in chips["gfx942"]["mfmas"]
    assert mla_fp8.weights.CHIP_FP8_FORMATS == {
        name: c["fp8_e4m3_type"] for name, c in chips.items()}
    with pytest.raises(ValueError, match="gfx942, gfx950"):
        mla_fp8.fp8_format_for_chip("gfx90a")
