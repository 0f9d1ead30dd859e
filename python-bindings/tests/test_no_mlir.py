"""Serving loads no MLIR: a fresh interpreter imports mla_fp8, makes the
drop-in call on the emulator and checks its own memory map; MLIR appears
only once the compiler is asked for."""

import os
import subprocess
import sys
import textwrap

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
    kernel = mla_fp8.load_bundle(sys.argv[1]).find_kernel("gfx942", n, k, m)
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
