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
    kernel = bundle.find_kernel("gfx942", N, K, 2)
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
    kernel = bundle.find_kernel("gfx942", N, K, m)
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
    kernel = bundle.find_kernel("gfx942", N, K, 2)
    for fn, pattern in (
            (lambda: bundle.find_kernel("gfx942", N, K, 2**70), "^m: "),
            (lambda: bundle.find_kernel("gfx942", 2**64, K, 2), "^n: "),
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
