"""load_bundle on synthetic bundles: lookups, grid, kernargs, every error."""

import hashlib
import json

import pytest

import mla_fp8

CODE_942 = b"\x7fELF fake gfx942 code object\x00\x01"
CODE_950 = b"\x7fELF fake gfx950"

EXPLICIT = ["x", "w", "w_scale", "bias", "y", "m", "x_stride_b",
            "x_stride_m", "y_stride_b", "y_stride_m"]


def kernel(symbol, n, k, min_m, max_m, block_m, out_type="bf16"):
    args = [{"offset": 8 * i, "size": 8,
             "kind": "global_buffer" if i < 5 else "by_value",
             "meaning": f"{name}: ..."} for i, name in enumerate(EXPLICIT)]
    args.append({"offset": 80, "size": 4, "kind": "hidden_block_count_x"})
    return {
        "symbol": symbol, "projection": "k_up", "n": n, "k": k,
        "group_size": 128, "batches": [16], "tp": [8], "in_type": "bf16",
        "fp8_type": "f8E4M3FNUZ", "out_type": out_type,
        "w_scale": "per_tensor", "min_m": min_m, "max_m": max_m,
        "tile": {"min_m": min_m, "max_m": max_m, "block_m": block_m,
                 "block_n": 64, "waves": 4, "mfma": "16x16x32",
                 "split_k": 1, "stages": 1, "occupancy": 2},
        "workgroup_size": [256, 1, 1],
        "grid": {"x": 8, "y": f"ceil(M/{block_m})", "z": "B"},
        "lds_bytes": 4096, "scratch_bytes": 0, "kernarg_size": 336,
        "kernarg_align": 8, "args": args,
    }


def manifest(schema=1):
    return {
        "schema_version": schema, "compiler": "mla-fp8",
        "compiler_version": "0.1.0", "model": "deepseek-r1", "max_m": 1024,
        "chips": [
            {"chip": "gfx942", "code_object": "gfx942.hsaco",
             "sha256": hashlib.sha256(CODE_942).hexdigest(),
             "bytes": len(CODE_942),
             "kernels": [kernel("a_m1_16", 512, 128, 1, 16, 16),
                         kernel("a_m17_64", 512, 128, 17, 64, 32),
                         kernel("a_m65_inf", 512, 128, 65, 0, 64),
                         kernel("a_f16", 512, 128, 1, 0, 16, "f16")]},
            {"chip": "gfx950", "code_object": "gfx950.hsaco",
             "sha256": hashlib.sha256(CODE_950).hexdigest(),
             "bytes": len(CODE_950),
             "kernels": [kernel("b_all", 128, 512, 1, 0, 32)]},
        ],
    }


def write(directory, data, code942=CODE_942, code950=CODE_950):
    if code942 is not None:
        (directory / "gfx942.hsaco").write_bytes(code942)
    if code950 is not None:
        (directory / "gfx950.hsaco").write_bytes(code950)
    text = data if isinstance(data, str) else json.dumps(data, indent=2)
    (directory / "manifest.json").write_text(text)
    return directory


@pytest.fixture
def bundle(tmp_path):
    return mla_fp8.load_bundle(write(tmp_path, manifest()))


def test_bundle_fields(bundle):
    assert bundle.schema_version == 1
    assert bundle.model == "deepseek-r1"
    assert bundle.compiler_version == "0.1.0"
    assert bundle.max_m == 1024
    assert bundle.chips == ["gfx942", "gfx950"]
    assert [k.symbol for k in bundle.kernels()] == [
        "a_m1_16", "a_m17_64", "a_m65_inf", "a_f16", "b_all"]


@pytest.mark.parametrize("m,symbol", [(0, "a_m1_16"), (1, "a_m1_16"),
                                      (16, "a_m1_16"), (17, "a_m17_64"),
                                      (64, "a_m17_64"), (65, "a_m65_inf"),
                                      (1 << 30, "a_m65_inf")])
def test_lookup_at_range_edges(bundle, m, symbol):
    assert bundle.find_kernel("gfx942", 512, 128, m).symbol == symbol


def test_kernel_description(bundle):
    k = bundle.find_kernel("gfx942", 512, 128, 40)
    assert k.serves(40) and not k.serves(65)
    assert k.workgroup_size == (256, 1, 1)
    assert k.grid(40, 16) == (8, 2, 16)
    assert k.grid(64, 3) == (8, 2, 3)
    assert k.grid(0, 16) == (8, 0, 16)
    assert k.kernarg_size == 336
    assert k.arg_offsets == {name: 8 * i for i, name in enumerate(EXPLICIT)}
    assert k.args[-1]["hidden"]
    assert k.args[-1]["name"] == "hidden_block_count_x"
    assert k.code_object == CODE_942
    # Kernels of one chip share one bytes object; lookups are cached.
    other = bundle.find_kernel("gfx942", 512, 128, 1)
    assert other.code_object is k.code_object
    assert bundle.find_kernel("gfx942", 512, 128, 40) is k
    assert bundle.find_kernel("gfx950", 128, 512, 3).code_object == CODE_950
    assert bundle.find_kernel("gfx942", 512, 128, 3,
                              out_type="f16").symbol == "a_f16"


def test_unknown_chip_or_shape_is_none(bundle):
    assert bundle.find_kernel("gfx90a", 512, 128, 1) is None
    assert bundle.find_kernel("gfx942", 128, 512, 1) is None
    assert bundle.find_kernel("gfx942", 512, 128, 1,
                              w_scale="per_batch") is None
    assert bundle.find_kernel("gfx942", 512, 128, 1, group_size=64) is None


def test_lookup_argument_errors(bundle):
    with pytest.raises(TypeError, match="^chip"):
        bundle.find_kernel(942, 512, 128, 1)
    with pytest.raises(ValueError, match="^m"):
        bundle.find_kernel("gfx942", 512, 128, -1)
    with pytest.raises(TypeError, match="^n"):
        bundle.find_kernel("gfx942", 512.0, 128, 1)
    with pytest.raises(ValueError, match="^out_type"):
        bundle.find_kernel("gfx942", 512, 128, 1, out_type="f32")
    with pytest.raises(ValueError, match="^w_scale"):
        bundle.find_kernel("gfx942", 512, 128, 1, w_scale="per-tensor")
    with pytest.raises(TypeError, match="^directory"):
        mla_fp8.load_bundle(3)


def test_wrong_schema_version(tmp_path):
    write(tmp_path, manifest(schema=2))
    with pytest.raises(mla_fp8.BundleError,
                       match="schema_version.*reads schema version 1"):
        mla_fp8.load_bundle(tmp_path)


def test_hash_mismatch(tmp_path):
    write(tmp_path, manifest(), code942=CODE_942[:-1] + b"\x02")
    with pytest.raises(mla_fp8.BundleError,
                       match=r"gfx942\.hsaco.*chips\[0\]\.sha256"):
        mla_fp8.load_bundle(tmp_path)


def test_missing_files(tmp_path):
    with pytest.raises(mla_fp8.BundleError, match="manifest.json"):
        mla_fp8.load_bundle(tmp_path)
    write(tmp_path, manifest(), code950=None)
    with pytest.raises(ValueError, match=r"gfx950\.hsaco"):
        mla_fp8.load_bundle(tmp_path)


def test_malformed_json(tmp_path):
    write(tmp_path, json.dumps(manifest())[:100])
    with pytest.raises(mla_fp8.BundleError, match="malformed JSON"):
        mla_fp8.load_bundle(tmp_path)


def test_bad_field_names_its_path(tmp_path):
    data = manifest()
    data["chips"][1]["kernels"][0]["grid"]["y"] = "floor(M/32)"
    write(tmp_path, data)
    with pytest.raises(mla_fp8.BundleError,
                       match=r"chips\[1\]\.kernels\[0\]\.grid\.y"):
        mla_fp8.load_bundle(tmp_path)
