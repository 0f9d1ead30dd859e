"""compile_spec and generate_bundle; the generated bundle is read back
through load_bundle."""

import pytest

import mla_fp8



def test_compile_spec():
    # 32 tokens at B = 128: 4096 rows, the gfx942 K-up ranges that start at
    # or below it (1-512, 513-2048 and 2049-8192, the last made unbounded;
    # 8193 up is not planned).
    result = mla_fp8.compile_spec(512, 128, "gfx942", max_m=32,
                                  batches=[16, 128])
    assert result["code_object"][:4] == b"\x7fELF"
    assert [(k["min_rows"], k["max_rows"]) for k in result["kernels"]] == \
        [(1, 512), (513, 2048), (2049, 0)]
    assert [k["symbol"] for k in result["kernels"]] == [
        "mla_fp8_n512_k128_g128_bf16_gfx942_r1_512",
        "mla_fp8_n512_k128_g128_bf16_gfx942_r513_2048",
        "mla_fp8_n512_k128_g128_bf16_gfx942_r2049_inf"]
    assert not any("min_m" in k or "max_m" in k for k in result["kernels"])
    assert all(k["symbol"] in result["isa"] for k in result["kernels"])
    assert "v_mfma" in result["isa"]
    assert result["target_id"].endswith("gfx942")
    metadata = result["kernels"][0]["metadata"]
    assert metadata["wavefront_size"] == 64
    assert metadata["vgpr_spills"] == 0 and metadata["scratch_bytes"] == 0
    assert metadata["kernarg_size"] >= 80


@pytest.mark.parametrize("chip,n,k,batches,max_m,ranges", [
    # The ranges of rows are planned up to max_m times the largest batch
    # (128 without batches) and cut there, the last made unbounded.
    ("gfx942", 512, 128, [16], 4, [(1, 0)]),
    # 512 rows end the first K-up range exactly; 528 reach the second.
    ("gfx942", 512, 128, [16], 32, [(1, 0)]),
    ("gfx942", 512, 128, [16], 33, [(1, 512), (513, 0)]),
    ("gfx942", 512, 128, [16], 128, [(1, 512), (513, 0)]),
    ("gfx942", 512, 128, [16], 129, [(1, 512), (513, 2048), (2049, 0)]),
    ("gfx942", 512, 128, [], 32, [(1, 512), (513, 2048), (2049, 0)]),
    ("gfx942", 512, 128, [128], 1024, [(1, 512), (513, 2048), (2049, 8192),
                                       (8193, 0)]),
    ("gfx942", 128, 512, [128], 1024, [(1, 2048), (2049, 4096), (4097, 8192),
                                       (8193, 16384), (16385, 0)]),
    ("gfx942", 128, 512, [128], 512, [(1, 2048), (2049, 4096), (4097, 8192),
                                      (8193, 16384), (16385, 0)]),
    # 16384 rows end the fourth V-up range exactly: the fifth is dropped.
    ("gfx942", 128, 512, [128], 128, [(1, 2048), (2049, 4096), (4097, 8192),
                                      (8193, 0)]),
    ("gfx942", 128, 512, [128], 129, [(1, 2048), (2049, 4096), (4097, 8192),
                                      (8193, 16384), (16385, 0)]),
    ("gfx950", 512, 128, [128], 1024, [(1, 2048), (2049, 8192), (8193, 0)]),
    ("gfx950", 512, 128, [8], 256, [(1, 0)]),
    ("gfx950", 512, 128, [8], 257, [(1, 2048), (2049, 0)]),
    ("gfx950", 128, 512, [128], 1024, [(1, 2048), (2049, 4096), (4097, 8192),
                                       (8193, 0)]),
    ("gfx950", 128, 512, [16], 16, [(1, 0)]),
    ("gfx950", 128, 512, [16], 17, [(1, 0)]),
    # 2048 rows end the first gfx950 V-up range exactly; 2064 reach the
    # second.
    ("gfx950", 128, 512, [16], 128, [(1, 0)]),
    ("gfx950", 128, 512, [16], 129, [(1, 2048), (2049, 0)]),
    # A shape the tile table lacks: the heuristic's ranges.
    ("gfx942", 64, 32, [16], 64, [(1, 256), (257, 512), (513, 0)]),
    ("gfx942", 64, 32, [1], 8192, [(1, 256), (257, 512), (513, 1024),
                                   (1025, 2048), (2049, 4096), (4097, 0)]),
    ("gfx942", 64, 32, [1], 8193, [(1, 256), (257, 512), (513, 1024),
                                   (1025, 2048), (2049, 4096), (4097, 8192),
                                   (8193, 0)]),
])
def test_compile_spec_ranges_of_rows(chip, n, k, batches, max_m, ranges):
    result = mla_fp8.compile_spec(n, k, chip, max_m=max_m, batches=batches,
                                  with_isa=False)
    kernels = result["kernels"]
    assert [(e["min_rows"], e["max_rows"]) for e in kernels] == ranges
    for e, (low, high) in zip(kernels, ranges):
        assert e["symbol"].endswith(f"_{chip}_r{low}_" +
                                    (str(high) if high else "inf"))


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
    # DeepSeek-V2-Lite has 16 heads: at TP 1, B = 16.
    kernel = bundle.find_kernel("gfx950", 512, 128, 5, 16)
    assert kernel is not None and kernel.symbol in result["chips"][0][
        "symbols"]
    assert kernel.serves(5, 16)
    assert kernel.arg_offsets["m"] == 24
    assert bundle.find_kernel("gfx950", 128, 512, 1000, 16) is not None


def test_errors():
    with pytest.raises(ValueError, match="gfx90a"):
        mla_fp8.compile_spec(512, 128, "gfx90a")
    with pytest.raises(ValueError, match="^weight_scale"):
        mla_fp8.compile_spec(512, 128, "gfx942", weight_scale="pt")
    with pytest.raises(ValueError, match="model"):
        mla_fp8.generate_bundle("/nonexistent/x", model="gpt-2")
