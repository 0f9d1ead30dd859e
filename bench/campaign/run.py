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
pyargs,miss,tmpdir,byteorder,emubounds,forged,finder,all}.  See README.md
beside this file.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from bundles import campaign_codeobj, campaign_manifest
from cli_campaign import campaign_cli
from common import CAMPAIGNS, COLUMNS, Context, MEM_LIMIT, REPO
from ir_campaign import campaign_ir
import publishing
from publishing import campaign_cache, campaign_kill
from pyargs import campaign_pyargs
from round2 import (campaign_byteorder, campaign_emubounds, campaign_finder,
                    campaign_forged, campaign_miss, campaign_tmpdir)


RUNNERS = {"ir": campaign_ir, "cli": campaign_cli, "kill": campaign_kill,
           "cache": campaign_cache, "manifest": campaign_manifest,
           "codeobj": campaign_codeobj, "pyargs": campaign_pyargs,
           "miss": campaign_miss, "tmpdir": campaign_tmpdir,
           "byteorder": campaign_byteorder, "emubounds": campaign_emubounds,
           "forged": campaign_forged, "finder": campaign_finder}
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
    parser.add_argument("--lock-names", default=publishing.LOCK_NAMES,
                        help="regex of entries a publisher may keep beside "
                             "its output (not counted as leaked staging)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every failing input as it is found")
    args = parser.parse_args(argv)
    publishing.LOCK_NAMES = args.lock_names
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
