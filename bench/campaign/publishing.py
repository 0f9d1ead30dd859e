"""The campaigns that publish bundles: "kill" (SIGKILL at every step of a
publish) and "cache" (damaged and concurrent compilation caches). Part of bench/campaign/run.py."""

import collections
import json
import os
import re
import shlex
import shutil
import subprocess
import threading
import time

from common import (CLASSES, CONFIGS, Campaign, SMALL, aot, bundle_digest,
                    crash_line, crash_reason, fill_tmpfs, first_line, fixture,
                    parallel, rmtree, run_proc, try_mount_tmpfs,
                    umount, verify_bundle)


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

    def one(item):
        i, case = item
        cdir = work / str(i)
        cdir.mkdir()
        try:
            run_kill_case(ctx, camp, i, case, cdir, refs, warm, ref_digest)
        finally:
            rmtree(cdir)

    parallel(ctx, cases, one, jobs=min(ctx.jobs, 2), camp=camp)
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

    parallel(ctx, cases, one, jobs=min(ctx.jobs, 2), camp=camp)
    return camp


# --------------------------------------------------------------------------
# 5. Manifest and code-object mutations; 6. Python arguments.
# These run the Python package in forked children of this process, so that
# a signal or an exit in the library is seen as the death of the child.
