"""generate_bundle under bad conditions: an output that is not a bundle, a
full disk, model dimensions that make K-up and V-up the same GEMM. Errors are
Python exceptions (so `finally` runs), never an exit of the interpreter."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import mla_fp8

SMALL = {"chips": ["gfx942"], "tp": [8], "max_m": 16}


def test_refuses_a_directory_that_is_not_a_bundle(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "sentinel").write_text("precious")
    with pytest.raises(ValueError, match="is not an mla-fp8 bundle"):
        mla_fp8.generate_bundle(home, **SMALL)
    assert (home / "sentinel").read_text() == "precious"
    assert sorted(os.listdir(tmp_path)) == ["home"]


def test_force_replaces_a_bundle_with_extra_files_only(tmp_path):
    out = tmp_path / "b"
    mla_fp8.generate_bundle(out, **SMALL)
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="notes.txt"):
        mla_fp8.generate_bundle(out, **SMALL)
    assert (out / "notes.txt").exists()
    mla_fp8.generate_bundle(out, force=True, **SMALL)
    assert not (out / "notes.txt").exists()
    assert (out / "manifest.sha256").exists()
    home = tmp_path / "home"
    home.mkdir()
    (home / "sentinel").write_text("precious")
    with pytest.raises(ValueError, match="is not an mla-fp8 bundle"):
        mla_fp8.generate_bundle(home, force=True, **SMALL)
    assert (home / "sentinel").read_text() == "precious"


def test_relative_output_is_under_the_current_directory(tmp_path,
                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    mla_fp8.generate_bundle("out/r1", **SMALL)
    assert sorted(os.listdir(tmp_path / "out" / "r1")) == [
        "gfx942.hsaco", "manifest.json", "manifest.sha256",
        "mla_fp8_kernels.h"]


def test_same_dims_share_kernels(tmp_path):
    result = mla_fp8.generate_bundle(tmp_path / "b", kv_lora_rank=128,
                                     qk_nope_head_dim=128, v_head_dim=128,
                                     **SMALL)
    kernels = json.loads(result["manifest"])["chips"][0]["kernels"]
    # K-up and V-up for bf16, then for f16 activations.
    assert [(k["projection"], k["in_type"]) for k in kernels] == [
        ("k_up", "bf16"), ("v_up", "bf16"), ("k_up", "f16"), ("v_up", "f16")]
    assert kernels[0]["symbol"] == kernels[1]["symbol"]
    assert kernels[2]["symbol"] == kernels[3]["symbol"] != kernels[0]["symbol"]


# Run in a child so that the file-size limit stays there. Python ignores
# SIGXFSZ, so a write past the limit fails with EFBIG like one on a full disk.
_WRITE_ERROR_CHILD = textwrap.dedent("""
    import resource, sys
    import mla_fp8
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
    try:
        mla_fp8.generate_bundle(sys.argv[1], chips=["gfx942"], tp=[8],
                                max_m=16)
    except ValueError as error:
        print("raised:", error)
    finally:
        print("finally ran")
""")


def test_write_error_raises_and_finally_runs(tmp_path):
    child = subprocess.run(
        [sys.executable, "-c", _WRITE_ERROR_CHILD, str(tmp_path / "b")],
        capture_output=True, text=True, timeout=300, check=False)
    assert child.returncode == 0, child.stderr
    assert "raised:" in child.stdout and "File too large" in child.stdout
    assert child.stdout.rstrip().endswith("finally ran")
    assert "LLVM ERROR" not in child.stderr


def test_full_disk_raises_and_finally_runs(full_tmpfs):
    finally_ran = False
    with pytest.raises(ValueError, match="No space left on device"):
        try:
            mla_fp8.generate_bundle(full_tmpfs / "bundle", **SMALL)
        finally:
            finally_ran = True
    assert finally_ran
    assert os.listdir(full_tmpfs) == ["filler"]


def test_the_link_needs_no_temporary_directory(full_tmpfs, tmpfs,
                                               monkeypatch, tmp_path):
    """Compiling and linking happen in memory: a full or a read-only $TMPDIR
    changes nothing, and nothing is left there."""
    for where in (full_tmpfs, tmpfs("ro,size=64k")):
        before = sorted(os.listdir(where))
        monkeypatch.setenv("TMPDIR", str(where))
        out = tmp_path / f"bundle-{where.name}"
        mla_fp8.generate_bundle(out, **SMALL)
        assert mla_fp8.load_bundle(out).find_kernel("gfx942", 512, 128, 1, 16)
        assert sorted(os.listdir(where)) == before


def test_a_nearly_full_temporary_directory(tmpfs, tmp_path):
    """mla-fp8-aot with 4 to 64 KiB free in $TMPDIR. With room for the
    relocatable object but not the linked code object, the in-process
    linker, which wrote its output through a shared mapping, died of SIGBUS
    and left its files in $TMPDIR. Now: exit 0 every time, nothing in
    $TMPDIR, nothing beside -o."""
    build = os.environ.get("MLAFP8_BUILD_DIR")
    if not build:
        pytest.skip("MLAFP8_BUILD_DIR is not set (./build.sh check sets it)")
    mount = tmpfs("size=256k")
    out = tmp_path / "out" / "bundle"
    out.parent.mkdir()
    for free_kib in range(4, 68, 4):
        with open(mount / "filler", "wb") as filler:
            filler.write(b"x" * (256 - free_kib) * 1024)
        done = subprocess.run(
            [os.path.join(build, "bin", "mla-fp8-aot"), "--chips=gfx942",
             "--tp=8", "--max-m=16", "--in-type=bf16", "--no-cache",
             "--quiet", "-o", str(out)], capture_output=True, text=True,
            check=False, env=dict(os.environ, TMPDIR=str(mount)),
            timeout=300)
        assert done.returncode == 0, (free_kib, done.stderr)
        assert os.listdir(mount) == ["filler"], free_kib
        assert sorted(os.listdir(out.parent)) == ["bundle"], free_kib


# The same bad value through mla-fp8-aot's flags and through generate_bundle's
# arguments: one resolution (lib/AOT/Options.cpp), one message.
_SAME_BAD_INPUT = [
    (["--model=llama"], {"model": "llama"}),
    (["--heads=70000"], {"heads": 70000}),
    (["--kv-lora-rank=-1"], {"kv_lora_rank": -1}),
    (["--max-m=0"], {"max_m": 0}),
    (["--group-size=96"], {"group_size": 96}),
    (["--group-size=1048576"], {"group_size": 1 << 20}),
    (["--out-type=f32"], {"out_type": "f32"}),
    (["--weight-scale=per-row"], {"weight_scale": "per-row"}),
    (["--tp=3"], {"tp": [3]}),
    (["--tp=0"], {"tp": [0]}),
    (["--chips=gfx90a"], {"chips": ["gfx90a"]}),
]


@pytest.mark.parametrize("flags,kwargs", _SAME_BAD_INPUT,
                         ids=[" ".join(f) for f, _ in _SAME_BAD_INPUT])
def test_cli_and_python_reject_alike(tmp_path, flags, kwargs):
    build = os.environ.get("MLAFP8_BUILD_DIR")
    if not build:
        pytest.skip("MLAFP8_BUILD_DIR is not set (./build.sh check sets it)")
    tool = os.path.join(build, "bin", "mla-fp8-aot")
    cli = subprocess.run([tool, *flags, "-o", str(tmp_path / "cli")],
                         capture_output=True, text=True, timeout=120,
                         check=False)
    assert cli.returncode == 1, cli.stderr
    (line,) = cli.stderr.splitlines()
    cli_message = line.split("error: ", 1)[1]
    with pytest.raises(ValueError) as raised:
        mla_fp8.generate_bundle(tmp_path / "py", **kwargs)
    assert str(raised.value) == cli_message
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("args, kwargs, message", [
    ((512, 2**62, "gfx942"), {}, "k must be between 1 and 65536"),
    ((10**6, 128, "gfx942"), {}, "n must be between 1 and 65536"),
    ((512, 128, "gfx942"), {"max_m": 2**62}, "max_m must be between 1 and"),
    ((512, 128, "gfx942"), {"group_size": 4096},
     "group size 4096 needs 65600 bytes of LDS"),
    ((512, 128, "gfx90a"), {}, "unknown chip 'gfx90a'"),
])
def test_compile_spec_checks_as_the_tool_does(args, kwargs, message):
    # compile_spec goes through the option checks mla-fp8-aot uses: a shape
    # beyond them is one clear error before anything is compiled.
    with pytest.raises(ValueError, match=message):
        mla_fp8.compile_spec(*args, **kwargs)


def test_bad_tiles_are_refused_before_writing(tmp_path):
    """`tiles` goes through the tool's own checks (--tile): a bad projection,
    form or combination is a ValueError and nothing is written."""
    out = tmp_path / "b"
    cases = [({"x_up": "16x64x4:m16n16k32"}, ValueError,
              "must start with its projection"),
             ({"v_up": "16x64:m16n16k32"}, ValueError, "not of that form"),
             ({"v_up": "16x64x4:m16n16k32:9"}, ValueError,
              "split_k 9 exceeds the 4 K-groups"),
             (["v_up:16x64x4:m16n16k32"], TypeError, "expected a dict"),
             ({"v_up": 3}, TypeError, "tiles\\['v_up'\\]")]
    for tiles, error, message in cases:
        with pytest.raises(error, match=message):
            mla_fp8.generate_bundle(out, chips=["gfx942"], tp=[8], max_m=16,
                                    in_type="bf16", tiles=tiles)
        assert not out.exists()


def test_a_cache_inside_the_output_is_refused_before_compiling(tmp_path):
    """Cache entries inside -o made the bundle unpublishable, and every
    later run to it fail until --force."""
    out = tmp_path / "bundle"
    for cache in (out, out / "cache", out / "a" / ".." / "cache"):
        with pytest.raises(ValueError, match="the cache directory .* is "
                           "inside the output bundle"):
            mla_fp8.generate_bundle(out, cache_dir=cache, **SMALL)
        assert not out.exists()
    mla_fp8.generate_bundle(out, cache_dir=tmp_path / "cache", **SMALL)
    assert sorted(os.listdir(out)) == ["gfx942.hsaco", "manifest.json",
                                       "manifest.sha256",
                                       "mla_fp8_kernels.h"]


def test_a_killed_generator_leaves_nothing_in_tmpdir(tmp_path):
    """Intermediate files never go to $TMPDIR, so a SIGKILL at any point
    leaves none there (they were the linker's .o and .hsaco)."""
    import signal  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel
    build = os.environ.get("MLAFP8_BUILD_DIR")
    if not build:
        pytest.skip("MLAFP8_BUILD_DIR is not set (./build.sh check sets it)")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    for delay in (0.05, 0.2, 0.4, 0.8):
        child = subprocess.Popen(
            [os.path.join(build, "bin", "mla-fp8-aot"), "--no-cache",
             "--quiet", "--jobs=1", "-o", str(tmp_path / "out")],
            env=dict(os.environ, TMPDIR=str(tmpdir)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert os.listdir(tmpdir) == [], delay
