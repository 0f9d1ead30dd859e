"""Shared fixtures: the tests import mla_fp8 from the build directory
(PYTHONPATH=$BUILD_DIR/python-bindings, as ./build.sh check sets it)."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A seeded generator, so that failures reproduce."""
    return np.random.default_rng(20240611)


@pytest.fixture(scope="session")
def session_bundle(tmp_path_factory):
    """One small DeepSeek-R1 TP8 bundle (both chips, M ranges up to 64) per
    test session; generation takes about a second."""
    import mla_fp8  # pylint: disable=import-outside-toplevel
    directory = tmp_path_factory.mktemp("bundle") / "deepseek-r1-tp8"
    mla_fp8.generate_bundle(directory, model="deepseek-r1", tp=[8],
                            chips=["gfx942", "gfx950"], max_m=64)
    return directory
