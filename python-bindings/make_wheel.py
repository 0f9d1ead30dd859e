#!/usr/bin/python3
"""Writes the pure-Python wheel of mla_fp8, with the standard library only.

Usage: make_wheel.py --package DIR --version VERSION [--bundle DIR]
                     --output DIR

Writes OUTPUT/mla_fp8-<VERSION>-py3-none-any.whl (PEP 427), which holds:

* the package's ``.py`` files, as ``mla_fp8/...``; native modules
  (``*.so``), bytecode and a ``bundle`` directory in the package are left
  out;
* the bundle, when given, as ``mla_fp8/bundle``: the first default location
  the package looks in (``mla_fp8.serving.default_bundle_paths()``);
* ``mla_fp8_aiter.pth`` at the root of site-packages: the file that
  ``mla_fp8.aiter_shim.write_pth()`` writes, its name and line read from the
  package's aiter_shim.py. The line installs the AITER shim in processes
  started with MLA_FP8_REPLACE_AITER=1 and does nothing without it;
* ``mla_fp8-<VERSION>.dist-info`` (METADATA, WHEEL, RECORD).

The same inputs give a byte-identical wheel (with the same zlib, which
compresses it): fixed timestamps and modes, the files in sorted order, then
the dist-info. The wheel is written to a temporary file in OUTPUT and
renamed, so that a failure leaves no partial wheel. Prints the wheel's path;
exits with 1 and a message naming the problem on bad input.
"""

import argparse
import ast
import base64
import contextlib
import csv
import hashlib
import io
import json
import os
import re
import sys
import tempfile
import zipfile

DISTRIBUTION = "mla-fp8"
PACKAGE = "mla_fp8"
GENERATOR = "mla-fp8 make_wheel.py"

# The earliest time a zip entry can carry.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
# A regular file, rw-r--r--, in the upper 16 bits of a Unix zip entry.
_FILE_MODE = 0o100644 << 16

# A public PEP 440 version (optionally with a local part), the form
# CMake's project(VERSION) and release tags take.
_VERSION = re.compile(r"^(\d+!)?\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?"
                      r"(\.dev\d+)?(\+[a-z0-9]+(\.[a-z0-9]+)*)?$")

# The expressions _pth_hook evaluates: literals, names, f-strings, tuples
# and concatenations; no calls, attributes or subscripts.
_CONSTANT_NODES = (ast.Constant, ast.Name, ast.Load, ast.JoinedStr,
                   ast.FormattedValue, ast.Tuple, ast.List, ast.BinOp,
                   ast.Add)


class WheelError(Exception):
    """Bad input or an output that cannot be written."""


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as error:
        raise WheelError(f"{what}: cannot read {path}: "
                         f"{error.strerror}") from None


def _directory(path, what):
    if not os.path.isdir(path):
        state = "does not exist" if not os.path.exists(path) else \
            "is not a directory"
        raise WheelError(f"{what}: {path} {state}")
    return os.path.abspath(path)


def _walk(root, skip=()):
    """{relative posix path: absolute path} of the files under root, in
    sorted order, leaving out the directories named in skip."""
    files = {}
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in skip)
        rel = os.path.relpath(directory, root)
        for name in sorted(names):
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                key = name if rel == "." else \
                    f"{rel.replace(os.sep, '/')}/{name}"
                files[key] = path
    return files


def _package_files(package_dir):
    """{name in the wheel: bytes} of the package's Python sources."""
    if not os.path.isfile(os.path.join(package_dir, "__init__.py")):
        raise WheelError(f"package: {package_dir} has no __init__.py: not "
                         f"the mla_fp8 package")
    # A bundle copied into the package is not a source: only --bundle
    # puts one in the wheel.
    files = _walk(package_dir, skip=("__pycache__", "bundle"))
    return {f"{PACKAGE}/{rel}": _read(path, "package")
            for rel, path in files.items() if rel.endswith(".py")}


def _summary(init_source):
    """The first line of the package's docstring."""
    try:
        doc = ast.get_docstring(ast.parse(init_source))
    except SyntaxError as error:
        raise WheelError(f"package: __init__.py does not parse: "
                         f"{error}") from None
    return doc.splitlines()[0].strip() if doc else ""


def _pth_hook(package_dir):
    """(file name, line) of the .pth that aiter_shim.write_pth() writes:
    its PTH_NAME and _PTH_LINE, evaluated from aiter_shim.py's source.
    Importing the module instead would import the whole package."""
    path = os.path.join(package_dir, "aiter_shim.py")
    try:
        tree = ast.parse(_read(path, "package"), path)
    except SyntaxError as error:
        raise WheelError(f"package: {path} does not parse: {error}") from None
    values = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and
                isinstance(node.targets[0], ast.Name)):
            continue
        nodes = list(ast.walk(node.value))
        if not all(isinstance(n, _CONSTANT_NODES) for n in nodes) or \
                not all(n.id in values for n in nodes
                        if isinstance(n, ast.Name)):
            continue
        code = compile(ast.Expression(node.value), path, "eval")
        values[node.targets[0].id] = eval(  # pylint: disable=eval-used
            code, {"__builtins__": {}}, dict(values))
    name, line = values.get("PTH_NAME"), values.get("_PTH_LINE")
    # site.py runs a .pth line only when it starts with "import".
    if not (isinstance(name, str) and name.endswith(".pth") and
            "/" not in name and isinstance(line, str) and
            line.startswith("import ") and line.count("\n") == 1 and
            line.endswith("\n")):
        raise WheelError(f"package: {path} does not define PTH_NAME (a "
                         f".pth file name) and _PTH_LINE (one import line) "
                         f"as constants")
    return name, line


def _bundle_files(bundle_dir):
    """{name in the wheel: bytes} of the bundle, after checking its
    integrity as the loader does: the manifest's digest, and the code objects
    it lists, present with their digests. The loader checks the rest."""
    files = {rel: _read(path, "bundle")
             for rel, path in _walk(bundle_dir).items()}
    manifest_path = os.path.join(bundle_dir, "manifest.json")
    if "manifest.json" not in files:
        raise WheelError(f"bundle: {bundle_dir} has no manifest.json: not a "
                         f"bundle (mla-fp8-aot -o DIR writes one)")
    recorded = files.get("manifest.sha256", b"").split(b" ")[0].decode(
        "ascii", "replace")
    if recorded != hashlib.sha256(files["manifest.json"]).hexdigest():
        raise WheelError(f"bundle: {manifest_path} does not match the "
                         f"digest in manifest.sha256 (missing, or changed "
                         f"after mla-fp8-aot wrote it: regenerate the "
                         f"bundle)")
    try:
        manifest = json.loads(files["manifest.json"])
    except ValueError as error:
        raise WheelError(f"bundle: {manifest_path} is not JSON: "
                         f"{error}") from None
    chips = manifest.get("chips") if isinstance(manifest, dict) else None
    if not isinstance(chips, list) or not chips:
        raise WheelError(f"bundle: {manifest_path} lists no chips")
    for index, chip in enumerate(chips):
        name = chip.get("code_object") if isinstance(chip, dict) else None
        if not isinstance(name, str):
            raise WheelError(f"bundle: {manifest_path}: chips[{index}] "
                             f"names no code_object")
        if name not in files:
            raise WheelError(f"bundle: {bundle_dir} lacks {name}, the "
                             f"code object its manifest lists")
        if hashlib.sha256(files[name]).hexdigest() != chip.get("sha256"):
            raise WheelError(f"bundle: {name} in {bundle_dir} does not "
                             f"match the manifest's sha256 (changed after "
                             f"mla-fp8-aot wrote it: regenerate the bundle)")
    return {f"{PACKAGE}/bundle/{rel}": data for rel, data in files.items()}


def _record_digest(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _dist_info(version, summary, entries):
    """The dist-info files, RECORD last, for the wheel's other entries."""
    info = f"{PACKAGE}-{version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\n"
                f"Version: {version}\n" +
                (f"Summary: {summary}\n" if summary else "") +
                "Requires-Python: >=3.8\nRequires-Dist: numpy\n")
    wheel = (f"Wheel-Version: 1.0\nGenerator: {GENERATOR}\n"
             f"Root-Is-Purelib: true\nTag: py3-none-any\n")
    files = list(entries) + [(f"{info}/METADATA", metadata.encode()),
                             (f"{info}/WHEEL", wheel.encode())]
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data in files:
        writer.writerow([name, _record_digest(data), len(data)])
    writer.writerow([f"{info}/RECORD", "", ""])
    return files + [(f"{info}/RECORD", record.getvalue().encode())]


def _zip(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=_ZIP_EPOCH)
            info.create_system = 3  # Unix, so that the mode is read
            info.external_attr = _FILE_MODE
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def _write_atomically(path, data):
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".", suffix=".whl.part",
                                         dir=directory)
    except OSError as error:
        raise WheelError(f"output: cannot write into {directory}: "
                         f"{error.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file private; a wheel is read by others.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise WheelError(f"output: cannot write {path}: "
                             f"{error.strerror}") from None
        raise


def build_wheel(package_dir, version, output_dir, bundle_dir=None):
    """Writes the wheel (see the module's description); returns its path."""
    if not _VERSION.match(version):
        raise WheelError(f"version: {version!r} is not a PEP 440 version "
                         f"such as 0.1.0")
    package_dir = _directory(package_dir, "package")
    entries = _package_files(package_dir)
    pth_name, pth_line = _pth_hook(package_dir)
    entries[pth_name] = pth_line.encode()
    if bundle_dir is not None:
        entries.update(_bundle_files(_directory(bundle_dir, "bundle")))
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise WheelError(f"output: {output_dir} is not a directory")
    summary = _summary(entries[f"{PACKAGE}/__init__.py"])
    files = _dist_info(version, summary, sorted(entries.items()))
    path = os.path.join(os.path.abspath(output_dir),
                        f"{PACKAGE}-{version}-py3-none-any.whl")
    _write_atomically(path, _zip(files))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Writes the pure-Python wheel of mla_fp8 "
                    "(mla_fp8-VERSION-py3-none-any.whl).")
    parser.add_argument("--package", required=True,
                        help="the mla_fp8 package directory (its .py files "
                             "go into the wheel)")
    parser.add_argument("--version", required=True,
                        help="the project's version (CMake's "
                             "PROJECT_VERSION)")
    parser.add_argument("--bundle",
                        help="a bundle directory (mla-fp8-aot -o DIR) to "
                             "include as mla_fp8/bundle")
    parser.add_argument("-o", "--output", required=True,
                        help="the directory to write the wheel into "
                             "(created if missing)")
    args = parser.parse_args(argv)
    try:
        path = build_wheel(args.package, args.version, args.output,
                           args.bundle)
    except WheelError as error:
        print(f"make_wheel.py: error: {error}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
