#!/usr/bin/python3
"""Worst-case load time of a forged bundle, against a real small one.

Usage: bench/forged-load.py [--kernels N] [--chips gfx942,gfx950]
           [--runs R] [--json FILE] [--keep DIR] [--build DIR]

A bundle's loaders (mla_fp8.load_bundle in pure Python, runtime::loadBundle
in C++, which `mla-fp8-emu --check-bundle` and the native module run) trust
nothing in it, but their cost grows with what it holds. This forges the
bundle that costs them the most while passing every check, and times them
on it:

* every chip the loaders know (gfx942 and gfx950; each may be listed once),
  each with N kernels (default 4096, kMaxManifestKernelsPerChip);
* every entry's symbol exists in its code object's metadata note and symbol
  table (its code, descriptor <symbol>.kd and the compiler's .set symbols
  are one real kernel's, replicated), so every per-entry lookup succeeds;
* the symbols are as long as the naming scheme allows: n, k and group_size
  65536 (their limits), in_type and out_type f16, per-batch scales and a
  bias (`mla_fp8_n65536_k65536_g65536_xf16_f16_pb_bias_<chip>_r<R>_<R>`),
  with ten-digit ranges of rows (min_rows = max_rows = 2^31 - N ... 2^31 - 1, so the
  ranges are disjoint), all of one length and one description, so that
  name comparisons and the overlap check do their full work;
* the metadata lists the kernels in the reverse of the manifest's order,
  after as many kernels the manifest does not list (names of the same
  length and prefix) as fill the note to about 98 % of its 8 MiB limit, so
  that a loader scanning the metadata per manifest entry would compare
  about 7,500 names for each (--no-padding leaves them out);
* the manifest is written as mla-fp8-aot writes it (indented) when that fits
  in 16 MiB, else compact, else without the `meaning` prose (never read);
* code-object sizes, SHA-256 digests and manifest.sha256 are all valid.

How it is forged: mla-fp8-aot writes a real bundle (the comparison bundle:
--tp=8 --chips=gfx942 --max-m=16 --in-type=bf16; the same for gfx950 as
its template); mla-fp8-opt compiles that bundle's first kernel, with its
tile, to assembly (mlafp8-to-hsaco{format=isa}); the kernel's text and
metadata are replicated under the forged names, assembled with llvm-mc-22
and linked with ld.lld-22 -shared; the manifest entries are the real entry
with the forged fields (symbol, n, k, group_size, types, range of rows, grid.x,
workspace). Everything is built in a temporary directory, removed at the
end (--keep DIR copies the forged bundle there first).

Each loader runs R times (default 5, fewer when a loader is slow; one
untimed warm-up first) on each bundle and the median time.perf_counter
interval is printed:

* python: mla_fp8.load_bundle(DIR) in this process (the Bundle object, with
  its shape index, included);
* native: mla_fp8's native module _mla_fp8.Bundle(DIR) in this process, when
  it is built;
* emu: `mla-fp8-emu --check-bundle DIR` in a subprocess (process start
  included: the real bundle's row shows about what that costs);
* bench-load: build/bin/mla-fp8-bench-load's own median (bench/bundle-load.cpp,
  C++ in-process), when it is built.

A loader that refuses a bundle is timed to the refusal and its message is
printed: the forged bundle is meant to be accepted (--kernels above 4096
shows the refusal instead).

Needs: a build (build/bin/mla-fp8-aot, -opt, -emu; --build or
$MLAFP8_BUILD_DIR names another), llvm-mc-22 and ld.lld-22 (Debian's llvm-22
and lld-22, /usr/lib/llvm-22/bin), llvm-objdump-22 to count the forged
descriptors (optional), and the Python package: PYTHONPATH, else
<build>/python-bindings, else the source tree's python-bindings (pure
Python: the native loader is then not timed). Runs in about a minute on
two cores.
"""

import argparse
import copy
import gc
import hashlib
import importlib
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLVM_BIN = "/usr/lib/llvm-22/bin"

# The limits the forged bundle stays within (include/mla-fp8/Runtime/
# KernelTable.h, CodeObject/File.h, CodeObject/Metadata.h).
MAX_KERNELS_PER_CHIP = 4096
MAX_MANIFEST_BYTES = 16 << 20
MAX_METADATA_NOTE_BYTES = 8 << 20
MAX_CODE_OBJECT_BYTES = 256 << 20
MAX_M = (1 << 31) - 1
MAX_NK = 65536           # kMaxManifestN, kMaxManifestK
MAX_GROUP_SIZE = 65536   # kMaxManifestGroupSize
WORKSPACE_ALIGNMENT = 256
LOADER_BUDGET_S = 12.0   # per loader and bundle, beyond the first run

REAL_BUNDLE_FLAGS = ["--tp=8", "--max-m=16", "--in-type=bf16", "--quiet",
                     "--no-cache"]


def fail(message):
    sys.exit(f"forged-load.py: error: {message}")


def note(message):
    print(message, flush=True)


# ---------------------------------------------------------------------------
# Tools


def find_llvm_tool(name):
    """llvm-mc-22 and the like: /usr/lib/llvm-22/bin/<name without -22>,
    else <name> on PATH."""
    plain = os.path.join(LLVM_BIN, name[:-3] if name.endswith("-22")
                         else name)
    if os.access(plain, os.X_OK):
        return plain
    return shutil.which(name)


def find_tools(build):
    tools, missing = {}, []
    for name in ("mla-fp8-aot", "mla-fp8-opt", "mla-fp8-emu"):
        path = os.path.join(build, "bin", name)
        if os.access(path, os.X_OK):
            tools[name] = path
        else:
            missing.append(f"{path} (build the project: ./build.sh build)")
    for name in ("llvm-mc-22", "ld.lld-22"):
        path = find_llvm_tool(name)
        if path:
            tools[name] = path
        else:
            missing.append(f"{name} (looked in {LLVM_BIN} and PATH; "
                           f"apt-get install "
                           f"{'lld-22' if 'lld' in name else 'llvm-22'})")
    if missing:
        fail("missing tools:\n  " + "\n  ".join(missing))
    tools["llvm-objdump-22"] = find_llvm_tool("llvm-objdump-22")
    bench_load = os.path.join(build, "bin", "mla-fp8-bench-load")
    tools["mla-fp8-bench-load"] = bench_load if os.access(
        bench_load, os.X_OK) else None
    return tools


def import_package(build):
    """mla_fp8 with load_bundle, from PYTHONPATH, else the build, else the
    source tree; returns (module, directory it came from, note)."""
    def attempt(extra):
        for name in [m for m in sys.modules
                     if m == "mla_fp8" or m.startswith("mla_fp8.")]:
            del sys.modules[name]
        if extra:
            sys.path.insert(0, extra)
        try:
            module = importlib.import_module("mla_fp8")
            if hasattr(module, "load_bundle"):
                return module
            errors.append(f"{extra or 'PYTHONPATH'}: no mla_fp8.load_bundle "
                          f"(an empty or partial package)")
        except Exception as error:  # pylint: disable=broad-except
            # A package being rebuilt may fail in any way.
            errors.append(f"{extra or 'PYTHONPATH'}: "
                          f"{type(error).__name__}: {error}")
        if extra:
            sys.path.remove(extra)
        return None

    errors = []
    for extra, what in ((None, "PYTHONPATH"),
                        (os.path.join(build, "python-bindings"), "build"),
                        (os.path.join(ROOT, "python-bindings"),
                         "source tree")):
        module = attempt(extra)
        if module is not None:
            where = os.path.dirname(os.path.dirname(
                os.path.abspath(module.__file__)))
            remark = "" if what != "source tree" else (
                "the build has no usable Python package; the pure-Python "
                "loader is the source tree's")
            return module, where, remark
    fail("cannot import the mla_fp8 package (needs numpy: run with "
         "/usr/bin/python3):\n  " + "\n  ".join(errors))


def native_loader(package):
    """The native module's Bundle class, or (None, why)."""
    try:
        module = importlib.import_module(package.__name__ + "._mla_fp8")
    except ImportError as error:
        return None, f"native module not importable: {error}"
    if not hasattr(module, "Bundle"):
        return None, "the native module has no Bundle"
    return module.Bundle, ""


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True,
                            **kwargs)
    if result.returncode != 0:
        fail(f"{' '.join(command)} failed (exit {result.returncode}):\n"
             f"{result.stdout}{result.stderr}")
    return result


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_digest(directory):
    digest = sha256_file(os.path.join(directory, "manifest.json"))
    with open(os.path.join(directory, "manifest.sha256"), "w") as f:
        f.write(f"{digest}  manifest.json\n")


# ---------------------------------------------------------------------------
# Forging


def generate_real(tools, directory, chip):
    run([tools["mla-fp8-aot"], "-o", directory, f"--chips={chip}"] +
        REAL_BUNDLE_FLAGS)
    with open(os.path.join(directory, "manifest.json")) as f:
        return json.load(f)


def kernel_assembly(tools, work, chip, entry):
    """The assembly of `entry`'s kernel (its shape and tile), compiled by
    mla-fp8-opt: (text, symbol)."""
    if entry["w_scale"] != "per_tensor" or entry["has_bias"]:
        fail(f"template kernel {entry['symbol']}: expected per-tensor "
             f"scales and no bias")
    t = entry["tile"]
    b = entry["batches"][0]
    n, k = entry["n"], entry["k"]
    in_type, out_type, fp8 = entry["in_type"], entry["out_type"], \
        entry["fp8_type"]
    ir = (
        f"func.func @forge(%x: tensor<{b}x?x{k}x{in_type}>, "
        f"%w: tensor<{b}x{n}x{k}x{fp8}>, %ws: tensor<1xf32>) -> "
        f"tensor<{b}x?x{n}x{out_type}> {{\n"
        f"  %y = mlafp8.prequant_bmm %x, %w, %ws {{group_size = "
        f"{entry['group_size']} : i64, tiles = [#mlafp8.tile<min_rows = 1, "
        f"max_rows = 0, block_m = {t['block_m']}, block_n = {t['block_n']}, "
        f"waves = {t['waves']}, mfma = {t['mfma']}, split_k = "
        f"{t['split_k']}, stages = {t['stages']}, occupancy = "
        f"{t['occupancy']}>]}} : tensor<{b}x?x{k}x{in_type}>, "
        f"tensor<{b}x{n}x{k}x{fp8}>, tensor<1xf32> -> "
        f"tensor<{b}x?x{n}x{out_type}>\n"
        f"  return %y : tensor<{b}x?x{n}x{out_type}>\n}}\n")
    source = os.path.join(work, f"template-{chip}.mlir")
    dump = os.path.join(work, f"template-{chip}")
    os.makedirs(dump)
    with open(source, "w") as f:
        f.write(ir)
    result = subprocess.run(
        [tools["mla-fp8-opt"], source,
         f"--mlafp8-to-hsaco=chip={chip} format=isa dump={dump}"],
        capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"mla-fp8-opt could not compile the template kernel for "
             f"{chip}:\n{result.stderr}")
    files = [f for f in os.listdir(dump) if f.endswith(".s")]
    if len(files) != 1:
        fail(f"mla-fp8-opt wrote {files} into {dump}, expected one .s file")
    with open(os.path.join(dump, files[0])) as f:
        text = f.read()
    symbols = re.findall(r"^\s*\.globl\s+(\S+)\s*$", text, re.M)
    if len(symbols) != 1:
        fail(f"the template assembly for {chip} has kernels {symbols}")
    return text, symbols[0]


class AssemblyTemplate:
    """One kernel's assembly split into what each copy repeats (code,
    descriptor, .set symbols; metadata entry) and what the file has once."""

    def __init__(self, text, symbol):
        lines = text.split("\n")

        def index(predicate, what):
            for i, line in enumerate(lines):
                if predicate(line.strip()):
                    return i
            fail(f"the template assembly has no {what}")

        first = index(lambda s: s == ".text", ".text")
        meta = index(lambda s: s == ".amdgpu_metadata", ".amdgpu_metadata")
        last = max(i for i, line in enumerate(lines[:meta])
                   if symbol in line)
        self.header = "\n".join(lines[:first]) + "\n"
        body = "\n".join(lines[first:last + 1]) + "\n"
        # Local labels (.LBB0_3, .Lfunc_end0) get the copy's number.
        body = re.sub(r"(?<![\w.$])(\.L\w+)", r"\1_@ID@", body)
        self.body = body.replace(symbol, "@SYM@")
        self.trailer = "\n".join(lines[last + 1:meta]) + "\n"
        yaml = "\n".join(lines[meta + 1:])
        yaml = yaml[:yaml.index(".end_amdgpu_metadata")]
        start = yaml.index("amdhsa.kernels:\n") + len("amdhsa.kernels:\n")
        end = yaml.index("amdhsa.target:")
        self.meta_head, self.meta_tail = yaml[:start], yaml[end:]
        self.meta_kernel = yaml[start:end].replace(symbol, "@SYM@")
        if "@SYM@.kd" not in self.meta_kernel or \
                len(re.findall(r"^  - \.", self.meta_kernel, re.M)) != 1:
            fail("the template's metadata is not one kernel entry")
        # The smallest entry of the same kernel: its scalar fields only (no
        # argument list), for the kernels the manifest does not list.
        kept, nested = [], False
        for line in self.meta_kernel.split("\n"):
            top = line.startswith("  - .") or (line.startswith("    .") and
                                               not line.startswith("     "))
            if top:
                nested = line.rstrip().endswith(":")
                if not nested:
                    kept.append(line)
            elif not nested and line.strip():
                kept.append(line)
        if not kept[0].startswith("  - "):
            kept[0] = "  - " + kept[0].lstrip()
        self.meta_minimal = "\n".join(kept) + "\n"

    def write(self, path, names, metadata_order, padding=()):
        with open(path, "w") as f:
            f.write(self.header)
            for i, name in enumerate(names):
                f.write(self.body.replace("@SYM@", name)
                        .replace("@ID@", str(i)))
            f.write(self.trailer)
            f.write("\t.amdgpu_metadata\n")
            f.write(self.meta_head)
            for name in padding:
                f.write(self.meta_minimal.replace("@SYM@", name))
            for name in metadata_order:
                f.write(self.meta_kernel.replace("@SYM@", name))
            f.write(self.meta_tail)
            f.write("\t.end_amdgpu_metadata\n")


def kernel_symbol(chip, n, k, group, in_type, out_type, per_batch, bias,
                  min_rows, max_rows):
    # docs/manifest.md; kernel_abi::getKernelSymbol, _abi.kernel_symbol.
    name = f"mla_fp8_n{n}_k{k}_g{group}"
    if in_type != "bf16":
        name += "_x" + in_type
    name += "_" + out_type
    if per_batch:
        name += "_pb"
    if bias:
        name += "_bias"
    return name + f"_{chip}_r{min_rows}_" + ("inf" if max_rows == 0 else
                                             str(max_rows))


def ceil_div(a, b):
    return -(-a // b)


def forged_entries(chip, template, count):
    """`count` entries of one description whose ranges of rows are
    disjoint single rows, M = 2^31 - count ... 2^31 - 1 (ten digits each while
    count <= 2^31 - 10^9)."""
    n = k = MAX_NK
    group = MAX_GROUP_SIZE
    tile = template["tile"]
    tiles = ceil_div(n, tile["block_n"])
    split_k = tile["split_k"]
    workspace = 0 if split_k == 1 else ceil_div(
        tiles * split_k * tile["block_m"] * tile["block_n"] * 4 + 4 * tiles,
        WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT
    first = MAX_M - count + 1
    entries = []
    for i in range(count):
        m = first + i
        e = copy.deepcopy(template)
        e.update(n=n, k=k, group_size=group, in_type="f16", out_type="f16",
                 w_scale="per_batch", has_bias=True, min_rows=m, max_rows=m,
                 workspace_bytes_per_block=workspace)
        e["symbol"] = kernel_symbol(chip, n, k, group, "f16", "f16", True,
                                    True, m, m)
        e["tile"]["min_rows"] = e["tile"]["max_rows"] = m
        e["grid"]["x"] = tiles * split_k
        entries.append(e)
    return entries


def metadata_entry_bytes(tools, work, chip, template, names):
    """The bytes one more metadata entry adds to the note, (a full entry,
    a minimal one): from the notes of tiny objects (llvm-mc-22) with one
    kernel and one, three, or one and two minimal metadata entries, all
    named as long as `names`."""
    sizes = []
    for listed, padding in ((1, 0), (3, 0), (1, 2)):
        source = os.path.join(work, f"probe-{chip}-{listed}-{padding}.s")
        obj = source[:-2] + ".o"
        template.write(source, names[:1], names[:listed],
                       names[listed:listed + padding])
        run([tools["llvm-mc-22"], "-triple=amdgcn-amd-amdhsa",
             f"-mcpu={chip}", "-filetype=obj", "-o", obj, source])
        sizes.append(metadata_note_bytes(obj))
        os.unlink(source)
        os.unlink(obj)
    if None in sizes:
        fail("cannot read the probe objects' metadata notes")
    return (sizes[1] - sizes[0]) / 2, (sizes[2] - sizes[0]) / 2


def padding_names(chip, count, entry_bytes, note_limit):
    """Names of kernels the metadata lists (with their scalar fields only)
    and the manifest does not, as many as fill the note to about 98 % of
    its limit: of the manifest's symbols' length and prefix (other M
    values), so that a loader that scanned the metadata per entry would
    compare each in full."""
    full, minimal = entry_bytes
    room = int((note_limit * 0.98 - count * full) / minimal)
    first = MAX_M - count  # the manifest's Ms are above
    return [kernel_symbol(chip, MAX_NK, MAX_NK, MAX_GROUP_SIZE, "f16", "f16",
                          True, True, first - i, first - i)
            for i in range(max(room, 0))]


def assemble(tools, work, chip, template, names, padding=()):
    """Writes the assembly of one kernel per name (the metadata: the
    padding first, then the names in the reverse order) and starts
    llvm-mc-22 on it; returns (the running process, the assembly's path,
    the object's path)."""
    source = os.path.join(work, f"forged-{chip}.s")
    obj = os.path.join(work, f"forged-{chip}.o")
    template.write(source, names, list(reversed(names)), padding)
    process = subprocess.Popen(
        [tools["llvm-mc-22"], "-triple=amdgcn-amd-amdhsa",
         f"-mcpu={chip}", "-filetype=obj", "-o", obj, source],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, source, obj


def count_descriptors(tools, hsaco):
    """How many <symbol>.kd objects llvm-objdump-22 lists, or None."""
    if not tools["llvm-objdump-22"]:
        return None
    result = subprocess.run([tools["llvm-objdump-22"], "-t", hsaco],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return None
    return sum(1 for line in result.stdout.splitlines()
               if line.endswith(".kd") and " O " in line)


def metadata_note_bytes(hsaco):
    """The size of the code object's NT_AMDGPU_METADATA descriptor (the
    note's desc), read from its section headers, or None."""
    with open(hsaco, "rb") as f:
        data = f.read()
    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
        for i in range(shnum):
            base = shoff + i * shentsize
            kind, = struct.unpack_from("<I", data, base + 4)
            if kind != 7:  # SHT_NOTE
                continue
            offset, size = struct.unpack_from("<QQ", data, base + 0x18)
            pos = offset
            while pos + 12 <= offset + size:
                namesz, descsz, note_type = struct.unpack_from("<III", data,
                                                               pos)
                name_end = pos + 12 + ((namesz + 3) & ~3)
                if data[pos + 12:pos + 12 + namesz].rstrip(b"\0") == \
                        b"AMDGPU" and note_type == 32:
                    return descsz
                pos = name_end + ((descsz + 3) & ~3)
    except struct.error:
        return None
    return None


def manifest_text(manifest):
    """The manifest as mla-fp8-aot writes it if that fits, else compact,
    else compact without the `meaning` prose; (text, how)."""
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    if len(text) <= MAX_MANIFEST_BYTES:
        return text, "indented, as mla-fp8-aot writes it"
    text = json.dumps(manifest, separators=(",", ":"), sort_keys=True)
    if len(text) <= MAX_MANIFEST_BYTES:
        return text, "compact JSON (indented would pass 16 MiB)"
    stripped = copy.deepcopy(manifest)
    for chip in stripped["chips"]:
        for entry in chip["kernels"]:
            for arg in entry["args"]:
                arg.pop("meaning", None)
    text = json.dumps(stripped, separators=(",", ":"), sort_keys=True)
    return text, ("compact JSON without the args' meaning prose (16 MiB "
                  "left no room for it)")


def forge(tools, work, real, chips, count, pad=True):
    """Builds the forged bundle in <work>/forged; returns its directory and
    facts about it."""
    directory = os.path.join(work, "forged")
    os.makedirs(directory)
    chip_entries, processes = [], []
    try:
        for chip in chips:
            if chip == real["chips"][0]["chip"]:
                template_manifest = real
            else:
                template_manifest = generate_real(
                    tools, os.path.join(work, f"template-bundle-{chip}"),
                    chip)
            chip_info = template_manifest["chips"][0]
            template_entry = chip_info["kernels"][0]
            text, symbol = kernel_assembly(tools, work, chip, template_entry)
            template = AssemblyTemplate(text, symbol)
            entries = forged_entries(chip, template_entry, count)
            names = [e["symbol"] for e in entries]
            padding = padding_names(
                chip, count,
                metadata_entry_bytes(tools, work, chip, template, names),
                MAX_METADATA_NOTE_BYTES) if pad else []
            # The chips assemble in parallel.
            processes.append(assemble(tools, work, chip, template, names,
                                      padding))
            chip_entries.append((chip, chip_info, entries))
        return finish_forged(tools, directory, real, chip_entries,
                             processes, count)
    finally:
        for process, _, _ in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def finish_forged(tools, directory, real, chip_entries, processes, count):
    """Links each chip's code object when its llvm-mc-22 is done, then
    writes the manifest and its digest; returns (directory, facts)."""
    manifest = {key: value for key, value in real.items() if key != "chips"}
    manifest["chips"] = []
    facts = {"chips": [chip for chip, _, _ in chip_entries],
             "kernels_per_chip": count,
             "code_object_bytes": {}, "metadata_note_bytes": {},
             "descriptors": {}, "assembly_bytes": {}}
    for (chip, chip_info, entries), (process, source, obj) in zip(
            chip_entries, processes):
        _, stderr = process.communicate()
        if process.returncode != 0:
            fail(f"llvm-mc-22 failed on {source}:\n{stderr[-4000:]}")
        facts["assembly_bytes"][chip] = os.path.getsize(source)
        os.unlink(source)
        hsaco = os.path.join(directory, f"{chip}.hsaco")
        run([tools["ld.lld-22"], "-shared", "-o", hsaco, obj])
        os.unlink(obj)
        size = os.path.getsize(hsaco)
        facts["code_object_bytes"][chip] = size
        facts["metadata_note_bytes"][chip] = metadata_note_bytes(hsaco)
        facts["descriptors"][chip] = count_descriptors(tools, hsaco)
        info = {key: value for key, value in chip_info.items()
                if key != "kernels"}
        info.update(code_object=f"{chip}.hsaco", bytes=size,
                    sha256=sha256_file(hsaco), kernels=entries)
        manifest["chips"].append(info)
    text, how = manifest_text(manifest)
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        f.write(text)
    write_digest(directory)
    facts["manifest_bytes"] = len(text.encode())
    facts["manifest_format"] = how
    facts["symbol_example"] = chip_entries[0][2][0]["symbol"]
    return directory, facts


def limits_passed(facts):
    """The documented limits the forged bundle is beyond (none unless
    --kernels is above the limit)."""
    passed = []
    if facts["kernels_per_chip"] > MAX_KERNELS_PER_CHIP:
        passed.append(f"{facts['kernels_per_chip']} kernels per chip > "
                      f"{MAX_KERNELS_PER_CHIP}")
    if facts["manifest_bytes"] > MAX_MANIFEST_BYTES:
        passed.append(f"manifest {facts['manifest_bytes']} bytes > "
                      f"{MAX_MANIFEST_BYTES}")
    for chip, size in facts["code_object_bytes"].items():
        if size > MAX_CODE_OBJECT_BYTES:
            passed.append(f"{chip}.hsaco {size} bytes > "
                          f"{MAX_CODE_OBJECT_BYTES}")
        note_bytes = facts["metadata_note_bytes"].get(chip)
        if note_bytes is not None and note_bytes > MAX_METADATA_NOTE_BYTES:
            passed.append(f"{chip}.hsaco metadata note {note_bytes} bytes > "
                          f"{MAX_METADATA_NOTE_BYTES}")
    return passed


# ---------------------------------------------------------------------------
# Timing


def time_loader(function, runs, budget):
    """Median of up to `runs` timed calls of function() after one untimed
    warm-up; stops early once `budget` seconds have been spent timing.
    function() returns (accepted, message), the message a string or a
    function giving it, called after the timing (describing a loaded
    bundle is not part of its load)."""
    gc.collect()
    start = time.perf_counter()
    function()
    warm = time.perf_counter() - start
    times, outcome = [], None
    spent = 0.0
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        outcome = function()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
        if spent + warm > budget:
            break
    accepted, message = outcome
    if callable(message):
        message = message()
    return {"median_s": statistics.median(times), "runs": len(times),
            "times_s": times, "accepted": accepted, "message": message}


def python_loader(package):
    def load(directory):
        try:
            bundle = package.load_bundle(directory)
        except package.BundleError as error:
            return False, str(error)
        return True, lambda: f"{len(bundle.kernels())} kernels"
    return load


def native_in_process(bundle_class):
    def load(directory):
        try:
            bundle = bundle_class(directory)
        except ValueError as error:
            return False, str(error)
        return True, lambda: f"{len(bundle.kernels())} kernels"
    return load


def emu_check(emu):
    def load(directory):
        result = subprocess.run([emu, "--check-bundle", directory],
                                capture_output=True, text=True)
        text = (result.stdout + result.stderr).strip()
        return result.returncode == 0, text.splitlines()[0] if text else \
            f"exit {result.returncode}"
    return load


def bench_load(tool, directory, runs):
    """bench/bundle-load.cpp's own median load time (it exits 1 when no
    lookup finds a kernel, as on the forged bundle: only its load line is
    read)."""
    result = subprocess.run([tool, directory, str(runs)],
                            capture_output=True, text=True)
    text = result.stdout + result.stderr
    match = re.search(r"load: median ([0-9.]+) ms", text)
    if match:
        return {"median_s": float(match.group(1)) / 1000, "runs": runs,
                "accepted": True, "message": text.splitlines()[0]}
    error = re.search(r"error: (.*)", text)
    return {"median_s": None, "runs": runs, "accepted": False,
            "message": error.group(1) if error else text.strip()[:300]}


def file_time(path):
    if not path or not os.path.exists(path):
        return None
    result = subprocess.run(["ls", "-l", "--time-style=full-iso", path],
                            capture_output=True, text=True)
    return result.stdout.strip()


def format_ms(result):
    if result is None:
        return "n/a"
    if result.get("median_s") is None:
        return "refused"
    text = f"{result['median_s'] * 1000:.1f}"
    if not result["accepted"]:
        text += " (refused)"
    return text


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", type=int, default=MAX_KERNELS_PER_CHIP,
                        help="kernels per chip in the forged bundle "
                        "(default %(default)s, the limit; more shows the "
                        "refusal)")
    parser.add_argument("--chips", default="gfx942,gfx950",
                        help="chips of the forged bundle (default both the "
                        "loaders know, %(default)s)")
    parser.add_argument("--no-padding", action="store_true",
                        help="list only the manifest's kernels in the "
                        "metadata (by default unlisted entries fill the "
                        "note to its limit)")
    parser.add_argument("--runs", type=int, default=5,
                        help="timed loads per loader and bundle (median; "
                        "fewer when a loader is slow; default %(default)s)")
    parser.add_argument("--json", metavar="FILE",
                        help="also write the figures to FILE as JSON")
    parser.add_argument("--keep", metavar="DIR",
                        help="copy the forged bundle to DIR (must not exist)")
    parser.add_argument("--build", default=os.environ.get(
        "MLAFP8_BUILD_DIR", os.path.join(ROOT, "build")),
                        help="build directory (default $MLAFP8_BUILD_DIR or "
                        "build/)")
    args = parser.parse_args()
    if args.kernels < 1:
        parser.error("--kernels must be at least 1")
    if args.kernels > 10 ** 9:
        parser.error("--kernels must leave the ranges of rows ten digits long")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    chips = [c.strip() for c in args.chips.split(",") if c.strip()]
    if not chips or len(set(chips)) != len(chips) or \
            any(c not in ("gfx942", "gfx950") for c in chips):
        parser.error("--chips: distinct names among gfx942, gfx950")
    if args.keep and os.path.exists(args.keep):
        parser.error(f"--keep: {args.keep} exists")
    build = os.path.abspath(args.build)
    tools = find_tools(build)
    package, package_dir, package_note = import_package(build)
    bundle_class, native_note = native_loader(package)
    emu = tools["mla-fp8-emu"]
    emu_stamp = file_time(emu)
    note(f"build: {emu_stamp}")
    note(f"python package: {package_dir}" +
         (f" ({package_note})" if package_note else ""))
    if native_note:
        note(f"native in-process loader: not timed ({native_note})")
    if args.kernels > MAX_KERNELS_PER_CHIP:
        note(f"--kernels {args.kernels} is above the limit of "
             f"{MAX_KERNELS_PER_CHIP}: the loaders should refuse it")

    work = tempfile.mkdtemp(prefix="mla-fp8-forged-load-")
    try:
        start = time.perf_counter()
        real_dir = os.path.join(work, "real")
        real = generate_real(tools, real_dir, "gfx942")
        forged_dir, facts = forge(tools, work, real, chips, args.kernels,
                                  pad=not args.no_padding)
        forge_s = time.perf_counter() - start
        note(f"forged {len(chips)} chip(s) x {args.kernels} kernels in "
             f"{forge_s:.1f} s: manifest {facts['manifest_bytes']} bytes "
             f"({facts['manifest_format']}), code objects "
             f"{facts['code_object_bytes']} bytes, metadata notes "
             f"{facts['metadata_note_bytes']} bytes, .kd symbols "
             f"{facts['descriptors']}")
        note(f"symbols like {facts['symbol_example']} "
             f"({len(facts['symbol_example'])} characters)")
        facts["limits_passed"] = limits_passed(facts)
        for what in facts["limits_passed"]:
            note(f"beyond a limit (the loaders should refuse it): {what}")
        if args.keep:
            shutil.copytree(forged_dir, args.keep)
            note(f"kept the forged bundle in {args.keep}")

        real_code = os.path.getsize(os.path.join(real_dir, "gfx942.hsaco"))
        bundles = [
            ("real (mla-fp8-aot, gfx942)", real_dir,
             {"chips": ["gfx942"],
              "kernels_per_chip": len(real["chips"][0]["kernels"]),
              "manifest_bytes": os.path.getsize(
                  os.path.join(real_dir, "manifest.json")),
              "code_object_bytes": {"gfx942": real_code}}),
            (f"forged ({'+'.join(chips)})", forged_dir, facts),
        ]
        loaders = [("python", python_loader(package))]
        if bundle_class:
            loaders.append(("native", native_in_process(bundle_class)))
        loaders.append(("emu", emu_check(emu)))
        rows = []
        for name, directory, info in bundles:
            results = {}
            for loader, function in loaders:
                results[loader] = time_loader(
                    lambda: function(directory), args.runs, LOADER_BUDGET_S)
                r = results[loader]
                note(f"  {name}: {loader}: median "
                     f"{r['median_s'] * 1000:.1f} ms over {r['runs']} runs; "
                     f"{'accepted' if r['accepted'] else 'REFUSED'}: "
                     f"{r['message'][:300]}")
            if tools["mla-fp8-bench-load"]:
                results["bench-load"] = bench_load(
                    tools["mla-fp8-bench-load"], directory, args.runs)
            rows.append({"bundle": name, **info, "loaders": results})
        end_stamp = file_time(emu)

        columns = [loader for loader, _ in loaders]
        if tools["mla-fp8-bench-load"]:
            columns.append("bench-load")
        headers = ["bundle", "chips", "kernels/chip", "manifest B",
                   "code object B"] + [f"{c} ms" for c in columns]
        table = []
        for row in rows:
            table.append([row["bundle"], str(len(row["chips"])),
                          str(row["kernels_per_chip"]),
                          str(row["manifest_bytes"]),
                          "+".join(str(v) for v in
                                   row["code_object_bytes"].values())] +
                         [format_ms(row["loaders"].get(c)) for c in columns])
        widths = [max(len(r[i]) for r in table + [headers])
                  for i in range(len(headers))]
        print()
        for line in [headers] + table:
            print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                            for i, (cell, w) in enumerate(zip(line,
                                                              widths))))
        print()
        print(f"(median of up to {args.runs} loads after a warm-up; "
              f"'emu' includes starting mla-fp8-emu; build: {emu_stamp})")
        if end_stamp != emu_stamp:
            print(f"warning: mla-fp8-emu changed during the run: now "
                  f"{end_stamp}")
        refused = [(row["bundle"], loader, r["message"])
                   for row in rows for loader, r in row["loaders"].items()
                   if not r["accepted"]]
        for bundle, loader, message in refused:
            print(f"refused: {bundle}, {loader}: {message}")
        if args.json:
            report = {"build": {"mla-fp8-emu": emu_stamp,
                                "mla-fp8-emu_at_end": end_stamp,
                                "python_package": package_dir,
                                "python_package_note": package_note,
                                "native_in_process": native_note or "timed"},
                      "runs": args.runs, "forge_s": forge_s, "rows": rows}
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)
                f.write("\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
