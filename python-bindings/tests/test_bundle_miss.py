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
    """DeepSeek-R1 TP8 on gfx942, ranges of rows planned up to M = 16 (at
    B = 16: 256 rows)."""
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
    kernel = generated.find_kernel("gfx942", n, k, m, B, out_type=out_type,
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
    """A bundle of the cache's own whose code object was damaged (it no
    longer loads) is compiled again in its place."""
    mla_fp8.set_compile_missing(True)
    x, w, ws = operands(rng, 512, 128, 2)
    with pytest.warns(RuntimeWarning, match="compiling the missing kernel"):
        call(x, w, ws, group_size=64)
    directory = missing_dir(tmp_path) / MISS_DIR
    code = directory / "gfx942.hsaco"
    code.write_bytes(code.read_bytes()[:100])
    with pytest.raises(mla_fp8.BundleError):
        mla_fp8.load_bundle(directory)
    _missing._compiled.clear()
    with pytest.warns(RuntimeWarning, match="compiling the missing kernel"):
        call(x, w, ws, group_size=64)
    assert mla_fp8.load_bundle(directory).find_kernel(
        "gfx942", 512, 128, 2, B, group_size=64) is not None


def test_compile_missing_without_the_compiler(rng, monkeypatch):
    """A serving install without the compiler module says so by name."""
    mla_fp8.set_compile_missing(True)
    monkeypatch.delattr(mla_fp8, "aot", raising=False)
    monkeypatch.setitem(sys.modules, "mla_fp8.aot", None)
    x, w, ws = operands(rng, 512, 128, 1)
    with pytest.raises(ValueError, match="^group_size: .*MLA_FP8_COMPILE_"
                       "MISSING=1 needs mla_fp8's compiler module"):
        call(x, w, ws, group_size=64)


# --- The cache's own rules: nothing of the user's is followed, replaced or
# --- changed, and every failure is the documented ValueError.

MISS_DIR = "gfx942-n512-k128-g64-bf16-bf16-per_tensor"


def missing_dir(tmp_path):
    return tmp_path / "cache" / "mla-fp8" / "missing"


def call_miss(rng, m=2):
    mla_fp8.set_compile_missing(True)
    x, w, ws = operands(rng, 512, 128, m)
    return call(x, w, ws, group_size=64)


def user_bundle(tmp_path, small_bundle):
    """A copy of a real bundle with a file of the user's inside."""
    user = tmp_path / "user-bundle"
    user.mkdir()
    for entry in os.listdir(small_bundle):
        (user / entry).write_bytes((small_bundle / entry).read_bytes())
    (user / "notes.txt").write_text("mine")
    return user


def tree(path):
    return {p.relative_to(path): p.read_bytes() for p in path.rglob("*")
            if p.is_file()}


def test_a_lock_link_to_a_user_file_is_refused_and_the_file_kept(
        rng, tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("do not truncate")
    missing_dir(tmp_path).mkdir(parents=True)
    (missing_dir(tmp_path) / (MISS_DIR + ".lock")).symlink_to(victim)
    with pytest.raises(ValueError, match=r"^group_size: .*the compile cache "
                       r"cannot be used: .*\.lock exists and is not an "
                       r"mla-fp8 lock file"):
        call_miss(rng)
    assert victim.read_text() == "do not truncate"


def test_a_lock_fifo_is_refused_at_once(rng, tmp_path):
    import signal  # pylint: disable=import-outside-toplevel
    missing_dir(tmp_path).mkdir(parents=True)
    os.mkfifo(missing_dir(tmp_path) / (MISS_DIR + ".lock"))

    def hung(*_):
        raise AssertionError("the call blocked on the FIFO")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        with pytest.raises(ValueError, match=r"\.lock exists and is not an "
                           r"mla-fp8 lock file"):
            call_miss(rng)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("what", ["directory", "file with contents"])
def test_a_lock_path_of_someone_elses_is_refused(rng, tmp_path, what):
    missing_dir(tmp_path).mkdir(parents=True)
    lock = missing_dir(tmp_path) / (MISS_DIR + ".lock")
    if what == "directory":
        lock.mkdir()
    else:
        lock.write_text("someone's")
    with pytest.raises(ValueError, match=r"^group_size: .*\.lock exists "
                       r"and is not an mla-fp8 lock file"):
        call_miss(rng)
    assert lock.is_dir() if what == "directory" else \
        lock.read_text() == "someone's"


def test_a_cache_link_to_a_user_bundle_is_refused_and_the_bundle_kept(
        rng, tmp_path, small_bundle):
    user = user_bundle(tmp_path, small_bundle)
    before = tree(user)
    missing_dir(tmp_path).mkdir(parents=True)
    (missing_dir(tmp_path) / MISS_DIR).symlink_to(user)
    with pytest.raises(ValueError, match=r"^group_size: .*" + MISS_DIR +
                       r" is a symbolic link; the cache never follows "
                       r"links out of itself"):
        call_miss(rng)
    assert tree(user) == before


def test_a_cache_link_to_another_directory_is_a_value_error(rng, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "data").write_text("x")
    missing_dir(tmp_path).mkdir(parents=True)
    (missing_dir(tmp_path) / MISS_DIR).symlink_to(other)
    with pytest.raises(ValueError, match="is a symbolic link"):
        call_miss(rng)
    assert tree(other) == {__import__("pathlib").Path("data"): b"x"}


def test_a_missing_link_is_not_followed(rng, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    (tmp_path / "cache" / "mla-fp8").mkdir(parents=True)
    missing_dir(tmp_path).symlink_to(other)
    with pytest.raises(ValueError, match=r"missing is a symbolic link"):
        call_miss(rng)
    assert os.listdir(other) == []


def test_a_foreign_directory_in_the_cache_is_not_replaced(rng, tmp_path):
    """The cache replaces only an mla-fp8 bundle that holds nothing else."""
    directory = missing_dir(tmp_path) / MISS_DIR
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_text("{}")
    (directory / "work.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"^group_size: .*compiling it "
                       r"failed: .*not an mla-fp8 bundle"), \
            pytest.warns(RuntimeWarning, match="compiling the missing"):
        call_miss(rng)
    assert (directory / "work.txt").read_text() == "mine"
    assert (directory / "manifest.json").read_text() == "{}"


def test_a_cached_bundle_with_a_user_file_is_not_replaced(
        rng, tmp_path, small_bundle):
    directory = missing_dir(tmp_path) / MISS_DIR
    directory.parent.mkdir(parents=True)
    user = user_bundle(tmp_path, small_bundle)
    os.rename(user, directory)
    with pytest.raises(ValueError, match=r"compiling it failed: .*also "
                       r"holds 'notes.txt'"), \
            pytest.warns(RuntimeWarning, match="compiling the missing"):
        call_miss(rng)
    assert (directory / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("where", ["XDG_CACHE_HOME", "missing"])
def test_a_file_where_the_cache_goes_is_a_value_error(rng, tmp_path,
                                                      monkeypatch, where):
    if where == "XDG_CACHE_HOME":
        blocker = tmp_path / "cache-file"
        blocker.write_text("not a directory")
        monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    else:
        blocker = missing_dir(tmp_path)
        blocker.parent.mkdir(parents=True)
        blocker.write_text("not a directory")
    with pytest.raises(ValueError, match=r"^group_size: .*the compile cache "
                       r"cannot be used: .*" + blocker.name):
        call_miss(rng)
    assert blocker.read_text() == "not a directory"


def test_a_read_only_cache_is_a_value_error(rng, monkeypatch, tmpfs):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmpfs("ro,size=64k")))
    with pytest.raises(ValueError, match=r"^group_size: .*the compile cache "
                       r"cannot be used: .*Read-only file system"):
        call_miss(rng)


def test_a_full_cache_is_a_value_error_and_leaves_no_bundle(
        rng, monkeypatch, full_tmpfs):
    cache = full_tmpfs
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    with pytest.raises(ValueError, match=r"^group_size: .*No space left"), \
            pytest.warns(RuntimeWarning, match="compiling the missing"):
        call_miss(rng)
    assert not (cache / "mla-fp8" / "missing" / MISS_DIR).exists() or \
        os.listdir(cache / "mla-fp8" / "missing" / MISS_DIR) == []


def test_a_lock_removed_while_waited_for_is_taken_again(rng, tmp_path):
    """A process that waits for the lock while its holder removes the lock
    file (a clean-up of the cache) takes a new one, instead of failing."""
    import time  # pylint: disable=import-outside-toplevel
    missing_dir(tmp_path).mkdir(parents=True)
    lock = missing_dir(tmp_path) / (MISS_DIR + ".lock")
    lock.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('held', flush=True)\n"
         "time.sleep(1.0)\n"
         "os.unlink(sys.argv[1])\n",
         str(lock)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    start = time.monotonic()
    with pytest.warns(RuntimeWarning, match="compiling the missing kernel"):
        y = call_miss(rng)
    holder.wait(timeout=60)
    assert time.monotonic() - start >= 0.5  # it did wait for the holder
    assert y.shape == (B, 2, 512)
    assert lock.is_file()
