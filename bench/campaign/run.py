#!/usr/bin/python3
"""Robustness campaigns for mla-fp8 (issue 9): bad, damaged and concurrent
inputs against the tools, the loader, the emulator and the Python package.

Every input is classified as one of (first match wins):

  data loss   a file that existed before the run is gone or changed although
              the tool had no right to touch it, or a bundle directory is
              missing or mixed after a kill
  wrong       a run reported success with a result that differs from the
              trusted one (or success with nothing written)
  crash       signal, abort, LLVM ERROR, stack dump, uncaught C++ exception,
              a Python process that died without an answer, or a timeout
  leak        staging left beside the output after a later successful run
  refused     a clean error: non-zero exit with a message, or a Python
              exception
  ok          the run succeeded and its result is the trusted one

Usage: bench/campaign/run.py [options] {ir,cli,kill,cache,manifest,codeobj,
pyargs,all}.  See README.md beside this file.
"""

import argparse
import collections
import hashlib
import json
import os
import random
import re
import resource
import select
import shlex
import shutil
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLASSES = ("dataloss", "wrong", "crash", "leak", "refused", "ok")
COLUMNS = ("inputs", "crash", "wrong", "dataloss", "leak", "refused", "ok")
CAMPAIGNS = ("ir", "cli", "kill", "cache", "manifest", "codeobj", "pyargs")
# Counts at --scale 1 (about 7,000 in all).
BASE_COUNTS = {"ir": 5000, "cli": 300, "kill": 200, "cache": 60,
               "manifest": 900, "codeobj": 300, "pyargs": 300}

# Address-space limit of every process the campaigns start, so that an
# allocation driven by a bad size fails instead of taking the machine down.
MEM_LIMIT = 4 << 30

# In the order a crash's detail prefers them (the banner lines last). Each
# is matched against whole lines of stderr, anchored where the runtime that
# prints it anchors it: a diagnostic that echoes a source line holding the
# words "LLVM ERROR" is not a crash.
CRASH_MARKERS = (("LLVM ERROR", r"^LLVM ERROR:"),
                 ("terminate called", r"^terminate called"),
                 ("Assertion `", r"Assertion `.*' failed"),
                 ("UNREACHABLE executed", r"UNREACHABLE executed"),
                 ("AddressSanitizer", r"^==\d+==ERROR: AddressSanitizer"),
                 ("UndefinedBehaviorSanitizer",
                  r"^SUMMARY: UndefinedBehaviorSanitizer"),
                 ("std::bad_alloc", r"what\(\): +std::bad_alloc"),
                 ("Segmentation fault", r"Segmentation fault"),
                 ("Stack dump", r"^Stack dump:"),
                 ("PLEASE submit a bug report", r"^PLEASE submit a bug report"))


def find_crash_marker(text):
    """The first marker of CRASH_MARKERS some line of `text` carries, and
    that line; (None, None) when there is none."""
    lines = text.splitlines()
    for name, pattern in CRASH_MARKERS:
        regex = re.compile(pattern)
        for line in lines:
            if regex.search(line.strip()):
                return name, line.strip()
    return None, None


# The small model every campaign compiles: K-up N=512 K=128, V-up N=128
# K=512 (split-K), one kernel per projection (M 1 and up) on gfx942.
SMALL = ["--heads=4", "--kv-lora-rank=512", "--qk-nope-head-dim=128",
         "--v-head-dim=128", "--tp=1", "--chips=gfx942", "--max-m=16"]
CONFIGS = {
    "small": SMALL,
    "bias": SMALL + ["--bias"],
    "ranges": SMALL[:-1] + ["--max-m=64"],
}


# --------------------------------------------------------------------------
# Infrastructure


class Context:
    def __init__(self, args):
        self.build = Path(args.build).resolve()
        self.results = Path(args.results).resolve()
        self.work = Path(args.work).resolve()
        self.seed = args.seed
        self.scale = args.scale
        self.jobs = args.jobs
        self.timeout = args.timeout
        self.verbose = args.verbose
        self.pyenv = dict(os.environ)
        self.pyenv["PYTHONPATH"] = str(self.build / "python-bindings")
        self.pyenv["OPENBLAS_NUM_THREADS"] = "1"
        self.pyenv.pop("MLA_FP8_BUNDLE", None)
        self.env = dict(os.environ)
        # The campaigns never read or fill the user's cache.
        self.env["XDG_CACHE_HOME"] = str(self.work / "xdg-cache")
        self._fixtures = {}
        self._lock = threading.Lock()
        self.can_mount = None
        self.has_strace = shutil.which("strace") is not None

    def tool(self, name):
        return str(self.build / "bin" / name)

    def count(self, campaign):
        return max(1, int(round(BASE_COUNTS[campaign] * self.scale)))

    def rng(self, campaign, index=None):
        return random.Random(f"{self.seed}/{campaign}/{index}")


class Proc:
    def __init__(self, cmd, rc, out, err, timed_out, wall):
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err
        self.timed_out, self.wall = timed_out, wall


def run_proc(cmd, timeout, cwd=None, env=None, capture_out=False,
             kill_after=None):
    """Runs `cmd`; SIGKILLs its process group on timeout or after
    `kill_after` seconds."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE if capture_out else
                         subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    limit = timeout if kill_after is None else min(timeout, kill_after)
    timed_out = False
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        timed_out = kill_after is None or kill_after >= timeout
    wall = time.monotonic() - start
    return Proc(cmd, p.returncode, (out or b"").decode("utf-8", "replace"),
                (err or b"").decode("utf-8", "replace")[-20000:], timed_out,
                wall)


def crash_reason(proc, killed_by_us=False):
    if proc.timed_out:
        return "timeout"
    if proc.rc is not None and proc.rc < 0 and not killed_by_us:
        return "signal " + signal.Signals(-proc.rc).name
    marker, _ = find_crash_marker(proc.err)
    if marker:
        return marker
    if proc.rc is not None and proc.rc >= 128:
        return f"exit status {proc.rc}"
    return None


def refusal_key(detail):
    """A refusal message with its tool prefix, paths and numbers folded, so
    that alike messages count together in the summary."""
    detail = re.sub(r"^(mla-fp8-\w+|error)(: error)?: ", "", detail)
    detail = re.sub(r"'[^']*'", "'...'", detail)
    detail = re.sub(r"/[\w./+-]+", "PATH", detail)
    detail = re.sub(r"\b[0-9a-f]{16,}\b", "HEX", detail)
    return re.sub(r"\d+", "N", detail)[:100]


def crash_line(text):
    """The line that names the crash (the LLVM ERROR, not the banner)."""
    _, line = find_crash_marker(text)
    return line[:200] if line else first_line(text)


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def snapshot(root):
    """{relative path: sha256 or 'dir' or 'link:target'} of a tree; special
    files are recorded by type and never opened."""
    result = {}
    root = str(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                result[rel] = "link:" + os.readlink(path)
            elif stat.S_ISDIR(st.st_mode):
                result[rel] = "dir"
            elif stat.S_ISREG(st.st_mode):
                result[rel] = sha256_file(path)
            else:
                result[rel] = "special"
    return result


def rmtree(path):
    path = str(path)
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.exists(path):
        for dirpath, dirnames, _ in os.walk(path):
            for d in dirnames:
                try:
                    os.chmod(os.path.join(dirpath, d), 0o755)
                except OSError:
                    pass
        shutil.rmtree(path, ignore_errors=True)


def bundle_state(path):
    """None when `path` is a complete bundle (manifest parses, every code
    object's sha256 and size match, manifest.sha256 matches when present);
    otherwise what is wrong."""
    path = Path(path)
    if not path.is_dir():
        return "not a directory"
    try:
        raw = (path / "manifest.json").read_bytes()
        manifest = json.loads(raw)
    except (OSError, ValueError) as error:
        return f"manifest.json: {error}"
    digest = path / "manifest.sha256"
    if digest.exists():
        want = digest.read_text().split()[0] if digest.read_text().split() \
            else ""
        if want != hashlib.sha256(raw).hexdigest():
            return "manifest.sha256 does not match manifest.json"
    try:
        for chip in manifest["chips"]:
            code = path / chip["code_object"]
            if sha256_file(code) != chip["sha256"]:
                return f"{chip['code_object']}: sha256 mismatch"
            if "bytes" in chip and code.stat().st_size != chip["bytes"]:
                return f"{chip['code_object']}: size mismatch"
    except (OSError, KeyError, TypeError) as error:
        return f"manifest chips: {error!r}"
    return None


def bundle_digest(path):
    """Content digest of a bundle directory (every regular file)."""
    snap = snapshot(path)
    return hashlib.sha256(json.dumps(sorted(snap.items())).encode()
                          ).hexdigest()


class Campaign:
    """Counts one campaign's outcomes and saves its failing inputs."""

    def __init__(self, ctx, name):
        self.ctx, self.name = ctx, name
        self.counts = collections.Counter()
        self.details = collections.Counter()
        self.lock = threading.Lock()
        self.dir = ctx.results / name
        rmtree(self.dir)
        self.dir.mkdir(parents=True)
        self.start = time.monotonic()

    def record(self, case, cls, detail="", cmd=None, files=None, extra=None):
        """Records one input. `files`: {name: bytes or source path} saved
        with the command for triage when the input failed."""
        assert cls in CLASSES, cls
        with self.lock:
            self.counts[cls] += 1
            self.counts["inputs"] += 1
            if cls != "ok":
                key = refusal_key(detail) if cls == "refused" else \
                    detail[:120]
                self.details[(cls, key)] += 1
        if cls in ("refused", "ok"):
            return
        out = self.dir / f"{cls}-{case}"
        out.mkdir(parents=True, exist_ok=True)
        info = {"case": case, "class": cls, "detail": detail}
        if extra:
            info.update(extra)
        if cmd:
            info["command"] = cmd if isinstance(cmd, str) else \
                " ".join(shlex.quote(str(c)) for c in cmd)
            (out / "cmd.sh").write_text("#!/bin/sh\n" + info["command"] +
                                        "\n")
        for name, value in (files or {}).items():
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                if isinstance(value, (bytes, bytearray)):
                    target.write_bytes(value)
                elif isinstance(value, str) and not os.path.lexists(value):
                    target.write_text(value)
                elif os.path.isdir(value) and not os.path.islink(value):
                    shutil.copytree(value, target, symlinks=True,
                                    dirs_exist_ok=True)
                elif os.path.islink(value):
                    os.symlink(os.readlink(value), target)
                elif os.path.isfile(value):
                    shutil.copy(value, target)
            except OSError as error:
                (out / (name + ".not-saved")).write_text(str(error))
        (out / "outcome.json").write_text(json.dumps(info, indent=1))
        if self.ctx.verbose:
            print(f"  [{self.name}] {cls} {case}: {detail}", flush=True)

    def row(self):
        return [self.name] + [self.counts[c] for c in COLUMNS] + \
            [round(time.monotonic() - self.start)]


def parallel(ctx, items, fn, jobs=None):
    """Runs fn(item) over items on `jobs` threads (each starts processes)."""
    jobs = jobs or ctx.jobs
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for _ in pool.map(fn, items):
            pass


def progress(camp, done, total):
    if done % max(1, total // 10) == 0:
        print(f"  {camp.name}: {done}/{total} "
              f"({round(time.monotonic() - camp.start)} s)", flush=True)


def try_mount_tmpfs(ctx, path, size):
    """Mounts a tmpfs of `size` at `path`; False where mounting is not
    allowed (the full-disk inputs are then skipped)."""
    if ctx.can_mount is False:
        return False
    os.makedirs(path, exist_ok=True)
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}",
                         "tmpfs", str(path)], stderr=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL).returncode == 0
    ctx.can_mount = ok
    return ok


def umount(path):
    subprocess.run(["umount", "-l", str(path)], stderr=subprocess.DEVNULL)


def fill_tmpfs(path):
    """Fills the file system at `path` so that the next write fails."""
    try:
        with open(os.path.join(path, ".filler"), "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass


# --------------------------------------------------------------------------
# Fixtures: reference bundles built once per run


def aot(ctx, out, config="small", extra=(), cache=None, timeout=None,
        cwd=None, kill_after=None, prefix=()):
    if timeout is None:
        timeout = ctx.timeout * (3 if "--verify" in extra else 1)
    cmd = list(prefix) + [ctx.tool("mla-fp8-aot"), "-o", str(out),
                          "--quiet"] + CONFIGS[config] + list(extra)
    if cache is None:
        cmd.append("--no-cache")
    else:
        cmd.append(f"--cache-dir={cache}")
    return run_proc(cmd, timeout, cwd=cwd, env=ctx.env,
                    kill_after=kill_after)


def fixture(ctx, name):
    """Reference bundles, built with --no-cache: ref-<config>; and warm
    caches: cache-<config>."""
    with ctx._lock:
        if name in ctx._fixtures:
            return ctx._fixtures[name]
        path = ctx.work / "fixtures" / name
        rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        kind, config = name.split("-", 1)
        if kind == "ref":
            proc = aot(ctx, path, config, timeout=600)
        else:
            proc = aot(ctx, ctx.work / "fixtures" / ("warm-" + config),
                       config, cache=path, timeout=600)
        if proc.rc != 0:
            sys.exit(f"campaign: cannot build fixture {name}: {proc.err}")
        for leftover in ("warm-" + config,):
            rmtree(ctx.work / "fixtures" / leftover)
        ctx._fixtures[name] = path
        return path


def check_bundle_cmd(ctx):
    """The tool's own bundle check when it has one (mla-fp8-emu
    --check-bundle), else None."""
    if not hasattr(ctx, "_check_bundle"):
        help_text = run_proc([ctx.tool("mla-fp8-emu"), "--help"], 60,
                             capture_out=True).out
        ctx._check_bundle = "--check-bundle" in help_text
    return ctx._check_bundle


def verify_bundle(ctx, path):
    """None when `path` holds a complete bundle, else the reason; uses
    mla-fp8-emu --check-bundle where it exists, and the manifest's hashes
    always."""
    problem = bundle_state(path)
    if problem:
        return problem
    if check_bundle_cmd(ctx):
        proc = run_proc([ctx.tool("mla-fp8-emu"), "--check-bundle",
                         str(path)], 120)
        if proc.rc != 0:
            return "--check-bundle: " + first_line(proc.err or proc.out)
    return None


# --------------------------------------------------------------------------
# 1. Mutated IR to mla-fp8-opt

IR_DIRS = ("test/Dialect", "test/Conversion", "test/Pipelines",
           "docs/examples")
GENERIC_PIPELINES = [
    [], ["--mlir-print-op-generic"], ["--mlafp8-fuse-prequant"],
    ["--mlafp8-fuse-prequant", "--mlafp8-select-tiles=chip=gfx942"],
    ["--mlafp8-fuse-prequant", "--mlafp8-select-tiles=chip=gfx950"],
    ["--mlafp8-fuse-prequant", "--mlafp8-select-tiles=chip=gfx942",
     "--convert-mlafp8-to-gpu=chip=gfx942"],
    ["--convert-mlafp8-to-gpu=chip=gfx942", "--canonicalize", "--cse"],
    ["--mlafp8-to-rocdl=chip=gfx942"],
    ["--mlafp8-to-hsaco=chip=gfx942 format=isa"],
    ["--pass-pipeline=builtin.module(mlafp8-fuse-prequant,"
     "mlafp8-to-hsaco{chip=gfx942 dump=%t})"],
    ["--pass-pipeline=builtin.module(mlafp8-fuse-prequant,"
     "mlafp8-to-hsaco{chip=gfx950 dump=%t})"],
]
TOKEN_RE = re.compile(r'\s+|"(?:[^"\\\n]|\\.)*"|[-+]?\d+\.\d*(?:[eE][-+]?\d+)?'
                      r'|[-+]?\d+|[%#^@!]?[A-Za-z_][\w.$]*|.', re.S)
NUMBERS = ["0", "-1", "1", "2", "3", "7", "15", "16", "17", "31", "32", "33",
           "63", "64", "127", "128", "129", "255", "256", "512", "1024",
           "4096", "65535", "65536", "2147483647", "2147483648",
           "4294967295", "4294967296", "9223372036854775807",
           "9223372036854775808", "18446744073709551616", "-2147483648",
           "99999999999999999999999999", "0.0", "-0.0", "1.5", "1e309",
           "0x7fffffff", "0xffffffffffffffff"]
TYPES = ["bf16", "f16", "f32", "f64", "i8", "i32", "i64", "index",
         "f8E4M3FNUZ", "f8E4M3FN", "f8E5M2FNUZ", "f8E5M2", "f8E4M3B11FNUZ",
         "i1", "none"]
PUNCT = list("{}[]<>(),:=x%#@!^-?*\"") + ["->", "::", "// -----\n", "\n"]


def load_ir_corpus():
    corpus = []
    for d in IR_DIRS:
        for path in sorted((REPO / d).rglob("*.mlir")):
            text = path.read_text()
            runs = []
            for m in re.finditer(r"RUN:.*?mla-fp8-opt\s+%s\s+([^|\n]*)",
                                 text):
                flags = re.split(r"\s2>", m.group(1))[0]
                runs.append(shlex.split(flags))
            chunks = [c for c in re.split(r"^// -----\s*$", text, flags=re.M)
                      if c.strip()]
            body = [re.sub(r"^//\s*RUN:.*$", "", c, flags=re.M)
                    for c in chunks]
            corpus.append((str(path.relative_to(REPO)), body, runs))
    return corpus


def mutate_ir(rng, text, idents):
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        tokens = TOKEN_RE.findall(text)
        solid = [i for i, t in enumerate(tokens) if not t.isspace()]
        if not solid:
            return text + rng.choice(PUNCT)
        kind = rng.choice(["delete", "duplicate", "swap", "number", "number",
                           "ident", "type", "attr", "dim", "truncate",
                           "punct", "line-delete", "line-dup", "nest"])
        i = rng.choice(solid)
        if kind == "delete":
            tokens[i] = ""
        elif kind == "duplicate":
            tokens[i] = tokens[i] + " " + tokens[i]
        elif kind == "swap":
            j = rng.choice(solid)
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif kind == "number":
            nums = [k for k in solid if re.fullmatch(r"[-+]?\d[\d.eE+-]*",
                                                     tokens[k])]
            tokens[rng.choice(nums) if nums else i] = rng.choice(NUMBERS)
        elif kind == "ident":
            names = [k for k in solid if re.match(r"[%#^@!A-Za-z_]",
                                                  tokens[k])]
            if names:
                tokens[rng.choice(names)] = rng.choice(idents)
        elif kind == "type":
            text2 = "".join(tokens)
            spots = [m for m in re.finditer(r"\b(" + "|".join(TYPES) +
                                            r")\b", text2)]
            if spots:
                m = rng.choice(spots)
                text = text2[:m.start()] + rng.choice(TYPES) + \
                    text2[m.end():]
                continue
        elif kind == "attr":
            text2 = "".join(tokens)
            spots = list(re.finditer(r"(\w+)\s*=\s*([^,}>\s]+)", text2))
            if spots:
                m = rng.choice(spots)
                value = rng.choice(NUMBERS + TYPES + ['"x"', "true", "[]",
                                                      "unit", "{}", '""'])
                text = text2[:m.start(2)] + value + text2[m.end(2):]
                continue
        elif kind == "dim":
            text2 = "".join(tokens)
            spots = list(re.finditer(r"(?<=[<x])(\d+|\?)(?=x)", text2))
            if spots:
                m = rng.choice(spots)
                value = rng.choice(NUMBERS[:22] + ["?", "0", "1"])
                text = text2[:m.start()] + value.lstrip("-") + \
                    text2[m.end():]
                continue
        elif kind == "truncate":
            text = text[:rng.randrange(len(text) + 1)]
            continue
        elif kind == "punct":
            tokens[i] = tokens[i] + rng.choice(PUNCT)
        elif kind in ("line-delete", "line-dup"):
            lines = text.split("\n")
            j = rng.randrange(len(lines))
            if kind == "line-delete":
                del lines[j]
            else:
                lines.insert(j, lines[j])
            text = "\n".join(lines)
            continue
        elif kind == "nest":
            depth = rng.choice((2, 8, 32, 64))
            open_, close = rng.choice((("[", "]"), ("(", ")"), ("{", "}"),
                                       ("<", ">")))
            tokens[i] = open_ * depth + tokens[i] + close * depth
        text = "".join(tokens)
    return text


# Mutated inputs per mla-fp8-opt process where the pipeline allows.
IR_BATCH = 16


def ir_has_unlowered_ops(text):
    text = re.sub(r"//.*", "", text)
    return re.search(r"\bmlafp8\.(group_quant|scaled_bmm|prequant_bmm)\b",
                     text) is not None


def campaign_ir(ctx):
    camp = Campaign(ctx, "ir")
    corpus = load_ir_corpus()
    idents = sorted({t for _, chunks, _ in corpus for c in chunks
                     for t in TOKEN_RE.findall(c)
                     if re.match(r"[%#^@!A-Za-z_][\w.$]*$", t)})
    total = ctx.count("ir")
    cases = []
    for i in range(total):
        rng = ctx.rng("ir", i)
        path, chunks, runs = rng.choice(corpus)
        text = mutate_ir(rng, rng.choice(chunks), idents)
        flags = rng.choice(runs) if runs and rng.random() < 0.5 else \
            rng.choice(GENERIC_PIPELINES)
        cases.append((i, path, text, flags))
    work = ctx.work / "ir"
    rmtree(work)
    work.mkdir(parents=True)
    done = [0]

    def one(case):
        i, path, text, flags = case
        cdir = work / str(i)
        cdir.mkdir()
        src = cdir / "input.mlir"
        src.write_text(text)
        tdir = cdir / "t"
        tdir.mkdir()
        args = [f.replace("%t", str(tdir)) for f in flags]
        cmd = [ctx.tool("mla-fp8-opt"), str(src)] + args
        if "-verify-diagnostics" not in args:
            cmd += ["-o", "/dev/null"]
        proc = run_proc(cmd, ctx.timeout)
        reason = crash_reason(proc)
        if reason:
            cls, detail = "crash", reason + ": " + crash_line(proc.err)
        elif proc.rc == 0 and any("dump=" in a for a in args) and \
                ir_has_unlowered_ops(text) and \
                not any(p.suffix == ".hsaco" for p in cdir.rglob("*")):
            cls, detail = "wrong", "mlafp8-to-hsaco exited 0 and wrote " \
                                   "no code object"
        elif proc.rc == 0:
            cls, detail = "ok", ""
        else:
            cls, detail = "refused", first_line(proc.err)
        camp.record(i, cls, detail, cmd=[c.replace(str(src), "input.mlir")
                                         for c in cmd],
                    files={"input.mlir": text, "stderr.txt": proc.err},
                    extra={"source": path})
        rmtree(cdir)
        with camp.lock:
            done[0] += 1
            progress(camp, done[0], total)

    def batch(group):
        """Runs up to IR_BATCH inputs in one -split-input-file process;
        each failure, and every input of a batch that crashed, runs again
        alone so that it is classified and saved by itself."""
        if len(group) == 1:
            one(group[0])
            return
        bdir = work / f"batch-{group[0][0]}"
        bdir.mkdir()
        src = bdir / "input.mlir"
        starts, line = [], 1
        for _, _, text, _ in group:
            starts.append(line)
            line += text.count("\n") + 2
        src.write_text("\n// -----\n".join(t for _, _, t, _ in group))
        flags = list(group[0][3])
        if not {"-split-input-file", "--split-input-file"} & set(flags):
            flags.append("-split-input-file")
        proc = run_proc([ctx.tool("mla-fp8-opt"), str(src)] + flags,
                        ctx.timeout * 2, capture_out=True)
        parts = re.split(r"^// -----$", proc.out, flags=re.M)
        rmtree(bdir)
        if crash_reason(proc) or len(parts) != len(group):
            for case in group:
                one(case)
            return
        # Diagnostics name lines of the whole file: the first error in a
        # chunk's lines is that input's refusal.
        errors = {}
        for m in re.finditer(r"^" + re.escape(str(src)) +
                             r":(\d+):\d+: error: (.*)$", proc.err, re.M):
            k = sum(1 for st in starts if st <= int(m.group(1))) - 1
            errors.setdefault(k, m.group(2).strip()[:200])
        for k, (case, part) in enumerate(zip(group, parts)):
            if part.strip():
                camp.record(case[0], "ok")
            elif k in errors:
                camp.record(case[0], "refused", errors[k])
            else:
                one(case)
                continue
            with camp.lock:
                done[0] += 1
                progress(camp, done[0], total)

    # Inputs whose pipeline writes files or checks diagnostics run alone;
    # the others run in batches of the same pipeline, which saves a process
    # start (most of the cost) per input.
    alone, groups = [], collections.defaultdict(list)
    for case in cases:
        flags = case[3]
        if any("%t" in f or "dump=" in f or "verify-diagnostics" in f
               for f in flags) or "// -----" in case[2]:
            alone.append([case])
        else:
            groups[tuple(flags)].append(case)
    work_items = alone
    for group in groups.values():
        for k in range(0, len(group), IR_BATCH):
            work_items.append(group[k:k + IR_BATCH])
    work_items.sort(key=lambda g: g[0][0])
    parallel(ctx, work_items, batch)
    return camp


# --------------------------------------------------------------------------
# 2. CLI flags

HUGE_INTS = ["0", "-1", "1", "-9223372036854775808", "9223372036854775807",
             "9223372036854775808", "18446744073709551616", "4294967296",
             "2147483648", "99999999999999999999999", "1e9", "0x10", "abc",
             "", " ", "-0", "65536", "65537", "1000000000000"]


def make_paths(cdir):
    """The path kinds -o, inputs and cache dirs draw from, created in
    `cdir`: {kind: path}."""
    cdir = Path(cdir)
    user = cdir / "userdir"
    (user / "sub").mkdir(parents=True)
    (user / "notes.txt").write_text("precious\n")
    (user / "sub" / "data.bin").write_bytes(os.urandom(64))
    (cdir / "empty").mkdir()
    (cdir / "file.txt").write_text("a user's file\n")
    os.mkfifo(cdir / "fifo")
    os.symlink(cdir / "nowhere", cdir / "dangling")
    os.symlink(user, cdir / "link-to-userdir")
    return {"userdir": user, "empty": cdir / "empty", "file": cdir / "file.txt",
            "fifo": cdir / "fifo", "dangling": cdir / "dangling",
            "link-to-userdir": cdir / "link-to-userdir",
            "new": cdir / "out", "nested-new": cdir / "a" / "b" / "out",
            "dev-null": Path("/dev/null"), "dev-zero": Path("/dev/zero"),
            "dev-full": Path("/dev/full"), "dot": Path("."),
            "relative": Path("rel-out/r1"), "dotdot": user / ".."}


def cli_aot_case(rng, ctx):
    flags = []
    for flag in ("heads", "kv-lora-rank", "qk-nope-head-dim", "v-head-dim"):
        if rng.random() < 0.15:
            flags.append(f"--{flag}={rng.choice(HUGE_INTS + ['128', '64'])}")
    if rng.random() < 0.05:
        flags += ["--kv-lora-rank=128", "--qk-nope-head-dim=128",
                  "--v-head-dim=128"]
    pools = {
        "--model": ["deepseek-r1", "kimi-k2", "deepseek-v2-lite", "bogus", "",
                    "deepseek-r1\x01"],
        "--tp": ["1", "0", "-8", "3", "1099511627776", "1,2,,", "x", "8,8",
                 "16"],
        "--max-m": HUGE_INTS,
        "--chips": ["gfx942", "gfx950", "gfx90a", "", "gfx942,gfx942",
                    "gfx942,"],
        "--weight-scale": ["per-tensor", "per-batch", "per_batch", ""],
        "--out-type": ["bf16", "f16", "f32", ""],
        "--jobs": ["0", "1", "1000000", "-1", "4294967296"],
    }
    for flag, pool in pools.items():
        if rng.random() < 0.2:
            flags.append(f"{flag}={rng.choice(pool)}")
    for flag in ("--bias", "--list", "--verify", "--no-cache"):
        if rng.random() < 0.1:
            flags.append(flag)
    if rng.random() < 0.05:
        flags.append(rng.choice(["--bogus", "--max-m", "-o", "--tp=",
                                 "--cache-dir"]))
    cache = rng.choice(["shared"] * 6 + ["file", "fifo", "dangling",
                                         "dev-null", "userdir", "full"])
    out = rng.choice(["new", "new", "bundle", "bundle", "bundle+extra",
                      "userdir", "empty", "file", "fifo", "dangling",
                      "link-to-userdir", "nested-new", "dev-null", "dot",
                      "relative", "dotdot", "full"])
    return {"tool": "aot", "flags": flags, "out": out, "cache": cache}


def cli_emu_case(rng, ctx):
    inp = rng.choice(["bundle", "bundle", "hsaco", "hsaco", "dev-zero",
                      "fifo", "empty", "file", "dangling", "peer-huge",
                      "peer", "missing"])
    flags = []
    pools = {
        "--chip": ["gfx942", "gfx950", "gfx90a", ""],
        "--N": HUGE_INTS + ["512", "128"], "--K": HUGE_INTS + ["128", "512"],
        "-M": HUGE_INTS + ["4", "16"], "-B": HUGE_INTS + ["2"],
        "--grid": ["1,1,1", "0", "4294967296,1,1", "-1", "1,1,1,1", "a",
                   "65536,65536,65536", ""],
        "--block": ["64", "32", "0", "1024", "65536", "64,1,1", "1,1,1"],
        "--lds": ["0", "65536", "4294967295", "-1"],
        "--abi": ["triton-peer", "bogus", ""],
        "--tile-m": ["0", "16", "4294967295"],
        "--tile-n": ["0", "128", "4294967295"],
        "--group": ["0", "-1", "128", "1099511627776", "3"],
        "--emu-threads": ["0", "1", "1000"],
        "--emu-max-steps": ["0", "1", "18446744073709551615"],
        "--trace-wave": ["-1", "0", "1000000"],
    }
    for flag, pool in pools.items():
        if rng.random() < 0.15:
            flags.append(f"{flag}={rng.choice(pool)}")
    if rng.random() < 0.25:
        flags.append("--kernel=" + rng.choice(
            ["mla_fp8_n512_k128_g128_bf16_gfx942_m1_inf", "bogus", ""]))
    if rng.random() < 0.3:
        for _ in range(rng.randint(1, 12)):
            flags.append("--arg=" + rng.choice(
                ["buf:x:1000000000000", "buf:x:64", "i32:1", "i64:-1",
                 "i64:99999999999999999999", "buf:y:0", "bogus", "i32:",
                 "buf:w:18446744073709551615", "f32:1.0"]))
    for flag in ("--strided-x", "--transpose-y", "--no-preload"):
        if rng.random() < 0.1:
            flags.append(flag)
    if inp.startswith("peer") and rng.random() < 0.8:
        flags.append("--abi=triton-peer")
    return {"tool": "emu", "flags": flags, "input": inp}


def cli_opt_case(rng, ctx):
    inp = rng.choice(["example", "example", "test", "empty", "userdir",
                      "missing", "file"])
    passes = rng.choice([
        ["--mlafp8-fuse-prequant"],
        ["--mlafp8-select-tiles=chip=" + rng.choice(["gfx942", "gfx950",
                                                     "gfx90a", "", "x" * 300])],
        ["--convert-mlafp8-to-gpu=chip=" + rng.choice(["gfx942", "gfx1100",
                                                       ""])],
        ["--mlafp8-fuse-prequant", "--mlafp8-to-hsaco=chip=gfx942 format=" +
         rng.choice(["isa", "bin", "object", "elf", ""])],
        ["--mlafp8-fuse-prequant", "--mlafp8-to-hsaco=chip=gfx942 dump=" +
         rng.choice(["@userdir", "@file", "@dangling", "@new", "/dev/null",
                     "@fifo"])],
        ["--pass-pipeline=" + rng.choice([
            "builtin.module(mlafp8-fuse-prequant)", "builtin.module(",
            "builtin.module(bogus)", "", "builtin.module(mlafp8-to-hsaco{"
            "chip=gfx942 jobs=99999999999999999999})"])],
        [rng.choice(["--bogus", "-split-input-file", "--mlir-disable-threading",
                     "--mlir-print-ir-after-all", "--verify-diagnostics"])],
    ])
    out = rng.choice(["/dev/null", "/dev/null", "@new-file", "@userdir",
                      "@nested", "/dev/full", "@file"])
    return {"tool": "opt", "flags": passes, "input": inp, "out": out}


def campaign_cli(ctx):
    camp = Campaign(ctx, "cli")
    ref = fixture(ctx, "ref-small")
    shared_cache = fixture(ctx, "cache-small")
    total = ctx.count("cli")
    cases = []
    for i in range(total):
        rng = ctx.rng("cli", i)
        maker = rng.choice([cli_aot_case] * 4 + [cli_emu_case] * 4 +
                           [cli_opt_case] * 2)
        cases.append((i, maker(rng, ctx)))
    work = ctx.work / "cli"
    rmtree(work)
    work.mkdir(parents=True)
    done = [0]

    def one(item):
        i, case = item
        cdir = work / str(i)
        cdir.mkdir()
        paths = make_paths(cdir)
        mounted = None
        try:
            run_cli_case(ctx, camp, i, case, cdir, paths, ref, shared_cache)
        finally:
            for m in ("full", "fullcache"):
                if os.path.ismount(cdir / m):
                    umount(cdir / m)
            rmtree(cdir)
            with camp.lock:
                done[0] += 1
                progress(camp, done[0], total)
        del mounted

    parallel(ctx, cases, one)
    return camp


def run_cli_case(ctx, camp, i, case, cdir, paths, ref, shared_cache):
    cwd = cdir
    timeout = ctx.timeout
    target = None
    replaceable = False
    if case["tool"] == "aot":
        out = case["out"]
        if out in ("bundle", "bundle+extra"):
            target = cdir / "bundle"
            shutil.copytree(ref, target)
            if out == "bundle+extra":
                (target / "mine.txt").write_text("the user's own file\n")
            replaceable = out == "bundle"
        elif out == "full":
            target = cdir / "full" / "out"
            if not try_mount_tmpfs(ctx, cdir / "full", "64k"):
                target = paths["new"]
            else:
                fill_tmpfs(cdir / "full")
            replaceable = True
        elif out == "dot":
            target, cwd = Path("."), paths["userdir"]
        else:
            target = paths[out]
            replaceable = out in ("new", "empty", "nested-new", "relative")
        cache = case["cache"]
        if cache == "shared":
            cache_path = cdir / "cache"
            shutil.copytree(shared_cache, cache_path)
        elif cache == "full":
            cache_path = cdir / "fullcache" / "c"
            if try_mount_tmpfs(ctx, cdir / "fullcache", "64k"):
                fill_tmpfs(cdir / "fullcache")
            else:
                cache_path = cdir / "cache"
        else:
            cache_path = paths[cache]
        cmd = [ctx.tool("mla-fp8-aot")] + SMALL + ["--quiet"] + \
            case["flags"] + ["-o", str(target), f"--cache-dir={cache_path}"]
        if "--verify" in case["flags"]:
            timeout = ctx.timeout * 3
    elif case["tool"] == "emu":
        inputs = dict(paths)
        inputs["bundle"] = ref
        inputs["hsaco"] = ref / "gfx942.hsaco"
        inputs["missing"] = cdir / "missing.hsaco"
        for name, n in (("peer", "512"), ("peer-huge",
                                           "99999999999999999999999")):
            p = cdir / f"triton_gfx942_N{n}_K128_BM16_BN128_w8.hsaco"
            shutil.copy(ref / "gfx942.hsaco", p)
            inputs[name] = p
        cmd = [ctx.tool("mla-fp8-emu"), str(inputs[case["input"]])] + \
            case["flags"]
    else:
        inputs = dict(paths)
        inputs["example"] = REPO / "docs/examples/deepseek-r1-tp8-gfx942.mlir"
        inputs["test"] = REPO / "test/Pipelines/to-hsaco-gfx942.mlir"
        inputs["missing"] = cdir / "missing.mlir"

        def at(value):
            def sub(m):
                name = m.group(1)
                if name == "new-file":
                    return str(cdir / "out.mlir")
                if name == "nested":
                    return str(cdir / "x" / "y" / "out.mlir")
                return str(inputs[name])
            return re.sub(r"@([\w-]+)", sub, value)
        cmd = [ctx.tool("mla-fp8-opt"), str(inputs[case["input"]])] + \
            [at(f) for f in case["flags"]] + ["-o", at(case["out"])]
        # A compiler's -o file is its to replace.
        opt_out = at(case["out"])
    # Everything in the case directory outside the target must survive.
    if case["tool"] != "opt":
        opt_out = None
    before = snapshot(cdir)
    parent_before = None
    abs_target = None
    if target is not None:
        abs_target = (cwd / target) if not target.is_absolute() else target
        parent = Path(os.path.abspath(abs_target)).parent
        if parent.is_dir() and str(parent).startswith(str(cdir)):
            parent_before = set(os.listdir(parent))
    proc = run_proc(cmd, timeout, cwd=cwd, env=ctx.env)
    after = snapshot(cdir)
    rel_target = None
    if abs_target is not None and str(os.path.abspath(abs_target)
                                      ).startswith(str(cdir) + "/"):
        rel_target = os.path.relpath(os.path.abspath(abs_target), cdir)
    lost = []
    for rel, digest in before.items():
        if rel.startswith("cache/") or rel.startswith("fullcache") or \
                rel.startswith("full/"):
            continue
        if proc.rc == 0 and replaceable and rel_target and \
                (rel == rel_target or rel.startswith(rel_target + "/")):
            continue
        if opt_out and os.path.join(str(cdir), rel) == opt_out:
            continue
        if after.get(rel) != digest:
            lost.append(rel)
    files = {"stderr.txt": proc.err}
    reason = crash_reason(proc)
    shown = " ".join(shlex.quote(str(c)) for c in cmd)
    if lost:
        cls, detail = "dataloss", "removed or changed: " + ", ".join(
            sorted(lost)[:6])
    elif case["tool"] == "aot" and proc.rc == 0 and target is not None and \
            "--list" not in case["flags"] and \
            verify_bundle(ctx, abs_target) is not None:
        cls, detail = "wrong", "exit 0 but no complete bundle at -o: " + \
            str(verify_bundle(ctx, abs_target))
    elif reason:
        cls, detail = "crash", reason + ": " + crash_line(proc.err)
    elif proc.rc == 0:
        cls, detail = "ok", ""
    else:
        cls, detail = "refused", first_line(proc.err)
    if cls in ("ok", "refused") and parent_before is not None and \
            proc.rc == 0:
        parent = Path(os.path.abspath(abs_target)).parent
        new = set(list_leaks(parent, abs_target.name)) - parent_before
        new = {n for n in new if n.startswith(".")}
        if new:
            cls, detail = "leak", "left " + ", ".join(sorted(new))
    camp.record(i, cls, detail, cmd=f"cd {shlex.quote(str(cwd))} && {shown}",
                files=files, extra={"case": case,
                                    "note": "paths are under the case "
                                            "directory of the run; rebuild "
                                            "them with make_paths()"})


# --------------------------------------------------------------------------
# 3. Kills and concurrent writers


def list_leaks(parent, name):
    """Entries beside the bundle `name` in `parent` that are neither the
    bundle, what it links to, nor lock files."""
    keep = {name}
    link = os.path.join(parent, name)
    if os.path.islink(link):
        keep.add(os.path.basename(os.path.realpath(link)))
    return sorted(n for n in os.listdir(parent)
                  if n not in keep and not re.search(LOCK_NAMES, n) and
                  n not in ("cache", "trace"))


# Entries a publisher may keep beside its output (its lock file).
LOCK_NAMES = r"\.lock$"


def count_syscalls(ctx, cmd, names):
    """How often `cmd` makes each syscall of `names` (strace)."""
    log = ctx.work / "kill" / "strace-count.txt"
    run_proc(["strace", "-f", "-qq", "-o", str(log), "-e",
              "trace=" + ",".join(names)] + cmd, 300, env=ctx.env)
    counts = collections.Counter()
    for line in log.read_text().splitlines():
        m = re.search(r"\b(\w+)\(", line.split(" ", 1)[-1])
        if m and m.group(1) in names:
            counts[m.group(1)] += 1
    return counts


def start_publishing_campaign(ctx, name):
    """What the campaigns that publish bundles start from: the campaign, the
    --no-cache reference bundle and a warm cache of each config, the
    references' digests, and an empty work directory."""
    camp = Campaign(ctx, name)
    refs = {c: fixture(ctx, "ref-" + c) for c in CONFIGS}
    warm = {c: fixture(ctx, "cache-" + c) for c in CONFIGS}
    ref_digest = {c: bundle_digest(p) for c, p in refs.items()}
    work = ctx.work / name
    rmtree(work)
    work.mkdir(parents=True)
    return camp, refs, warm, ref_digest, work


def campaign_kill(ctx):
    camp, refs, warm, ref_digest, work = start_publishing_campaign(ctx,
                                                                   "kill")
    # How long one run takes, so that kills land throughout it.
    probe = work / "probe"
    durations = {}
    for mode, extra, cache in (("warm", [], "warm"), ("cold", [], None),
                               ("verify", ["--verify"], "warm")):
        shutil.copytree(warm["small"], probe / "cache")
        proc = aot(ctx, probe / "out", "small", extra,
                   cache=probe / "cache" if cache else None)
        durations[mode] = max(proc.wall, 0.05)
        rmtree(probe)
    sys_names = ["rename", "renameat", "renameat2", "unlink", "unlinkat",
                 "rmdir", "mkdir", "mkdirat", "openat", "flock", "symlink",
                 "symlinkat", "linkat"]
    sys_counts = collections.Counter()
    if ctx.has_strace:
        shutil.copytree(refs["small"], probe / "bundle")
        shutil.copytree(warm["small"], probe / "cache")
        sys_counts = count_syscalls(
            ctx, [ctx.tool("mla-fp8-aot"), "-o", str(probe / "bundle"),
                  "--quiet", f"--cache-dir={probe / 'cache'}"] + SMALL,
            sys_names)
        rmtree(probe)
    print(f"  kill: run takes {durations}; syscalls "
          f"{dict(sys_counts)}", flush=True)
    total = ctx.count("kill")
    cases = []
    for i in range(total):
        rng = ctx.rng("kill", i)
        r = rng.random()
        if r < 0.35:
            mode = "delay"
        elif r < 0.6 and sys_counts:
            mode = "syscall"
        elif r < 0.85:
            mode = "same-dir"
        else:
            mode = "shared-cache"
        if mode == "syscall" and not sys_counts:
            mode = "delay"
        case = {"mode": mode, "old": rng.choice(["small"] * 4 + ["bias",
                                                               None])}
        if mode == "delay":
            case["run"] = rng.choice(["warm", "warm", "cold", "verify"])
            case["config"] = rng.choice(list(CONFIGS))
            case["delay"] = rng.uniform(0, durations[case["run"]] * 1.3)
        elif mode == "syscall":
            name = rng.choice([n for n in sys_names if sys_counts[n]] or
                              ["openat"])
            case["syscall"] = name
            case["when"] = rng.randint(1, sys_counts[name] or 1)
            case["config"] = rng.choice(["small", "bias"])
        else:
            case["writers"] = [
                {"config": rng.choice(list(CONFIGS)),
                 "extra": rng.choice([[], [], ["--no-cache"],
                                      ["--verify"]]),
                 "start": rng.uniform(0, 0.05),
                 "kill": rng.uniform(0, durations["warm"] * 2)
                 if rng.random() < 0.25 else None}
                for _ in range(rng.choice((2, 2, 3)))]
        cases.append((i, case))
    done = [0]

    def one(item):
        i, case = item
        cdir = work / str(i)
        cdir.mkdir()
        try:
            run_kill_case(ctx, camp, i, case, cdir, refs, warm, ref_digest)
        finally:
            rmtree(cdir)
            with camp.lock:
                done[0] += 1
                progress(camp, done[0], total)

    parallel(ctx, cases, one, jobs=min(ctx.jobs, 2))
    return camp


def run_kill_case(ctx, camp, i, case, cdir, refs, warm, ref_digest):
    dest = cdir / "bundle"
    cache = cdir / "cache"
    shutil.copytree(warm["small"], cache)
    if case["mode"] != "shared-cache":
        for c in CONFIGS:
            if c != "small":
                shutil.copytree(warm[c], cache, dirs_exist_ok=True)
    if case["old"]:
        shutil.copytree(refs[case["old"]], dest)
    existed = dest.exists()
    allowed = {ref_digest[case["old"]]} if case["old"] else set()
    procs = []
    crashes = []
    wrong = []
    cmds = []
    if case["mode"] in ("delay", "syscall"):
        allowed.add(ref_digest[case["config"]])
        extra = ["--verify"] if case.get("run") == "verify" else []
        use_cache = None if case.get("run") == "cold" else cache
        prefix = ()
        if case["mode"] == "syscall":
            prefix = ("strace", "-f", "-qq", "-o", "/dev/null", "-e",
                      f"trace={case['syscall']}", "-e",
                      f"inject={case['syscall']}:signal=KILL:"
                      f"when={case['when']}")
        proc = aot(ctx, dest, case["config"], extra, cache=use_cache,
                   kill_after=case.get("delay"), prefix=prefix)
        cmds.append(proc.cmd)
        procs.append(proc)
    elif case["mode"] == "same-dir":
        threads = []
        results = [None] * len(case["writers"])

        def writer(k, w):
            time.sleep(w["start"])
            results[k] = aot(ctx, dest, w["config"], w["extra"], cache=cache,
                             kill_after=w["kill"])

        for k, w in enumerate(case["writers"]):
            allowed.add(ref_digest[w["config"]])
            t = threading.Thread(target=writer, args=(k, w))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        procs = results
        cmds = [p.cmd for p in procs]
    else:
        rmtree(cache)
        threads = []
        results = [None] * len(case["writers"])

        def writer(k, w):
            time.sleep(w["start"])
            results[k] = aot(ctx, cdir / f"out{k}", w["config"],
                             [e for e in w["extra"] if e != "--no-cache"],
                             cache=cache, kill_after=w["kill"])

        for k, w in enumerate(case["writers"]):
            t = threading.Thread(target=writer, args=(k, w))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        procs = results
        cmds = [p.cmd for p in procs]
        for k, (w, p) in enumerate(zip(case["writers"], procs)):
            if p.rc == 0 and w["kill"] is None and \
                    bundle_digest(cdir / f"out{k}") != \
                    ref_digest[w["config"]]:
                wrong.append(f"writer {k} ({w['config']}) published a bundle "
                             f"that differs from a --no-cache build")
        # Whatever the writers left in the cache must give right bundles,
        # and the next run into each writer's output removes the staging a
        # killed writer left there.
        for k, w in enumerate(case["writers"]):
            again = aot(ctx, cdir / f"out{k}", w["config"], cache=cache)
            if again.rc == 0 and bundle_digest(cdir / f"out{k}") != \
                    ref_digest[w["config"]]:
                wrong.append(f"a later run from the shared cache published "
                             f"a wrong {w['config']} bundle")
            if crash_reason(again):
                crashes.append("later run: " + crash_reason(again))
    killed = [bool(case.get("delay") is not None or case["mode"] == "syscall")
              ] if case["mode"] in ("delay", "syscall") else \
        [w["kill"] is not None for w in case["writers"]]
    for p, k in zip(procs, killed):
        reason = crash_reason(p, killed_by_us=k)
        # SIGKILL is what a killed writer (or strace, for it: 137) reports.
        if k and reason in ("exit status 137", "timeout"):
            reason = None
        if reason:
            crashes.append(reason + ": " + crash_line(p.err))
    loss = None
    if case["mode"] != "shared-cache":
        if not os.path.lexists(dest):
            if existed:
                loss = "the bundle directory is missing after the run"
        else:
            problem = verify_bundle(ctx, dest)
            if problem:
                loss = "the bundle directory is not a complete bundle: " + \
                    problem
            elif bundle_digest(dest) not in allowed:
                loss = "the bundle directory matches neither the old " \
                       "bundle nor any writer's (mixed)"
        # Staging of dead writers must be gone after the next good run.
        later = aot(ctx, dest, "small", cache=cache)
        if crash_reason(later):
            crashes.append("next run: " + crash_reason(later))
        leaks = list_leaks(cdir, "bundle") if later.rc == 0 else []
        if later.rc != 0 and not loss and not crashes:
            wrong.append("the next run after the kill failed: " +
                         first_line(later.err))
    else:
        leaks = [n for n in list_leaks(cdir, "__none__")
                 if n.startswith(".")]
    files = {"stderr-%d.txt" % k: p.err for k, p in enumerate(procs)}
    cmd = "\n".join(" ".join(shlex.quote(str(c)) for c in c_)
                    for c_ in cmds)
    if loss:
        cls, detail = "dataloss", loss
    elif wrong:
        cls, detail = "wrong", wrong[0]
    elif crashes:
        cls, detail = "crash", crashes[0]
    elif leaks:
        cls, detail = "leak", "left " + ", ".join(leaks[:5])
    else:
        failed = [p for p, k in zip(procs, killed) if p.rc != 0 and not k]
        cls, detail = ("refused", first_line(failed[0].err)) if failed \
            else ("ok", "")
    camp.record(i, cls, detail, cmd=cmd, files=files,
                extra={"case": case, "note": "the old bundle was a copy of "
                       "the fixture ref-<old> (a --no-cache build of that "
                       "config); kill timings are in `case`"})


# --------------------------------------------------------------------------
# 4. Cache corruption


def mutate_json_value(rng, value, depth=0):
    """A random edit of one leaf or member of a JSON value (in place where
    possible); returns the new value."""
    if isinstance(value, dict) and value and (depth < 6):
        key = rng.choice(sorted(value))
        r = rng.random()
        if r < 0.1:
            del value[key]
        elif r < 0.15:
            value["x_" + key] = value[key]
        else:
            value[key] = mutate_json_value(rng, value[key], depth + 1)
        return value
    if isinstance(value, list) and value and depth < 6:
        r = rng.random()
        j = rng.randrange(len(value))
        if r < 0.1:
            del value[j]
        elif r < 0.15:
            value.insert(j, value[j])
        elif r < 0.2:
            return []
        elif r < 0.25 and len(value) > 1:
            k = rng.randrange(len(value))
            value[j], value[k] = value[k], value[j]
        else:
            value[j] = mutate_json_value(rng, value[j], depth + 1)
        return value
    return mutate_leaf(rng, value)


def mutate_leaf(rng, value):
    r = rng.random()
    if isinstance(value, bool):
        return not value if r < 0.7 else rng.choice([0, 1, "true", None])
    if isinstance(value, int):
        return rng.choice([0, -1, 1, 2, value + 1, value - 1, value * 2,
                           value // 2, 2**31, 2**32, 2**63 - 1, 2**63,
                           2**64, -2**63, 10**30, 0.5, 1e308, str(value),
                           None, [], {}, [value]])
    if isinstance(value, float):
        return rng.choice([0.0, -1.0, 1e308, value * 2, "x", None])
    if isinstance(value, str):
        return rng.choice(["", value + "x", value[:-1], value.upper(),
                           "x" * 100000, "../" + value, "/dev/zero", "0",
                           "ceil(M/0)", "ceil(M/18446744073709551616)",
                           "ceil(M/4294967296)", "M*B*1000000000000",
                           "ceil(M/16)+", "B*B*B*B*B*B*B*B", "1", "(",
                           "ceil(M/-1)", "ceil(M/1)", "B", "0", None, 1,
                           [value], {"x": value}])
    if value is None:
        return rng.choice([0, "", [], {}])
    return rng.choice([None, 0, "", []])


def corrupt_cache(ctx, rng, cdir, cache, own):
    """Damages `cache` one way, mostly in the entries named `own` (those
    the run reads); returns a description."""
    every = sorted(p for p in cache.rglob("*") if p.is_file())
    files = [p for p in every if str(p.relative_to(cache)) in own] or every
    kind = rng.choice(["bitflip", "bitflip", "bitflip", "truncate", "append",
                       "delete", "json", "json", "json", "swap", "dir",
                       "dev-zero", "fifo", "empty", "readonly", "full",
                       "cache-is-file"])
    if not files:
        kind = "cache-is-file"
    path = rng.choice(files) if files else None
    if kind in ("json",):
        jsons = [p for p in files if p.suffix == ".json"]
        if not jsons:
            kind = "bitflip"
        else:
            path = rng.choice(jsons)
    if kind == "bitflip":
        data = bytearray(path.read_bytes())
        flips = rng.choice((1, 1, 2, 8))
        where = []
        for _ in range(flips):
            k = rng.randrange(len(data) * 8)
            data[k // 8] ^= 1 << (k % 8)
            where.append(k)
        path.write_bytes(data)
        return f"bitflip {path.name} bits {where}"
    if kind == "truncate":
        data = path.read_bytes()
        n = rng.choice((0, rng.randrange(len(data) + 1)))
        path.write_bytes(data[:n])
        return f"truncate {path.name} to {n}"
    if kind == "append":
        with open(path, "ab") as f:
            f.write(os.urandom(rng.randint(1, 64)))
        return f"append garbage to {path.name}"
    if kind == "delete":
        path.unlink()
        return f"delete {path.name}"
    if kind == "json":
        try:
            value = json.loads(path.read_text())
        except ValueError:
            value = None
        r = rng.random()
        if r < 0.15 and isinstance(value, dict) and "kernels" in value:
            value["kernels"] = []
            what = "kernels: []"
        elif r < 0.35 and isinstance(value, dict):
            changed = False
            for k in value.get("kernels", []):
                if isinstance(k, dict) and isinstance(k.get("tile"), dict):
                    k["tile"]["split_k"] = rng.choice([1, 2, 8])
                    changed = True
            what = "tile.split_k edited" if changed else "no tile"
        else:
            value = mutate_json_value(rng, value)
            what = "random edit"
        path.write_text(json.dumps(value))
        return f"json {path.name}: {what}"
    if kind == "swap":
        others = [p for p in every if p != path and p.suffix == path.suffix]
        if others:
            other = rng.choice(others)
            a, b = path.read_bytes(), other.read_bytes()
            path.write_bytes(b)
            other.write_bytes(a)
            return f"swap {path.name} <-> {other.name}"
        path.write_bytes(b"")
        return f"empty {path.name}"
    if kind == "dir":
        path.unlink()
        path.mkdir()
        return f"{path.name} replaced by a directory"
    if kind == "dev-zero":
        path.unlink()
        os.symlink("/dev/zero", path)
        return f"{path.name} -> /dev/zero"
    if kind == "fifo":
        path.unlink()
        os.mkfifo(path)
        return f"{path.name} is a FIFO"
    if kind == "empty":
        path.write_bytes(b"")
        return f"empty {path.name}"
    if kind == "readonly":
        # Root ignores modes: a read-only bind mount makes it unwritable.
        for p in files:
            p.unlink()
        if subprocess.run(["mount", "--bind", str(cache), str(cache)],
                          stderr=subprocess.DEVNULL).returncode == 0 and \
                subprocess.run(["mount", "-o", "remount,ro,bind", str(cache)],
                               stderr=subprocess.DEVNULL).returncode == 0:
            return "empty read-only cache directory"
        umount(cache)
        os.chmod(cache, 0o500)
        return "empty cache directory with mode 0500"
    if kind == "full":
        rmtree(cache)
        if try_mount_tmpfs(ctx, cache, "64k"):
            fill_tmpfs(cache)
            return "cache on a full file system"
        cache.mkdir()
        return "empty cache (tmpfs not mountable)"
    rmtree(cache)
    cache.write_text("not a directory\n")
    return "cache path is a regular file"


def campaign_cache(ctx):
    camp, refs, warm, ref_digest, work = start_publishing_campaign(ctx,
                                                                   "cache")
    total = ctx.count("cache")
    cases = [(i, ctx.rng("cache", i)) for i in range(total)]
    done = [0]

    def one(item):
        i, rng = item
        cdir = work / str(i)
        cdir.mkdir()
        cache = cdir / "cache"
        cache.mkdir()
        for c in CONFIGS:
            shutil.copytree(warm[c], cache, dirs_exist_ok=True)
        config = rng.choice(list(CONFIGS))
        try:
            what = corrupt_cache(ctx, rng, cdir, cache,
                                 {str(p.relative_to(warm[config]))
                                  for p in warm[config].rglob("*")})
            saved = {}
            if cache.is_dir():
                for p in cache.rglob("*"):
                    if p.is_file() and not p.is_symlink() and \
                            p.name != ".filler":
                        saved["cache/" + p.name] = p.read_bytes()
            outcomes = []
            for run in (1, 2):
                out = cdir / f"out{run}"
                proc = aot(ctx, out, config, cache=cache)
                reason = crash_reason(proc)
                if reason:
                    outcomes.append(("crash", f"run {run}: {reason}: "
                                     f"{crash_line(proc.err)}", proc))
                elif proc.rc == 0 and bundle_digest(out) != \
                        ref_digest[config]:
                    outcomes.append(("wrong", f"run {run} exited 0 with a "
                                     f"bundle that differs from --no-cache "
                                     f"({what})", proc))
                elif proc.rc != 0:
                    outcomes.append(("refused", first_line(proc.err), proc))
                else:
                    outcomes.append(("ok", "", proc))
                if proc.timed_out:
                    break
            cls, detail, proc = min(outcomes,
                                    key=lambda o: CLASSES.index(o[0]))
            if cls == "crash" or cls == "wrong" or cls == "refused":
                detail = detail if cls != "refused" else \
                    f"{what}: {detail}"
            camp.record(i, cls, detail, cmd=proc.cmd,
                        files=dict(saved, **{"stderr.txt": proc.err}),
                        extra={"corruption": what, "config": config})
        finally:
            for m in (cache, cdir / "cache"):
                umount(m)
            rmtree(cdir)
            with camp.lock:
                done[0] += 1
                progress(camp, done[0], total)

    parallel(ctx, cases, one, jobs=min(ctx.jobs, 2))
    return camp


# --------------------------------------------------------------------------
# 5. Manifest and code-object mutations; 6. Python arguments.
# These run the Python package in forked children of this process, so that
# a signal or an exit in the library is seen as the death of the child.


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
            m = max(k["min_m"], rng.randint(1, 4))
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
        script = (f"import sys; sys.path.insert(0, {str(REPO)!r}); "
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

PY_PERTURBATIONS = [
    "huge-m", "huge-m", "huge-m", "w_scale", "w_scale", "w_scale",
    "group_size", "group_size", "group_size", "dtype", "x-dtype", "x-shape",
    "x-view", "x-view", "wq", "wq", "bias", "bias", "yq", "yq", "yq",
    "yq-overlap", "splitK", "flags", "chip", "api", "api",
]


def build_pyargs(spec):
    """Child: the arguments of one drop-in call from `spec`; returns
    (args, kwargs, reference-kwargs or None when the reference cannot be
    computed)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    from numpy.lib.stride_tricks import as_strided  # pylint: disable=C0415
    rng = random.Random(spec["seed"])
    proj = spec["proj"]
    n, k = SHAPES[proj]
    batch, m = spec["B"], spec["M"]
    with_bias = spec["bias"]
    x, wq, w_scale, bias = problem_inputs(proj, m, batch, with_bias)
    kw = {"group_size": 128, "bias": bias}
    tbm, tbm_in = spec["tbm"], spec["tbm_in"]
    X = np.ascontiguousarray(x.transpose(1, 0, 2)) if tbm_in else x
    W, S = wq, w_scale
    y_shape = (m, batch, n) if tbm else (batch, m, n)
    p = spec["perturb"]
    note = p
    feasible = True
    if p == "huge-m":
        # As large as numpy can still describe (size * 2 bytes < 2**63).
        big = rng.choice([2**31 - 1, 2**31, 2**32, 2**32 + 1, 2**40,
                          2**44, 2**48])
        note = f"M={big}"
        shape = (big, batch, k) if tbm_in else (batch, big, k)
        X = as_strided(x, shape=shape, strides=(0, 0, 2))
        if rng.random() < 0.7:
            ys = (big, batch, n) if tbm else (batch, big, n)
            kw["YQ"] = as_strided(np.zeros(n, np.uint16), shape=ys,
                                  strides=(0, 0, 2))
            note += " with a zero-stride YQ"
        feasible = False
    elif p == "w_scale":
        choice = rng.choice(["None", "str", "empty", "nan", "inf", "zero",
                             "neg", "too-many", "int-array", "2d", "object",
                             "complex", "list", "float64", "huge-list"])
        note = f"w_scale={choice}"
        S = {"None": None, "str": "abc", "empty": np.array([], np.float32),
             "nan": np.float32("nan"), "inf": np.float32("inf"),
             "zero": np.float32(0), "neg": -w_scale,
             "too-many": np.ones(batch + 1, np.float32),
             "int-array": np.array([1], np.int32),
             "2d": np.ones((1, 1), np.float32), "object": object(),
             "complex": 1 + 2j, "list": [float(np.asarray(w_scale).ravel()[0])],
             "float64": np.float64(np.asarray(w_scale).ravel()[0]),
             "huge-list": [1.0] * 100000}[choice]
    elif p == "group_size":
        value = rng.choice([2**70, 0, -128, 127, 64, 256, 1.5, "128", None,
                            True, 2**63, 2**64, -2**70, 128.0])
        note = f"group_size={value!r}"
        kw["group_size"] = value
    elif p == "dtype":
        value = rng.choice(["f32", np.float32, 0, "bf16", "f16", "",
                            "bfloat16", np.float16, object()])
        note = f"dtype={value!r}"
        kw["dtype"] = value
    elif p == "x-dtype":
        dt = rng.choice([np.float32, np.uint8, np.int16, np.bool_, np.float16,
                         np.int64, object])
        note = f"X dtype {np.dtype(dt).name}"
        X = X.astype(dt)
    elif p == "x-shape":
        choice = rng.choice(["2d", "4d", "B0", "M0", "K-mismatch", "scalar",
                             "list"])
        note = f"X {choice}"
        if choice == "2d":
            X = X.reshape(-1, k)
        elif choice == "4d":
            X = X[None]
        elif choice == "B0":
            X = X[:, :0] if tbm_in else X[:0]
        elif choice == "M0":
            X = X[:0] if tbm_in else X[:, :0]
        elif choice == "K-mismatch":
            X = X[..., :k // 2]
        elif choice == "scalar":
            X = np.uint16(1)
        else:
            X = X.tolist()
    elif p == "x-view":
        choice = rng.choice(["k-stride-2", "reversed-m", "reversed-b",
                             "fortran", "zero-stride-rows", "unaligned",
                             "readonly", "slice-of-wider"])
        note = f"X {choice}"
        if choice == "k-stride-2":
            wide = np.repeat(X, 2, axis=2)
            X = wide[..., ::2]
        elif choice == "reversed-m":
            X = X[::-1] if tbm_in else X[:, ::-1]
        elif choice == "reversed-b":
            X = X[:, ::-1] if tbm_in else X[::-1]
        elif choice == "fortran":
            X = np.asfortranarray(X)
        elif choice == "zero-stride-rows":
            shp = X.shape
            X = as_strided(X, shape=shp, strides=(0, 0, 2) if tbm_in else
                           (X.strides[0], 0, 2))
        elif choice == "unaligned":
            buf = np.zeros(X.nbytes + 1, np.uint8)
            view = buf[1:].view(np.uint16).reshape(X.shape)
            view[...] = X
            X = view
        elif choice == "readonly":
            X = X.copy()
            X.flags.writeable = False
        else:
            wide = np.zeros(X.shape[:2] + (k + 64,), np.uint16)
            wide[..., :k] = X
            X = wide[..., :k]
    elif p == "wq":
        choice = rng.choice(["f32", "noncontig", "N0", "B-mismatch",
                             "K-mismatch", "fortran", "int8"])
        note = f"WQ {choice}"
        if choice == "f32":
            W = W.astype(np.float32)
        elif choice == "noncontig":
            W = np.repeat(W, 2, axis=2)[..., ::2]
        elif choice == "N0":
            W = W[:, :0]
        elif choice == "B-mismatch":
            W = np.concatenate([W, W])
        elif choice == "K-mismatch":
            W = np.ascontiguousarray(W[..., :k // 2])
        elif choice == "fortran":
            W = np.asfortranarray(W)
        else:
            W = W.view(np.int8)
    elif p == "bias":
        choice = rng.choice(["shape", "f32", "1d", "noncontig", "huge"])
        note = f"bias {choice}"
        base = bias if bias is not None else np.zeros((batch, n), np.uint16)
        kw["bias"] = {"shape": base[:, :n // 2], "f32":
                      base.astype(np.float32), "1d": base.reshape(-1),
                      "noncontig": np.repeat(base, 2, axis=1)[:, ::2],
                      "huge": np.zeros((batch, n + 1), np.uint16)}[choice]
    elif p in ("yq", "yq-overlap"):
        choice = "overlap" if p == "yq-overlap" else rng.choice(
            ["shape", "readonly", "reversed", "n-stride-2", "f16-dtype",
             "uint8", "slice-of-wider", "list", "fortran"])
        note = f"YQ {choice}"
        if choice == "overlap":
            kw["YQ"] = as_strided(np.zeros(y_shape[2] * 2, np.uint16),
                                  shape=y_shape, strides=(0, 0, 2))
        elif choice == "shape":
            kw["YQ"] = np.zeros((y_shape[0], y_shape[1], n + 1), np.uint16)
        elif choice == "readonly":
            y = np.zeros(y_shape, np.uint16)
            y.flags.writeable = False
            kw["YQ"] = y
        elif choice == "reversed":
            kw["YQ"] = np.zeros(y_shape, np.uint16)[:, ::-1]
        elif choice == "n-stride-2":
            kw["YQ"] = np.zeros(y_shape[:2] + (2 * n,), np.uint16)[..., ::2]
        elif choice == "f16-dtype":
            kw["YQ"] = np.zeros(y_shape, np.float16)
        elif choice == "uint8":
            kw["YQ"] = np.zeros(y_shape, np.uint8)
        elif choice == "slice-of-wider":
            kw["YQ"] = np.zeros(y_shape[:2] + (n + 64,), np.uint16)[..., :n]
        elif choice == "fortran":
            kw["YQ"] = np.asfortranarray(np.zeros(y_shape, np.uint16))
        else:
            kw["YQ"] = np.zeros(y_shape, np.uint16).tolist()
    elif p == "splitK":
        value = rng.choice([0, -1, 2**70, "x", 4, 1.5, None])
        note = f"splitK={value!r}"
        kw["splitK"] = value
    elif p == "flags":
        value = rng.choice(["yes", 2, None, 1.0, "False"])
        which = rng.choice(["transpose_bm", "transpose_bm_in"])
        note = f"{which}={value!r}"
        kw[which] = value
    elif p == "chip":
        value = rng.choice(["gfx950", "", "gfx942\0", 942, "GFX942",
                            "gfx90a"])
        note = f"chip={value!r}"
        kw["chip"] = value
    kw.setdefault("transpose_bm", tbm)
    kw.setdefault("transpose_bm_in", tbm_in)
    return (X, W, S), kw, feasible, note


def pyargs_call(spec):
    """Child: one drop-in call with bad arguments, checked against the
    reference; returns 'ok', or 'wrong: why'."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import mla_fp8  # pylint: disable=import-outside-toplevel
    if spec["perturb"] == "api":
        return pyargs_api(spec)
    mla_fp8.set_bundle(spec["bundle"])
    (X, W, S), kw, feasible, note = build_pyargs(spec)
    yq = kw.get("YQ")
    y_before = None
    if isinstance(yq, np.ndarray) and yq.size < 10**7:
        y_before = yq.copy()
    Y = mla_fp8.\
        batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant(  # noqa: E501
            X, W, S, **kw)
    if not feasible:
        return f"wrong: accepted {note} and returned"
    if yq is not None and Y is not yq:
        return "wrong: did not return YQ"
    # The reference decides what the arguments mean.
    tbm_in = kw["transpose_bm_in"]
    tbm = kw["transpose_bm"]
    try:
        x = np.asarray(X)
        x = x.transpose(1, 0, 2) if tbm_in is True else x
        out_type = {"f16": "f16", "float16": "f16"}.get(
            str(kw.get("dtype")), "bf16")
        out = None
        if isinstance(yq, np.ndarray):
            out = np.lib.stride_tricks.as_strided(
                np.zeros(yq.size + yq.shape[-1] * 4, np.uint16),
                shape=yq.shape, strides=yq.strides) if 0 in yq.strides \
                else np.zeros(yq.shape, np.uint16)
        ref = mla_fp8.reference_prequant_bmm(
            x, np.asarray(W), S, fp8_format="f8E4M3FNUZ",
            group_size=kw["group_size"], out_type=out_type,
            bias=kw.get("bias"), transpose_bm=bool(tbm), out=out)
    except Exception as error:  # pylint: disable=broad-except
        return (f"wrong: accepted {note}, which the reference refuses "
                f"({type(error).__name__}: {str(error)[:100]})")
    got = np.asarray(Y)
    if got.shape != ref.shape:
        return f"wrong: {note}: Y shape {got.shape}, reference {ref.shape}"
    conv = mla_fp8.from_f16_bits if out_type == "f16" else \
        mla_fp8.from_bf16_bits
    a, b = conv(np.ascontiguousarray(got)), conv(ref)
    if not np.allclose(a, b, rtol=2e-2, atol=2e-2, equal_nan=True):
        bad = int(np.sum(~np.isclose(a, b, rtol=2e-2, atol=2e-2,
                                     equal_nan=True)))
        untouched = y_before is not None and np.array_equal(got, y_before)
        return (f"wrong: {note}: {bad} of {a.size} values differ from the "
                f"reference" + (" (Y untouched)" if untouched else ""))
    return "ok"


def pyargs_api(spec):
    """Child: the package's other entry points with bad arguments."""
    import mla_fp8  # pylint: disable=import-outside-toplevel
    rng = random.Random(spec["seed"])
    bundle = mla_fp8.load_bundle(spec["bundle"])
    kernel = bundle.kernels()[0]
    choice = rng.choice(["grid-2^40", "grid-2^32", "grid-neg", "grid-huge-b",
                         "workspace-huge", "find-huge-m", "find-bad",
                         "gen-equal-dims", "gen-full-disk", "gen-sentinel",
                         "gen-huge"])
    # A grid is either refused or exact: y = ceil(M / block_m), z = B.
    sizes = {"grid-2^40": (2**40, 2), "grid-2^32": (2**36, 2**33),
             "grid-neg": (-1, 2), "grid-huge-b": (1, 2**70)}
    if choice in sizes:
        m, b = sizes[choice]
        grid = tuple(kernel.grid(m, b))
        if m < 0:
            return f"wrong: grid({m}, {b}) accepted: {grid}"
        want = (-(-m // kernel.block_m), b)
        if grid[0] > 0 and tuple(grid[1:]) == want:
            return "ok"
        return f"wrong: grid({m}, {b}) = {grid}, not (x, {want[0]}, {b})"
    if choice == "workspace-huge":
        kernel.workspace_bytes(2**62, 2**62)
        return "ok"
    if choice == "find-huge-m":
        bundle.find_kernel("gfx942", 512, 128, 2**70)
        return "ok"
    if choice == "find-bad":
        bundle.find_kernel(rng.choice([None, 942, ""]), "512", -1, None)
        return "ok"
    out = Path(spec["work"]) / "gen"
    if choice == "gen-equal-dims":
        mla_fp8.generate_bundle(str(out), heads=4, kv_lora_rank=128,
                                qk_nope_head_dim=128, v_head_dim=128, tp=[1],
                                chips=["gfx942"], max_m=16)
        return "ok"
    if choice == "gen-full-disk":
        if not Path(spec["full"]).is_dir():
            raise RuntimeError("no full file system here (skipped)")
        mla_fp8.generate_bundle(str(Path(spec["full"]) / "out"), heads=4,
                                kv_lora_rank=512, qk_nope_head_dim=128,
                                v_head_dim=128, tp=[1], chips=["gfx942"],
                                max_m=16)
        return "wrong: generate_bundle reported success on a full disk"
    if choice == "gen-sentinel":
        user = Path(spec["work"]) / "userdir"
        user.mkdir(parents=True, exist_ok=True)
        (user / "notes.txt").write_text("precious\n")
        try:
            mla_fp8.generate_bundle(str(user), heads=4, kv_lora_rank=512,
                                    qk_nope_head_dim=128, v_head_dim=128,
                                    tp=[1], chips=["gfx942"], max_m=16)
        finally:
            if not (user / "notes.txt").exists():
                # Reported through the result: data loss.
                print("DATALOSS", flush=True)
        return "ok" if (user / "notes.txt").exists() else \
            "dataloss: generate_bundle deleted a user's directory"
    mla_fp8.generate_bundle(str(out), heads=rng.choice([2**40, -1, 2**70]),
                            max_m=rng.choice([2**63, 0]))
    return "wrong: generate_bundle accepted huge dimensions"


def campaign_pyargs(ctx):
    camp = Campaign(ctx, "pyargs")
    base = fixture(ctx, "ref-bias")
    import_package(ctx)
    work = ctx.work / "pyargs"
    for m in work.glob("*/full"):
        umount(m)
    rmtree(work)
    work.mkdir(parents=True)
    total = ctx.count("pyargs")
    tasks = []
    for i in range(total):
        rng = ctx.rng("pyargs", i)
        cdir = work / str(i)
        spec = {"seed": rng.randrange(2**32), "proj": rng.choice(list(SHAPES)),
                "B": rng.randint(1, 3), "M": rng.randint(1, 4),
                "bias": rng.random() < 0.3, "tbm": rng.random() < 0.3,
                "tbm_in": rng.random() < 0.3,
                "perturb": rng.choice(PY_PERTURBATIONS),
                "bundle": str(base), "work": str(cdir),
                "full": str(cdir / "full")}
        tasks.append((i, spec))

    def prepared():
        for i, spec in tasks:
            cdir = Path(spec["work"])
            cdir.mkdir(parents=True)
            if spec["perturb"] == "api" and \
                    try_mount_tmpfs(ctx, cdir / "full", "64k"):
                fill_tmpfs(cdir / "full")
            yield i, spec

    def on_result(task, result):
        i, spec = task
        if "died" in result:
            cls = "crash"
            detail = result["died"] + ": " + crash_line(result["stderr"])
        elif "exc" in result:
            cls, detail = "refused", f"{result['exc']}: {result['msg'][:160]}"
        elif result["ok"] == "ok":
            cls, detail = "ok", ""
        elif result["ok"].startswith("dataloss"):
            cls, detail = "dataloss", result["ok"]
        else:
            cls, detail = "wrong", result["ok"]
        if cls == "crash" and "DATALOSS" in result.get("stderr", ""):
            cls = "dataloss"
        cmd = (f"PYTHONPATH={ctx.build / 'python-bindings'} /usr/bin/python3 "
               f"-c 'import importlib.util as u; s = u.spec_from_file_location"
               f"(\"r\", \"{Path(__file__).resolve()}\"); r = "
               f"u.module_from_spec(s); s.loader.exec_module(r); "
               f"import json; print(r.pyargs_call(json.load(open("
               f"\"spec.json\"))))'")
        camp.record(i, cls, detail, cmd=cmd,
                    files={"spec.json": json.dumps(spec, indent=1),
                           "stderr.txt": result.get("stderr", "")},
                    extra={"spec": spec})
        umount(Path(spec["work"]) / "full")
        rmtree(spec["work"])

    fork_map(ctx, camp, prepared(), pyargs_call, ctx.py_timeout, on_result)
    return camp


# --------------------------------------------------------------------------
# Driver

RUNNERS = {"ir": campaign_ir, "cli": campaign_cli, "kill": campaign_kill,
           "cache": campaign_cache, "manifest": campaign_manifest,
           "codeobj": campaign_codeobj, "pyargs": campaign_pyargs}
HEADER = ("campaign", "inputs", "crashes", "silent wrong", "data loss",
          "leaked staging", "clean refusals", "ok", "seconds")


def print_table(rows, out=sys.stdout):
    total = ["total"] + [sum(r[k] for r in rows) for k in range(1, 9)]
    lines = ["| " + " | ".join(HEADER) + " |",
             "|" + "---|" * len(HEADER)]
    for r in rows + [total]:
        lines.append("| " + " | ".join(str(v) for v in r) + " |")
    text = "\n".join(lines)
    print(text, file=out, flush=True)
    return text


def main(argv=None):
    global LOCK_NAMES  # pylint: disable=global-statement
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("campaign", choices=CAMPAIGNS + ("all",), nargs="+")
    parser.add_argument("--build", default=str(REPO / "build"),
                        help="build directory (bin/, python-bindings/)")
    parser.add_argument("--results", default="/tmp/campaign-results",
                        help="where failing inputs are saved")
    parser.add_argument("--work", default="/tmp/campaign-work",
                        help="scratch directory (emptied per campaign)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiplies every campaign's input count")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=20,
                        help="seconds per tool run before it counts as a "
                             "hang")
    parser.add_argument("--py-timeout", type=float, default=10,
                        help="seconds per Python case before it counts as a "
                             "hang")
    parser.add_argument("--lock-names", default=LOCK_NAMES,
                        help="regex of entries a publisher may keep beside "
                             "its output (not counted as leaked staging)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every failing input as it is found")
    args = parser.parse_args(argv)
    LOCK_NAMES = args.lock_names
    ctx = Context(args)
    ctx.py_timeout = args.py_timeout
    for tool in ("mla-fp8-opt", "mla-fp8-aot", "mla-fp8-emu"):
        if not os.access(ctx.tool(tool), os.X_OK):
            sys.exit(f"campaign: {ctx.tool(tool)} is missing; build first")
    resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    names = CAMPAIGNS if "all" in args.campaign else \
        [c for c in CAMPAIGNS if c in args.campaign]
    ctx.work.mkdir(parents=True, exist_ok=True)
    ctx.results.mkdir(parents=True, exist_ok=True)
    rows = []
    summary = {"seed": args.seed, "scale": args.scale,
               "build": str(ctx.build), "campaigns": {}}
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short",
                               "HEAD"], capture_output=True, text=True
                              ).stdout.strip()
    except OSError:
        head = "?"
    summary["commit"] = head
    start = time.monotonic()
    for name in names:
        print(f"== {name}", flush=True)
        camp = RUNNERS[name](ctx)
        rows.append(camp.row())
        summary["campaigns"][name] = {
            "counts": {c: camp.counts[c] for c in COLUMNS},
            "findings": [{"class": c, "detail": d, "count": n}
                         for (c, d), n in camp.details.most_common()
                         if c != "refused"],
            "refusals": [{"detail": d, "count": n}
                         for (c, d), n in camp.details.most_common(30)
                         if c == "refused"]}
        print_table([camp.row()])
    print(f"\ncommit {head}, seed {args.seed}, scale {args.scale}, "
          f"{round(time.monotonic() - start)} s; failing inputs under "
          f"{ctx.results}\n")
    table = print_table(rows)
    summary["table"] = table
    (ctx.results / "summary.json").write_text(json.dumps(summary, indent=1))
    (ctx.results / "table.md").write_text(table + "\n")
    bad = sum(r[2] + r[3] + r[4] + r[5] for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
