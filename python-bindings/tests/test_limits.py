"""The Python entry points refuse, before anything is allocated or launched,
what the emulator or the kernels cannot run (docs/limits.md), and name the
argument at fault; no out-of-range int reaches pybind11."""

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import _limits, serving

call = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501

B, N, K = 16, 512, 128


@pytest.fixture(autouse=True)
def bundle(session_bundle, monkeypatch):
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(session_bundle))
    monkeypatch.delenv("MLA_FP8_EMULATE_CHIP", raising=False)
    serving.set_bundle(None)
    yield session_bundle
    serving.set_bundle(None)


def operands(rng, m=2):
    x = mla_fp8.to_bf16_bits(rng.standard_normal((B, m, K)))
    w, ws = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((B, N, K)) * 0.05, "gfx942")
    return x, w, ws


def rows(x, m):
    """X with M rows, all equal to x's first: a view, nothing allocated."""
    return np.broadcast_to(x[:, :1], (x.shape[0], m, x.shape[2]))


@pytest.mark.parametrize("m", [2**40, 2**31, 2**20 + 1])
def test_huge_m_refused(rng, m):
    """M = 2^40 used to truncate the grid to 0 and M near 2^31 to run
    without bound: both are past the emulator's M."""
    x, w, ws = operands(rng)
    with pytest.raises(ValueError, match=f"^X: M = {m}; the emulator runs "
                       f"at most {2**20}"):
        call(rows(x, m), w, ws)
    with pytest.raises(ValueError, match=f"^X: M = {m}"):
        call(rows(x, m).transpose(1, 0, 2), w, ws, transpose_bm_in=True)


def test_host_memory_refused(rng):
    """X, W and Y with their copies past 4 GiB, each size within its own
    bound."""
    x, w, ws = operands(rng)
    with pytest.raises(ValueError, match=r"^X: B=16, M=1048576, N=512, "
                       r"K=128 need 146029936640 bytes of host memory"):
        call(rows(x, 2**20), w, ws)


def test_host_memory_counts_the_weights():
    """The weights alone (B * N * K fp8 bytes) can pass the bound: at
    B = 65535, M = 5 they are 4.3 GB (the element count of the old bound let
    that through, and the run peaked at 20 GB)."""
    with pytest.raises(ValueError, match=r"need 7146984960 bytes"):
        _limits.check_emulator_sizes(65535, 5, 512, 128)
    _limits.check_emulator_sizes(4096, 5, 512, 128)
    assert _limits.emulator_host_bytes(65535, 5, 512, 128) == (
        65535 * 5 * 128 * 4 + 65535 * 512 * 128 + 65535 * 5 * 512 * 16)


def test_w_scale_none_refused(rng):
    """None used to become NaN: every output NaN."""
    x, w, _ = operands(rng)
    with pytest.raises(TypeError, match="^w_scale: required"):
        call(x, w, None)
    bundle = mla_fp8.load_bundle(serving.get_bundle().directory)
    kernel = bundle.find_kernel("gfx942", N, K, 2, B)
    with pytest.raises(TypeError, match="^w_scale: required"):
        mla_fp8.run_kernel_emulated(bundle, kernel, x, w, None,
                                    np.zeros((B, 2, N), np.uint16))


def test_overlapping_yq_refused(rng):
    """The reference refuses an output whose rows overlap; so does the
    drop-in, and an output sharing memory with an input."""
    m = 2
    x, w, ws = operands(rng, m)
    store = np.zeros(N, np.uint16)
    same_row = np.lib.stride_tricks.as_strided(
        store, shape=(B, m, N), strides=(0, 0, 2), writeable=True)
    with pytest.raises(ValueError, match="^YQ: its strides .* overlap"):
        call(x, w, ws, YQ=same_row)
    with pytest.raises(ValueError, match="overlap"):
        mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format="f8E4M3FNUZ",
                                       out=same_row)
    # X and YQ carved from one buffer: overlapping columns are refused,
    # disjoint ones work.
    storage = np.zeros((B, m, K + N), np.uint16)
    storage[:, :, :K] = x
    with pytest.raises(ValueError, match="^YQ: shares memory with X"):
        call(storage[:, :, :K], w, ws, YQ=storage[:, :, K - 8:K - 8 + N])
    y = call(storage[:, :, :K], w, ws, YQ=storage[:, :, K:])
    np.testing.assert_array_equal(
        y, mla_fp8.reference_prequant_bmm(x, w, ws,
                                          fp8_format="f8E4M3FNUZ"))
    wbuf = np.zeros(B * N * K, np.uint8)
    with pytest.raises(ValueError, match="^YQ: shares memory with WQ"):
        wq = wbuf.reshape(B, N, K)
        call(x, wq, ws, YQ=wbuf.view(np.uint16)[:B * m * N].reshape(B, m, N))
    bundle = mla_fp8.load_bundle(serving.get_bundle().directory)
    kernel = bundle.find_kernel("gfx942", N, K, m, B)
    with pytest.raises(ValueError, match="^y: its strides .* overlap"):
        mla_fp8.run_kernel_emulated(bundle, kernel, x, w, ws, same_row)


def test_kernel_index_range_refused(rng):
    """A view whose last element lies past the kernels' 2^31 - 1 element
    range is refused, though it is within the emulator's sizes."""
    m = 2
    x, w, ws = operands(rng, m)
    store = np.zeros(N, np.uint16)
    # Never written: the call is refused first.
    far = np.lib.stride_tricks.as_strided(
        store, shape=(B, m, N), strides=(2**28 * 2, 2**27 * 2, 2),
        writeable=True)
    with pytest.raises(ValueError, match="^YQ: the .* output reaches element "
                       r"\d+; the kernels address at most 2147483647"):
        call(x, w, ws, YQ=far)
    assert _limits.KERNEL_MAX_ELEMENTS == 2**31 - 1


def test_out_of_range_ints_name_the_argument(rng, session_bundle):
    """Ints past int64 used to surface pybind11's "Invoked with"."""
    x, w, ws = operands(rng)
    with pytest.raises(ValueError, match="^group_size: expected at most"):
        call(x, w, ws, group_size=2**70)
    bundle = mla_fp8.load_bundle(session_bundle)
    kernel = bundle.find_kernel("gfx942", N, K, 2, B)
    for fn, pattern in (
            (lambda: bundle.find_kernel("gfx942", N, K, 2**70, B), "^m: "),
            (lambda: bundle.find_kernel("gfx942", N, K, 2, 2**70), "^b: "),
            (lambda: bundle.find_kernel("gfx942", 2**64, K, 2, B), "^n: "),
            (lambda: kernel.grid(2**63, 1), "^m: "),
            (lambda: kernel.grid(1, 2**70), "^b: "),
            (lambda: mla_fp8.run_kernel_emulated(
                bundle, kernel, x, w, ws, np.zeros((B, 2, N), np.uint16),
                threads=2**40), "^threads: expected at most 1024"),
            (lambda: mla_fp8.reference_prequant_bmm(
                x, w, ws, fp8_format="f8E4M3FNUZ", group_size=2**64),
             "^group_size: ")):
        with pytest.raises(ValueError, match=pattern):
            fn()


def big_endian(array):
    """The same values stored in the other byte order."""
    return array.astype(array.dtype.newbyteorder(">"))


@pytest.mark.parametrize("name", ["X", "X f16", "bias", "YQ"])
def test_big_endian_bits_refused(rng, name):
    """Raw bits in the other byte order would be read as other numbers: a
    '>f2' X once gave 5,120 NaN outputs and no error."""
    m = 2
    x, w, ws = operands(rng, m)
    args = dict(X=x, WQ=w, w_scale=ws, bias=None, YQ=None)
    if name == "X f16":
        args["X"] = big_endian(mla_fp8.to_f16_bits(
            rng.standard_normal((B, m, K))).view(np.float16))
        name = "X"
    elif name == "bias":
        args["bias"] = big_endian(np.zeros((B, N), np.uint16))
    else:
        args[name] = big_endian(np.zeros((B, m, N), np.uint16) if name == "YQ"
                                else args[name])
    with pytest.raises(TypeError, match=f"^{name}: dtype >[uf]2 is "
                       f"big-endian; the kernels read little-endian bits"):
        call(args["X"], args["WQ"], args["w_scale"], bias=args["bias"],
             YQ=args["YQ"])


def test_big_endian_bits_refused_by_the_other_entry_points(rng):
    x, w, ws = operands(rng)
    bundle = mla_fp8.load_bundle(serving.get_bundle().directory)
    kernel = bundle.find_kernel("gfx942", N, K, 2, B)
    with pytest.raises(TypeError, match="^x: dtype >u2 is big-endian"):
        mla_fp8.run_kernel_emulated(bundle, kernel, big_endian(x), w, ws,
                                    np.zeros((B, 2, N), np.uint16))
    with pytest.raises(TypeError, match="^x_bits: dtype >u2 is big-endian"):
        mla_fp8.reference_prequant_bmm(big_endian(x), w, ws,
                                       fp8_format="f8E4M3FNUZ")
    with pytest.raises(TypeError, match="^bits: dtype >u2 is big-endian"):
        mla_fp8.from_bf16_bits(big_endian(x))


def test_big_endian_scales_are_values(rng):
    """w_scale is read by value (converted to float32 as numpy converts),
    not as raw bits: a '>f4' w_scale gives the same Y as a native one."""
    x, w, ws = operands(rng)
    scales = np.asarray(ws, np.float32).reshape(1)
    native = call(x, w, scales)
    other = call(x, w, big_endian(scales))
    assert np.array_equal(native, other)


def peak_rss(argv):
    """Peak resident bytes of `argv`, run by a child of its own so that
    RUSAGE_CHILDREN is that run's alone."""
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    probe = ("import resource, subprocess, sys\n"
             "done = subprocess.run(sys.argv[1:], capture_output=True)\n"
             "print(done.returncode, resource.getrusage("
             "resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    code, kib = subprocess.run([sys.executable, "-c", probe, *argv],
                               capture_output=True, text=True, check=True,
                               timeout=300).stdout.split()
    assert code == "0", argv
    return int(kib) * 1024


@pytest.mark.parametrize("b,m,timing", [(1024, 5, True), (16, 96, False)],
                         ids=["weights", "outputs"])
def test_emulator_host_memory_within_its_bound(session_bundle, b, m, timing):
    """What an emulation allocates stays within the bound the checks use
    (Limits.h): W mapped, not copied, and drawn without an f32 copy; Y with
    its copies and the reference. (The process itself, measured at B = 1,
    comes on top.) It used to take 6 bytes per weight where the bound
    counts 1."""
    import os  # pylint: disable=import-outside-toplevel
    build = os.environ.get("MLAFP8_BUILD_DIR")
    if not build:
        pytest.skip("MLAFP8_BUILD_DIR is not set (./build.sh check sets it)")
    tool = os.path.join(build, "bin", "mla-fp8-emu")
    base = [tool, str(session_bundle), "--chip=gfx942", "-N", str(N), "-K",
            str(K)]
    process = peak_rss(base + ["-B", "1", "-M", "1"])
    peak = peak_rss(base + ["-B", str(b), "-M", str(m)] +
                    (["--timing"] if timing else []))
    used = peak - process
    assert used <= _limits.emulator_host_bytes(b, m, N, K), (used, b, m)
    if timing:
        # The weights are resident once (B * N * K bytes), not six times.
        assert used >= b * N * K * 0.9
        assert used <= b * N * K * 1.6
