"""README.md's Embedding section: its Python example runs against the
session bundle (the C++ one is built by the mla-fp8-install ctest)."""

import importlib.util
import pathlib

import pytest

from mla_fp8 import serving

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_extractor():
    spec = importlib.util.spec_from_file_location(
        "readme_block", ROOT / "test" / "Install" / "readme-block.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_example(session_bundle, monkeypatch):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = load_extractor().extract(text, "python")
    assert "batched_gemm_a8w8_a_per_token_group_prequant" in code
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(session_bundle))
    try:
        exec(compile(code, "README.md (Embedding, python)", "exec"), {})
    finally:
        serving.set_bundle(None)


@pytest.mark.parametrize("index,name", [(1, "consumer"), (2, "serving")])
def test_cpp_examples_are_the_install_tests(index, name):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    program = ROOT / "test" / "Install" / name / "main.cpp"
    if not program.exists():
        pytest.skip(f"no test/Install/{name}")
    assert load_extractor().extract(text, "cpp", index) == program.read_text(
        encoding="utf-8")
