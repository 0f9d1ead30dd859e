"""The second round of campaigns: "miss" (the compile-on-miss cache),
"tmpdir" (a bad $TMPDIR), "byteorder" (numpy arrays in the other byte
order), "emubounds" (mla-fp8-emu at its size limits), "forged" (the load cost
of forged worst-case bundles) and "finder" (the AITER .pth import finder
among other finders). Part of bench/campaign/run.py.

The Python cases that depend on the environment (miss, tmpdir, forged,
finder) run in a fresh interpreter each: `python3 -c "import round2;
round2.child_main(NAME, spec.json, result.json)"`, which writes its answer
to result.json. No answer, a signal, a crash marker or the timeout is a
crash. byteorder runs in forked children of the harness, as pyargs does.
"""

import importlib.util
import json
import math
import os
import random
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
import traceback
from pathlib import Path

from bundles import fork_map, import_package
from common import (CLASSES, CONFIGS, REPO, Campaign, crash_line,
                    crash_reason, fill_tmpfs, find_crash_marker, first_line,
                    fixture, parallel, rmtree, run_proc, snapshot,
                    try_mount_tmpfs, umount, verify_bundle)


HERE = Path(__file__).resolve().parent

DROP_IN = ("batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_"
           "tensor_quant")


# --------------------------------------------------------------------------
# Fresh-interpreter children


def child_main(name, spec_path, result_path):
    """Entry point of a child interpreter: runs CHILDREN[name](spec) and
    writes {'ok': value} or {'exc': ...} to result_path. SystemExit is not
    caught: a library that exits the interpreter leaves no answer."""
    spec = json.loads(Path(spec_path).read_text())
    try:
        data = {"ok": CHILDREN[name](spec)}
    except Exception as error:  # pylint: disable=broad-except
        data = {"exc": type(error).__name__, "msg": str(error)[:800],
                "value_error": isinstance(error, ValueError),
                "type_error": isinstance(error, TypeError),
                "import_error": isinstance(error, ImportError),
                "traceback": traceback.format_exc()[-3000:]}
    tmp = str(result_path) + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(data, default=str))
    os.replace(tmp, result_path)


def child_cmd(name, spec_path, result_path):
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import round2; "
            f"round2.child_main({name!r}, {str(spec_path)!r}, "
            f"{str(result_path)!r})")
    return [sys.executable, "-c", code]


def child_env(ctx, **extra):
    """The package on PYTHONPATH, no MLA_FP8_* variable of the caller's."""
    env = {k: v for k, v in ctx.pyenv.items() if not k.startswith("MLA_FP8_")}
    env.update({k: str(v) for k, v in extra.items() if v is not None})
    return env


def run_child(ctx, name, spec, cdir, env, timeout, kill_after=None):
    """Runs one child; returns (Proc, result dict or None)."""
    spec_path = Path(cdir) / "spec.json"
    result_path = Path(cdir) / "result.json"
    spec_path.write_text(json.dumps(spec, indent=1))
    proc = run_proc(child_cmd(name, spec_path, result_path), timeout,
                    cwd=str(cdir), env=env, capture_out=True,
                    kill_after=kill_after)
    try:
        result = json.loads(result_path.read_text())
    except (OSError, ValueError):
        result = None
    return proc, result


def child_died(proc, result, killed_by_us=False):
    """Why a child counts as crashed, or None."""
    if proc.timed_out:
        return "timeout"
    if proc.rc is not None and proc.rc < 0 and not killed_by_us:
        return "signal " + signal.Signals(-proc.rc).name
    marker, _ = find_crash_marker(proc.err)
    if marker:
        return marker + ": " + crash_line(proc.err)
    if result is None and not killed_by_us:
        return (f"exit status {proc.rc} with no answer: "
                f"{last_line(proc.err)}")
    return None


def last_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1][:200] if lines else ""


def repro(env_names, env, name, cdir):
    """The command that reruns a child from its saved spec.json (in the
    failing input's results directory)."""
    sets = " ".join(f"{k}={shlex.quote(str(env[k]))}" for k in env_names
                    if k in env)
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import round2; "
            f"round2.child_main({name!r}, 'spec.json', 'result.json')")
    return (f"# the case's setup (see outcome.json) lived in {cdir}\n"
            f"{sets} {sys.executable} -c {shlex.quote(code)}; "
            f"cat result.json")


def worst(outcomes):
    """The (class, detail) that wins by CLASSES order."""
    return min(outcomes, key=lambda o: CLASSES.index(o[0]))


# --------------------------------------------------------------------------
# 1. miss: the compile-on-miss cache under hostile setups

MISS_DIR = "gfx942-n512-k128-g64-bf16-bf16-per_tensor"
MISS_KINDS = {
    "root": ["xdg-file", "ro-tmpfs", "full-tmpfs", "root-link",
             "xdg-missing"],
    "missing": ["missing-file", "missing-link"],
    "lock": ["lock-link-victim", "lock-fifo", "lock-dir", "lock-file",
             "lock-dangling", "lock-hardlink-victim"],
    "entry": ["entry-link-userbundle", "entry-link-dir", "entry-file",
              "entry-foreign", "entry-damaged", "entry-damaged",
              "entry-damaged", "entry-userfile", "entry-dangling",
              "entry-fifo"],
}
MISS_DAMAGE = ["truncate-hsaco", "bitflip-hsaco", "truncate-manifest",
               "bitflip-manifest", "delete-sha256", "bad-sha256",
               "delete-hsaco", "delete-manifest", "empty-dir",
               "manifest-link-victim", "hsaco-link-victim", "manifest-dir",
               "hsaco-fifo", "edited-header", "stale-bundle"]
# Setups under which the call must succeed: the documented rules leave the
# cache usable (the root may be a link; a missing $XDG_CACHE_HOME is
# created).
MISS_MUST_SUCCEED = {"root-link", "xdg-missing"}


def miss_call(spec):
    """Child: the drop-in call with group_size 64 (a miss), compiled into
    the cache; checked against the reference."""
    import warnings  # pylint: disable=import-outside-toplevel
    import numpy as np  # pylint: disable=import-outside-toplevel
    import mla_fp8  # pylint: disable=import-outside-toplevel
    mla_fp8.set_compile_missing(True)
    rng = np.random.default_rng(spec["seed"])
    m = spec["M"]
    x = mla_fp8.to_bf16_bits(rng.standard_normal((16, m, 128)) * 0.5)
    w, ws = mla_fp8.quantize_weights_for_chip(
        rng.standard_normal((16, 512, 128)) * 0.1, "gfx942")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = getattr(mla_fp8, DROP_IN)(x, w, ws, group_size=64)
    ref = mla_fp8.reference_prequant_bmm(x, w, ws, fp8_format="f8E4M3FNUZ",
                                         group_size=64)
    a = mla_fp8.from_bf16_bits(np.asarray(y))
    b = mla_fp8.from_bf16_bits(ref)
    if a.shape != b.shape:
        return f"wrong: Y shape {a.shape}, reference {b.shape}"
    close = np.isclose(a, b, rtol=1e-2, atol=1e-2)
    if not close.all():
        return (f"wrong: {int((~close).sum())} of {a.size} values differ "
                f"from the reference")
    return "ok"


def gen_small_bundle(spec):
    """Child: the bundle the miss cases start from (group 128 only)."""
    import mla_fp8  # pylint: disable=import-outside-toplevel
    mla_fp8.generate_bundle(spec["out"], tp=[8], chips=["gfx942"], max_m=16,
                            in_type="bf16")
    return "ok"


def path_state(path):
    """What is at `path`, without following a link: None, 'link:T',
    'fifo', the file's sha256, or a dir's snapshot."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"error:{error.errno}"
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(path)
    if stat.S_ISDIR(st.st_mode):
        return json.dumps(sorted(snapshot(path).items()))
    if stat.S_ISREG(st.st_mode):
        from common import sha256_file  # pylint: disable=C0415
        return sha256_file(path)
    return "special"


def describe_change(label, before, after):
    if after is None:
        return f"{label} was removed"
    if before is None:
        return f"{label} was created"
    return f"{label} was changed"


def damage_entry(rng, entry, damage, user):
    """Damages a copy of a real cache entry one way."""
    hsaco = entry / "gfx942.hsaco"
    manifest = entry / "manifest.json"
    if damage == "truncate-hsaco":
        hsaco.write_bytes(hsaco.read_bytes()[:rng.randrange(0, 200)])
    elif damage in ("bitflip-hsaco", "bitflip-manifest"):
        path = hsaco if damage == "bitflip-hsaco" else manifest
        data = bytearray(path.read_bytes())
        k = rng.randrange(len(data) * 8)
        data[k // 8] ^= 1 << (k % 8)
        path.write_bytes(bytes(data))
    elif damage == "truncate-manifest":
        manifest.write_bytes(manifest.read_bytes()[:rng.randrange(0, 400)])
    elif damage == "delete-sha256":
        (entry / "manifest.sha256").unlink()
    elif damage == "bad-sha256":
        (entry / "manifest.sha256").write_text("0" * 64 + "  manifest.json\n")
    elif damage == "delete-hsaco":
        hsaco.unlink()
    elif damage == "delete-manifest":
        manifest.unlink()
    elif damage == "empty-dir":
        for p in entry.iterdir():
            p.unlink()
    elif damage in ("manifest-link-victim", "hsaco-link-victim"):
        victim = user / "victim2.bin"
        path = manifest if damage.startswith("manifest") else hsaco
        victim.write_bytes(path.read_bytes())
        path.unlink()
        os.symlink(victim, path)
    elif damage == "manifest-dir":
        manifest.unlink()
        manifest.mkdir()
    elif damage == "hsaco-fifo":
        hsaco.unlink()
        os.mkfifo(hsaco)
    elif damage == "edited-header":
        with open(entry / "mla_fp8_kernels.h", "a") as f:
            f.write("// edited\n")


def plant_miss(ctx, case, cdir, bundle, template):
    """Builds the case's setup. Returns (XDG_CACHE_HOME, protected
    {label: path}, planted names in missing/, mounts, notes)."""
    rng = random.Random(case["seed"])
    kinds = case["kinds"]
    user = cdir / "user"
    user.mkdir()
    victim = user / "precious.txt"
    victim.write_text("do not truncate\n")
    protected = {}
    mounts = []
    notes = []
    root_kind = kinds.get("root")
    xdg = cdir / "xdg"
    if root_kind == "xdg-file":
        xdg = cdir / "xdg-file"
        xdg.write_text("not a directory\n")
        protected["XDG_CACHE_HOME (a file)"] = xdg
        return xdg, protected, set(), mounts, notes
    if root_kind in ("ro-tmpfs", "full-tmpfs"):
        xdg = cdir / "mnt"
        if try_mount_tmpfs(ctx, xdg, "1m" if root_kind == "ro-tmpfs"
                           else "256k"):
            mounts.append(xdg)
        else:
            notes.append(f"{root_kind}: tmpfs not mountable, a plain "
                         f"directory instead")
    elif root_kind == "xdg-missing":
        xdg = cdir / "not-yet" / "xdg"
    else:
        xdg.mkdir()
    root = xdg / "mla-fp8"
    if root_kind == "root-link":
        real = cdir / "realroot"
        real.mkdir()
        (real / "notes.txt").write_text("mine\n")
        os.symlink(real, root)
        protected["the user's file in the linked cache root"] = \
            real / "notes.txt"
        protected["the cache root link"] = root
    missing = root / "missing"
    plant_dir = missing
    planted = set()
    mk = kinds.get("missing")
    if mk == "missing-file":
        root.mkdir(parents=True, exist_ok=True)
        missing.write_text("a file of the user's\n")
        protected["missing (a file)"] = missing
        plant_dir = None
    elif mk == "missing-link":
        root.mkdir(parents=True, exist_ok=True)
        elsewhere = user / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "data").write_text("x\n")
        os.symlink(elsewhere, missing)
        protected["missing (a link)"] = missing
        plant_dir = elsewhere
    lk, ek = kinds.get("lock"), kinds.get("entry")
    if plant_dir is not None and (lk or ek):
        plant_dir.mkdir(parents=True, exist_ok=True)
    try:
        if plant_dir is not None and lk:
            lock = plant_dir / (MISS_DIR + ".lock")
            planted.add(lock.name)
            if lk == "lock-link-victim":
                os.symlink(victim, lock)
            elif lk == "lock-fifo":
                os.mkfifo(lock)
            elif lk == "lock-dir":
                lock.mkdir()
                (lock / "inside.txt").write_text("someone's\n")
            elif lk == "lock-file":
                lock.write_text("someone's lock\n")
            elif lk == "lock-dangling":
                os.symlink(user / "absent-lock-target", lock)
            elif lk == "lock-hardlink-victim":
                os.link(victim, lock)
            protected["the planted lock"] = lock
        if plant_dir is not None and ek:
            entry = plant_dir / MISS_DIR
            planted.add(entry.name)
            if ek == "entry-link-userbundle":
                ub = user / "user-bundle"
                shutil.copytree(bundle, ub)
                (ub / "notes.txt").write_text("mine\n")
                os.symlink(ub, entry)
                protected["the entry link"] = entry
            elif ek == "entry-link-dir":
                other = user / "other"
                other.mkdir()
                (other / "data").write_text("x\n")
                os.symlink(other, entry)
                protected["the entry link"] = entry
            elif ek == "entry-file":
                entry.write_text("not a bundle\n")
                protected["the entry (a file)"] = entry
            elif ek == "entry-foreign":
                entry.mkdir()
                (entry / "manifest.json").write_text("{}")
                (entry / "work.txt").write_text("mine\n")
                protected["the foreign entry directory"] = entry
            elif ek == "entry-damaged":
                if case["damage"] == "stale-bundle":
                    shutil.copytree(bundle, entry)
                else:
                    shutil.copytree(template, entry)
                    damage_entry(rng, entry, case["damage"], user)
            elif ek == "entry-userfile":
                shutil.copytree(template, entry)
                (entry / "notes.txt").write_text("mine\n")
                protected["the user's file in a cache entry"] = \
                    entry / "notes.txt"
            elif ek == "entry-dangling":
                os.symlink(user / "absent-entry", entry)
                protected["the entry link"] = entry
            elif ek == "entry-fifo":
                os.mkfifo(entry)
                protected["the entry (a FIFO)"] = entry
    except OSError as error:
        notes.append(f"planting stopped: {error}")
    if mounts and root_kind == "ro-tmpfs":
        if subprocess.run(["mount", "-o", "remount,ro", str(xdg)],
                          stderr=subprocess.DEVNULL).returncode != 0:
            notes.append("remount ro failed")
    elif mounts and root_kind == "full-tmpfs":
        fill_tmpfs(xdg)
    return xdg, protected, planted, mounts, notes


def campaign_miss(ctx):
    camp = Campaign(ctx, "miss")
    import_package(ctx)
    work = ctx.work / "miss"
    for m in list(work.glob("*/mnt")):
        umount(m)
    rmtree(work)
    work.mkdir(parents=True)
    timeout = max(30.0, ctx.py_timeout * 3)
    # The bundle (group 128 only), and a real cache entry of the miss.
    seed_dir = work / "seed"
    seed_dir.mkdir()
    bundle = work / "bundle"
    proc, result = run_child(ctx, "gen_small_bundle", {"out": str(bundle)},
                             seed_dir, child_env(ctx), 300)
    if not result or "ok" not in result:
        sys.exit(f"campaign: miss: cannot generate the bundle: {proc.err}")
    seed_xdg = work / "seed-xdg"
    env = child_env(ctx, XDG_CACHE_HOME=seed_xdg, MLA_FP8_BUNDLE=bundle)
    proc, result = run_child(ctx, "miss_call", {"seed": 1, "M": 4}, seed_dir,
                             env, 300)
    template = seed_xdg / "mla-fp8" / "missing" / MISS_DIR
    if not result or result.get("ok") != "ok" or not template.is_dir():
        sys.exit(f"campaign: miss: a clean miss does not compile: {result} "
                 f"{proc.err[-2000:]}")
    cases = []
    for i in range(ctx.count("miss")):
        rng = ctx.rng("miss", i)
        n = rng.choices([0, 1, 2], weights=[12, 55, 33])[0]
        cats = rng.sample(["root", "missing", "lock", "lock", "entry",
                           "entry"], n)
        kinds = {c: rng.choice(MISS_KINDS[c]) for c in cats}
        if kinds.get("root") == "xdg-file":
            kinds = {"root": "xdg-file"}
        if kinds.get("missing") == "missing-file":
            kinds.pop("lock", None)
            kinds.pop("entry", None)
        case = {"kinds": kinds, "seed": rng.randrange(2**32),
                "M": rng.randint(1, 24)}
        if kinds.get("entry") == "entry-damaged":
            case["damage"] = rng.choice(MISS_DAMAGE)
        cases.append((i, case))

    def one(item):
        i, case = item
        cdir = work / str(i)
        cdir.mkdir()
        mounts = []
        try:
            xdg, protected, planted, mounts, notes = plant_miss(
                ctx, case, cdir, bundle, template)
            before_user = snapshot(cdir / "user")
            before = {label: path_state(p) for label, p in protected.items()}
            env = child_env(ctx, XDG_CACHE_HOME=xdg, MLA_FP8_BUNDLE=bundle)
            spec = {"seed": case["seed"], "M": case["M"]}
            proc, result = run_child(ctx, "miss_call", spec, cdir, env,
                                     timeout)
            outcome = classify_miss(case, proc, result, cdir, before_user,
                                    before, protected, xdg, planted)
            what = "+".join(case["kinds"].values()) or "none"
            if "damage" in case:
                what += f"({case['damage']})"
            cls, detail = outcome
            camp.record(i, cls, f"{what}: {detail}" if cls != "ok" else "",
                        cmd=repro(["XDG_CACHE_HOME", "MLA_FP8_BUNDLE",
                                   "PYTHONPATH"], env, "miss_call", cdir),
                        files={"spec.json": json.dumps(spec),
                               "stderr.txt": proc.err,
                               "result.json": json.dumps(result)},
                        extra={"setup": case, "notes": notes,
                               "xdg": str(xdg)})
        finally:
            for m in mounts:
                umount(m)
            rmtree(cdir)

    parallel(ctx, cases, one, camp=camp)
    return camp


def classify_miss(case, proc, result, cdir, before_user, before, protected,
                  xdg, planted):
    lost = []
    after_user = snapshot(cdir / "user")
    for rel in sorted(set(before_user) | set(after_user)):
        if before_user.get(rel) != after_user.get(rel):
            lost.append(describe_change(f"user/{rel}", before_user.get(rel),
                                        after_user.get(rel)))
    for label, path in protected.items():
        now = path_state(path)
        if now != before[label]:
            lost.append(describe_change(label, before[label], now))
    if lost:
        return "dataloss", "; ".join(lost[:4])
    died = child_died(proc, result)
    if died:
        return "crash", died
    must_succeed = all(k in MISS_MUST_SUCCEED
                       for k in case["kinds"].values())
    if "exc" in result:
        msg = result["msg"]
        # "group_size: no kernel for ... in the bundle, and <why>"
        if " in the bundle, and " in msg and result["value_error"]:
            msg = msg.split(" in the bundle, and ", 1)[1]
        text = f"{result['exc']}: {msg[:300]}"
        if not result["value_error"]:
            return "crash", f"undocumented exception {text}"
        if must_succeed:
            return "wrong", f"refused although the cache is usable: {text}"
        return "refused", text
    if result["ok"] != "ok":
        return "wrong", result["ok"]
    # Staging left in the cache after a success.
    leaks = []
    missing = xdg / "mla-fp8" / "missing"
    if missing.is_dir() and not missing.is_symlink():
        leaks += [n for n in os.listdir(missing)
                  if n not in (MISS_DIR, MISS_DIR + ".lock") and
                  n not in planted]
    root = xdg / "mla-fp8"
    if root.is_dir():
        leaks += [n for n in os.listdir(root) if ".tmp" in n]
    if leaks:
        return "leak", "left " + ", ".join(sorted(leaks)[:5])
    return "ok", ""


# --------------------------------------------------------------------------
# 2. tmpdir: mla-fp8-aot and generate_bundle with a bad $TMPDIR

TMPDIR_KINDS = ["full", "full", "free", "free", "ro", "ro", "empty-dir",
                "missing", "file"]


def gen_bundle_child(spec):
    """Child: generate_bundle of the small config (no cache)."""
    import mla_fp8  # pylint: disable=import-outside-toplevel
    mla_fp8.generate_bundle(spec["out"], heads=4, kv_lora_rank=512,
                            qk_nope_head_dim=128, v_head_dim=128, tp=[1],
                            chips=["gfx942"], max_m=16,
                            cache_dir=spec.get("cache"))
    return "ok"


def setup_tmpdir(ctx, kind, cdir, rng):
    """Makes the case's $TMPDIR; returns (path, mounted, note)."""
    tmp = cdir / "tmp"
    if kind == "missing":
        return tmp, False, "TMPDIR does not exist"
    if kind == "file":
        tmp.write_text("a file\n")
        return tmp, False, "TMPDIR is a regular file"
    if kind == "empty-dir":
        tmp.mkdir()
        return tmp, False, "an empty directory"
    size = {"full": "64k", "ro": "64k"}.get(kind)
    free = None
    if kind == "free":
        free = rng.randint(1, 16) * 4096
        size = str(free)
    if not try_mount_tmpfs(ctx, tmp, size):
        tmp.mkdir(exist_ok=True)
        return tmp, False, f"{kind}: tmpfs not mountable, a plain directory"
    if kind == "full":
        fill_tmpfs(tmp)
        return tmp, True, "a full tmpfs"
    if kind == "ro":
        subprocess.run(["mount", "-o", "remount,ro", str(tmp)],
                       stderr=subprocess.DEVNULL)
        return tmp, True, "a read-only tmpfs"
    return tmp, True, f"a tmpfs with {free} bytes free"


def campaign_tmpdir(ctx):
    camp = Campaign(ctx, "tmpdir")
    base = fixture(ctx, "ref-small")
    import_package(ctx)
    work = ctx.work / "tmpdir"
    for m in list(work.glob("*/tmp")):
        umount(m)
    rmtree(work)
    work.mkdir(parents=True)
    # How long a run takes, so that the kills land throughout it.
    probe = work / "probe"
    probe.mkdir()
    start = time.monotonic()
    aot_cmd = [ctx.tool("mla-fp8-aot"), "-o", str(probe / "out"),
               "--quiet"] + CONFIGS["small"] + ["--no-cache"]
    run_proc(aot_cmd, 120, env=ctx.env)
    durations = {"tool": max(0.05, time.monotonic() - start)}
    start = time.monotonic()
    run_child(ctx, "gen_bundle_child", {"out": str(probe / "py")}, probe,
              child_env(ctx), 120)
    durations["python"] = max(0.1, time.monotonic() - start)
    rmtree(probe)
    print(f"  tmpdir: a run takes {durations}", flush=True)
    cases = []
    for i in range(ctx.count("tmpdir")):
        rng = ctx.rng("tmpdir", i)
        case = {"kind": rng.choice(TMPDIR_KINDS),
                "via": "python" if rng.random() < 0.35 else "tool",
                "cache": rng.random() < 0.2, "old": rng.random() < 0.3,
                "seed": rng.randrange(2**32)}
        if rng.random() < 0.3:
            case["kill"] = rng.uniform(0, durations[case["via"]] * 1.3)
        cases.append((i, case))

    def one(item):
        i, case = item
        cdir = work / str(i)
        cdir.mkdir()
        mounted = False
        tmp = cdir / "tmp"
        try:
            rng = random.Random(case["seed"])
            tmp, mounted, note = setup_tmpdir(ctx, case["kind"], cdir, rng)
            tmp_before = path_state(tmp)
            out = cdir / "out"
            if case["old"]:
                shutil.copytree(base, out)
            cache = str(cdir / "cache") if case["cache"] else None
            killed = case.get("kill") is not None
            if case["via"] == "tool":
                env = dict(ctx.env, TMPDIR=str(tmp))
                cmd = [ctx.tool("mla-fp8-aot"), "-o", str(out), "--quiet"] + \
                    CONFIGS["small"] + \
                    ([f"--cache-dir={cache}"] if cache else ["--no-cache"])
                proc = run_proc(cmd, ctx.timeout, env=env,
                                kill_after=case.get("kill"))
                result = None
                cmd_text = f"TMPDIR={tmp} " + " ".join(
                    shlex.quote(c) for c in cmd)
            else:
                env = child_env(ctx, TMPDIR=tmp)
                spec = {"out": str(out), "cache": cache}
                proc, result = run_child(ctx, "gen_bundle_child", spec, cdir,
                                         env, ctx.py_timeout * 3,
                                         kill_after=case.get("kill"))
                cmd_text = repro(["TMPDIR", "PYTHONPATH"], env,
                                 "gen_bundle_child", cdir)
            # Did our kill land (the process still running then)?
            landed = killed and proc.rc is not None and proc.rc < 0
            cls, detail = classify_tmpdir(ctx, case, proc, result, landed,
                                          tmp, tmp_before, out)
            camp.record(i, cls, f"{note}, {case['via']}: {detail}"
                        if cls != "ok" else "", cmd=cmd_text,
                        files={"stderr.txt": proc.err,
                               "result.json": json.dumps(result)},
                        extra={"case": case, "tmpdir": note})
        finally:
            if mounted:
                umount(tmp)
            rmtree(cdir)

    parallel(ctx, cases, one, camp=camp)
    return camp


def classify_tmpdir(ctx, case, proc, result, landed, tmp, tmp_before, out):
    outcomes = []
    problem = verify_bundle(ctx, out) if case["old"] else None
    if problem:
        outcomes.append(("dataloss", "the old bundle is not a complete "
                         "bundle after the run: " + problem))
    if os.path.isdir(tmp) and not os.path.islink(tmp):
        left = sorted(n for n in os.listdir(tmp) if n != ".filler")
        if left:
            outcomes.append(("leak", "left in TMPDIR: " +
                             ", ".join(left[:5])))
    elif path_state(tmp) != tmp_before:
        outcomes.append(("leak", "TMPDIR was created or changed"))
    if case["via"] == "tool":
        reason = crash_reason(proc, killed_by_us=landed)
        if landed and reason in ("exit status 137", "timeout"):
            reason = None
        if reason:
            outcomes.append(("crash", reason + ": " + crash_line(proc.err)))
        elif not landed and proc.rc == 0:
            problem = verify_bundle(ctx, out)
            outcomes.append(("wrong", "exit 0 without a complete bundle: " +
                             problem) if problem else ("ok", ""))
        elif not landed:
            message = first_line(proc.err)
            outcomes.append(("refused", message) if message else
                            ("crash", f"exit status {proc.rc} with no "
                             f"message"))
        else:
            outcomes.append(("ok", ""))
    else:
        died = child_died(proc, result, killed_by_us=landed)
        if died:
            outcomes.append(("crash", died))
        elif landed:
            outcomes.append(("ok", ""))
        elif "exc" in result:
            outcomes.append(("refused", f"{result['exc']}: "
                             f"{result['msg'][:200]}"))
        else:
            problem = verify_bundle(ctx, out)
            outcomes.append(("wrong", "generate_bundle returned without a "
                             "complete bundle: " + problem) if problem else
                            ("ok", ""))
    return worst(outcomes)


# --------------------------------------------------------------------------
# 3. byteorder: numpy arguments stored in the other byte order

BYTEORDER_TARGETS = ["dropin"] * 5 + ["emulated"] * 2 + ["reference"] * 2 + \
    ["formats"] * 2


def _swap(array):
    import numpy as np  # pylint: disable=import-outside-toplevel
    array = np.asarray(array)
    return array.astype(array.dtype.newbyteorder(">"))


def _same(a, b):
    import numpy as np  # pylint: disable=import-outside-toplevel
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def byteorder_call(spec):
    """Child: one call with native arrays, then the same call with some of
    them in the other byte order; returns 'ok', 'wrong: ...',
    'refused: ...' or 'crash: ...'."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import mla_fp8  # pylint: disable=import-outside-toplevel
    rng = random.Random(spec["seed"])
    nrng = np.random.default_rng(spec["seed"])
    target = spec["target"]
    n, k = {"k_up": (512, 128), "v_up": (128, 512)}[spec["proj"]]
    batch, m = spec["B"], spec["M"]
    f16_in = spec["f16_in"]
    x_float = nrng.standard_normal((batch, m, k))
    x_bits = (mla_fp8.to_f16_bits if f16_in else mla_fp8.to_bf16_bits)(
        x_float)
    w, ws = mla_fp8.quantize_weights_for_chip(
        nrng.standard_normal((batch, n, k)) * 0.1, "gfx942")
    bias = mla_fp8.to_bf16_bits(nrng.standard_normal((batch, n))) \
        if spec["bias"] else None
    if target == "formats":
        return byteorder_formats(spec, rng, nrng)
    args = {"X": x_bits, "WQ": w, "w_scale": ws}
    if spec["x_float16"] and target == "dropin":
        args["X"] = x_float.astype(np.float16)
    if bias is not None:
        args["bias"] = bias
    if spec["out"]:
        args["out"] = np.zeros((batch, m, n), np.uint16)
    if target == "emulated":
        args["out"] = np.zeros((batch, m, n), np.uint16)
    names = sorted(args)
    swapped = [a for a in names if rng.random() < 0.5] or [rng.choice(names)]
    bundle = mla_fp8.load_bundle(spec["bundle"]) if target != "reference" \
        else None
    if target == "dropin":
        mla_fp8.set_bundle(spec["bundle"])

    def call(a):
        if target == "dropin":
            kw = {"bias": a.get("bias")}
            if "out" in a:
                kw["YQ"] = a["out"]
            return getattr(mla_fp8, DROP_IN)(a["X"], a["WQ"], a["w_scale"],
                                             **kw)
        if target == "emulated":
            kernel = bundle.find_kernel("gfx942", n, k, m, batch,
                                        in_type="f16" if f16_in else "bf16",
                                        has_bias=a.get("bias") is not None)
            mla_fp8.run_kernel_emulated(bundle, kernel, a["X"], a["WQ"],
                                        a["w_scale"], a["out"],
                                        bias=a.get("bias"), threads=1)
            return a["out"]
        return mla_fp8.reference_prequant_bmm(
            a["X"], a["WQ"], a["w_scale"], fp8_format="f8E4M3FNUZ",
            in_type="f16" if f16_in else "bf16", bias=a.get("bias"),
            out=a.get("out"))

    return compare_swapped(call, args, swapped)


def compare_swapped(call, args, swapped):
    """Runs call(native args) and call(args with `swapped` in the other
    byte order) and compares results, in-place outputs and inputs."""
    native = {k: (v.copy() if hasattr(v, "copy") else v)
              for k, v in args.items()}
    try:
        want = call(native)
        native_error = None
    except Exception as error:  # pylint: disable=broad-except
        want, native_error = None, error
    other = {k: (_swap(v) if k in swapped else
                 (v.copy() if hasattr(v, "copy") else v))
             for k, v in args.items()}
    inputs = {k: (v.copy() if hasattr(v, "copy") else v)
              for k, v in other.items() if k != "out"}
    label = "swapped " + ",".join(swapped)
    try:
        got = call(other)
    except (TypeError, ValueError) as error:
        return f"refused: {type(error).__name__}: {str(error)[:200]}"
    except Exception as error:  # pylint: disable=broad-except
        return (f"crash: undocumented exception {type(error).__name__}: "
                f"{str(error)[:200]} ({label})")
    if native_error is not None:
        return (f"wrong: {label} accepted although the native call raised "
                f"{type(native_error).__name__}: {native_error}")
    for k, v in inputs.items():
        if not _same(v, other[k]) or getattr(v, "dtype", None) != \
                getattr(other[k], "dtype", None):
            return f"wrong: {label}: the call changed its input {k}"
    if not _same(got, want):
        return f"wrong: {label}: the result differs from the native call's"
    if "out" in other and "out" in swapped and got is not other["out"] and \
            not _same(other["out"], want):
        return f"wrong: {label}: the output array holds other values"
    return "ok"


def byteorder_formats(spec, rng, nrng):
    """Child: the format helpers with big-endian inputs."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import mla_fp8  # pylint: disable=import-outside-toplevel
    fn = rng.choice(["from_bf16_bits", "from_f16_bits", "dequantize_fp8",
                     "to_bf16_bits", "to_f16_bits", "quantize_fp8",
                     "quantize_weights_for_chip", "from_bf16_bits-2d"])
    shape = (rng.randint(1, 4), rng.randint(1, 64))
    if fn.startswith("from_"):
        args = {"bits": nrng.integers(0, 2**16, shape, dtype=np.uint16)}
        name = fn.split("-")[0]

        def call(a):
            return getattr(mla_fp8, name)(a["bits"])
    elif fn == "dequantize_fp8":
        args = {"bits": nrng.integers(0, 256, shape, dtype=np.uint8)}

        def call(a):
            return mla_fp8.dequantize_fp8(a["bits"], "f8E4M3FNUZ")
    else:
        dtype = rng.choice([np.float32, np.float64, np.float16])
        args = {"values": (nrng.standard_normal(shape) * 4).astype(dtype)}
        if fn == "quantize_weights_for_chip":
            args["values"] = args["values"].reshape((1,) + shape)

        def call(a):
            if fn == "quantize_fp8":
                return mla_fp8.quantize_fp8(a["values"], "f8E4M3FNUZ")
            if fn == "quantize_weights_for_chip":
                bits, scale = mla_fp8.quantize_weights_for_chip(a["values"],
                                                                "gfx942")
                return np.concatenate([bits.ravel().astype(np.float64),
                                       np.asarray(scale, np.float64)])
            return getattr(mla_fp8, fn)(a["values"])
    result = compare_swapped(call, args, sorted(args))
    return result if result == "ok" else f"{result} [{fn}]"


def campaign_byteorder(ctx):
    camp = Campaign(ctx, "byteorder")
    base = fixture(ctx, "ref-bias")
    import_package(ctx)
    tasks = []
    for i in range(ctx.count("byteorder")):
        rng = ctx.rng("byteorder", i)
        target = rng.choice(BYTEORDER_TARGETS)
        spec = {"seed": rng.randrange(2**32), "target": target,
                "proj": rng.choice(["k_up", "v_up"]),
                "B": rng.randint(1, 3), "M": rng.randint(1, 6),
                "f16_in": rng.random() < 0.3, "bias": rng.random() < 0.4,
                "x_float16": rng.random() < 0.3,
                "out": rng.random() < 0.4, "bundle": str(base)}
        if spec["x_float16"]:
            spec["f16_in"] = True
        tasks.append((i, spec))

    def on_result(task, result):
        i, spec = task
        if "died" in result:
            cls = "crash"
            detail = result["died"] + ": " + crash_line(result["stderr"])
        elif "exc" in result:
            cls, detail = "crash", (f"harness or library raised "
                                    f"{result['exc']}: {result['msg'][:200]}")
        else:
            text = result["ok"]
            cls = text.split(":", 1)[0] if ":" in text else text
            detail = text.split(":", 1)[1].strip() if ":" in text else ""
            if cls not in CLASSES:
                cls, detail = "wrong", text
        cmd = (f"cd {HERE} && PYTHONPATH={ctx.build / 'python-bindings'} "
               f"{sys.executable} -c 'import json, round2; print(round2."
               f"byteorder_call(json.load(open(\"SPEC\"))))'  "
               f"# SPEC: spec.json of this directory")
        camp.record(i, cls, f"{spec['target']}: {detail}" if cls != "ok"
                    else "", cmd=cmd,
                    files={"spec.json": json.dumps(spec, indent=1),
                           "stderr.txt": result.get("stderr", "")},
                    extra={"spec": spec})

    fork_map(ctx, camp, tasks, byteorder_call, ctx.py_timeout, on_result)
    return camp


# --------------------------------------------------------------------------
# 4. emubounds: mla-fp8-emu at its size limits

EMU_MAX_B = 65535
EMU_MAX_M = 1 << 20
EMU_MAX_HOST = 4 << 30
EMU_MAX_GRID = 1 << 24
PLAIN_WORK = 2e8       # B * M * N * K a plain (or --full) run may take
TIMING_WORK = 1e9      # elements a --timing run fills (inputs and output)
EMU_TIMEOUT = 60


def host_bytes(b, m, n, k):
    """include/mla-fp8/Runtime/Limits.h, getEmulatorHostBytes."""
    rows = max(m, 1)
    return b * rows * k * 4 + b * n * k + b * rows * n * 16


def as_flag_int(value):
    """The integer the tool's flag parser reads from `value` (LLVM's
    cl::opt takes 0x.. as well), or None."""
    if isinstance(value, int):
        return value
    try:
        return int(value, 0)
    except ValueError:
        return None


def emu_expected(b, m, n, k):
    """None when the flags are within the documented limits, else why
    not."""
    b, m = as_flag_int(b), as_flag_int(m)
    if b is None or m is None:
        return "not an integer"
    if not 1 <= b <= EMU_MAX_B:
        return "B out of range"
    if not 0 <= m <= EMU_MAX_M:
        return "M out of range"
    if host_bytes(b, m, n, k) > EMU_MAX_HOST:
        return "more than 4 GiB of host memory"
    return None


def emu_cheap(b, m, n, k, mode):
    b, m = as_flag_int(b), as_flag_int(m)
    rows = max(m, 1)
    if mode in ("plain", "full"):
        return b * rows * n * k <= PLAIN_WORK
    return b * n * k + b * rows * (n + k) <= TIMING_WORK


def pick_emu_shape(rng):
    n, k = rng.choice([(512, 128), (128, 512)])
    r = rng.random()
    if r < 0.45:
        # Near the host-memory bound: solve for B or M, then a few either
        # side.
        delta = rng.choice([-3, -1, 0, 0, 1, 2, 64])
        if rng.random() < 0.5:
            m = rng.choice([0, 1, 2, rng.randint(1, 64), rng.randint(1, 512)])
            rows = max(m, 1)
            b = EMU_MAX_HOST // (rows * k * 4 + n * k + rows * n * 16) + delta
        else:
            b = rng.choice([1, 1, 2, 3, rng.randint(1, 16)])
            m = (EMU_MAX_HOST - b * n * k) // (b * (4 * k + 16 * n)) + delta
    else:
        b = rng.choice([1, 2, 3, rng.randint(1, 16), rng.randint(1, 256),
                        EMU_MAX_B, EMU_MAX_B - 1, EMU_MAX_B + 1, 0, -1,
                        2**31, 2**32 + 1, 2**63, "1e3", "",
                        rng.randint(1000, EMU_MAX_B)])
        m = rng.choice([0, 1, rng.randint(1, 64), rng.randint(1, 4096),
                        EMU_MAX_M, EMU_MAX_M - 1, EMU_MAX_M + 1, -1, 2**31,
                        2**64, "0x10", rng.randint(4096, EMU_MAX_M)])
    return b, m, n, k


def emu_bundle_case(rng):
    mode = rng.choice(["plain", "plain", "timing", "timing", "full",
                       "timing-json"])
    for _ in range(40):
        b, m, n, k = pick_emu_shape(rng)
        if emu_expected(b, m, n, k) is not None:
            return {"mode": mode, "B": b, "M": m, "N": n, "K": k}
        if emu_cheap(b, m, n, k, mode):
            return {"mode": mode, "B": b, "M": m, "N": n, "K": k}
        if emu_cheap(b, m, n, k, "timing"):
            return {"mode": "timing", "B": b, "M": m, "N": n, "K": k}
    return {"mode": mode, "B": 1, "M": rng.randint(1, 64), "N": 512,
            "K": 128}


# Grids whose workgroup count, x * y * z, is 2^64 + c: c in 64 bits (0,
# 2^16, 2^24), each axis below 2^32 (2^48 + 1 = 65537 * 4294901761,
# 2^40 + 1 = 257 * 4278255361).
WRAPPING_GRIDS = ([16777216, 16777216, 65536], [2**31, 2**31, 4],
                  [4294901761, 65537, 65536], [4278255361, 65792, 65536])


def emu_grid_case(rng):
    def axis():
        return rng.choice([1, 1, 2, rng.randint(1, 64), rng.randint(1, 4096),
                           2048, 4096, 8192, 65535, 65536, 65537, 2**20,
                           2**24, 2**31, 2**32 - 1, 2**32, 0])
    r = rng.random()
    if r < 0.15:
        grid = list(rng.choice(WRAPPING_GRIDS))
    elif r < 0.4:
        # Just below, at and above the emulator's 2^24 workgroups.
        total = rng.choice([2**20, 2**22, 2**23, 3 * 2**22, 2**24 - 1, 2**24,
                            2**24 + 1])
        x = rng.choice([1, 16, 256, 4096])
        grid = [total // x, x, 1] if total % x == 0 else [total, 1, 1]
        rng.shuffle(grid)
    else:
        grid = [axis() for _ in range(rng.choice([1, 2, 3, 3]))]
    return {"mode": rng.choice(["plain", "timing"]), "grid": grid,
            "kernel": rng.randrange(4)}


def campaign_emubounds(ctx):
    camp = Campaign(ctx, "emubounds")
    base = fixture(ctx, "ref-small")
    symbols = [k["symbol"] for c in json.loads(
        (base / "manifest.json").read_text())["chips"] for k in c["kernels"]]
    cases = []
    for i in range(ctx.count("emubounds")):
        rng = ctx.rng("emubounds", i)
        case = emu_grid_case(rng) if rng.random() < 0.3 else \
            emu_bundle_case(rng)
        case["seed"] = rng.randrange(1000)
        cases.append((i, case))

    def one(item):
        i, case = item
        emu = ctx.tool("mla-fp8-emu")
        if "grid" in case:
            cmd = [emu, str(base / "gfx942.hsaco"),
                   f"--kernel={symbols[case['kernel'] % len(symbols)]}",
                   "--grid=" + ",".join(str(g) for g in case["grid"])]
            expected = None
            total = math.prod(case["grid"])
            if min(case["grid"]) < 1 or max(case["grid"]) > 2**32 - 1 or \
                    total > EMU_MAX_GRID:
                expected = f"grid beyond the limits: {total} workgroups"
                if total >= 2**64:
                    expected += f", {total % 2**64} in 64 bits"
            what = f"grid {'x'.join(str(g) for g in case['grid'])}"
        else:
            cmd = [emu, str(base), f"-B={case['B']}", f"-M={case['M']}",
                   f"-N={case['N']}", f"-K={case['K']}"]
            expected = emu_expected(case["B"], case["M"], case["N"],
                                    case["K"])
            what = f"B={case['B']} M={case['M']} N={case['N']} K={case['K']}"
        cmd.append(f"--seed={case['seed']}")
        if case["mode"] != "plain":
            cmd.append("--timing")
        if case["mode"] == "full":
            cmd.append("--full")
        if case["mode"] == "timing-json":
            cmd.append("--json")
        what += f" {case['mode']}"
        proc = run_proc(cmd, EMU_TIMEOUT, env=ctx.env, capture_out=True)
        reason = crash_reason(proc)
        if reason:
            cls, detail = "crash", f"{what}: {reason}: {crash_line(proc.err)}"
        elif "FAIL" in proc.out.split():
            cls, detail = "wrong", f"{what}: FAIL against the reference"
        elif proc.rc == 0:
            if expected:
                cls, detail = "wrong", f"{what}: accepted ({expected})"
            else:
                cls, detail = "ok", ""
        else:
            message = first_line(proc.err) or first_line(proc.out)
            if not message:
                cls, detail = "crash", f"{what}: exit {proc.rc} silently"
            else:
                cls = "refused"
                detail = message + ("" if expected or "grid" in case else
                                    " [within the documented limits]")
        camp.record(i, cls, detail, cmd=cmd,
                    files={"stderr.txt": proc.err,
                           "stdout.txt": proc.out[-4000:]},
                    extra={"case": case, "expected": expected,
                           "wall_s": round(proc.wall, 2)})

    parallel(ctx, cases, one, camp=camp)
    return camp


# --------------------------------------------------------------------------
# 5. forged: the load cost of forged worst-case bundles

def forged_module():
    spec = importlib.util.spec_from_file_location(
        "forged_load", str(REPO / "bench" / "forged-load.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_child(spec):
    """Child: times mla_fp8.load_bundle (and the native loader when built)
    on the bundle."""
    import mla_fp8  # pylint: disable=import-outside-toplevel
    out = {}
    start = time.perf_counter()
    try:
        bundle = mla_fp8.load_bundle(spec["dir"])
        out["python"] = {"accepted": True, "kernels": len(bundle.kernels())}
    except mla_fp8.BundleError as error:
        out["python"] = {"accepted": False, "message": str(error)[:300]}
    out["python"]["s"] = time.perf_counter() - start
    try:
        from mla_fp8 import _mla_fp8  # pylint: disable=C0415
        native = getattr(_mla_fp8, "Bundle", None)
    except ImportError as error:
        native = None
        out["native_not_timed"] = str(error)[:200]
    if native is not None:
        start = time.perf_counter()
        try:
            bundle = native(spec["dir"])
            out["native"] = {"accepted": True,
                             "kernels": len(bundle.kernels())}
        except ValueError as error:
            out["native"] = {"accepted": False, "message": str(error)[:300]}
        out["native"]["s"] = time.perf_counter() - start
    return out


def forged_bound(total_kernels):
    return max(5.0, 30.0 * total_kernels / 4096)


def campaign_forged(ctx):
    camp = Campaign(ctx, "forged")
    work = ctx.work / "forged"
    rmtree(work)
    work.mkdir(parents=True)
    forger = forged_module()
    try:
        tools = forger.find_tools(str(ctx.build))
        real = forger.generate_real(tools, str(work / "real"), "gfx942")
    except SystemExit as error:
        print(f"  forged: cannot forge here ({error}); no inputs",
              flush=True)
        return camp
    total = ctx.count("forged")
    for i in range(total):
        rng = ctx.rng("forged", i)
        chips = rng.choice([["gfx942"], ["gfx950"], ["gfx942", "gfx950"]])
        count = 4096 if rng.random() < 0.2 else \
            int(round(math.exp(rng.uniform(math.log(64), math.log(4096)))))
        cdir = work / str(i)
        cdir.mkdir()
        try:
            run_forged_case(ctx, camp, forger, tools, real, i, chips, count,
                            cdir)
        finally:
            rmtree(cdir)
        print(f"  forged: {i + 1}/{total} "
              f"({round(time.monotonic() - camp.start)} s)", flush=True)
    return camp


def run_forged_case(ctx, camp, forger, tools, real, i, chips, count, cdir):
    what = f"{'+'.join(chips)} x {count} kernels"
    start = time.monotonic()
    try:
        directory, _ = forger.forge(tools, str(cdir), real, chips, count)
    except SystemExit as error:
        camp.record(i, "refused", f"{what}: forging failed: {error}")
        return
    forge_s = time.monotonic() - start
    bound = forged_bound(count * len(chips))
    outcomes = []
    times = {"forge": round(forge_s, 2), "bound": bound}
    proc, result = run_child(ctx, "load_child", {"dir": directory}, cdir,
                             child_env(ctx), bound + 30)
    died = child_died(proc, result)
    if died:
        outcomes.append(("crash", f"{what}: python load: {died}" +
                         (" (load too slow)" if proc.timed_out else "")))
    elif "exc" in result:
        outcomes.append(("crash", f"{what}: load_bundle raised "
                         f"{result['exc']}: {result['msg'][:200]}"))
    else:
        for loader, r in result["ok"].items():
            if not isinstance(r, dict):
                times[loader] = r
                continue
            times[loader] = round(r["s"], 3)
            if r["s"] > bound:
                outcomes.append(("crash", f"{what}: load too slow: {loader} "
                                 f"{r['s']:.1f} s > {bound:.0f} s"))
            elif not r["accepted"]:
                outcomes.append(("refused", f"{what}: {loader}: "
                                 f"{r['message']}"))
            else:
                outcomes.append(("ok", ""))
    emu = run_proc([ctx.tool("mla-fp8-emu"), "--check-bundle", directory],
                   bound + 30, capture_out=True)
    times["emu"] = round(emu.wall, 3)
    reason = crash_reason(emu)
    if reason:
        outcomes.append(("crash", f"{what}: --check-bundle: {reason}: "
                         f"{crash_line(emu.err)}" +
                         (" (load too slow)" if emu.timed_out else "")))
    elif emu.wall > bound:
        outcomes.append(("crash", f"{what}: load too slow: --check-bundle "
                         f"{emu.wall:.1f} s > {bound:.0f} s"))
    elif emu.rc != 0:
        outcomes.append(("refused", f"{what}: --check-bundle: " +
                         first_line(emu.err or emu.out)))
    else:
        outcomes.append(("ok", ""))
    cls, detail = worst(outcomes)
    print(f"  forged: {what}: {cls} {times}", flush=True)
    camp.record(i, cls, detail,
                cmd=f"/usr/bin/python3 {REPO}/bench/forged-load.py "
                    f"--kernels {count} --chips {','.join(chips)}",
                files={"stderr.txt": proc.err, "emu-stderr.txt": emu.err},
                extra={"chips": chips, "kernels_per_chip": count,
                       "times_s": times})


# --------------------------------------------------------------------------
# 6. finder: the AITER .pth import finder among other finders

FINDER_KINDS = ["asker", "asker", "editable", "editable", "raiser", "none",
                "legacy"]
RAISER_MARK = "HOSTILE-FINDER refuses"
BROKEN_MARK = "no GPU here"


def write_fake_aiter(root, function, modules, broken=False):
    """A package laid out as AITER's (as test_aiter_shim.write_aiter)."""
    files = {
        "aiter/__init__.py": (f"raise ImportError({BROKEN_MARK!r})\n"
                              if broken else "REAL = True\n"),
        "aiter/ops/__init__.py": "",
        "aiter/ops/triton/__init__.py": "",
        "aiter/ops/triton/other.py": "def other():\n    return 42\n",
        "aiter/ops/triton/gemm/__init__.py": "",
        "aiter/ops/triton/gemm/batched/__init__.py": "",
    }
    body = f"def {function}(*args, **kwargs):\n    return 'triton'\n"
    for name in modules:
        files[name.replace(".", "/") + ".py"] = body
    for path, text in files.items():
        target = Path(root) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def make_finder(kind, spec):
    import importlib.machinery  # pylint: disable=import-outside-toplevel
    import threading  # pylint: disable=import-outside-toplevel

    def aiter_name(name):
        return name == "aiter" or name.startswith("aiter.")

    if kind == "asker":
        class AskEveryone:  # as test_aiter_shim's: no guard of its own
            @classmethod
            def find_spec(cls, name, path=None, target=None):
                if not aiter_name(name):
                    return None
                for finder in list(sys.meta_path):
                    if finder is not cls and hasattr(finder, "find_spec"):
                        found = finder.find_spec(name, path, target)
                        if found is not None:
                            return found
                return None
        return AskEveryone
    if kind == "asker-guarded":
        local = threading.local()

        class AskEveryoneGuarded:
            @classmethod
            def find_spec(cls, name, path=None, target=None):
                if not aiter_name(name):
                    return None
                asking = getattr(local, "names", None)
                if asking is None:
                    asking = local.names = set()
                if name in asking:
                    return None
                asking.add(name)
                try:
                    for finder in list(sys.meta_path):
                        if finder is not cls and hasattr(finder,
                                                         "find_spec"):
                            found = finder.find_spec(name, path, target)
                            if found is not None:
                                return found
                finally:
                    asking.discard(name)
                return None
        return AskEveryoneGuarded
    if kind == "editable":
        later = spec["editable_dir"]

        class EditableAiter:
            @staticmethod
            def find_spec(name, path=None, target=None):
                if aiter_name(name):
                    return importlib.machinery.PathFinder.find_spec(
                        name, path if path is not None else [later])
                return None
        return EditableAiter
    if kind == "raiser":
        class Refuser:
            @staticmethod
            def find_spec(name, path=None, target=None):
                if aiter_name(name):
                    raise ImportError(f"{RAISER_MARK} {name}")
                return None
        return Refuser
    if kind == "legacy":
        class Legacy:  # a finder of the old protocol only
            @staticmethod
            def find_module(name, path=None):
                return None
        return Legacy

    class Nothing:
        @staticmethod
        def find_spec(name, path=None, target=None):
            return None
    return Nothing


def finder_child(spec):
    """Child: the .pth's site dir, the other finders, then both AITER
    module paths of the function."""
    import importlib  # pylint: disable=import-outside-toplevel
    import site  # pylint: disable=import-outside-toplevel
    import threading  # pylint: disable=import-outside-toplevel
    import warnings  # pylint: disable=import-outside-toplevel
    warnings.simplefilter("ignore")
    site.addsitedir(spec["site"])
    for f in spec["finders"]:
        finder = make_finder(f["kind"], spec)
        if f["where"] == "first":
            sys.meta_path.insert(0, finder)
        else:
            sys.meta_path.append(finder)
    for directory, where in spec["syspath"]:
        if where == "first":
            sys.path.insert(0, directory)
        else:
            sys.path.append(directory)
    importlib.invalidate_caches()
    if spec["other_import"]:
        __import__(spec["other_import"])
    function = spec["function"]

    def attempt(module, form):
        entry = {"module": module, "form": form}
        try:
            if form == "from":
                ns = {}
                exec(f"from {module} import {function} as f", ns)  # noqa
                f = ns["f"]
            elif form == "import_module":
                f = getattr(importlib.import_module(module), function)
            else:
                ns = {}
                exec(f"import {module}", ns)  # noqa
                obj = ns["aiter"]
                for part in module.split(".")[1:] + [function]:
                    obj = getattr(obj, part)
                f = obj
            entry["fn_module"] = str(getattr(f, "__module__", None))
        except Exception as error:  # pylint: disable=broad-except
            entry.update(exc=type(error).__name__, msg=str(error)[:300],
                         import_error=isinstance(error, ImportError))
        return entry

    results = []
    plan = spec["plan"]
    if spec["threads"]:
        barrier = threading.Barrier(2)
        lock = threading.Lock()

        def worker(items):
            barrier.wait()
            for module, form in items:
                r = attempt(module, form)
                with lock:
                    results.append(r)
        threads = [threading.Thread(target=worker, args=(plan,)),
                   threading.Thread(target=worker,
                                    args=(list(reversed(plan)),))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for module, form in plan:
            results.append(attempt(module, form))
    return results


def campaign_finder(ctx):
    camp = Campaign(ctx, "finder")
    mla_fp8 = import_package(ctx)
    from mla_fp8 import aiter_shim  # pylint: disable=import-outside-toplevel
    work = ctx.work / "finder"
    rmtree(work)
    work.mkdir(parents=True)
    site_dir = work / "site-packages"
    site_dir.mkdir()
    aiter_shim.write_pth(site_dir)
    function, modules = aiter_shim.FUNCTION, list(aiter_shim.MODULES)
    dirs = {"real": work / "aiter-real", "broken": work / "aiter-broken",
            "editable": work / "aiter-editable"}
    for kind, d in dirs.items():
        write_fake_aiter(d, function, modules, broken=kind == "broken")
    del mla_fp8
    cases = []
    for i in range(ctx.count("finder")):
        rng = ctx.rng("finder", i)
        finders = []
        unguarded = False
        for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
            kind = rng.choice(FINDER_KINDS)
            if kind == "asker":
                # Two askers without a guard ask each other without end,
                # whatever the shim does: at most one.
                if unguarded or rng.random() < 0.4:
                    kind = "asker-guarded"
                else:
                    unguarded = True
            finders.append({"kind": kind,
                            "where": rng.choice(["append", "first"])})
        syspath = []
        if rng.random() < 0.4:
            syspath.append((str(dirs["broken" if rng.random() < 0.2 else
                                     "real"]),
                            rng.choice(["append", "first"])))
        plan = []
        for module in rng.sample(modules, 2):
            plan.append((module, rng.choice(["from", "import_module",
                                             "import"])))
        case = {"site": str(site_dir), "finders": finders,
                "syspath": syspath, "plan": plan,
                "other_import": "colorsys" if rng.random() < 0.4 else None,
                "threads": rng.random() < 0.2, "function": function,
                "editable_dir": str(dirs["editable"]),
                "env": rng.choice(["1"] * 6 + ["true", "yes", "on", " ON ",
                                               "True"])}
        cases.append((i, case))

    def one(item):
        i, case = item
        cdir = work / str(i)
        cdir.mkdir()
        try:
            env = child_env(ctx, MLA_FP8_REPLACE_AITER=case["env"])
            proc, result = run_child(ctx, "finder_child", case, cdir, env,
                                     ctx.py_timeout * 2)
            cls, detail = classify_finder(case, proc, result)
            setup = ", ".join(f"{f['kind']}@{f['where']}"
                              for f in case["finders"]) or "no finders"
            if case["syspath"]:
                setup += ", AITER on sys.path " + "/".join(
                    (Path(case["syspath"][0][0]).name,
                     case["syspath"][0][1]))
            if case["other_import"]:
                setup += ", another import first"
            if case["threads"]:
                setup += ", 2 threads"
            camp.record(i, cls, f"{detail} [{setup}]" if cls != "ok" else "",
                        cmd=repro(["MLA_FP8_REPLACE_AITER", "PYTHONPATH"],
                                  env, "finder_child", cdir),
                        files={"spec.json": json.dumps(case, indent=1),
                               "stderr.txt": proc.err,
                               "result.json": json.dumps(result, indent=1)},
                        extra={"case": case})
        finally:
            rmtree(cdir)

    parallel(ctx, cases, one, camp=camp)
    return camp


def classify_finder(case, proc, result):
    died = child_died(proc, result)
    if died:
        return "crash", died
    if "exc" in result:
        return "crash", (f"the child raised {result['exc']}: "
                         f"{result['msg'][:200]}")
    kinds = {f["kind"] for f in case["finders"]}
    broken = any("aiter-broken" in d for d, _ in case["syspath"])
    outcomes = []
    for r in result["ok"]:
        where = (f"{r['form']} of the "
                 f"{'nested' if '.gemm.' in r['module'] else 'flat'} path")
        if "exc" in r:
            text = f"{where}: {r['exc']}: {r['msg'][:200]}"
            if r["exc"] == "RecursionError":
                outcomes.append(("crash", text))
            elif not r["import_error"]:
                outcomes.append(("crash", "undocumented exception " + text))
            elif (RAISER_MARK in r["msg"] and "raiser" in kinds) or \
                    (BROKEN_MARK in r["msg"] and broken):
                outcomes.append(("refused", text))
            else:
                outcomes.append(("wrong", text))
        elif not r["fn_module"].startswith("mla_fp8"):
            outcomes.append(("wrong", f"{where}: the function is "
                             f"{r['fn_module']}'s, not mla_fp8's"))
        else:
            outcomes.append(("ok", ""))
    return worst(outcomes) if outcomes else ("wrong", "no import ran")


CHILDREN = {"miss_call": miss_call, "gen_small_bundle": gen_small_bundle,
            "gen_bundle_child": gen_bundle_child, "load_child": load_child,
            "finder_child": finder_child}
