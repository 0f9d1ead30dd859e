"""compile_spec and generate_bundle; the generated bundle is read back
through load_bundle."""

import pytest

import mla_fp8



def test_compile_spec():
    result = mla_fp8.compile_spec(512, 128, "gfx942", max_m=32,
                                  batches=[16])
    assert result["code_object"][:4] == b"\x7fELF"
    assert result["kernels"]
    assert all(k["symbol"] in result["isa"] for k in result["kernels"])
    assert result["kernels"][-1]["max_m"] == 0
    assert "v_mfma" in result["isa"]
    assert result["target_id"].endswith("gfx942")
    metadata = result["kernels"][0]["metadata"]
    assert metadata["wavefront_size"] == 64
    assert metadata["vgpr_spills"] == 0 and metadata["scratch_bytes"] == 0
    assert metadata["kernarg_size"] >= 80


def test_compile_spec_kernels_carry_their_description():
    result = mla_fp8.compile_spec(512, 128, "gfx950", max_m=16, bias=True,
                                  weight_scale="per_batch", with_isa=False)
    for kernel in result["kernels"]:
        assert {key: kernel[key] for key in (
            "chip", "n", "k", "group_size", "in_type", "fp8_type",
            "out_type", "w_scale", "has_bias")} == {
                "chip": "gfx950", "n": 512, "k": 128, "group_size": 128,
                "in_type": "bf16", "fp8_type": "f8E4M3FN", "out_type": "bf16",
                "w_scale": "per_batch", "has_bias": True}
        assert "_pb_bias_gfx950_" in kernel["symbol"]


def test_generate_and_load(tmp_path):
    out = tmp_path / "bundle"
    result = mla_fp8.generate_bundle(out, model="deepseek-v2-lite", tp=[1],
                                     chips=["gfx950"], max_m=16)
    assert result["chips"][0]["chip"] == "gfx950"
    bundle = mla_fp8.load_bundle(out)
    kernel = bundle.find_kernel("gfx950", 512, 128, 5)
    assert kernel is not None and kernel.symbol in result["chips"][0][
        "symbols"]
    assert kernel.arg_offsets["m"] == 40
    assert bundle.find_kernel("gfx950", 128, 512, 1000) is not None


def test_errors():
    with pytest.raises(ValueError, match="gfx90a"):
        mla_fp8.compile_spec(512, 128, "gfx90a")
    with pytest.raises(ValueError, match="^weight_scale"):
        mla_fp8.compile_spec(512, 128, "gfx942", weight_scale="pt")
    with pytest.raises(ValueError, match="model"):
        mla_fp8.generate_bundle("/nonexistent/x", model="gpt-2")
