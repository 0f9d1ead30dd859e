"""The "cli" campaign: random flags and paths for mla-fp8-aot, -emu and -opt. Part of bench/campaign/run.py."""

import os
import re
import shlex
import shutil
from pathlib import Path

from common import (Campaign, REPO, SMALL, crash_line, crash_reason,
                    fill_tmpfs, first_line, fixture, parallel,
                    rmtree, run_proc, snapshot, try_mount_tmpfs, umount,
                    verify_bundle)
from publishing import list_leaks


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

    def one(item):
        i, case = item
        cdir = work / str(i)
        cdir.mkdir()
        paths = make_paths(cdir)
        try:
            run_cli_case(ctx, camp, i, case, cdir, paths, ref, shared_cache)
        finally:
            for m in ("full", "fullcache"):
                if os.path.ismount(cdir / m):
                    umount(cdir / m)
            rmtree(cdir)

    parallel(ctx, cases, one, camp=camp)
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
