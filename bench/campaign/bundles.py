"""The "manifest" and "codeobj" campaigns: damaged bundles loaded and run by
the Python package in forked children. Part of bench/campaign/run.py."""

import hashlib
import json
import os
import re
import select
import shutil
import signal
import struct
import sys
import time
from pathlib import Path

from common import (Campaign, crash_line, find_crash_marker, fixture,
                    progress, rmtree)
from publishing import mutate_json_value


# The campaign modules, for the repro scripts that load this one.
HERE = Path(__file__).resolve().parent


def fork_map(ctx, camp, tasks, fn, timeout, on_result):
    """Runs fn(payload) in a forked child per task; on_result(task, result)
    where result is {'ok': value} / {'exc': name, 'msg': text} /
    {'died': how, 'stderr': text}."""
    tasks = list(tasks)
    running = {}
    errdir = ctx.work / "fork-stderr"
    errdir.mkdir(parents=True, exist_ok=True)
    total = len(tasks)
    done = 0
    queue = iter(tasks)
    exhausted = False
    while running or not exhausted:
        while not exhausted and len(running) < ctx.jobs:
            try:
                task = next(queue)
            except StopIteration:
                exhausted = True
                break
            r, w = os.pipe()
            errpath = errdir / f"{camp.name}-{task[0]}.txt"
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    os.close(r)
                    fd = os.open(errpath, os.O_WRONLY | os.O_CREAT |
                                 os.O_TRUNC)
                    os.dup2(fd, 1)
                    os.dup2(fd, 2)
                    try:
                        data = {"ok": fn(task[1])}
                    except Exception as error:  # pylint: disable=broad-except
                        data = {"exc": type(error).__name__,
                                "msg": str(error)[:600]}
                    payload = json.dumps(data, default=str).encode()
                    view = memoryview(payload)
                    while view:
                        n = os.write(w, view)
                        view = view[n:]
                except BaseException:  # pylint: disable=broad-except
                    code = 3
                os._exit(code)
            os.close(w)
            running[pid] = [task, r, errpath, time.monotonic(), b""]
        if not running:
            break
        fds = {v[1]: pid for pid, v in running.items()}
        ready, _, _ = select.select(list(fds), [], [], 0.05)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            running[fds[fd]][4] += chunk
        for pid in list(running):
            task, r, errpath, start, buf = running[pid]
            wpid, status = os.waitpid(pid, os.WNOHANG)
            timed_out = False
            if wpid == 0 and time.monotonic() - start > timeout:
                os.kill(pid, signal.SIGKILL)
                wpid, status = os.waitpid(pid, 0)
                timed_out = True
            if wpid == 0:
                continue
            while True:
                try:
                    chunk = os.read(r, 1 << 16)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
            os.close(r)
            del running[pid]
            err = errpath.read_text(errors="replace")[-8000:] \
                if errpath.exists() else ""
            errpath.unlink(missing_ok=True)
            result = None
            if timed_out:
                result = {"died": f"timeout after {timeout} s", "stderr": err}
            elif os.WIFSIGNALED(status):
                result = {"died": "signal " +
                          signal.Signals(os.WTERMSIG(status)).name,
                          "stderr": err}
            else:
                try:
                    result = json.loads(buf.decode())
                    result["stderr"] = err
                except ValueError:
                    result = {"died": f"exit status "
                              f"{os.WEXITSTATUS(status)} with no answer",
                              "stderr": err}
                marker, _ = find_crash_marker(err)
                if marker and "died" not in result:
                    result = {"died": marker, "stderr": err}
            on_result(task, result)
            done += 1
            progress(camp, done, total)


def import_package(ctx):
    sys.path.insert(0, str(ctx.build / "python-bindings"))
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    import mla_fp8  # pylint: disable=import-outside-toplevel
    return mla_fp8


SHAPES = {"k_up": (512, 128), "v_up": (128, 512)}


def problem_inputs(proj, m, batch, with_bias):
    """Deterministic inputs of one drop-in call."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import mla_fp8  # pylint: disable=import-outside-toplevel
    n, k = SHAPES[proj]
    rng = np.random.default_rng([n, k, m, batch, int(with_bias)])
    x = mla_fp8.to_bf16_bits(rng.standard_normal((batch, m, k)))
    wq, w_scale = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((batch, n, k)), "gfx942")
    bias = mla_fp8.to_bf16_bits(rng.standard_normal((batch, n))) \
        if with_bias else None
    return x, wq, w_scale, bias


def run_calls(payload):
    """Child: loads the bundle and runs each call; returns Y digests."""
    import mla_fp8  # pylint: disable=import-outside-toplevel
    mla_fp8.set_bundle(payload["dir"])
    out = []
    for proj, m, batch, with_bias in payload["calls"]:
        x, wq, w_scale, bias = problem_inputs(proj, m, batch, with_bias)
        y = mla_fp8.\
            batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant(  # noqa: E501
                x, wq, w_scale, bias=bias)
        out.append(hashlib.sha256(y.tobytes()).hexdigest() + str(y.shape))
    return out


def elf_regions(data):
    """{name: (offset, size)} of an ELF64 file's headers and sections."""
    regions = {}
    if data[:4] != b"\x7fELF" or len(data) < 64:
        return {"all": (0, len(data))}
    (e_phoff, e_shoff) = struct.unpack_from("<QQ", data, 32)
    e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx = \
        struct.unpack_from("<HHHHH", data, 54)
    regions["ehdr"] = (0, 64)
    regions["phdr"] = (e_phoff, e_phentsize * e_phnum)
    regions["shdr"] = (e_shoff, e_shentsize * e_shnum)
    sections = []
    for s in range(e_shnum):
        off = e_shoff + s * e_shentsize
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", data,
                                                         off)
        sections.append((name, offset, size))
    if e_shstrndx < len(sections):
        stroff = sections[e_shstrndx][1]
        for name, offset, size in sections:
            end = data.index(b"\0", stroff + name)
            sname = data[stroff + name:end].decode(errors="replace")
            if sname and size and offset + size <= len(data):
                regions[sname] = (offset, size)
    return regions


# Regions that a loader can check against the manifest or parse defensively;
# a change elsewhere (.text, kernel descriptors) with the hashes recomputed is
# a different but valid program that no check can tell from a real one.
STRUCTURAL = ("ehdr", "phdr", "shdr", ".note", ".dynsym", ".dynstr", ".hash",
              ".gnu.hash", ".dynamic", ".shstrtab", ".strtab", ".symtab")


def write_bundle(base, dest, manifest_bytes=None, code=None,
                 rehash_manifest=False, special=None):
    shutil.copytree(base, dest)
    if code is not None:
        (dest / "gfx942.hsaco").write_bytes(code)
    if manifest_bytes is not None:
        (dest / "manifest.json").write_bytes(manifest_bytes)
    if rehash_manifest and (dest / "manifest.sha256").exists():
        raw = (dest / "manifest.json").read_bytes()
        (dest / "manifest.sha256").write_text(
            hashlib.sha256(raw).hexdigest() + "  manifest.json\n")
    if special:
        name, kind = special
        path = dest / name
        path.unlink()
        if kind == "dev-zero":
            os.symlink("/dev/zero", path)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir()
        elif kind == "empty":
            path.write_bytes(b"")
        elif kind == "dangling":
            os.symlink(dest / "nowhere", path)
        elif kind == "huge-sparse":
            with open(path, "wb") as f:
                f.truncate(1 << 36)


def manifest_mutation(rng, base_manifest, raw):
    """(bytes of the mutated manifest, description, kernel index or None)."""
    r = rng.random()
    if r < 0.12:
        data = bytearray(raw)
        kind = rng.choice(["truncate", "flip", "delete", "nest", "number",
                           "bom", "utf8"])
        if kind == "truncate":
            n = rng.randrange(len(data))
            return bytes(data[:n]), f"truncated to {n} bytes", None
        if kind == "flip":
            k = rng.randrange(len(data) * 8)
            data[k // 8] ^= 1 << (k % 8)
            return bytes(data), f"bit {k} flipped", None
        if kind == "delete":
            k = rng.randrange(len(data))
            del data[k:k + rng.randint(1, 16)]
            return bytes(data), f"bytes deleted at {k}", None
        if kind == "nest":
            depth = rng.choice((1000, 100000, 1000000))
            text = raw.decode()
            k = text.index('"chips"')
            text = text[:k] + '"deep": ' + "[" * depth + "]" * depth + ", " + \
                text[k:]
            return text.encode(), f"nested [] depth {depth}", None
        if kind == "number":
            text = raw.decode()
            nums = list(re.finditer(rb"\d+", raw))
            m = rng.choice(nums)
            value = rng.choice(["9" * 400, "1e400", "-0", "1.5",
                                "18446744073709551616"])
            return raw[:m.start()] + value.encode() + raw[m.end():], \
                f"number at {m.start()} -> {value[:20]}", None
        if kind == "bom":
            return b"\xef\xbb\xbf" + raw, "UTF-8 BOM", None
        k = rng.randrange(len(data))
        data[k:k] = b"\xff\xfe"
        return bytes(data), f"invalid UTF-8 at {k}", None
    m = json.loads(raw)
    kernels = m["chips"][0]["kernels"]
    index = None
    if r < 0.25:
        target = m if rng.random() < 0.5 else m["chips"][0]
        key = rng.choice(sorted(target))
        if rng.random() < 0.2:
            del target[key]
            what = f"deleted {key}"
        else:
            target[key] = mutate_json_value(rng, target[key])
            what = f"{key} edited"
        if key == "chips":
            index = 0
    elif r < 0.4:
        index = rng.randrange(len(kernels))
        kind = rng.choice(["symbol-other", "grid0", "gridz1", "wg32",
                           "has_bias", "w_scale", "out_type", "split_k",
                           "divisor", "kernarg_size", "workspace", "lds",
                           "arg-offset", "block_m", "swap-kernels"])
        k = kernels[index]
        what = kind
        if kind == "symbol-other":
            k["symbol"] = rng.choice([o["symbol"] for o in kernels
                                      if o is not k])
        elif kind == "grid0":
            k["grid"]["x"] = 0
        elif kind == "gridz1":
            k["grid"]["z"] = 1
        elif kind == "wg32":
            k["workgroup_size"] = rng.choice([[32, 1, 1], [128, 1, 1],
                                              [64, 2, 1], [0, 1, 1]])
        elif kind == "has_bias":
            k["has_bias"] = not k["has_bias"]
        elif kind == "w_scale":
            k["w_scale"] = "per_batch" if k["w_scale"] == "per_tensor" \
                else "per_tensor"
        elif kind == "out_type":
            k["out_type"] = "f16"
        elif kind == "split_k":
            k["tile"]["split_k"] = rng.choice([1, 2, 8, 0])
        elif kind == "divisor":
            k["grid"]["y"] = rng.choice(["ceil(M/18446744073709551616)",
                                         "ceil(M/0)", "ceil(M/4294967296)",
                                         "ceil(M/1)", "ceil(M/32)"])
        elif kind == "kernarg_size":
            k["kernarg_size"] = rng.choice([2**40, 8, 0, 2**63])
        elif kind == "workspace":
            k["workspace_bytes_per_block"] = rng.choice([2**40, 0, 1, 2**62])
        elif kind == "lds":
            k["lds_bytes"] = rng.choice([0, 2**20, 2**40])
        elif kind == "arg-offset":
            a = rng.choice(k["args"])
            a["offset"] = rng.choice([a["offset"] + 8, 0, 2**40, -8])
        elif kind == "block_m":
            k["block_m"] = rng.choice([0, 1, 2**40]) if "block_m" in k \
                else 0
            k["tile"]["block_m"] = rng.choice([0, 1, 8, 2**40])
        else:
            j = rng.randrange(len(kernels))
            kernels[index], kernels[j] = kernels[j], kernels[index]
    else:
        index = rng.randrange(len(kernels))
        kernels[index] = mutate_json_value(rng, kernels[index])
        what = "random kernel field edit"
    text = json.dumps(m, indent=rng.choice((None, 1)))
    return text.encode(), what, index


def code_mutation(rng, data, structural):
    regions = elf_regions(data)
    data = bytearray(data)
    names = [n for n in regions if n in STRUCTURAL or
             n.startswith(".note")] if structural else list(regions) + \
        ["any", "any"]
    notes = [n for n in names if n.startswith(".note")]
    # The note (msgpack metadata) is what readers parse most: half the flips.
    name = rng.choice(notes) if notes and rng.random() < 0.5 else \
        rng.choice(names or ["any"])
    if rng.random() < 0.12:
        n = rng.randrange(len(data))
        return bytes(data[:n]), f"truncated to {n} bytes"
    offset, size = regions.get(name, (0, len(data)))
    size = max(1, min(size, len(data) - offset))
    kind = rng.choice(["flip", "flip", "flip", "byte", "zero"])
    where = offset + rng.randrange(size)
    if kind == "flip":
        bit = rng.randrange(8)
        data[where] ^= 1 << bit
        what = f"bit {bit} of byte {where} ({name}) flipped"
    elif kind == "byte":
        value = rng.choice((0x00, 0xff, 0x7f, 0x80, 0xc0, 0xdc, 0xdd, 0xde))
        data[where] = value
        what = f"byte {where} ({name}) = {value:#x}"
    else:
        n = rng.randint(1, 16)
        data[where:where + n] = b"\0" * len(data[where:where + n])
        what = f"{n} bytes zeroed at {where} ({name})"
    return bytes(data), what


def rehash_code(manifest_raw, code):
    m = json.loads(manifest_raw)
    m["chips"][0]["sha256"] = hashlib.sha256(code).hexdigest()
    m["chips"][0]["bytes"] = len(code)
    return json.dumps(m, indent=1).encode()


def bundle_campaign(ctx, name):
    camp = Campaign(ctx, name)
    base = fixture(ctx, "ref-bias")
    raw = (base / "manifest.json").read_bytes()
    manifest = json.loads(raw)
    kernels = manifest["chips"][0]["kernels"]
    code = (base / "gfx942.hsaco").read_bytes()
    has_digest = (base / "manifest.sha256").exists()
    import_package(ctx)
    work = ctx.work / name
    rmtree(work)
    work.mkdir(parents=True)
    total = ctx.count(name)
    cases = []
    specials = ["dev-zero", "fifo", "dir", "empty", "dangling",
                "huge-sparse"]
    for i in range(total):
        rng = ctx.rng(name, i)
        variant = "A" if i % 2 == 0 else "B"
        index = None
        case = {"variant": variant}
        if i < 2 * len(specials):
            what = specials[i // 2]
            case["special"] = ("manifest.json" if name == "manifest" else
                               "gfx942.hsaco", what)
            case["desc"] = f"{case['special'][0]} is {what}"
        elif name == "manifest":
            mbytes, what, index = manifest_mutation(
                ctx.rng(name, i // 2), manifest, raw)
            case["manifest"] = mbytes
            case["desc"] = what
        else:
            mcode, what = code_mutation(rng, code, structural=variant == "B")
            case["code"] = mcode
            case["desc"] = what
            if variant == "B":
                case["manifest"] = rehash_code(raw, mcode)
        # The calls: the mutated kernel's own, and one other.
        calls = []
        if index is not None and index < len(kernels):
            k = kernels[index]
            # B = 2: the first M whose rows the kernel serves, or a few more.
            m = max(-(-k["min_rows"] // 2), rng.randint(1, 4))
            calls.append((k["projection"], m, 2, bool(k["has_bias"])))
            # The call the mutated entry now claims to serve, if another.
            try:
                mk = json.loads(case["manifest"])["chips"][0]["kernels"][index]
                claim = (mk["projection"] if mk["projection"] in SHAPES
                         else k["projection"], m, 2,
                         mk["has_bias"] if isinstance(mk["has_bias"], bool)
                         else bool(k["has_bias"]))
                if claim != calls[0]:
                    calls.append(claim)
            except (ValueError, KeyError, IndexError, TypeError):
                pass
        if len(calls) < 2:
            calls.append((rng.choice(list(SHAPES)), rng.randint(1, 4), 2,
                          rng.random() < 0.5))
        case["calls"] = calls
        cases.append((i, case))
    # Trusted results: the unmutated bundle.
    wanted = sorted({tuple(c) for _, case in cases for c in case["calls"]})
    baseline = {}

    def on_base(task, result):
        if "ok" not in result:
            sys.exit(f"campaign {name}: the unmutated bundle fails: {result}")
        baseline[tuple(task[1]["calls"][0])] = result["ok"][0]

    fork_map(ctx, Campaign(ctx, name + "-baseline"),
             [(k, {"dir": str(base), "calls": [c]})
              for k, c in enumerate(wanted)], run_calls, 600, on_base)
    rmtree(ctx.results / (name + "-baseline"))

    def task_of(item):
        i, case = item
        dest = work / str(i)
        write_bundle(base, dest, manifest_bytes=case.get("manifest"),
                     code=case.get("code"),
                     rehash_manifest=case["variant"] == "B",
                     special=case.get("special"))
        return (i, {"dir": str(dest), "calls": case["calls"],
                    "case": case})

    def lazy_tasks():
        for item in cases:
            yield task_of(item)

    def on_result(task, result):
        i, payload = task
        case = payload["case"]
        dest = Path(payload["dir"])
        detail = case["desc"]
        if "died" in result:
            cls = "crash"
            detail = f"{result['died']}: {detail}: " + \
                crash_line(result["stderr"])
        elif "exc" in result:
            cls = "refused"
            detail = f"{result['exc']}: {result['msg'][:160]}"
        else:
            want = [baseline[tuple(c)] for c in case["calls"]]
            if result["ok"] == want:
                cls = "ok"
            else:
                cls = "wrong"
                detail = "loaded and ran with a different Y: " + detail
        script = (f"import sys; sys.path.insert(0, {str(HERE)!r}); "
                  f"sys.argv = ['x']; "
                  f"import importlib.util as u; "
                  f"s = u.spec_from_file_location('r', "
                  f"{str(Path(__file__).resolve())!r}); "
                  f"r = u.module_from_spec(s); s.loader.exec_module(r); "
                  f"print(r.run_calls({{'dir': sys.argv[1] if len(sys.argv) "
                  f"> 1 else 'bundle', 'calls': {case['calls']!r}}}))")
        files = {}
        if cls not in ("ok", "refused"):
            files = {"bundle": str(dest), "repro.py": script + "\n",
                     "stderr.txt": result.get("stderr", "")}
        camp.record(i, cls, detail,
                    cmd=f"cd {camp.dir}/{cls}-{i} && "
                        f"PYTHONPATH={ctx.build / 'python-bindings'} "
                        f"/usr/bin/python3 repro.py",
                    files=files,
                    extra={"variant": case["variant"],
                           "calls": case["calls"],
                           "manifest_digest_file": has_digest})
        rmtree(dest)

    fork_map(ctx, camp, lazy_tasks(), run_calls, ctx.py_timeout, on_result)
    return camp


def campaign_manifest(ctx):
    return bundle_campaign(ctx, "manifest")


def campaign_codeobj(ctx):
    return bundle_campaign(ctx, "codeobj")


# --- 6. Python arguments
