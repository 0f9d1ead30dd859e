"""make_wheel.py: the pure-Python wheel with a bundle inside. Its RECORD
matches the archive, two builds are byte-identical, no native module goes
in, pip installs it, and a fresh interpreter that has only the installed
directory serves AITER's import path from the wheel's bundle, on the mocked
HIP runtime. Bad input is refused and leaves no wheel behind."""

import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

import mla_fp8
from mla_fp8 import aiter_shim

TESTS = os.path.dirname(os.path.abspath(__file__))
MAKE_WHEEL = os.path.join(os.path.dirname(TESTS), "make_wheel.py")
VERSION = "0.1.0"
WHEEL_NAME = f"mla_fp8-{VERSION}-py3-none-any.whl"
INFO = f"mla_fp8-{VERSION}.dist-info"
# The package as the build lays it out: its .py files next to the native
# modules and, once imported, __pycache__.
PACKAGE = os.path.dirname(mla_fp8.__file__)


def make_wheel(*args):
    return subprocess.run([sys.executable, MAKE_WHEEL, *map(str, args)],
                          capture_output=True, text=True, timeout=120,
                          check=False)


def build(output, bundle=None, package=PACKAGE, version=VERSION):
    args = ["--package", package, "--version", version, "-o", output]
    result = make_wheel(*args, *(["--bundle", bundle] if bundle else []))
    assert result.returncode == 0, result.stderr
    path = output / WHEEL_NAME
    assert result.stdout.strip() == str(path)
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, session_bundle):
    return build(tmp_path_factory.mktemp("dist"), session_bundle)


def record_digest(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def test_contents(wheel, session_bundle):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        data = {name: archive.read(name) for name in names}
        infos = archive.infolist()
    assert len(set(names)) == len(names)
    # RECORD lists every other entry with its digest and size, and itself
    # without; it comes last, after the rest of the dist-info.
    rows = list(csv.reader(io.StringIO(data[f"{INFO}/RECORD"].decode())))
    assert [row[0] for row in rows] == names
    assert rows[-1] == [f"{INFO}/RECORD", "", ""]
    for name, digest, size in rows[:-1]:
        assert digest == record_digest(data[name]), name
        assert int(size) == len(data[name]), name
    assert names[-3:] == [f"{INFO}/METADATA", f"{INFO}/WHEEL",
                          f"{INFO}/RECORD"]
    assert names[:-3] == sorted(names[:-3])
    # The package's sources, nothing native, no bytecode.
    sources = sorted(f"mla_fp8/{name}" for name in os.listdir(PACKAGE)
                     if name.endswith(".py"))
    assert sorted(n for n in names if n.endswith(".py")) == sources
    assert any(name.endswith(".so") for name in os.listdir(PACKAGE)), \
        "the build's package holds the native modules the wheel leaves out"
    assert not [n for n in names if n.endswith((".so", ".pyc")) or
                "__pycache__" in n]
    for name in sources:
        with open(os.path.join(PACKAGE, name[len("mla_fp8/"):]), "rb") as f:
            assert data[name] == f.read(), name
    # The bundle, file for file, where the package looks first.
    bundle_files = sorted(os.listdir(session_bundle))
    assert "manifest.json" in bundle_files
    assert sorted(n[len("mla_fp8/bundle/"):] for n in names
                  if n.startswith("mla_fp8/bundle/")) == bundle_files
    for name in bundle_files:
        assert data["mla_fp8/bundle/" + name] == \
            (session_bundle / name).read_bytes()
    # The .pth of write_pth(), at the root of site-packages.
    assert data[aiter_shim.PTH_NAME].decode() == aiter_shim._PTH_LINE
    metadata = data[f"{INFO}/METADATA"].decode().splitlines()
    assert metadata[:3] == ["Metadata-Version: 2.1", "Name: mla-fp8",
                            f"Version: {VERSION}"]
    assert "Requires-Python: >=3.8" in metadata
    assert "Requires-Dist: numpy" in metadata
    assert f"Summary: {mla_fp8.__doc__.splitlines()[0]}" in metadata
    wheel_fields = data[f"{INFO}/WHEEL"].decode().splitlines()
    for field in ("Wheel-Version: 1.0", "Root-Is-Purelib: true",
                  "Tag: py3-none-any"):
        assert field in wheel_fields
    assert any(f.startswith("Generator: ") for f in wheel_fields)
    for info in infos:
        assert info.date_time == (1980, 1, 1, 0, 0, 0)
        assert info.external_attr >> 16 == 0o100644
        assert info.compress_type == zipfile.ZIP_DEFLATED


def test_deterministic(tmp_path, wheel, session_bundle):
    # Another copy of the inputs, with other timestamps and a bytecode
    # directory that must not matter.
    package = tmp_path / "src" / "mla_fp8"
    shutil.copytree(PACKAGE, package)
    (package / "__pycache__").mkdir(exist_ok=True)
    (package / "__pycache__" / "x.pyc").write_bytes(b"\0")
    bundle = tmp_path / "bundle"
    shutil.copytree(session_bundle, bundle)
    os.utime(bundle / "manifest.json", (0, 0))
    again = build(tmp_path / "a", bundle, package=package)
    assert again.read_bytes() == wheel.read_bytes()
    assert build(tmp_path / "b", bundle).read_bytes() == wheel.read_bytes()
    # Without a bundle: the same wheel less the bundle.
    with zipfile.ZipFile(build(tmp_path / "c")) as archive:
        assert not [n for n in archive.namelist() if "/bundle/" in n]
        assert aiter_shim.PTH_NAME in archive.namelist()


def pip_install(wheel, target):
    if importlib.util.find_spec("pip") is None:
        pytest.skip("needs pip (Debian's python3-pip, which ./build.sh "
                    "installs) to install the wheel")
    # --isolated: no pip configuration or PIP_* variables (an index, extra
    # wheel directories) take part.
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--isolated", "--no-deps",
         "--no-index", "--no-cache-dir", "--disable-pip-version-check",
         "--target", str(target), str(wheel)],
        capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheel):
    target = tmp_path_factory.mktemp("site") / "site-packages"
    pip_install(wheel, target)
    return target


def test_pip_install(installed, session_bundle):
    assert (installed / aiter_shim.PTH_NAME).read_text() == \
        aiter_shim._PTH_LINE
    assert (installed / "mla_fp8" / "bundle" / "manifest.json").read_bytes() \
        == (session_bundle / "manifest.json").read_bytes()
    assert (installed / INFO / "METADATA").is_file()
    assert not list(installed.glob("mla_fp8/*.so"))


# Run with -I: no PYTHONPATH, no user site, not the current directory; the
# system's packages (numpy) stay on the path, the build tree does not.
_CHILD = textwrap.dedent("""
    import json
    import site
    import sys

    site_dir, tests, function, flat, nested = sys.argv[1:6]
    # What site.py does with site-packages at start-up: run the .pth line.
    site.addsitedir(site_dir)
    assert any(getattr(f, "__mla_fp8_shim__", False) for f in sys.meta_path), \\
        "the wheel's .pth did not install the shim's finders"
    assert "mla_fp8" not in sys.modules, "the .pth imported mla_fp8"
    aiter_function = getattr(__import__(nested, fromlist=[function]),
                             function)

    import mla_fp8
    from mla_fp8 import hip
    sys.path.append(tests)
    from hip_mock import FakeDevice, FakeHip, make_torch

    torch = sys.modules["torch"] = make_torch()
    lib = FakeHip()
    hip.find_hip_library = lambda: "libamdhip64.so"
    hip.get_runtime(loader=lambda path: lib)
    dev = FakeDevice("cuda", 0)
    # DeepSeek-R1 TP8's K-up: X (B, M, K) = (16, 4, 128), W (16, 512, 128).
    y = aiter_function(torch.Tensor((16, 4, 128), torch.bfloat16, dev),
                       torch.Tensor((16, 512, 128), torch.float8_e4m3fnuz,
                                    dev),
                       torch.Tensor((), torch.float32, dev))
    print(json.dumps({
        "package": mla_fp8.__file__,
        "bundle": mla_fp8.get_bundle().directory,
        "same_function": aiter_function is getattr(mla_fp8, function),
        "shape": list(y.shape),
        "launches": len(lib.launches),
        "native": sorted(m for m in sys.modules
                         if m.startswith("mla_fp8._mla_fp8")),
    }))
""")

def test_installed_wheel_serves(tmp_path, installed):
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("MLA_FP8_", "PYTHON"))}
    env.update(MLA_FP8_REPLACE_AITER="1",
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    child = subprocess.run(
        [sys.executable, "-I", "-c", _CHILD, str(installed), TESTS,
         aiter_shim.FUNCTION, *aiter_shim.MODULES], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=300, check=False)
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout.splitlines()[-1])
    assert out["package"] == str(installed / "mla_fp8" / "__init__.py")
    assert out["bundle"] == str(installed / "mla_fp8" / "bundle")
    assert out["same_function"]
    assert out["shape"] == [16, 4, 512] and out["launches"] == 1
    assert out["native"] == []


def refuse(tmp_path, *args, message):
    """make_wheel.py fails with `message` and writes nothing."""
    output = tmp_path / "dist"
    result = make_wheel(*args, "-o", output)
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("make_wheel.py: error: ")
    assert re.search(message, result.stderr), result.stderr
    assert not output.exists() or not list(output.iterdir())


def test_refusals(tmp_path, session_bundle):
    package = ["--package", PACKAGE, "--version", VERSION]
    refuse(tmp_path, "--package", tmp_path / "missing", "--version", VERSION,
           message=r"package: .*missing does not exist")
    refuse(tmp_path, "--package", session_bundle, "--version", VERSION,
           message=r"has no __init__.py")
    refuse(tmp_path, "--package", PACKAGE, "--version", "0.1-beta",
           message=r"version: '0.1-beta' is not a PEP 440 version")
    # The .pth's name and line are aiter_shim's constants, or nothing.
    computed = tmp_path / "computed" / "mla_fp8"
    shutil.copytree(PACKAGE, computed)
    shim = computed / "aiter_shim.py"
    text, count = re.subn(r"^PTH_NAME = (.*)$", r"PTH_NAME = str(\1)",
                          shim.read_text(), flags=re.MULTILINE)
    assert count == 1
    shim.write_text(text)
    refuse(tmp_path, "--package", computed, "--version", VERSION,
           message=r"aiter_shim.py does not define PTH_NAME")
    refuse(tmp_path, *package, "--bundle", tmp_path / "none",
           message=r"bundle: .*none does not exist")
    (tmp_path / "empty").mkdir()
    refuse(tmp_path, *package, "--bundle", tmp_path / "empty",
           message=r"bundle: .*empty has no manifest.json")
    bundle = tmp_path / "bundle"
    shutil.copytree(session_bundle, bundle)
    code_object = bundle / "gfx942.hsaco"
    code_object.write_bytes(code_object.read_bytes() + b"\0")
    refuse(tmp_path, *package, "--bundle", bundle,
           message=r"gfx942.hsaco in .* does not match the manifest's sha256")
    code_object.unlink()
    refuse(tmp_path, *package, "--bundle", bundle,
           message=r"lacks gfx942.hsaco, the code object its manifest lists")
    shutil.copy(session_bundle / "gfx942.hsaco", code_object)
    manifest = bundle / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"gfx950"', '"gfx951"'))
    refuse(tmp_path, *package, "--bundle", bundle,
           message=r"does not match the digest in manifest.sha256")
    manifest.write_text("{")
    digest = hashlib.sha256(b"{").hexdigest()
    (bundle / "manifest.sha256").write_text(f"{digest}  manifest.json\n")
    refuse(tmp_path, *package, "--bundle", bundle,
           message=r"manifest.json is not JSON")
    # The output is a file, or under one.
    (tmp_path / "file").write_text("")
    result = make_wheel(*package, "-o", tmp_path / "file")
    assert result.returncode == 1
    assert "output: " in result.stderr and "is not a directory" in \
        result.stderr
    result = make_wheel(*package, "-o", tmp_path / "file" / "dist")
    assert result.returncode == 1
    assert "output: cannot write into" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0,
                    reason="root writes into read-only directories")
def test_read_only_output(tmp_path):
    output = tmp_path / "dist"
    output.mkdir(mode=0o555)
    result = make_wheel("--package", PACKAGE, "--version", VERSION, "-o",
                        output)
    assert result.returncode == 1
    assert "output: cannot write into" in result.stderr
    assert "Permission denied" in result.stderr


def test_failed_write_keeps_the_old_wheel(tmp_path, monkeypatch):
    """A write that fails leaves the previous wheel and no temporary
    file."""
    spec = importlib.util.spec_from_file_location("make_wheel", MAKE_WHEEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    output = tmp_path / "dist"
    path = module.build_wheel(PACKAGE, VERSION, output)
    before = output.joinpath(WHEEL_NAME).read_bytes()
    assert path == str(output / WHEEL_NAME)
    package = tmp_path / "src" / "mla_fp8"
    shutil.copytree(PACKAGE, package)
    (package / "extra.py").write_text("")

    def no_space(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(module.os, "replace", no_space)
    with pytest.raises(module.WheelError,
                       match=r"output: cannot write .*No space left"):
        module.build_wheel(package, VERSION, output)
    assert output.joinpath(WHEEL_NAME).read_bytes() == before
    assert os.listdir(output) == [WHEEL_NAME]
