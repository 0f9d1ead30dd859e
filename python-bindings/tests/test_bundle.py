"""load_bundle on a real, small bundle: lookups, grid, kernargs, every error.

The loader checks every manifest field against the code object's metadata,
so the tests start from a bundle generate_bundle compiled and damage copies
of it.
"""

import hashlib
import json
import shutil

import pytest

import mla_fp8

EXPLICIT = ["x", "x_stride_b", "x_stride_m", "m", "w", "w_scale", "y",
            "bias", "y_stride_b", "y_stride_m", "workspace"]
K_UP = "mla_fp8_n64_k32_g128_bf16_gfx942_r{}"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """16 heads at TP 1, ranges planned up to M = 64: 1024 rows, the
    heuristic's ranges 1-256, 257-512 and 513 up (at B = 16: M 1-16, 17-32
    and 33 up)."""
    directory = tmp_path_factory.mktemp("bundle") / "b"
    mla_fp8.generate_bundle(directory, model="deepseek-r1", heads=16,
                            kv_lora_rank=64, qk_nope_head_dim=32,
                            v_head_dim=32, tp=(1,), max_m=64,
                            chips=("gfx942",))
    return directory


@pytest.fixture
def copy(pristine, tmp_path):
    directory = tmp_path / "b"
    shutil.copytree(pristine, directory)
    return directory


def read_manifest(directory):
    return json.loads((directory / "manifest.json").read_text())


def write_manifest(directory, data, digest=True):
    text = data if isinstance(data, str) else json.dumps(data, indent=2)
    (directory / "manifest.json").write_text(text)
    if digest:
        (directory / "manifest.sha256").write_text(
            hashlib.sha256(text.encode()).hexdigest() + "  manifest.json\n")


@pytest.fixture
def bundle(pristine):
    return mla_fp8.load_bundle(pristine)


def test_bundle_fields(bundle):
    assert bundle.schema_version == 5
    assert bundle.max_m == 64
    assert bundle.chips == ["gfx942"]
    kernels = bundle.kernels()
    assert [k.symbol for k in kernels][:3] == [
        K_UP.format("1_256"), K_UP.format("257_512"), K_UP.format("513_inf")]
    assert [(k.min_rows, k.max_rows) for k in kernels][:3] == [
        (1, 256), (257, 512), (513, 0)]
    assert not hasattr(kernels[0], "min_m")
    assert not hasattr(kernels[0], "max_m")


INT32_MAX = (1 << 31) - 1


@pytest.mark.parametrize("m,b,suffix", [
    # At B = 16 the rows 1-256, 257-512 and 513 up are M 1-16, 17-32 and
    # 33 up.
    (0, 16, "1_256"), (1, 16, "1_256"), (16, 16, "1_256"),
    (17, 16, "257_512"), (32, 16, "257_512"), (33, 16, "513_inf"),
    (1 << 30, 16, "513_inf"),
    # The rows decide, not M.
    (256, 1, "1_256"), (257, 1, "257_512"), (512, 1, "257_512"),
    (513, 1, "513_inf"), (128, 2, "1_256"), (129, 2, "257_512"),
    (256, 2, "257_512"), (257, 2, "513_inf"), (2, 128, "1_256"),
    (3, 128, "257_512"), (4, 128, "257_512"), (5, 128, "513_inf"),
    (1, 256, "1_256"), (1, 257, "257_512"), (1, 513, "513_inf"),
    # B * M beyond every bound of a range (M and B at most 2^31 - 1 each):
    # the unbounded one.
    (INT32_MAX, INT32_MAX, "513_inf"), (INT32_MAX, 1, "513_inf"),
    (1, INT32_MAX, "513_inf"),
    # M = 0 or B = 0 launches nothing: the lowest range describes it.
    (40, 0, "1_256"), (0, 0, "1_256"), (0, 1000, "1_256"),
])
def test_lookup_at_range_edges(bundle, m, b, suffix):
    kernel = bundle.find_kernel("gfx942", 64, 32, m, b)
    assert kernel.symbol == K_UP.format(suffix)
    assert kernel.serves(m, b) == (m > 0 and b > 0)


def test_kernel_description(bundle, pristine):
    k = bundle.find_kernel("gfx942", 64, 32, 20, 16)
    assert (k.min_rows, k.max_rows) == (257, 512)
    assert k.serves(20, 16) and not k.serves(33, 16) and not k.serves(16, 16)
    assert k.serves(257, 1) and k.serves(512, 1) and not k.serves(256, 1)
    assert k.serves(4, 128) and not k.serves(5, 128)
    assert not k.serves(0, 16) and not k.serves(20, 0)
    # No launch of negative M and B, whatever their product.
    assert not k.serves(-20, -16) and not k.serves(-1, -300)
    assert k.workgroup_size[1:] == (1, 1)
    x, y, z = k.grid(20, 16)
    assert x >= 1 and y >= 1 and z == 16
    assert k.grid(0, 16) == (x, 0, 16)
    assert k.kernarg_size == 88
    assert k.arg_offsets == {name: 8 * i for i, name in enumerate(EXPLICIT)}
    assert not any(a["hidden"] for a in k.args)
    assert k.code_object == (pristine / "gfx942.hsaco").read_bytes()
    # Kernels of one chip share one bytes object; lookups are cached.
    other = bundle.find_kernel("gfx942", 64, 32, 1, 16)
    assert other is not k
    assert other.code_object is k.code_object
    assert bundle.find_kernel("gfx942", 64, 32, 20, 16) is k
    assert bundle.find_kernel("gfx942", 64, 32, 160, 2) is k


def test_unknown_chip_or_shape_is_none(bundle):
    assert bundle.find_kernel("gfx90a", 64, 32, 1, 16) is None
    assert bundle.find_kernel("gfx942", 128, 512, 1, 16) is None
    assert bundle.find_kernel("gfx942", 64, 32, 1, 16,
                              w_scale="per_batch") is None
    assert bundle.find_kernel("gfx942", 64, 32, 1, 16, group_size=64) is None
    assert bundle.find_kernel("gfx942", 64, 32, 1, 16, out_type="f16") is None
    # Nor for an empty launch: no kernel of the shape describes it.
    assert bundle.find_kernel("gfx90a", 64, 32, 0, 16) is None
    assert bundle.find_kernel("gfx942", 128, 512, 1, 0) is None
    # Nor past the M and B a kernel indexes (2^31 - 1), as natively; an
    # empty launch there included.
    for m, b in ((INT32_MAX + 1, 1), (1, INT32_MAX + 1), (2 ** 40, 16),
                 (0, INT32_MAX + 1), (INT32_MAX + 1, 0)):
        assert bundle.find_kernel("gfx942", 64, 32, m, b) is None, (m, b)


def test_lookup_argument_errors(bundle):
    with pytest.raises(TypeError, match="^chip"):
        bundle.find_kernel(942, 64, 32, 1, 16)
    with pytest.raises(ValueError, match="^m"):
        bundle.find_kernel("gfx942", 64, 32, -1, 16)
    with pytest.raises(ValueError, match="^b"):
        bundle.find_kernel("gfx942", 64, 32, 1, -1)
    with pytest.raises(TypeError, match="^b"):
        bundle.find_kernel("gfx942", 64, 32, 1, 16.0)
    with pytest.raises(TypeError, match="^n"):
        bundle.find_kernel("gfx942", 64.0, 32, 1, 16)
    with pytest.raises(ValueError, match="^out_type"):
        bundle.find_kernel("gfx942", 64, 32, 1, 16, out_type="f32")
    with pytest.raises(ValueError, match="^w_scale"):
        bundle.find_kernel("gfx942", 64, 32, 1, 16, w_scale="per-tensor")
    # B is required: a lookup by M alone cannot pick a range of rows.
    with pytest.raises(TypeError, match="'b'"):
        bundle.find_kernel("gfx942", 64, 32, 1)  # pylint: disable=E1120
    with pytest.raises(TypeError, match="^directory"):
        mla_fp8.load_bundle(3)
    kernel = bundle.find_kernel("gfx942", 64, 32, 1, 16)
    with pytest.raises(ValueError, match="^m"):
        kernel.workspace_bytes(-5, 16)
    with pytest.raises(ValueError, match="^b"):
        kernel.workspace_bytes(1, 2 ** 70)
    with pytest.raises(TypeError, match="^m"):
        kernel.workspace_bytes("x", 16)


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_wrong_schema_version(copy, version):
    data = read_manifest(copy)
    data["schema_version"] = version
    write_manifest(copy, data)
    with pytest.raises(mla_fp8.BundleError,
                       match=f"schema version {version}; this loader reads "
                             f"schema version 5 only. Regenerate"):
        mla_fp8.load_bundle(copy)


def test_argument_names_come_from_the_manifest(copy):
    # The names are the manifest's `name` fields; `meaning` is prose that
    # may say anything.
    data = read_manifest(copy)
    for kernel in data["chips"][0]["kernels"]:
        for arg in kernel["args"]:
            arg["meaning"] = "reworded: " + arg["meaning"]
    write_manifest(copy, data)
    kernel = mla_fp8.load_bundle(copy).kernels()[0]
    assert [a["name"] for a in kernel.args] == EXPLICIT
    assert kernel.args[0]["meaning"].startswith("reworded: ")


def test_digest(copy):
    data = read_manifest(copy)
    data["kernels_note"] = "edited"
    write_manifest(copy, data, digest=False)
    with pytest.raises(mla_fp8.BundleError,
                       match=r"manifest\.sha256: manifest\.json has SHA-256"):
        mla_fp8.load_bundle(copy)
    (copy / "manifest.sha256").unlink()
    with pytest.raises(mla_fp8.BundleError, match=r"manifest\.sha256"):
        mla_fp8.load_bundle(copy)


def test_hash_mismatch(copy):
    code = bytearray((copy / "gfx942.hsaco").read_bytes())
    code[len(code) // 2] ^= 1
    (copy / "gfx942.hsaco").write_bytes(bytes(code))
    with pytest.raises(mla_fp8.BundleError,
                       match=r"gfx942\.hsaco.*chips\[0\]\.sha256"):
        mla_fp8.load_bundle(copy)


def test_missing_files(copy, tmp_path):
    with pytest.raises(mla_fp8.BundleError, match="manifest.json"):
        mla_fp8.load_bundle(tmp_path / "nothing")
    (copy / "gfx942.hsaco").unlink()
    with pytest.raises(ValueError, match=r"gfx942\.hsaco"):
        mla_fp8.load_bundle(copy)


def test_malformed_json(copy):
    write_manifest(copy, json.dumps(read_manifest(copy))[:100])
    with pytest.raises(mla_fp8.BundleError, match="malformed JSON"):
        mla_fp8.load_bundle(copy)


@pytest.mark.parametrize("field,value,path", [
    ("grid", {"x": 0, "y": "ceil(M/32)", "z": "B"}, r"grid\.x"),
    ("grid", {"x": 4, "y": "ceil(M/32)", "z": 1}, r"grid\.z"),
    ("workgroup_size", [32, 1, 1], "workgroup_size"),
    ("has_bias", True, "has_bias"),
    ("w_scale", "per_batch", "w_scale"),
    ("out_type", "f16", "out_type"),
    ("kernarg_size", 10 ** 12, "kernarg_size"),
    ("workspace_bytes_per_block", 10 ** 15, "workspace_bytes_per_block"),
])
def test_bad_field_names_its_path(copy, field, value, path):
    data = read_manifest(copy)
    data["chips"][0]["kernels"][1][field] = value
    write_manifest(copy, data)
    with pytest.raises(mla_fp8.BundleError,
                       match=r"field 'chips\[0\]\.kernels\[1\]\." + path):
        mla_fp8.load_bundle(copy)
