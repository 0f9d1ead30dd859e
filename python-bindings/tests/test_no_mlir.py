"""Serving loads no MLIR: a fresh interpreter imports mla_fp8, makes the
drop-in call on the emulator and checks its own memory map; MLIR appears
only once the compiler is asked for. Another runs vLLM's and SGLang's calls
on the mocked HIP runtime with the compiler module absent, as on a ROCm
machine given only the serving module."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import mla_fp8

# The child prints which MLIR libraries are mapped after each step. Reading
# /proc/self/maps sees every shared object the dynamic loader brought in,
# whether a module named it or a library it needs did.
_CHILD = textwrap.dedent("""
    import sys
    import numpy as np

    def mlir_mapped():
        with open("/proc/self/maps", encoding="utf-8") as maps:
            return sorted({line.split()[-1] for line in maps
                           if "/libMLIR" in line})

    import mla_fp8
    print("import:", mlir_mapped())
    mla_fp8.set_bundle(sys.argv[1])
    rng = np.random.default_rng(0)
    b, m, n, k = 16, 5, 512, 128
    x = mla_fp8.to_bf16_bits(rng.standard_normal((b, m, k)))
    w, w_scale = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((b, n, k)), "gfx942")
    drop_in = mla_fp8.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant  # noqa: E501
    y = drop_in(x, w, w_scale, group_size=128)
    ref = mla_fp8.reference_prequant_bmm(x, w, w_scale,
                                         fp8_format="f8E4M3FNUZ")
    print("served:", y.shape == (b, m, n), mlir_mapped())
    print("close:", bool(np.allclose(mla_fp8.from_bf16_bits(y),
                                     mla_fp8.from_bf16_bits(ref),
                                     rtol=1e-2, atol=1e-2)))
    kernel = mla_fp8.load_bundle(sys.argv[1]).find_kernel("gfx942", n, k, m,
                                                          b)
    print("looked up:", kernel is not None, mlir_mapped())
    COMPILER_STEP
    print("compiler:", mlir_mapped())
""")


def run_child(bundle, compiler):
    """Runs _CHILD on `bundle` with `compiler` as its last step; returns its
    printed lines as {step: what it saw}."""
    code = _CHILD.replace("COMPILER_STEP", compiler)
    env = dict(os.environ)
    env.pop("MLA_FP8_EMULATE_CHIP", None)
    # The package this test process imported, whatever put it on the path.
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(mla_fp8.__file__))
    child = subprocess.run(
        [sys.executable, "-c", code, str(bundle)], env=env,
        capture_output=True, text=True, timeout=300, check=False)
    assert child.returncode == 0, child.stderr
    return dict(line.split(": ", 1) for line in child.stdout.splitlines())


def test_serving_maps_no_mlir(session_bundle):
    out = run_child(session_bundle,
                    "mla_fp8.compile_spec(512, 128, 'gfx942', max_m=16, "
                    "with_isa=False)")
    assert out["import"] == "[]"
    assert out["served"] == "True []"
    assert out["close"] == "True"
    assert out["looked up"] == "True []"
    # A compiler function, still a name of the package, loads the compiler
    # module, and MLIR.
    assert "libMLIR" in out["compiler"]


def test_compiler_submodule_maps_mlir(session_bundle):
    out = run_child(session_bundle, "import mla_fp8.ir")
    assert out["served"] == "True []"
    assert "libMLIR" in out["compiler"]
    out = run_child(session_bundle,
                    "assert mla_fp8.parse_and_print('module {}').strip() "
                    "== 'module {\\n}'")
    assert "libMLIR" in out["compiler"]


# vLLM's K-up and V-up and SGLang's K-up (upstream_mla) through the AITER
# shim, on test_hip's fake torch and mocked libamdhip64, in an interpreter
# where neither native module can be imported, as on a ROCm machine given
# only the Python package. The child also makes the emulator path raise, to
# show torch tensors never reach it.
_HIP_CHILD = textwrap.dedent("""
    import importlib.abc
    import sys

    import numpy as np

    sys.path.insert(0, sys.argv[2])

    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in ("mla_fp8._mla_fp8", "mla_fp8._mla_fp8_compiler"):
                raise ModuleNotFoundError(f"No module named {name!r}",
                                          name=name)
            return None

    sys.meta_path.insert(0, Absent())

    import mla_fp8
    from mla_fp8 import hip, serving
    import upstream_mla as up
    from test_hip import FakeDevice, FakeHip, make_torch, unpack

    def no_emulator(*args, **kwargs):
        raise AssertionError("the emulator ran")

    serving._call_emulated = no_emulator
    torch = up.add_hip_view_ops(make_torch())
    sys.modules["torch"] = torch
    lib = FakeHip()
    hip.find_hip_library = lambda: "libamdhip64.so"
    hip.get_runtime(loader=lambda path: lib)
    mla_fp8.set_bundle(sys.argv[1])
    dev, fp8 = FakeDevice(), torch.float8_e4m3fnuz
    scale = torch.Tensor((), torch.float32, dev)
    vllm = up.VllmMla(torch, up.aiter_function(),
                      torch.Tensor((16, 512, 128), fp8, dev), scale,
                      torch.Tensor((16, 128, 512), fp8, dev), scale)
    q = torch.Tensor((8, 16 * 192), torch.bfloat16, dev)
    vllm.qk(q, 5)
    output = torch.Tensor((8, 16 * 128), torch.bfloat16, dev)
    vllm.uv(torch.Tensor((5, 16, 512), torch.bfloat16, dev), output, 5)
    sglang = up.SglangMla(
        torch, up.aiter_function(),
        torch.Tensor((16, 512, 128), fp8, dev).transpose(1, 2),
        torch.Tensor((16, 128, 512), fp8, dev).transpose(1, 2), scale)
    sglang.k_up(q[:5])
    bundle = mla_fp8.load_bundle(sys.argv[1])
    print("launches:", [
        unpack(bundle.find_kernel("gfx942", n, k, 5, 16),
               launch["kernargs"])["m"]
        for (n, k), launch in zip([(512, 128), (128, 512), (512, 128)],
                                  lib.launches)])
    with open("/proc/self/maps", encoding="utf-8") as maps:
        print("llvm or mlir:", sorted({
            line.split()[-1] for line in maps
            if "/libMLIR" in line or "/libLLVM" in line}))
    print("native:", sorted(name for name, module in sys.modules.items()
                            if name.startswith("mla_fp8.") and
                            getattr(module, "__file__", "").endswith(".so")))
    star = {}
    exec("from mla_fp8 import *", star)
    print("star:", "generate_bundle" in star, callable(star[up.FUNCTION]))
    try:
        mla_fp8.compile_spec(512, 128, "gfx942")
    except ImportError as error:
        print("compiler:", error)
    try:
        mla_fp8.to_bf16_bits(np.zeros(2))
    except ImportError as error:
        print("formats:", error)
""")


def test_hip_serving_without_native_modules(session_bundle):
    tests = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(mla_fp8.__file__))
    env.pop("MLA_FP8_EMULATE_CHIP", None)
    env.pop("MLA_FP8_COMPILE_MISSING", None)
    child = subprocess.run(
        [sys.executable, "-c", _HIP_CHILD, str(session_bundle), tests],
        env=env, capture_output=True, text=True, timeout=300, check=False)
    assert child.returncode == 0, child.stderr
    out = dict(line.split(": ", 1) for line in child.stdout.splitlines())
    # Three launches, each for the five decode tokens, from a bundle loaded
    # and checked in Python.
    assert out["launches"] == "[5, 5, 5]"
    assert out["llvm or mlir"] == "[]"
    assert out["native"] == "[]"
    # Only asking for the compiler or the emulator's side fails, naming the
    # module it needs.
    assert out["compiler"].startswith(
        "mla_fp8.aot (compile_spec, generate_bundle) needs mla_fp8's native "
        "module _mla_fp8_compiler")
    # `import *` gives the rest of the API without the compiler's names.
    assert out["star"] == "False True"
    assert out["formats"].startswith(
        "the bf16, f16 and fp8 conversions needs mla_fp8's native module "
        "_mla_fp8")


def test_serving_module_needs_only_llvm():
    """What the serving module needs on a ROCm machine (README, On a ROCm
    machine): LLVM's runtime library and the C and C++ runtimes; no MLIR."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("needs readelf (binutils) to read the module's "
                    "dynamic section")
    from mla_fp8 import _mla_fp8  # pylint: disable=import-outside-toplevel
    dynamic = subprocess.run([readelf, "-d", _mla_fp8.__file__],
                             capture_output=True, text=True, check=True)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]",
                        dynamic.stdout)
    runtimes = re.compile(r"(libc|libm|libstdc\+\+|libgcc_s)\.so\.\d+|"
                          r"ld-linux.*\.so\.\d+")
    assert [n for n in needed if not runtimes.fullmatch(n)] == [
        n for n in needed if re.fullmatch(r"libLLVM\.so\.[\d.]+", n)]
    assert any(n.startswith("libLLVM") for n in needed)
