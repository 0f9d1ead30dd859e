"""The bundle loader, in Python: what lib/Runtime/BundleLoader.cpp and
ManifestKernel.cpp check, with the same messages, so that serving on a
machine without the native modules trusts no more than the C++ loader does.

The loader trusts nothing it reads: the manifest is checked against its
digest, every field is range-checked, and every fact the code object's own
metadata states (the symbol, kernarg layout, LDS, scratch, workgroup size)
or the kernel ABI implies (the symbol's name, grid, workspace) must agree
with the manifest. docs/manifest.md lists the checks;
tests/test_pure_loader.py runs this loader and the native one on the same
damaged bundles and compares their answers.
"""

import errno
import hashlib
import json
import os
import re
import stat
from collections import namedtuple

from . import _abi
from ._codeobject import (CodeObjectError, printable,
                          read_code_object_metadata)
from ._manifest_kernel import as_integer, check_overlaps, read_checked_kernel

__all__ = ["BundleError", "LoadedBundle", "LoadedChip", "load"]


class BundleError(ValueError):
    """A bundle cannot be loaded: the message names the file and field."""

    def __init__(self, message):
        # A NUL read from a bundle is shown, not left to end the text.
        super().__init__(message.replace("\0", "\\x00"))


#: One chip of a bundle: its code object (bytes) and its kernels (dicts of
#: the manifest's fields, the `launch` shape among them).
LoadedChip = namedtuple("LoadedChip", "chip code_object_file sha256 "
                        "code_object_version code_object kernels")

#: A loaded bundle.
LoadedBundle = namedtuple("LoadedBundle", "directory schema_version "
                          "compiler_version model max_m manifest_sha256 "
                          "chips")

def _shown(path):
    """`path` (bytes) for a message: bytes that are not UTF-8 as \\xNN."""
    return path.decode("utf-8", "backslashreplace")


def _read_regular_file(path, max_bytes):
    """The bytes of `path`, a regular file of at most `max_bytes`; never
    waits on a FIFO and notices a file that grew while it was read."""
    shown = _shown(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC |
                     os.O_NOCTTY)
    except OSError as error:
        raise BundleError(f"cannot read '{shown}': "
                          f"{os.strerror(error.errno or errno.EIO)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BundleError(f"'{shown}' is not a regular file")
        if info.st_size > max_bytes:
            raise BundleError(f"'{shown}' is larger than {max_bytes} bytes")
        chunks, size = [], 0
        while size <= info.st_size:
            chunk = os.read(fd, info.st_size + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > info.st_size:
            raise BundleError(f"'{shown}' grew while it was read")
        return b"".join(chunks)
    except OSError as error:
        raise BundleError(f"cannot read '{shown}': "
                          f"{os.strerror(error.errno or errno.EIO)}") from None
    finally:
        os.close(fd)


# Strings (skipped with their escapes), brackets (for the depth count) and
# number-like runs (checked against JSON's grammar), as the C++ loader scans
# them (lib/CodeObject/File.cpp).
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"?|[\[\]{}]|[-+.0-9][-+.0-9eE]*',
                          re.DOTALL)
_JSON_NUMBER = re.compile(rb"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def _parse_json(text, max_depth):
    """The JSON value of `text` (bytes), refusing nesting deeper than
    `max_depth` and numbers JSON does not write ("+1", "01", "1.", ".5")
    before parsing, and what the C++ parser refuses: invalid UTF-8, NaN
    and infinities."""
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                raise ValueError(f"arrays and objects nest deeper than "
                                 f"{max_depth} levels (at byte "
                                 f"{match.start()})")
        elif token in (b"]", b"}"):
            depth = max(depth - 1, 0)
        elif token[:1] != b'"' and not _JSON_NUMBER.fullmatch(token):
            raise ValueError(f"invalid number "
                             f"'{token.decode('ascii')}' (at byte "
                             f"{match.start()})")

    def refuse_constant(name):
        raise ValueError(f"invalid JSON value {name}")

    try:
        value = json.loads(text.decode("utf-8"),
                           parse_constant=refuse_constant,
                           parse_int=_parse_int)
    except UnicodeDecodeError:
        raise ValueError("Invalid UTF-8 sequence") from None
    except json.JSONDecodeError as error:
        raise ValueError(str(error)) from None
    # An escaped surrogate without its pair reads as U+FFFD, as in the C++
    # parser, so that no string compares equal here and not there.
    if re.search(rb"\\u[dD][89a-fA-F]", text):
        value = _replace_lone_surrogates(value)
    return value


def _parse_int(text):
    # Past int64 the C++ parser reads a number as a double, which no field
    # takes as an integer; Python's int() would refuse thousands of digits.
    return int(text) if len(text) < 40 else float(text)


def _replace_lone_surrogates(value):
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v)
                for k, v in value.items()}
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


class _Reader:
    """Typed, range-checked fields; remembers the first error with the
    manifest file and the field's JSON path."""

    def __init__(self, file):
        self.file = file
        self.message = ""

    def failed(self):
        return bool(self.message)

    def error(self):
        return BundleError(f"{self.file}: {self.message}")

    def fail(self, path, what):
        if not self.message:
            self.message = f"field '{path}': {what}"

    @staticmethod
    def join(path, key):
        return f"{path}.{key}" if path else key

    def get(self, o, key, path):
        if key not in o:
            self.fail(self.join(path, key), "missing")
            return None
        return o[key]

    def get_int(self, o, key, path, low, high):
        v = self.get(o, key, path)
        if v is None and key not in o:
            return 0
        i = as_integer(v)
        if i is None:
            self.fail(self.join(path, key), "expected an integer")
            return 0
        if i < low or i > high:
            self.fail(self.join(path, key),
                      f"expected an integer in [{low}, {high}], got {i}")
            return 0
        return i

    def get_string(self, o, key, path):
        v = self.get(o, key, path)
        if key not in o:
            return ""
        if not isinstance(v, str):
            self.fail(self.join(path, key), "expected a string")
            return ""
        return v

    def get_choice(self, o, key, path, choices):
        s = self.get_string(o, key, path)
        if self.failed() or s in choices:
            return s
        listed = ", ".join(f'"{c}"' for c in choices)
        self.fail(self.join(path, key),
                  f'expected one of {listed}, got "{s}"')
        return ""

    def get_bool(self, o, key, path):
        v = self.get(o, key, path)
        if key in o and not isinstance(v, bool):
            self.fail(self.join(path, key), "expected true or false")
            return False
        return bool(v)

    def get_object(self, o, key, path):
        v = self.get(o, key, path)
        if key in o and not isinstance(v, dict):
            self.fail(self.join(path, key), "expected an object")
            return None
        return v

    def get_array(self, o, key, path, max_size):
        v = self.get(o, key, path)
        if key not in o:
            return None
        if not isinstance(v, list):
            self.fail(self.join(path, key), "expected an array")
            return None
        if len(v) > max_size:
            self.fail(self.join(path, key), f"{len(v)} entries, more than "
                      f"the limit of {max_size}")
            return None
        return v


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _is_digest(text):
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _check_manifest_digest(directory, manifest):
    path = os.path.join(directory, b"manifest.sha256")
    shown = _shown(path)
    try:
        line = _read_regular_file(path, 256)
    except BundleError as error:
        raise BundleError(f"{error} (a bundle records the SHA-256 of its "
                          f"manifest.json there since schema 2)") from None
    hex_digits = line[:64].decode("latin-1")
    if len(line) != 64 + 2 + 13 + 1 or not _is_digest(hex_digits) or \
            line[64:] != b"  manifest.json\n":
        raise BundleError(f"{shown}: expected one line '<64 lowercase hex "
                          f"digits>  manifest.json'")
    digest = _sha256(manifest)
    if digest != hex_digits:
        raise BundleError(f"{shown}: manifest.json has SHA-256 {digest}, the "
                          f"digest file records {hex_digits}: the manifest "
                          f"was changed or damaged")
    return digest


def _load_code_object(r, directory, manifest_name, path, size, chip):
    """The chip's code object bytes and metadata, checked."""
    file = os.path.join(directory, os.fsencode(chip["code_object"]))
    shown = _shown(file)
    try:
        data = _read_regular_file(file, _abi.MAX_CODE_OBJECT_BYTES)
    except BundleError as error:
        raise BundleError(f"{error} (code object of chip '{chip['chip']}', "
                          f"{manifest_name}: {path}.code_object)") from None
    if len(data) != size:
        raise BundleError(f"{shown}: size {len(data)} differs from field "
                          f"'{path}.bytes' = {size} in {manifest_name}")
    digest = _sha256(data)
    if digest != chip["sha256"]:
        raise BundleError(f"{shown}: SHA-256 {digest} differs from field "
                          f"'{path}.sha256' = {chip['sha256']} in "
                          f"{manifest_name}: the file is damaged or from "
                          f"another bundle")
    try:
        metadata = read_code_object_metadata(data)
    except CodeObjectError as error:
        raise BundleError(f"{shown}: {error}") from None
    if metadata.processor != chip["chip"]:
        r.fail(r.join(path, "chip"), f"'{chip['chip']}', but "
               f"{chip['code_object']} is for "
               f"'{printable(metadata.processor)}'")
        raise r.error()
    version = metadata.code_object_version
    if chip["code_object_version"] not in (0, version):
        r.fail(r.join(path, "code_object_version"),
               f"{chip['code_object_version']}, but {chip['code_object']} "
               f"is code object v{version} (ELF ABI version {version - 2})")
        raise r.error()
    return data, metadata


def load(directory):
    """Loads and checks the bundle in `directory` (str, bytes or a path).

    Raises:
      BundleError: naming the file and the field at fault.
    """
    directory = os.fsencode(directory)
    if b"\0" in directory:
        raise BundleError(f"directory: a path cannot contain a NUL byte: "
                          f"{_shown(directory)!r}")
    path = os.path.join(directory, b"manifest.json")
    text = _read_regular_file(path, _abi.MAX_MANIFEST_BYTES)
    return _load_manifest(directory, text, _shown(path))


def _load_manifest(directory, manifest, manifest_name):
    r = _Reader(manifest_name)
    try:
        root = _parse_json(manifest, _abi.MAX_MANIFEST_JSON_DEPTH)
    except ValueError as error:
        raise BundleError(f"{manifest_name}: malformed JSON: "
                          f"{error}") from None
    if not isinstance(root, dict):
        raise BundleError(f"{manifest_name}: expected a JSON object at the "
                          f"top")
    # The version first: another layout may fail every other check (an
    # older one has no digest file), and its message must say why.
    schema = r.get_int(root, "schema_version", "", 0, (1 << 31) - 1)
    if r.failed():
        raise r.error()
    if schema != _abi.SUPPORTED_SCHEMA_VERSION:
        raise BundleError(
            f"{manifest_name}: field 'schema_version': the manifest has "
            f"schema version {schema}; this loader reads schema version "
            f"{_abi.SUPPORTED_SCHEMA_VERSION} only. Regenerate the bundle "
            f"with a matching mla-fp8-aot")
    manifest_sha256 = _check_manifest_digest(directory, manifest)
    if r.get_string(root, "compiler", "") != "mla-fp8" and not r.failed():
        r.fail("compiler", 'expected "mla-fp8"')
    compiler_version = r.get_string(root, "compiler_version", "")
    model = r.get_string(root, "model", "")
    max_m = r.get_int(root, "max_m", "", 1, _abi.MAX_MANIFEST_M)
    chips = r.get_array(root, "chips", "", _abi.MAX_MANIFEST_CHIPS)
    if r.failed():
        raise r.error()
    loaded = []
    for c, o in enumerate(chips):
        path = f"chips[{c}]"
        if not isinstance(o, dict):
            r.fail(path, "expected an object")
            raise r.error()
        chip = {"chip": r.get_string(o, "chip", path),
                "code_object": r.get_string(o, "code_object", path),
                "sha256": r.get_string(o, "sha256", path)}
        size = r.get_int(o, "bytes", path, 1, _abi.MAX_CODE_OBJECT_BYTES)
        chip["code_object_version"] = 0
        if "code_object_version" in o:
            chip["code_object_version"] = r.get_int(
                o, "code_object_version", path, 5, 6)
        kernels = r.get_array(o, "kernels", path,
                              _abi.MAX_MANIFEST_KERNELS_PER_CHIP)
        if r.failed():
            raise r.error()
        name = chip["chip"]
        if name not in _abi.CHIPS_BY_NAME:
            r.fail(r.join(path, "chip"), _abi.describe_unsupported_chip(name))
            raise r.error()
        if any(done.chip == name for done in loaded):
            r.fail(r.join(path, "chip"), f"chip '{name}' is listed twice")
            raise r.error()
        if not _is_digest(chip["sha256"]):
            r.fail(r.join(path, "sha256"), "expected 64 lowercase hex digits")
            raise r.error()
        # Code object names are plain file names: a manifest must not point
        # outside its bundle.
        file = chip["code_object"]
        if file in ("", ".", "..") or "/" in file or "\0" in file:
            r.fail(r.join(path, "code_object"),
                   f"expected a file name inside the bundle, got '{file}'")
            raise r.error()
        data, metadata = _load_code_object(r, directory, manifest_name, path,
                                           size, chip)
        kernels_path = r.join(path, "kernels")
        entries = []
        for i, k in enumerate(kernels):
            kernel_path = f"{kernels_path}[{i}]"
            if not isinstance(k, dict):
                r.fail(kernel_path, "expected an object")
                raise r.error()
            entry = read_checked_kernel(r, k, kernel_path, name, metadata,
                                        file)
            if r.failed():
                raise r.error()
            entry["key"] = (c, i)
            entries.append(entry)
        check_overlaps(r, kernels_path, entries)
        if r.failed():
            raise r.error()
        loaded.append(LoadedChip(name, file, chip["sha256"],
                                 metadata.code_object_version, data, entries))
    return LoadedBundle(os.fsdecode(directory), schema, compiler_version,
                        model, max_m, manifest_sha256, loaded)
