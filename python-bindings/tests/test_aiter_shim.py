"""install_aiter_shim: AITER's two import paths give mla_fp8's function,
without AITER and with a (fake) AITER installed."""

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import aiter_shim, serving

FUNCTION = aiter_shim.FUNCTION
FLAT, NESTED = aiter_shim.MODULES


@pytest.fixture(autouse=True)
def clean_aiter(monkeypatch):
    """No aiter module before or after a test (the import system reads the
    real sys.modules, so it is cleaned by hand)."""
    def drop():
        for name in [n for n in sys.modules
                     if n == "aiter" or n.startswith("aiter.")]:
            del sys.modules[name]
    drop()
    monkeypatch.setattr(sys, "path", list(sys.path))
    importlib.invalidate_caches()
    yield
    drop()


def write_aiter(root, parent_init="", broken=False):
    """A package laid out as AITER's: both module paths, a sibling module
    and an `aiter/__init__.py` running `parent_init`."""
    files = {
        "aiter/__init__.py": ("raise ImportError('no GPU here')\n" if broken
                              else "REAL = True\n" + parent_init),
        "aiter/ops/__init__.py": "",
        "aiter/ops/triton/__init__.py": "",
        "aiter/ops/triton/other.py": "def other():\n    return 42\n",
        "aiter/ops/triton/gemm/__init__.py": "",
        "aiter/ops/triton/gemm/batched/__init__.py": "",
    }
    body = f"def {FUNCTION}(*args, **kwargs):\n    return 'triton'\n"
    files[FLAT.replace(".", "/") + ".py"] = body
    files[NESTED.replace(".", "/") + ".py"] = body
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()


def check_both_paths():
    """Every import form vLLM, SGLang and AITER's tests use."""
    flat = importlib.import_module(FLAT)
    assert getattr(flat, FUNCTION) is mla_fp8.\
        batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant
    exec(f"from {FLAT} import {FUNCTION} as f\n"
         f"from {NESTED} import {FUNCTION} as g\n"
         f"import {NESTED}\n"
         f"from aiter.ops.triton.gemm.batched import {FUNCTION} as mod\n"
         f"assert f is g is serving.{FUNCTION}\n"
         f"assert {NESTED}.{FUNCTION} is f\n"
         f"assert getattr(mod, '{FUNCTION}') is f\n", {"serving": serving})


def test_without_aiter(rng, session_bundle, monkeypatch):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(FLAT)
    result = mla_fp8.install_aiter_shim()
    assert result["modules"] == [FLAT, NESTED]
    assert not result["aiter_installed"]
    assert "aiter" in result["stand_ins"] and \
        "aiter.ops.triton.gemm.batched" in result["stand_ins"]
    check_both_paths()
    # Nothing else of AITER appears.
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("aiter.ops.triton.other")
    assert mla_fp8.install_aiter_shim()["stand_ins"] == []
    # A call through AITER's path runs the bundle's kernel.
    monkeypatch.setenv("MLA_FP8_BUNDLE", str(session_bundle))
    serving.set_bundle(None)
    module = importlib.import_module(NESTED)
    x = mla_fp8.to_bf16_bits(rng.standard_normal((2, 3, 128)))
    w, ws = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((2, 512, 128)) * 0.1, "gfx942")
    y = getattr(module, FUNCTION)(x, w, ws, group_size=128, splitK=None)
    ref = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format="f8E4M3FNUZ")
    np.testing.assert_allclose(mla_fp8.from_bf16_bits(y),
                               mla_fp8.from_bf16_bits(ref), rtol=1e-2,
                               atol=1e-2)
    serving.set_bundle(None)


def test_with_aiter_installed(tmp_path):
    write_aiter(tmp_path)
    result = mla_fp8.install_aiter_shim()
    assert result["aiter_installed"] and result["stand_ins"] == []
    check_both_paths()
    # The rest of AITER is AITER's.
    import aiter  # pylint: disable=import-outside-toplevel
    assert aiter.REAL and aiter.__file__.startswith(str(tmp_path))
    other = importlib.import_module("aiter.ops.triton.other")
    assert other.other() == 42
    assert mla_fp8.install_aiter_shim()["modules"] == [FLAT, NESTED]
    check_both_paths()


def test_aiter_module_imported_before_the_shim(tmp_path):
    """A module object taken before installing gets the function too (a name
    bound with `from ... import` before cannot be changed: documented)."""
    write_aiter(tmp_path)
    early = importlib.import_module(NESTED)
    assert getattr(early, FUNCTION)() == "triton"
    mla_fp8.install_aiter_shim()
    assert getattr(early, FUNCTION) is serving.__dict__[FUNCTION]
    check_both_paths()


def test_aiter_whose_package_does_not_import(tmp_path):
    """`from <path> import <function>` does not import the parents, so it
    works even where AITER's own __init__ fails."""
    write_aiter(tmp_path, broken=True)
    with pytest.warns(RuntimeWarning, match="does not import"):
        result = mla_fp8.install_aiter_shim()
    assert result["aiter_installed"]
    namespace = {}
    exec(f"from {FLAT} import {FUNCTION} as f\n"
         f"from {NESTED} import {FUNCTION} as g\n", namespace)
    assert namespace["f"] is namespace["g"] is serving.__dict__[FUNCTION]


@pytest.mark.parametrize("value", ["1", ""], ids=["set", "unset"])
def test_pth_installs_the_shim_in_new_processes(tmp_path, value):
    """What a vLLM worker process sees: the .pth line runs at start-up
    (site.addsitedir processes it as site.py does site-packages), before the
    program's first `from aiter... import`, which it serves."""
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    path = aiter_shim.write_pth(site_dir)
    assert path == str(site_dir / aiter_shim.PTH_NAME)
    code = ("import site, sys\n"
            f"site.addsitedir({str(site_dir)!r})\n"
            "print(any(getattr(f, '__mla_fp8_shim__', False)\n"
            "          for f in sys.meta_path), 'mla_fp8' in sys.modules)\n"
            "try:\n"
            f"    from {NESTED} import {FUNCTION} as f\n"
            "    print(f.__module__)\n"
            "except ModuleNotFoundError as error:\n"
            "    print('missing', error.name)\n")
    env = dict(os.environ, **{aiter_shim.ENV_VAR: value})
    child = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=120, check=False, env=env)
    assert child.returncode == 0 and not child.stderr, child.stderr
    # The .pth adds its finders and imports nothing; AITER's module, when
    # imported, is mla_fp8's.
    expected = (["True False", "mla_fp8.serving"] if value else
                ["False False", "missing aiter"])
    assert child.stdout.split("\n")[:2] == expected
    with pytest.raises(FileNotFoundError, match="^directory: "):
        aiter_shim.write_pth(tmp_path / "none")


# A finder serving AITER from `later`, as an editable install adds one from
# its own .pth: appended (setuptools) or inserted first (meson-python).
_EDITABLE = """import importlib.machinery, sys
class EditableAiter:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "aiter" or name.startswith("aiter."):
            return importlib.machinery.PathFinder.find_spec(
                name, path if path is not None else [{later!r}])
        return None
{register}
"""


@pytest.mark.parametrize("adds", ["pth", "usercustomize", "appended finder",
                                  "first finder"])
def test_pth_at_start_up_with_later_directories(tmp_path, adds):
    """The .pth run by site.py at start-up, from the user site directory,
    which site.py adds before the system's: numpy is in a directory added
    after it, and a real AITER in one that a later .pth, or usercustomize
    (run after every site directory and sitecustomize), adds. The shim must still serve the function, find AITER and leave
    AITER's other modules its own (as with a venv's system packages, pip's
    user or /usr/local directories beside the distribution's, or a
    customize module)."""
    user_base = tmp_path / "user"
    user_site = subprocess.run(
        [sys.executable, "-c",
         "import site; print(site.ENABLE_USER_SITE and "
         "site.getusersitepackages())"],
        env=dict(os.environ, PYTHONUSERBASE=str(user_base)),
        capture_output=True, text=True, check=True).stdout.strip()
    if not user_site.startswith(str(user_base)):
        pytest.skip("not run: this interpreter has no user site directory")
    os.makedirs(user_site)
    package = os.path.dirname(mla_fp8.__file__)
    os.symlink(package, os.path.join(user_site, "mla_fp8"))
    aiter_shim.write_pth(user_site)
    later = tmp_path / "later"
    write_aiter(later)
    if adds == "pth":
        # Processed after the shim's .pth, in name order.
        with open(os.path.join(user_site, "zz_later.pth"), "w",
                  encoding="utf-8") as pth:
            pth.write(f"{later}\n")
    elif adds.endswith("finder"):
        register = ("sys.meta_path.append(EditableAiter)" if adds.startswith(
            "appended") else "sys.meta_path.insert(0, EditableAiter)")
        with open(os.path.join(user_site, "zz_editable.py"), "w",
                  encoding="utf-8") as module:
            module.write(_EDITABLE.format(later=str(later),
                                          register=register))
        with open(os.path.join(user_site, "zz_later.pth"), "w",
                  encoding="utf-8") as pth:
            pth.write("import zz_editable\n")
    else:
        with open(os.path.join(user_site, "usercustomize.py"), "w",
                  encoding="utf-8") as custom:
            custom.write(f"import sys\nsys.path.append({str(later)!r})\n")
    code = (f"from {NESTED} import {FUNCTION} as f\n"
            "from aiter.ops.triton.other import other\n"
            "import aiter\n"
            "print(f.__module__, other(), getattr(aiter, 'REAL', False))\n")
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("MLA_FP8_", "PYTHON"))}
    env.update(PYTHONUSERBASE=str(user_base), **{aiter_shim.ENV_VAR: "1"})
    child = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=120, check=False, env=env,
                           cwd=tmp_path)
    assert child.returncode == 0 and not child.stderr, child.stderr
    assert child.stdout.split() == ["mla_fp8.serving", "42", "True"]


@pytest.mark.parametrize("aiter_installed", [False, True])
def test_pth_finder_with_a_finder_that_asks_every_finder(tmp_path,
                                                         aiter_installed):
    """Another finder that, like the shim's, asks every other finder about
    AITER's packages (the shim's included) once made each import of them
    recurse until RecursionError. Each finder now gets an answer: AITER's
    package where one is installed, the stand-ins where none is."""
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    aiter_shim.write_pth(site_dir)
    later = tmp_path / "later"
    if aiter_installed:
        write_aiter(later)
    code = ("import site, sys\n"
            f"site.addsitedir({str(site_dir)!r})\n"
            "class AskEveryone:\n"
            "    @classmethod\n"
            "    def find_spec(cls, name, path=None, target=None):\n"
            "        if not name.startswith('aiter'):\n"
            "            return None\n"
            "        for finder in list(sys.meta_path):\n"
            "            if finder is not cls and hasattr(finder, "
            "'find_spec'):\n"
            "                spec = finder.find_spec(name, path, target)\n"
            "                if spec is not None:\n"
            "                    return spec\n"
            "        return None\n"
            "sys.meta_path.append(AskEveryone)\n"
            f"sys.path.append({str(later)!r})\n"
            f"from {NESTED} import {FUNCTION} as f\n"
            "import aiter\n"
            "print(f.__module__, getattr(aiter, 'REAL', False))\n")
    env = dict(os.environ, **{aiter_shim.ENV_VAR: "1"})
    child = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=120, check=False, env=env)
    assert child.returncode == 0 and not child.stderr, child.stderr
    assert child.stdout.split() == ["mla_fp8.serving", str(aiter_installed)]


@pytest.mark.parametrize("how", ["insert", "append then sort", "slice"])
def test_pth_finder_stays_first(tmp_path, how):
    """A finder serving a real AITER, put before the shim's by the program
    right before it imports AITER's module: the shim's is first again (it
    once moved itself back only when asked about some module, so the next
    import got AITER's own function)."""
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    aiter_shim.write_pth(site_dir)
    later = tmp_path / "later"
    write_aiter(later)
    register = {
        "insert": "sys.meta_path.insert(0, E)",
        "append then sort": "sys.meta_path.append(E)\n"
                            "sys.meta_path.sort(key=lambda f: f is not E)",
        "slice": "sys.meta_path[:0] = [E]"}[how]
    code = ("import importlib.machinery, site, sys\n"
            f"site.addsitedir({str(site_dir)!r})\n"
            "class E:\n"
            "    @staticmethod\n"
            "    def find_spec(name, path=None, target=None):\n"
            "        if name == 'aiter' or name.startswith('aiter.'):\n"
            "            return importlib.machinery.PathFinder.find_spec(\n"
            f"                name, path if path is not None else "
            f"[{str(later)!r}])\n"
            f"{register}\n"
            f"from {NESTED} import {FUNCTION} as f\n"
            "import aiter\n"
            "print(f.__module__, getattr(aiter, 'REAL', False))\n")
    env = dict(os.environ, **{aiter_shim.ENV_VAR: "1"})
    child = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=120, check=False, env=env)
    assert child.returncode == 0 and not child.stderr, child.stderr
    assert child.stdout.split() == ["mla_fp8.serving", "True"]


def test_pth_in_a_venv(tmp_path):
    """A venv's site.py processes its site-packages twice: the finder is
    added once, and without AITER the stand-ins serve the function; an
    explicit install_aiter_shim() then does not take them for AITER."""
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip",
                           "--system-site-packages", str(venv)],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"not run: no venv here ({made.stderr.strip()})")
    python = venv / "bin" / "python"
    site_dir = subprocess.run(
        [str(python), "-c", "import sysconfig; "
         "print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    os.symlink(os.path.dirname(mla_fp8.__file__),
               os.path.join(site_dir, "mla_fp8"))
    aiter_shim.write_pth(site_dir)
    code = ("import sys\n"
            "print(sum(getattr(f, '__mla_fp8_shim__', False)\n"
            "          for f in sys.meta_path))\n"
            f"from {FLAT} import {FUNCTION} as f\n"
            "print(f.__module__)\n"
            "import mla_fp8\n"
            "print(mla_fp8.install_aiter_shim()['aiter_installed'])\n")
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("MLA_FP8_", "PYTHON"))}
    env[aiter_shim.ENV_VAR] = "1"
    for flags in ([], ["-I"], ["-s"]):
        child = subprocess.run([str(python), *flags, "-c", code],
                               capture_output=True, text=True, timeout=120,
                               check=False, env=env, cwd=tmp_path)
        assert child.returncode == 0 and not child.stderr, child.stderr
        assert child.stdout.split() == ["1", "mla_fp8.serving", "False"], \
            flags


def test_the_pth_finders_cover_every_package_of_the_two_modules():
    assert set(aiter_shim.PACKAGES) == {
        ".".join(name.split(".")[:i]) for name in aiter_shim.MODULES
        for i in range(1, name.count(".") + 1)}
