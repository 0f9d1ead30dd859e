"""The pure-Python bundle loader (mla_fp8._manifest, _codeobject, _abi)
against the native one (lib/Runtime through _mla_fp8): the same tables, the
same kernels, grids and workspaces, and on damaged bundles the same answer,
refused with the same message where the message is the project's own."""

import hashlib
import json
import os
import random
import re
import shutil
import struct

import numpy as np
import pytest

import mla_fp8
from mla_fp8 import _abi, _manifest
from mla_fp8 import _mla_fp8 as native


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory):
    """One chip, few kernels: a code object small enough to damage often.
    Planned up to M = 33 at B = 16 (528 rows): K-up's 1-512 (kernels[0],
    the one the mutations edit) and 513 up, and V-up's one range, 1 up."""
    directory = tmp_path_factory.mktemp("pure") / "small"
    mla_fp8.generate_bundle(directory, model="deepseek-r1", tp=[8],
                            chips=["gfx942"], max_m=33)
    return directory


def test_tables_match_the_native_ones():
    args, mfmas, constants = native.loader_facts()
    assert [(a.name, a.offset, a.size, a.value_kind)
            for a in _abi.KERNEL_ARGS] == [tuple(a) for a in args]
    assert [(m.shape, m.mnemonic, m.m, m.n) for m in _abi.MFMAS] == \
        [tuple(m) for m in mfmas]
    for name, value in constants.items():
        assert getattr(_abi, name) == value, name
    limits = native.limits()
    for name, value in limits.items():
        assert getattr(_abi, name.upper()) == value, name
    assert mla_fp8.supported_chips() == native.chips()


def test_rows_overlap_matches_the_native_one():
    rng = random.Random(7)
    for _ in range(5000):
        case = (rng.randint(-600, 600), rng.randint(0, 5),
                rng.randint(-600, 600), rng.randint(0, 5),
                rng.randint(1, 300))
        assert _abi.rows_overlap(*case) == native.rows_overlap(*case), case


def _native_kernels(directory):
    bundle = native.Bundle(os.fsencode(directory))
    return bundle, bundle.kernels()


@pytest.mark.parametrize("which", ["session_bundle", "split_k_bundle"])
def test_kernels_grids_and_workspaces_match(which, request):
    directory = request.getfixturevalue(which)
    bundle = mla_fp8.load_bundle(directory)
    other, expected = _native_kernels(directory)
    kernels = bundle.kernels()
    assert len(kernels) == len(expected)
    assert bundle.schema_version == other.schema_version
    assert (bundle.model, bundle.max_m, bundle.compiler_version) == \
        (other.model, other.max_m, other.compiler_version)
    assert [(c, bundle._chip_sha256(i)) for i, c in enumerate(bundle.chips)] \
        == [(c["chip"], c["sha256"]) for c in other.chips()]
    sizes = [0, 1, 5, 16, 17, 64, 1000, 65535, 2 ** 31 - 1, 2 ** 31, 2 ** 40]
    for kernel, info in zip(kernels, expected):
        # Ranges of rows, B * M, not of M.
        assert {"min_rows", "max_rows"} <= info.keys()
        assert not {"min_m", "max_m"} & info.keys()
        for name, value in info.items():
            if name != "key":
                assert getattr(kernel, name) == value, (kernel, name)
        assert kernel.code_object == other.code_object(info["key"][0])
        for m in sizes:
            for b in sizes:
                key = info["key"]
                try:
                    want = other.grid(key[0], key[1], m, b)
                except ValueError as error:
                    with pytest.raises(ValueError) as raised:
                        kernel.grid(m, b)
                    assert str(raised.value) == str(error)
                    continue
                assert kernel.grid(m, b) == want
                assert kernel.workspace_bytes(m, b) == \
                    other.workspace_bytes(key[0], key[1], m, b)


def _write_manifest(directory, manifest):
    text = json.dumps(manifest, indent=1).encode()
    (directory / "manifest.json").write_bytes(text)
    (directory / "manifest.sha256").write_text(
        hashlib.sha256(text).hexdigest() + "  manifest.json\n")


def _copy(bundle, tmp_path, name):
    directory = tmp_path / name
    shutil.copytree(bundle, directory)
    return directory, json.loads((directory / "manifest.json").read_text())


def _answers(directory):
    """(native message or None, Python message or None)."""
    answers = []
    for load in (lambda: native.Bundle(os.fsencode(directory)),
                 lambda: _manifest.load(directory)):
        try:
            load()
            answers.append(None)
        except ValueError as error:
            answers.append(str(error))
    return tuple(answers)


def _kernel_mutations():
    """Edits of kernels[0] (K-up's 1-512, next to its 513 up), as the C++
    loader test makes them."""
    def grid(axis, value):
        return lambda k: k["grid"].__setitem__(axis, value)

    def tile(field, value):
        return lambda k: k["tile"].__setitem__(field, value)

    def arg(index, field, value):
        return lambda k: k["args"][index].__setitem__(field, value)

    def field(name, value):
        return lambda k: k.__setitem__(name, value)

    def rows(low, high, symbol):
        """The kernel's range of rows (and its tile's), and the symbol
        that names it when `symbol`."""
        def edit(k):
            k["min_rows"] = k["tile"]["min_rows"] = low
            k["max_rows"] = k["tile"]["max_rows"] = high
            if symbol:
                k["symbol"] = re.sub(r"_r\d+_(\d+|inf)$",
                                     f"_r{low}_{high or 'inf'}", k["symbol"])
        return edit

    def swap_args(k):
        k["args"][6], k["args"][8] = k["args"][8], k["args"][6]

    return [
        grid("x", 0), grid("z", 1), grid("y", "ceil(M/18446744073709551616)"),
        grid("y", "ceil(M/8)"), grid("y", " ceil( M / 16 ) "),
        grid("y", "ceil(M/)"), grid("y", "ceil(X/16)"), grid("x", -1),
        grid("x", 2 ** 32), grid("x", True), grid("y", None),
        lambda k: k["grid"].pop("z"),
        field("workgroup_size", [32, 1, 1]), field("workgroup_size", [64, 1]),
        field("workgroup_size", [64, 1, 1, 1]),
        field("workgroup_size", [0, 1, 1]), field("workgroup_size", "64"),
        field("has_bias", True), field("has_bias", 1),
        field("w_scale", "per_batch"), field("w_scale", "per-batch"),
        field("out_type", "f16"), field("in_type", "f16"),
        field("in_type", "f32"), field("in_type", "\0"),
        field("projection", "q_up"),
        field("symbol", "mla_fp8_n32_k64_g128_bf16_gfx942_r257_512"),
        field("symbol", "mla_fp8_n512_k128_g128_bf16_gfx942_r513_inf"),
        field("symbol", "mla_fp8_n512_k128_g128_bf16_gfx942_m1_512"),
        field("symbol", 7), field("n", -64), field("n", "64"),
        field("n", 1e300), field("n", 2 ** 64), field("k", 0),
        field("group_size", 96), field("group_size", 8),
        field("fp8_type", "f8E4M3FN"), field("min_rows", 0),
        field("min_rows", 2 ** 31), field("min_rows", "1"),
        field("max_rows", 1), field("max_rows", -1),
        field("max_rows", 2 ** 31),
        field("max_rows", 0), field("min_rows", 600), rows(600, 512, True),
        rows(1, 0, True), rows(1, 2 ** 31 - 1, True), rows(2, 512, True),
        lambda k: k.__setitem__("min_m", k.pop("min_rows")),
        lambda k: k.__setitem__("max_m", k.pop("max_rows")),
        field("kernarg_size", 2 ** 40),
        field("kernarg_size", 96), field("kernarg_align", 3),
        field("kernarg_align", 16), field("lds_bytes", 0),
        field("lds_bytes", 70000), field("scratch_bytes", 16),
        field("workspace_bytes_per_block", 2 ** 40),
        field("workspace_bytes_per_block", 256), field("args", {}),
        field("tile", []), lambda k: k.pop("grid"), lambda k: k.pop("args"),
        tile("split_k", 2), tile("waves", 0), tile("block_m", 4097),
        tile("mfma", "m16n16k128"), tile("mfma", "m8n8k8"),
        tile("mfma", "m32n32k16"), tile("stages", 5), tile("occupancy", 1),
        tile("max_rows", 0), tile("min_rows", 2), tile("max_rows", 511),
        tile("min_rows", 0), lambda k: k["tile"].pop("max_rows"),
        lambda k: k["tile"].__setitem__("min_m", k["tile"].pop("min_rows")),
        arg(5, "offset", 48), arg(3, "name", "scale"),
        arg(5, "name", "x_stride_b"), arg(0, "name", 0), arg(0, "meaning", 1),
        arg(0, "size", 0), arg(2, "kind", "by_value"),
        arg(-1, "kind", "hidden_block_count_y"), arg(-1, "offset", 4090),
        lambda k: k["args"][3].pop("name"), swap_args,
        lambda k: k["args"].pop(10), lambda k: k["args"].pop(),
        lambda k: k["args"].append(dict(k["args"][-1])),
        lambda k: k["args"].__setitem__(0, "x"),
    ]


def _manifest_mutations():
    """Edits of the whole manifest."""
    def top(name, value):
        return lambda m: m.__setitem__(name, value)

    def chip(name, value):
        return lambda m: m["chips"][0].__setitem__(name, value)

    def duplicate_kernel(m):
        kernels = m["chips"][0]["kernels"]
        twin = json.loads(json.dumps(kernels[1]))
        twin["symbol"] = kernels[0]["symbol"]
        kernels.append(twin)

    def overlap(m):
        kernels = m["chips"][0]["kernels"]
        twin = json.loads(json.dumps(kernels[0]))
        twin["symbol"] += "_twin"
        kernels.append(twin)

    return [
        top("schema_version", 3), top("schema_version", 4),
        top("schema_version", 6), top("schema_version", "5"),
        top("compiler", "other"), top("compiler_version", 1),
        top("max_m", 0), top("chips", {}), top("chips", [[]]),
        top("chips", [{}] * 17), lambda m: m.pop("model"),
        chip("chip", "gfx90a"), chip("sha256", "A" * 64), chip("sha256", ""),
        chip("code_object", "../gfx942.hsaco"), chip("code_object", "."),
        chip("code_object", "sub/x.hsaco"), chip("code_object", ""),
        chip("code_object", "missing.hsaco"),
        chip("code_object", "gfx942.hsaco\0x"), chip("bytes", 1),
        chip("bytes", 2 ** 40), chip("code_object_version", 6),
        chip("code_object_version", 4), chip("kernels", None),
        lambda m: m["chips"].append(m["chips"][0]),
        duplicate_kernel, overlap,
    ]


def test_mutations_get_the_same_answer(small_bundle, tmp_path):
    _, pristine = _copy(small_bundle, tmp_path, "pristine")
    assert _answers(tmp_path / "pristine") == (None, None)
    cases = [("kernel", i, lambda m, f=f: f(m["chips"][0]["kernels"][0]))
             for i, f in enumerate(_kernel_mutations())]
    cases += [("manifest", i, f) for i, f in enumerate(_manifest_mutations())]
    refused = 0
    for what, index, mutate in cases:
        directory = tmp_path / f"{what}-{index}"
        shutil.copytree(small_bundle, directory)
        manifest = json.loads(json.dumps(pristine))
        mutate(manifest)
        _write_manifest(directory, manifest)
        native_answer, python_answer = _answers(directory)
        assert python_answer == native_answer, (what, index)
        refused += native_answer is not None
    # Most edits are refused; the few accepted ones (" ceil( M / 16 ) ",
    # which reads as ceil(M/16); args[2]'s kind set to the "by_value" it
    # already has) by both.
    assert refused >= len(cases) - 4


def test_damaged_text_gets_the_same_answer(small_bundle, tmp_path):
    directory, _ = _copy(small_bundle, tmp_path, "text")
    text = (small_bundle / "manifest.json").read_bytes()
    max_m = re.search(rb'"max_m": *(\d+)', text)
    cases = [text[:len(text) // 2], b"[" * 65 + b"]" * 65,
             b'{"a": "[[[[' + b"[" * 70 + b'"}', text.replace(b"3", b"NaN", 1),
             b"\xff" + text, text + b"x", b"", b"{}",
             text.replace(b'"schema_version": 5', b'"schema_version": 5.0'),
             text.replace(b'"schema_version": 5', b'"schema_version": 4')]
    assert all(case != text for case in cases[-2:])
    # Numbers JSON does not write, which LLVM's parser alone would take,
    # and integers at int64's edges.
    for number in (b"+16", b"016", b"16.", b".5", b"-", b"1e", b"-0",
                   b"1E+1", b"-9223372036854775809", b"9223372036854775808.0",
                   b"18446744073709551616", b"1" * 50):
        cases.append(text[:max_m.start(1)] + number + text[max_m.end(1):])
    for i, case in enumerate(cases):
        (directory / "manifest.json").write_bytes(case)
        (directory / "manifest.sha256").write_text(
            hashlib.sha256(case).hexdigest() + "  manifest.json\n")
        native_answer, python_answer = _answers(directory)
        assert (native_answer is None) == (python_answer is None), i
        if native_answer and "malformed JSON" in native_answer and \
                "invalid number" not in native_answer:
            # The JSON parsers word their errors differently.
            assert python_answer.split(": malformed JSON: ")[0] == \
                native_answer.split(": malformed JSON: ")[0], i
        else:
            assert python_answer == native_answer, i


def _note_span(data):
    """(start, end) of the AMDGPU metadata note's descriptor."""
    start = data.index(b"AMDGPU\0\0") + 8
    return start, data.index(b"amdhsa.version", start) + 20


def test_damaged_code_objects_get_the_same_answer(small_bundle, tmp_path):
    """Seeded bit flips, in the metadata note and anywhere, and cuts, with
    the sizes and digests rewritten so that only the reader can object."""
    pristine = json.loads((small_bundle / "manifest.json").read_text())
    name = pristine["chips"][0]["code_object"]
    original = (small_bundle / name).read_bytes()
    start, end = _note_span(original)
    rng = random.Random(20261201)
    damages = [("note", rng.randrange(start * 8, end * 8))
               for _ in range(300)]
    damages += [("any", rng.randrange(len(original) * 8)) for _ in range(300)]
    damages += [("cut", n) for n in (0, 10, 17, 63, 64, 100,
                                     len(original) // 2, len(original) - 1)]
    directory, _ = _copy(small_bundle, tmp_path, "damaged")
    counts = {"refused": 0, "loaded": 0}
    for kind, where in damages:
        data = bytearray(original)
        if kind == "cut":
            del data[where:]
        else:
            data[where // 8] ^= 1 << (where % 8)
        (directory / name).write_bytes(data)
        manifest = json.loads(json.dumps(pristine))
        manifest["chips"][0]["bytes"] = max(len(data), 1)
        manifest["chips"][0]["sha256"] = hashlib.sha256(data).hexdigest()
        _write_manifest(directory, manifest)
        native_answer, python_answer = _answers(directory)
        assert (native_answer is None) == (python_answer is None), \
            (kind, where, native_answer, python_answer)
        counts["loaded" if native_answer is None else "refused"] += 1
        if native_answer is None:
            continue
        # ELF structure errors come worded by LLVM's reader natively; the
        # project's own messages must match exactly.
        if "not an ELF object" not in native_answer and \
                "malformed" not in native_answer and \
                "not valid MessagePack" not in native_answer:
            assert python_answer == native_answer, (kind, where)
    assert counts["refused"] > 100 and counts["loaded"] > 100, counts


def test_emulator_refuses_a_bundle_changed_since_it_was_loaded(
        small_bundle, split_k_bundle, tmp_path):
    """The emulator loads the bundle natively on first use: if the files
    are no longer those the Python loader checked, it says so."""
    directory, _ = _copy(small_bundle, tmp_path, "changing")
    bundle = mla_fp8.load_bundle(directory)
    kernel = bundle.find_kernel("gfx942", 512, 128, 1, 16)
    shutil.rmtree(directory)
    shutil.copytree(split_k_bundle, directory)
    x = mla_fp8.to_bf16_bits(np.zeros((16, 1, 128)))
    w = np.zeros((16, 512, 128), np.uint8)
    y = np.zeros((16, 1, 512), np.uint16)
    with pytest.raises(mla_fp8.BundleError,
                       match="changed on disk since it was loaded"):
        mla_fp8.run_kernel_emulated(bundle, kernel, x, w,
                                    np.ones(1, np.float32), y)
    # Loaded again, it runs.
    bundle = mla_fp8.load_bundle(directory)
    kernel = bundle.find_kernel("gfx942", 512, 128, 1, 16)
    assert mla_fp8.run_kernel_emulated(bundle, kernel, x, w,
                                       np.ones(1, np.float32), y) > 0


K_UP_SYMBOL = "mla_fp8_n512_k128_g128_bf16_gfx942_r{}"


@pytest.mark.parametrize("old,new,overlapped", [
    ("513_inf", "511_inf", "1_512"), ("513_inf", "512_inf", "1_512"),
    ("1_512", "1_513", "1_512"), ("1_512", "2_512", None),
    ("513_inf", "514_inf", None),
], ids=["two-rows", "one-row", "upper-edge", "from-2", "gap"])
def test_ranges_of_rows_get_the_same_answer(small_bundle, tmp_path, old, new,
                                            overlapped):
    """A code object whose K-up kernel is renamed (same length, so the ELF
    stays well formed) to another range of rows, the manifest following:
    ranges that overlap are refused, naming the earlier kernel; a range that
    leaves rows unserved loads, and those rows find no kernel."""
    directory, manifest = _copy(small_bundle, tmp_path, new)
    name = manifest["chips"][0]["code_object"]
    data = (directory / name).read_bytes()
    before, after = K_UP_SYMBOL.format(old), K_UP_SYMBOL.format(new)
    assert before.encode() in data and after.encode() not in data
    data = data.replace(before.encode(), after.encode())
    (directory / name).write_bytes(data)
    chip = manifest["chips"][0]
    chip["bytes"] = len(data)
    chip["sha256"] = hashlib.sha256(data).hexdigest()
    symbols = [k["symbol"] for k in chip["kernels"]]
    index = symbols.index(before)
    kernel = chip["kernels"][index]
    # The entry the loader names: the later of the two K-up entries is
    # refused for overlapping the earlier one.
    low_index = symbols.index(K_UP_SYMBOL.format("1_512"))
    high_index = symbols.index(K_UP_SYMBOL.format("513_inf"))
    overlaps = None if overlapped is None else low_index
    low, high = new.split("_")
    kernel["symbol"] = after
    kernel["min_rows"] = kernel["tile"]["min_rows"] = int(low)
    kernel["max_rows"] = kernel["tile"]["max_rows"] = \
        0 if high == "inf" else int(high)
    _write_manifest(directory, manifest)
    native_answer, python_answer = _answers(directory)
    assert python_answer == native_answer
    if overlaps is not None:
        assert native_answer.endswith(
            f"field 'chips[0].kernels[{high_index}].min_rows': its range of "
            f"rows "
            f"overlaps that of kernels[{overlaps}] "
            f"('{chip['kernels'][overlaps]['symbol']}')"), native_answer
        return
    assert native_answer is None
    bundle = mla_fp8.load_bundle(directory)
    other = native.Bundle(os.fsencode(directory))
    for m in (1, 2, 32, 33, 256, 257, 511, 512, 513, 514, 1000):
        for b in (1, 2, 16):
            mine = bundle.find_kernel("gfx942", 512, 128, m, b)
            theirs = other.find_kernel("gfx942", 512, 128, m, b, "bf16",
                                       "per_tensor", 128, "bf16", False)
            assert (mine and mine._key) == (theirs and theirs["key"]), (m, b)
            unserved = m * b == (1 if new == "2_512" else 513)
            assert (mine is None) == unserved, (m, b)


def _section_headers(data):
    """(e_shoff, e_shnum, {name: index}) of a 64-bit ELF."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3c)
    names_at = struct.unpack_from("<Q", data, shoff + 64 * shstrndx + 24)[0]
    names = {}
    for i in range(shnum):
        name, = struct.unpack_from("<I", data, shoff + 64 * i)
        end = data.index(b"\0", names_at + name)
        names[data[names_at + name:end].decode()] = i
    return shoff, shnum, names


def _other_layouts(original):
    """Code objects LLVM's reader takes whatever their alignment, with a
    section typed SHT_SYMTAB_SHNDX that it records and never reads, and
    files of other object formats."""
    shoff, shnum, names = _section_headers(original)
    assert shoff + 64 * shnum == len(original)
    shifted = bytearray(original[:shoff] + bytes(4) + original[shoff:])
    struct.pack_into("<Q", shifted, 0x28, shoff + 4)
    shndx = bytearray(original)
    struct.pack_into("<I", shndx, shoff + 64 * names[".comment"] + 4, 18)
    return [("headers at 4 mod 8", bytes(shifted), True),
            ("SHT_SYMTAB_SHNDX", bytes(shndx), True),
            ("wasm", b"\0asm\1\0\0\0" + bytes(64), False),
            ("Mach-O", b"\xcf\xfa\xed\xfe" + bytes(64), False),
            ("short ELF", original[:17], False)]


def test_other_layouts_get_the_same_answer(small_bundle, tmp_path):
    pristine = json.loads((small_bundle / "manifest.json").read_text())
    name = pristine["chips"][0]["code_object"]
    directory, _ = _copy(small_bundle, tmp_path, "layouts")
    for what, data, loads in _other_layouts((small_bundle / name)
                                            .read_bytes()):
        (directory / name).write_bytes(data)
        manifest = json.loads(json.dumps(pristine))
        manifest["chips"][0]["bytes"] = len(data)
        manifest["chips"][0]["sha256"] = hashlib.sha256(data).hexdigest()
        _write_manifest(directory, manifest)
        native_answer, python_answer = _answers(directory)
        assert python_answer == native_answer, what
        assert (native_answer is None) == loads, (what, native_answer)


def test_lookups_match_the_native_ones(session_bundle):
    bundle = mla_fp8.load_bundle(session_bundle)
    other = native.Bundle(os.fsencode(session_bundle))
    shapes = {(k.chip, k.n, k.k, k.group_size, k.in_type, k.out_type,
               k.w_scale, k.has_bias) for k in bundle.kernels()}
    shapes |= {("gfx942", 512, 256, 128, "bf16", "bf16", "per_tensor",
                False), ("gfx90a", 512, 128, 128, "bf16", "bf16",
                         "per_tensor", False)}
    # The rows B * M at the ranges' edges (gfx942 K-up's 512 | 513),
    # through several B; M or B 0 (the empty launch), and M, B and B * M at
    # and past 2^31 - 1 (no kernel past it for M or B, as natively).
    ms = (0, 1, 2, 3, 16, 17, 63, 64, 65, 128, 129, 256, 257, 512, 513, 1000,
          1024, 1025, 2 ** 31 - 1, 2 ** 31, 2 ** 40)
    batches = (0, 1, 2, 4, 8, 16, 17, 128, 2 ** 31 - 1, 2 ** 31)
    found, ranges = 0, set()
    for chip, n, k, group, in_type, out_type, w_scale, bias in shapes:
        for m in ms:
            for b in batches:
                mine = bundle.find_kernel(chip, n, k, m, b,
                                          out_type=out_type,
                                          w_scale=w_scale, group_size=group,
                                          in_type=in_type, has_bias=bias)
                theirs = other.find_kernel(chip, n, k, m, b, out_type,
                                           w_scale, group, in_type, bias)
                assert (mine and mine._key) == (theirs and theirs["key"]), \
                    (chip, n, k, m, b)
                if mine is not None:
                    found += 1
                    ranges.add((mine.min_rows, mine.max_rows))
                    assert mine.serves(m, b) == (m > 0 and b > 0)
    assert found > 0
    # Bounded ranges and unbounded ones were both looked up.
    assert len(ranges) > 2 and any(high == 0 for _, high in ranges)


def test_metadata_lookups_are_by_index():
    """A loader looks up every manifest entry in the code object's
    metadata; with 4096 entries a scan per lookup made a forged bundle cost
    a minute. Lookups go through a name index: about one comparison each
    (the first of equal names wins, as the scan's did)."""
    from mla_fp8 import _codeobject  # pylint: disable=import-outside-toplevel
    compared = [0]

    class Name(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            compared[0] += 1
            return str.__eq__(self, other)

    metadata = _codeobject.CodeObjectMetadata()
    count = 4096
    for i in range(count):
        kernel = _codeobject.KernelMetadata()
        kernel.name = Name(f"mla_fp8_kernel_with_a_long_common_prefix_{i}")
        metadata.kernels.append(kernel)
    duplicate = _codeobject.KernelMetadata()
    duplicate.name = Name(metadata.kernels[7].name)
    metadata.kernels.append(duplicate)
    metadata.index_kernels()
    compared[0] = 0
    for kernel in metadata.kernels[:count]:
        assert metadata.find_kernel(str(kernel.name)) is kernel
    assert compared[0] <= 2 * count
    assert metadata.find_kernel("absent") is None
