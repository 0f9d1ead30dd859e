#!/usr/bin/python3
"""Chooses a tile per M range from mla-fp8-tile-sweep's modelled times.

Usage: bench/tile-choose.py SWEEP.txt [--ranges 1-16:1,16 17-32:32 ...]
       mla-fp8-tile-sweep ... | bench/tile-choose.py -

SWEEP.txt is what `mla-fp8-tile-sweep` prints: one row per candidate tile,
one column per (B, M). For each M range the chosen tile is the candidate
whose worst ratio to the fastest candidate of the same (B, M), over every B
of the sweep and the range's sampled Ms, is smallest: the loader picks a
kernel by M alone, so one tile serves every B of a range, and this is the
tile that loses least to the best of them anywhere. A range is LO-HI:M,M...
(HI 0: unbounded); the default ranges are the tile table's, each sampled
at its upper edge (1-16 also at M = 1, 513-0 at M = 1024).

It prints, per range, the three best candidates with their worst ratios,
and per (B, M) the fastest candidate: where those differ across B at one M,
a choice by M alone costs the printed ratio. How the tile table of
lib/Dialect/MLAFP8/Transforms/TileTable.cpp was chosen (see its comment for
the sweeps that were run).
"""
import argparse
import re
import sys

DEFAULT_RANGES = ("1-16:1,16", "17-32:32", "33-64:64", "65-128:128",
                  "129-256:256", "257-512:512", "513-0:1024")


def parse_sweep(text):
    """({tile: {(B, M): us}}, [(B, M)...]) from tile-sweep's table."""
    header = next((line for line in text.splitlines()
                   if line.startswith("tile")), None)
    if header is None:
        sys.exit("tile-choose: no 'tile' header line: not tile-sweep output")
    columns = [(int(b), int(m)) for b, m in re.findall(r"B(\d+) M(\d+)",
                                                          header)]
    rows = {}
    for line in text.splitlines():
        match = re.match(r"(\S+:\S+)\s+v\d+\s+(.*)", line)
        if not match:
            continue
        times = [float(t) for t, _ in re.findall(r"([\d.]+) (\w+)",
                                                  match[2])]
        if len(times) != len(columns):
            sys.exit(f"tile-choose: row of {match[1]} has {len(times)} "
                     f"times for {len(columns)} columns")
        rows[match[1]] = dict(zip(columns, times))
    if not rows:
        sys.exit("tile-choose: no tile rows")
    return rows, columns


def parse_range(text):
    match = re.fullmatch(r"(\d+)-(\d+):([\d,]+)", text)
    if not match:
        raise argparse.ArgumentTypeError(f"expected LO-HI:M,M..., got "
                                         f"'{text}'")
    return int(match[1]), int(match[2]), [int(m) for m in
                                          match[3].split(",")]


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("sweep", help="tile-sweep output, or - for stdin")
    parser.add_argument("--ranges", nargs="+", type=parse_range,
                        default=[parse_range(r) for r in DEFAULT_RANGES],
                        metavar="LO-HI:M,M")
    args = parser.parse_args()
    text = (sys.stdin.read() if args.sweep == "-" else
            open(args.sweep, encoding="utf-8").read())
    rows, columns = parse_sweep(text)
    batches = sorted({b for b, _ in columns})
    best = {c: min(r[c] for r in rows.values()) for c in columns}
    print("fastest candidate per (B, M):")
    for m in sorted({m for _, m in columns}):
        cells = [f"B{b} {min(rows, key=lambda t: rows[t][(b, m)])} "
                 f"{best[(b, m)]:.3f}" for b in batches if (b, m) in best]
        print(f"  M {m:>5}: " + "; ".join(cells))
    print("per M range, worst ratio to the fastest over B and the sampled "
          "Ms (best three):")
    for lo, hi, samples in args.ranges:
        cases = [(b, m) for b in batches for m in samples if (b, m) in best]
        if not cases:
            sys.exit(f"tile-choose: the sweep has no column at M = "
                     f"{samples} for {lo}-{hi}")
        score = {t: max(rows[t][c] / best[c] for c in cases) for t in rows}
        top = sorted(score, key=lambda t: (score[t], t))[:3]
        print(f"  {lo}-{hi or 'inf'}: " +
              "; ".join(f"{t} {score[t]:.3f}" for t in top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
