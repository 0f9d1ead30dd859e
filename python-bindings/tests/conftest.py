"""Shared fixtures: the tests import mla_fp8 from the build directory
(PYTHONPATH=$BUILD_DIR/python-bindings, as ./build.sh check sets it)."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A seeded generator, so that failures reproduce."""
    return np.random.default_rng(20240611)
