"""The "ir" campaign: mutated MLIR from the lit corpus through mla-fp8-opt. Part of bench/campaign/run.py."""

import collections
import re
import shlex

from common import (Campaign, REPO, crash_line, crash_reason, first_line,
                    parallel, progress, rmtree, run_proc)


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
