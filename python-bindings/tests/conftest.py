"""Shared fixtures: the tests import mla_fp8 from the build directory
(PYTHONPATH=$BUILD_DIR/python-bindings, as ./build.sh check sets it)."""

import os

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A seeded generator, so that failures reproduce."""
    return np.random.default_rng(20240611)


@pytest.fixture(scope="session")
def session_bundle(tmp_path_factory):
    """One small DeepSeek-R1 TP8 bundle (both chips, ranges of rows planned
    up to M = 64 at B = 16: 1024 rows, so K-up has two kernels on gfx942,
    1-512 and 513 up, and one on gfx950, 1 up, and V-up one per chip, 1 up)
    per test session; generation takes about a second."""
    import mla_fp8  # pylint: disable=import-outside-toplevel
    directory = tmp_path_factory.mktemp("bundle") / "deepseek-r1-tp8"
    mla_fp8.generate_bundle(directory, model="deepseek-r1", tp=[8],
                            chips=["gfx942", "gfx950"], max_m=64)
    return directory


@pytest.fixture(scope="session")
def split_k_bundle(tmp_path_factory):
    """A DeepSeek-R1 TP8 bundle for gfx942 whose V-up kernel splits K two
    ways at every launch (an explicit tile, serving every B * M: the tile
    table no longer splits), for the split-K workspace paths."""
    import mla_fp8  # pylint: disable=import-outside-toplevel
    directory = tmp_path_factory.mktemp("bundle") / "split-k"
    mla_fp8.generate_bundle(directory, model="deepseek-r1", tp=[8],
                            chips=["gfx942"], max_m=64, in_type="bf16",
                            tiles={"v_up": "16x64x4:m16n16k32:2:2"})
    return directory


@pytest.fixture(scope="session")
def peer_kernels_dir():
    """../shared/peer-kernels beside the checkout (Triton code objects that
    are not part of the repository). Tests that need it are skipped with the
    reason when it is absent, and fail there when CI=true or
    MLAFP8_REQUIRE_PEER_KERNELS=1."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    path = os.path.normpath(os.path.join(root, "..", "shared",
                                         "peer-kernels"))
    if os.path.isdir(path):
        return path
    if os.environ.get("CI") == "true" or \
            os.environ.get("MLAFP8_REQUIRE_PEER_KERNELS") == "1":
        pytest.fail(f"peer kernels required (CI=true or "
                    f"MLAFP8_REQUIRE_PEER_KERNELS=1) but {path} is missing")
    pytest.skip(f"needs the Triton peer kernels in {path} (absent: ../shared "
                f"is not beside this checkout)")


@pytest.fixture
def tmpfs(tmp_path):
    """mount(options) -> a fresh tmpfs under tmp_path (e.g. "size=64k",
    "ro,size=64k"), unmounted after the test; the test is skipped where
    mounting is refused (it needs root)."""
    import subprocess  # pylint: disable=import-outside-toplevel
    mounted = []

    def mount(options):
        point = tmp_path / f"tmpfs{len(mounted)}"
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs",
                               str(point)], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root): " +
                        done.stderr.strip())
        mounted.append(point)
        return point
    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture
def full_tmpfs(tmpfs):
    """A 64 KiB tmpfs, filled up; skipped where mounting is not allowed."""
    mount_point = tmpfs("size=64k")
    with open(mount_point / "filler", "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"x" * 4096)
        except OSError:
            pass
    return mount_point
