#!/usr/bin/python3
"""Chooses a tile per range of launch rows (B * M) from mla-fp8-tile-sweep.

Usage: bench/tile-choose.py SWEEP.txt [--kernels K] [--ranges LO-HI ...]
       mla-fp8-tile-sweep ... | bench/tile-choose.py -

SWEEP.txt is what `mla-fp8-tile-sweep` prints: one row per candidate tile,
one column per (B, M). The loader picks a kernel by the rows of the launch,
B times M, so one tile serves every (B, M) whose rows fall in its range. A
case's ratio is a tile's time over the fastest candidate's at that (B, M);
a range's score for a tile is its worst ratio over the cases of the range.

--kernels K (default 4) splits the sampled rows into at most K contiguous
ranges, each with one tile, so that the worst ratio over every case is as
small as it can be: the fewest ranges that come within 0.5 % of the least
worst ratio any split into K or fewer reaches, and among those splits the
one with the least sum of ratios. Each range ends at its largest sampled
rows, the next starts one above, and the last is unbounded. It prints, for
every number of ranges up to K, the worst and mean ratio reached, then the
chosen ranges with their tiles.

--ranges LO-HI ... (HI 0: unbounded) scores given ranges instead, printing
the three best candidates of each.

It also prints, per (B, M), the fastest candidate. How the tile table of
lib/Dialect/MLAFP8/Transforms/TileTable.cpp was chosen (see its comment for
the sweeps that were run).
"""
import argparse
import re
import sys


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
    match = re.fullmatch(r"(\d+)-(\d+)", text)
    if not match or int(match[1]) < 1 or (
            int(match[2]) and int(match[2]) < int(match[1])):
        raise argparse.ArgumentTypeError(f"expected LO-HI with 1 <= LO <= HI "
                                         f"or HI 0, got '{text}'")
    return int(match[1]), int(match[2])


def score(times, best, cases):
    """{tile: (worst ratio, sum of ratios)} over `cases`."""
    return {t: (max(r[c] / best[c] for c in cases),
                sum(r[c] / best[c] for c in cases))
            for t, r in times.items()}


def split(times, best, columns, kernels):
    """[(worst, [(lo, hi, tile, seg_worst)...]) for 1..kernels ranges]."""
    levels = sorted({b * m for b, m in columns})
    cases_at = {v: [c for c in columns if c[0] * c[1] == v] for v in levels}
    n = len(levels)
    # seg[i][j]: {tile: (worst, sum)} for the levels i..j.
    seg = {}
    for i in range(n):
        cases = []
        for j in range(i, n):
            cases += cases_at[levels[j]]
            seg[i, j] = score(times, best, cases)

    def seg_best(i, j, bound=None):
        """(worst, sum, tile) of the best tile of levels i..j; with a bound,
        the least sum among tiles whose worst is within it."""
        options = [(w, s, t) for t, (w, s) in seg[i, j].items()
                   if bound is None or w <= bound + 1e-12]
        if not options:
            return None
        key = (lambda o: (o[0], o[1], o[2])) if bound is None else \
            (lambda o: (o[1], o[0], o[2]))
        return min(options, key=key)

    results = []
    for k in range(1, min(kernels, n) + 1):
        # Least worst ratio with k ranges over levels 0..j.
        worst = {}
        for j in range(n):
            worst[1, j] = seg_best(0, j)[0]
        for parts in range(2, k + 1):
            for j in range(parts - 1, n):
                worst[parts, j] = min(
                    max(worst[parts - 1, i - 1], seg_best(i, j)[0])
                    for i in range(parts - 1, j + 1))
        bound = worst[k, n - 1]
        # Among splits within the bound, the least sum of ratios.
        total = {}
        for j in range(n):
            b = seg_best(0, j, bound)
            total[1, j] = (b[1], [(0, j, b)]) if b else None
        for parts in range(2, k + 1):
            for j in range(parts - 1, n):
                choice = None
                for i in range(parts - 1, j + 1):
                    head, b = total[parts - 1, i - 1], seg_best(i, j, bound)
                    if head is None or b is None:
                        continue
                    candidate = (head[0] + b[1], head[1] + [(i, j, b)])
                    if choice is None or candidate[0] < choice[0] - 1e-12:
                        choice = candidate
                total[parts, j] = choice
        ranges = []
        for index, (i, j, (w, _, tile)) in enumerate(total[k, n - 1][1]):
            lo = 1 if index == 0 else levels[i - 1] + 1
            hi = 0 if j == n - 1 else levels[j]
            ranges.append((lo, hi, tile, w))
        cases = len(columns)
        results.append((bound, total[k, n - 1][0] / cases, ranges))
    return results


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("sweep", help="tile-sweep output, or - for stdin")
    parser.add_argument("--kernels", type=int, default=4, metavar="K",
                        help="at most this many ranges (default 4)")
    parser.add_argument("--ranges", nargs="+", type=parse_range,
                        metavar="LO-HI", help="score these ranges of rows")
    args = parser.parse_args()
    if args.kernels < 1:
        parser.error(f"--kernels must be at least 1, got {args.kernels}")
    text = (sys.stdin.read() if args.sweep == "-" else
            open(args.sweep, encoding="utf-8").read())
    times, columns = parse_sweep(text)
    batches = sorted({b for b, _ in columns})
    best = {c: min(r[c] for r in times.values()) for c in columns}
    zero = next((c for c in columns if best[c] <= 0), None)
    if zero:
        sys.exit(f"tile-choose: a time at B = {zero[0]}, M = {zero[1]} is "
                 f"not positive: not tile-sweep output")
    print("fastest candidate per (B, M):")
    for m in sorted({m for _, m in columns}):
        cells = [f"B{b} {min(times, key=lambda t: times[t][(b, m)])} "
                 f"{best[(b, m)]:.3f}" for b in batches if (b, m) in best]
        print(f"  M {m:>5}: " + "; ".join(cells))
    if args.ranges:
        print("per range of rows B*M, worst ratio to the fastest (best "
              "three):")
        for lo, hi in args.ranges:
            cases = [c for c in columns
                     if c[0] * c[1] >= lo and (hi == 0 or c[0] * c[1] <= hi)]
            if not cases:
                sys.exit(f"tile-choose: the sweep has no (B, M) with B*M in "
                         f"{lo}-{hi or 'inf'}")
            scores = score(times, best, cases)
            top = sorted(scores, key=lambda t: (scores[t], t))[:3]
            print(f"  {lo}-{hi or 'inf'}: " +
                  "; ".join(f"{t} {scores[t][0]:.3f}" for t in top))
        return 0
    results = split(times, best, columns, args.kernels)
    print("ratio to the fastest, by number of ranges of rows B*M:")
    for k, (bound, mean, _) in enumerate(results, 1):
        print(f"  {k}: worst {bound:.3f}, mean {mean:.3f}")
    least = min(bound for bound, _, _ in results)
    bound, mean, ranges = next(r for r in results if r[0] <= least * 1.005)
    print(f"{len(ranges)} ranges (worst {bound:.3f}, mean {mean:.3f}):")
    for lo, hi, tile, worst in ranges:
        print(f"  {lo}-{hi or 'inf'}: {tile} {worst:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
