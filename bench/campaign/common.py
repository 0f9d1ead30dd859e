"""Shared machinery of the campaigns: processes, classification, snapshots,
bundle digests, tmpfs helpers and the AOT fixtures. Part of bench/campaign/run.py."""

import collections
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
CLASSES = ("dataloss", "wrong", "crash", "leak", "refused", "ok")
COLUMNS = ("inputs", "crash", "wrong", "dataloss", "leak", "refused", "ok")
CAMPAIGNS = ("ir", "cli", "kill", "cache", "manifest", "codeobj", "pyargs",
             "miss", "tmpdir", "byteorder", "emubounds", "forged", "finder")
# Counts at --scale 1 (about 7,800 in all).
BASE_COUNTS = {"ir": 5000, "cli": 300, "kill": 200, "cache": 60,
               "manifest": 900, "codeobj": 300, "pyargs": 300,
               "miss": 150, "tmpdir": 120, "byteorder": 150,
               "emubounds": 150, "forged": 5, "finder": 150}

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


def parallel(ctx, items, fn, jobs=None, camp=None):
    """Runs fn(item) over items on `jobs` threads (each starts processes).
    With `camp`, each finished item (done or raised) counts towards the
    campaign's progress lines."""
    jobs = jobs or ctx.jobs
    items = list(items)
    done = [0]

    def run(item):
        try:
            fn(item)
        finally:
            if camp is not None:
                with camp.lock:
                    done[0] += 1
                    progress(camp, done[0], len(items))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for _ in pool.map(run, items):
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
