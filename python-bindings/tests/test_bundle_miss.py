"""A kernel missing from the bundle: by default an error naming the
mla-fp8-aot command that generates it (the command is run here and must
produce the kernel); with MLA_FP8_COMPILE_MISSING=1 it is compiled once into
the per-user cache."""

import os
import shlex
import subprocess
import sys

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import _missing, _mla_fp8_compiler, serving

call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501

B = 16
FNUZ = "f8E4M3FNUZ"


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory):
    """DeepSeek-R1 TP8 on gfx942, M ranges up to 16."""
    directory = tmp_path_factory.mktemp("small") / "r1"
    mla_fp8.generate_bundle(directory, tp=[8], chips=["gfx942"], max_m=16)
    return directory


@pytest.fixture(autouse=True)
def isolated(small_bundle, tmp_path, monkeypatch):
    """The small bundle, a private cache and no opt-in unless a test sets
    one."""
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(small_bundle))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(_missing.ENV_VAR, raising=False)
    monkeypatch.delenv("MLA_FP8_EMULATE_CHIP", raising=False)
    serving.set_bundle(None)
    _missing._compiled.clear()
    yield
    mla_fp8.set_compile_missing(None)
    _missing._compiled.clear()
    serving.set_bundle(None)


def operands(rng, n, k, m):
    x = mla_fp8.to_bf16_bits(rng.standard_normal((B, m, k)) * 0.5)
    w, ws = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((B, n, k)) * 0.1, "gfx942")
    return x, w, ws


def the_command(error):
    """The command line quoted in a miss's error message."""
    text = str(error)
    assert text.count("`") == 2, text
    return shlex.split(text.split("`")[1])


def run_tool(argv, tmp_path):
    build = os.environ.get("MLAFP8_BUILD_DIR")
    if not build:
        pytest.skip("MLAFP8_BUILD_DIR is not set (./build.sh check sets it)")
    assert argv[0] == "mla-fp8-aot"
    tool = os.path.join(build, "bin", "mla-fp8-aot")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "tool-cache"))
    done = subprocess.run([tool, *argv[1:], "--quiet"], capture_output=True,
                          text=True, timeout=300, check=False, env=env)
    assert done.returncode == 0, done.stderr
    return mla_fp8.load_bundle(argv[argv.index("-o") + 1])


@pytest.mark.parametrize("n,k,group_size,out_type,bias,reason", [
    (512, 128, 64, "bf16", False, "^group_size: .*have group_size 128"),
    (128, 512, 128, "f16", True, "^dtype: .*out_type bf16, not f16"),
    (256, 128, 128, "bf16", False, "^WQ: the bundle has no kernel for N=256"),
], ids=["group_size", "out_type_bias", "shape"])
def test_miss_names_a_command_that_generates_it(
        rng, tmp_path, small_bundle, n, k, group_size, out_type, bias,
        reason):
    m = 3
    x, w, ws = operands(rng, n, k, m)
    b = mla_fp8.to_bf16_bits(np.zeros((B, n))) if bias else None
    if out_type == "f16" and b is not None:
        b = mla_fp8.to_f16_bits(np.zeros((B, n)))
    with pytest.raises(ValueError, match=reason) as raised:
        call(x, w, ws, group_size=group_size, dtype=out_type, bias=b)
    assert f"set {_missing.ENV_VAR}=1" in str(raised.value)
    argv = the_command(raised.value)
    assert argv[argv.index("-o") + 1].startswith(str(small_bundle) + "-")
    generated = run_tool(argv, tmp_path)
    kernel = generated.find_kernel("gfx942", n, k, m, out_type=out_type,
                                   group_size=group_size, has_bias=bias)
    assert kernel is not None
    if (n, k) != (256, 128):
        # The model's own shapes are regenerated with the new variant.
        assert generated.model == "deepseek-r1"
        assert {(c.n, c.k) for c in generated.kernels()} == {(512, 128),
                                                             (128, 512)}


def test_unsupported_chip_has_no_command(rng):
    x, w, ws = operands(rng, 512, 128, 1)
    with pytest.raises(ValueError, match="^chip: .*gfx90a") as raised:
        call(x, w, ws, chip="gfx90a")
    assert "mla-fp8-aot" not in str(raised.value)


def test_compile_missing_compiles_once_into_the_cache(rng, tmp_path,
                                                      monkeypatch):
    monkeypatch.setenv(_missing.ENV_VAR, "1")
    m = 5
    x, w, ws = operands(rng, 512, 128, m)
    before = _mla_fp8_compiler.compiled_group_count()
    with pytest.warns(RuntimeWarning, match="compiling the missing kernel "
                      "gfx942 N=512 K=128 group_size=64") as caught:
        y = call(x, w, ws, group_size=64)
    assert len(caught) == 1
    ref = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format=FNUZ,
                                         group_size=64)
    np.testing.assert_allclose(mla_fp8.from_bf16_bits(y),
                               mla_fp8.from_bf16_bits(ref), rtol=1e-2,
                               atol=1e-2)
    compiled = _mla_fp8_compiler.compiled_group_count()
    assert compiled > before
    directory = (tmp_path / "cache" / "mla-fp8" / "missing" /
                 "gfx942-n512-k128-g64-bf16-bf16-per_tensor")
    assert (directory / "manifest.json").is_file()
    # Later calls, and a later process (the in-memory table cleared), load
    # it from the cache without compiling.
    _missing._compiled.clear()
    for m in (1, 16, 40):
        x, w, ws = operands(rng, 512, 128, m)
        y = call(x, w, ws, group_size=64)
        ref = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format=FNUZ,
                                             group_size=64)
        np.testing.assert_allclose(mla_fp8.from_bf16_bits(y),
                                   mla_fp8.from_bf16_bits(ref), rtol=1e-2,
                                   atol=1e-2)
    assert _mla_fp8_compiler.compiled_group_count() == compiled
    # The function overrides the environment.
    mla_fp8.set_compile_missing(False)
    with pytest.raises(ValueError, match="^group_size: "):
        call(x, w, ws, group_size=64)
    with pytest.raises(TypeError, match="^enabled: "):
        mla_fp8.set_compile_missing("yes")


def test_compile_missing_reports_what_cannot_compile(rng):
    mla_fp8.set_compile_missing(True)
    x, w, ws = operands(rng, 512, 128, 1)
    with pytest.raises(ValueError, match="^group_size: no kernel for gfx942 "
                       ".*compiling it failed: .*LDS"), \
            pytest.warns(RuntimeWarning, match="compiling the missing"):
        call(x, w, ws, group_size=4096)


def test_a_damaged_cache_entry_is_compiled_again(rng, tmp_path):
    mla_fp8.set_compile_missing(True)
    directory = (tmp_path / "cache" / "mla-fp8" / "missing" /
                 "gfx942-n512-k128-g64-bf16-bf16-per_tensor")
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_text("{}")
    x, w, ws = operands(rng, 512, 128, 2)
    with pytest.warns(RuntimeWarning, match="compiling the missing kernel"):
        call(x, w, ws, group_size=64)
    assert mla_fp8.load_bundle(directory).find_kernel(
        "gfx942", 512, 128, 2, group_size=64) is not None


def test_compile_missing_without_the_compiler(rng, monkeypatch):
    """A serving install without the compiler module says so by name."""
    mla_fp8.set_compile_missing(True)
    monkeypatch.delattr(mla_fp8, "aot", raising=False)
    monkeypatch.setitem(sys.modules, "mla_fp8.aot", None)
    x, w, ws = operands(rng, 512, 128, 1)
    with pytest.raises(ValueError, match="^group_size: .*MLA_FP8_COMPILE_"
                       "MISSING=1 needs mla_fp8's compiler module"):
        call(x, w, ws, group_size=64)
