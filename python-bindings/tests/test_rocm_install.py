"""README's steps on a ROCm machine from a build tree, on the mocked HIP
runtime: the package's Python files copied without any native module, the
bundle copied to mla_fp8/bundle, the .pth that aiter_shim.write_pth()
writes, and MLA_FP8_REPLACE_AITER=1 as the one variable. A fresh
interpreter then imports AITER's function as vLLM does and makes vLLM's
decode calls and part of its warm-up. (test_wheel.py follows the same steps
with the wheel and pip.)"""

import os
import shutil
import subprocess
import sys
import textwrap

import mla_fp8
from mla_fp8 import aiter_shim

_CHILD = textwrap.dedent("""
    import site
    import sys

    package_root, site_dir, tests = sys.argv[1:4]
    # What site.py does for site-packages at start-up: run the .pth line.
    site.addsitedir(site_dir)
    assert any(getattr(f, "__mla_fp8_shim__", False) for f in sys.meta_path), \
        "the .pth line did not install the shim's finders"
    from aiter.ops.triton.batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant import (  # noqa: E501
        batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant as aiter_triton_fp8_bmm,  # noqa: E501
    )

    sys.path.append(tests)
    import mla_fp8
    from mla_fp8 import hip
    import upstream_mla as up
    from test_hip import FakeDevice, FakeHip, make_torch

    torch = up.add_hip_view_ops(make_torch())
    sys.modules["torch"] = torch
    lib = FakeHip()
    hip.find_hip_library = lambda: "libamdhip64.so"
    hip.get_runtime(loader=lambda path: lib)
    dev, fp8 = FakeDevice(), torch.float8_e4m3fnuz
    scale = torch.Tensor((), torch.float32, dev)
    layer = up.VllmMla(torch, aiter_triton_fp8_bmm,
                       torch.Tensor((16, 512, 128), fp8, dev), scale,
                       torch.Tensor((16, 128, 512), fp8, dev), scale)
    layer.warm_up(range(1, 65))
    q = torch.Tensor((8, 16 * 192), torch.bfloat16, dev)
    layer.qk(q, 5)
    output = torch.Tensor((8, 16 * 128), torch.bfloat16, dev)
    layer.uv(torch.Tensor((5, 16, 512), torch.bfloat16, dev), output, 5)
    print("package:", mla_fp8.__file__.startswith(package_root))
    print("bundle:", mla_fp8.get_bundle().directory)
    print("launches:", len(lib.launches))
    print("native:", sorted(name for name in sys.modules
                            if name.startswith("mla_fp8._mla_fp8")))
""")


def test_readme_install_steps(tmp_path, session_bundle):
    package_root = tmp_path / "python"
    package = package_root / "mla_fp8"
    # Step 2: the package without its native modules, the bundle inside.
    shutil.copytree(os.path.dirname(mla_fp8.__file__), package,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__",
                                                  "bundle"))
    shutil.copytree(session_bundle, package / "bundle")
    # Step 3: the .pth, here into a directory standing for site-packages.
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    aiter_shim.write_pth(site_dir)
    # Step 4: one variable; nothing else points at the bundle.
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("MLA_FP8_")}
    env.update(PYTHONPATH=str(package_root), MLA_FP8_REPLACE_AITER="1",
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    tests = os.path.dirname(os.path.abspath(__file__))
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(package_root), str(site_dir),
         tests], env=env, capture_output=True, text=True, timeout=300,
        check=False)
    assert child.returncode == 0, child.stderr
    out = dict(line.split(": ", 1) for line in child.stdout.splitlines())
    assert out["package"] == "True"
    assert out["bundle"] == str(package / "bundle")
    assert out["launches"] == str(2 * 64 + 2)
    assert out["native"] == "[]"
    assert not list(package.glob("*.so"))
