#!/usr/bin/python3
"""Modelled kernel time of an mla-fp8 bundle against foreign kernels.

Usage: bench/kernel-time.py BUNDLE [--peers DIR] [--json FILE]
           [--plot FILE.png] [--emu PATH] [--jobs N] [--chips ...]
           [--batches ...] [--ms ...]
       bench/kernel-time.py --shape N,K [--aot PATH] [same options]

For each chip, each DeepSeek-R1 projection (K-up: N=512, K=128; V-up: N=128,
K=512), batch B and token count M, runs `mla-fp8-emu --timing --json` on our
kernel and on every foreign kernel in the peers directory (default
../shared/peer-kernels beside the repository) whose file name gives the same
chip, N and K, e.g. triton_gfx942_N512_K128_BM16_BN128_w8.hsaco. It prints one
table of ours against the fastest peer ("best peer"), the per-layer sums
(K-up + V-up) and a summary line per chip.

Every figure is MODELLED time, not a measurement: the emulator's timing model
of one launch on the chip's nominal product (MI300X for gfx942, MI355X for
gfx950), whose constants and their sources are in
lib/Hardware/DeviceTiming.cpp. Times are kernel execution only, from the
first wave's start to the last wave's end; the launch overhead is printed
apart. The model's global-memory latency is uncertain, so the ratio is also
given at 0.5x and 2x of it (the best peer at each scale is the fastest peer at
that scale).

--shape N,K times our kernel for one explicit (N, K) instead: it generates a
bundle of a model whose K-up projection has that shape (mla-fp8-aot
--kv-lora-rank N --qk-nope-head-dim K --v-head-dim K --tp 1) and gives no
BUNDLE.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECTIONS = (("K-up", 512, 128), ("V-up", 128, 512))
BATCHES = (8, 16, 32, 128)
MS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
DEFAULT_PEERS = REPO.parent / "shared" / "peer-kernels"
# Largest LDS allocation per workgroup, the fallback for a peer whose dynamic
# LDS the peers' README does not give.
CHIP_LDS = {"gfx942": 65536, "gfx950": 163840}
PEER_NAME = re.compile(r"(gfx9[0-9a-f]+)_N(\d+)_K(\d+)")
SCALES = (1.0, 0.5, 2.0)  # memory-latency scales: nominal, then sensitivity
TARGET = 0.8  # the goal for ours / best peer
LB_M = 64  # from this M on, ours is compared with the model's lower bound


class UserError(Exception):
    """A mistake in the command line or its inputs: one line, exit status 1."""


@dataclass(frozen=True)
class Peer:
    path: Path
    chip: str
    n: int
    k: int
    lds: int
    lds_known: bool


@dataclass
class Case:
    chip: str
    projection: str
    n: int
    k: int
    b: int
    m: int
    ours: dict | None = None  # the emulator's JSON report
    peers: dict = field(default_factory=dict)  # Peer -> report, runs that ran

    def ours_us(self, scale=1.0):
        return model_us(self.ours, scale) if self.ours else None

    def best_peer(self, scale=1.0):
        """(peer, us) of the fastest peer at this latency scale, or None."""
        timed = ((p, model_us(r, scale)) for p, r in self.peers.items())
        return min(timed, key=lambda t: t[1], default=None)

    def peer_us(self, scale=1.0):
        best = self.best_peer(scale)
        return best[1] if best else None

    def ratio(self, scale=1.0):
        return quotient(self.ours_us(scale), self.peer_us(scale))

    def lower_bound_us(self):
        return self.ours["lower_bound_us"] if self.ours else None

    def ours_over_bound(self):
        return quotient(self.ours_us(), self.lower_bound_us())


def model_us(report, scale):
    """Kernel time of an emulator report at a memory-latency scale."""
    if scale == report["latency_scale"]:
        return report["kernel_us"]
    for entry in report["sensitivity"]:
        if entry["latency_scale"] == scale:
            return entry["kernel_us"]
    raise UserError(f"the emulator's report has no latency scale {scale}")


def quotient(a, b):
    return a / b if a is not None and b else None


def positive_ints(text):
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"expected positive integers separated by commas, got '{text}'")
    return values


def shape(text):
    values = positive_ints(text)
    if len(values) != 2:
        raise argparse.ArgumentTypeError(f"expected N,K, got '{text}'")
    return values


def chip_list(text):
    chips = tuple(text.split(","))
    unknown = [c for c in chips if c not in CHIP_LDS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown chip '{unknown[0]}'; supported: {', '.join(CHIP_LDS)}")
    return chips


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UserError(message)


def parse_args(argv):
    parser = Parser(
        description="\n\n".join(__doc__.split("\n\n")[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundle", nargs="?", type=Path, metavar="BUNDLE",
                        help="mla-fp8-aot bundle directory")
    parser.add_argument("--peers", type=Path, metavar="DIR",
                        help="directory of foreign kernels (default: "
                        f"{DEFAULT_PEERS})")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="write one record per case")
    parser.add_argument("--plot", type=Path, metavar="FILE.png",
                        help="draw the table (PNG)")
    parser.add_argument("--shape", type=shape, metavar="N,K",
                        help="time our kernel for this N,K (makes a bundle)")
    parser.add_argument("--emu", type=Path, metavar="PATH",
                        help="mla-fp8-emu (default: build/bin, then PATH)")
    parser.add_argument("--aot", type=Path, metavar="PATH",
                        help="mla-fp8-aot for --shape (default: beside --emu)")
    parser.add_argument("--jobs", type=int, metavar="N",
                        default=os.cpu_count() or 1,
                        help="emulator runs at a time (default: the cores)")
    lists = (("--chips", chip_list, CHIP_LDS, "chips"),
             ("--batches", positive_ints, BATCHES, "B"),
             ("--ms", positive_ints, MS, "M"))
    for flag, kind, default, what in lists:
        parser.add_argument(flag, type=kind, default=tuple(default),
                            metavar="A,B,...", help=f"{what} (default: "
                            f"{','.join(map(str, default))})")
    args = parser.parse_args(argv)
    if args.bundle and args.shape:
        parser.error("--shape generates its own bundle: give BUNDLE or "
                     "--shape, not both")
    if not args.bundle and not args.shape:
        parser.error("no BUNDLE (or --shape N,K, which generates one)")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.peers and not args.peers.is_dir():
        parser.error(f"--peers {args.peers} is not a directory")
    # Checked now, not after minutes of runs.
    for flag, path in (("--json", args.json), ("--plot", args.plot)):
        if path and not Path(path).resolve().parent.is_dir():
            parser.error(f"{flag} {path}: its directory does not exist")
    return args


def find_tool(name, explicit, beside=None):
    """The tool at `explicit`, else beside `beside`, in build/bin, on PATH."""
    if explicit:
        candidates = [explicit]
    else:
        candidates = [REPO / "build" / "bin" / name]
        if beside:
            candidates.insert(0, beside.parent / name)
        on_path = shutil.which(name)
        candidates += [Path(on_path)] if on_path else []
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise UserError(f"no {name} at {explicit}" if explicit else
                    f"no {name} in {REPO / 'build' / 'bin'} or on PATH; "
                    f"build it or give --{name.rsplit('-', 1)[1]} PATH")


def check_bundle(bundle, chips):
    path = bundle / "manifest.json"
    if not path.is_file():
        raise UserError(f"{bundle} is not an mla-fp8 bundle "
                        "(no manifest.json)")
    try:
        present = {c["chip"] for c in json.loads(path.read_text())["chips"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path}: not a bundle manifest ({e})") from None
    missing = [c for c in chips if c not in present]
    if missing:
        raise UserError(f"bundle {bundle} has no {missing[0]} kernels; "
                        f"give --chips {','.join(sorted(present))}")


def generate_bundle(aot, out, n, k, chips):
    """A bundle whose K-up projection is (N, K), from mla-fp8-aot."""
    cmd = [str(aot), "-o", str(out), "--quiet", "--tp", "1",
           "--kv-lora-rank", str(n), "--qk-nope-head-dim", str(k),
           "--v-head-dim", str(k), "--chips", ",".join(chips)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"--shape {n},{k}: {first_line(done.stderr)}")


def readme_lds(peers_dir):
    """Dynamic LDS bytes per file, from the table in the peers' README.md."""
    try:
        lines = (peers_dir / "README.md").read_text().splitlines()
    except OSError:
        return {}
    lds, columns = {}, None
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            columns = None
        elif columns is None:
            columns = [c.lower() for c in cells]
        elif "file" in columns and "dynamic lds bytes" in columns:
            row = dict(zip(columns, cells))
            if row["dynamic lds bytes"].isdigit():
                lds[row["file"]] = int(row["dynamic lds bytes"])
    return lds


def find_peers(peers_dir, chips):
    """Foreign kernels of the chips, keyed by the shape their name gives."""
    lds = readme_lds(peers_dir)
    peers = []
    for path in sorted(peers_dir.glob("*.hsaco")):
        match = PEER_NAME.search(path.name)
        if match and match[1] in chips:
            known = path.name in lds
            peers.append(Peer(path, match[1], int(match[2]), int(match[3]),
                              lds.get(path.name, CHIP_LDS[match[1]]), known))
    return peers


def first_line(text):
    """The first line of a tool's error, without the tool's name."""
    lines = text.strip().splitlines() or ["(no message)"]
    return re.sub(r"^mla-fp8-\w+: (error: )?", "", lines[0])


def run_timing(cmd):
    """(report, None) from an emulator run in timing mode, or (None, error)."""
    done = subprocess.run(cmd + ["--timing", "--json", "--emu-threads=1"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None, first_line(done.stderr or done.stdout)
    try:
        return json.loads(done.stdout), None
    except ValueError:
        return None, "the emulator printed no JSON report"


def make_cases(args, projections):
    return [Case(chip, name, n, k, b, m) for chip in args.chips
            for name, n, k in projections for b in args.batches
            for m in args.ms]


@dataclass(eq=False)
class Run:
    case: Case
    peer: Peer | None  # None: ours
    cmd: list

    def what(self):
        """What a failure is reported against."""
        return (f"peer {self.peer.path.name}" if self.peer else
                f"ours {self.case.chip} {self.case.projection}")

    def cost(self):
        """Proportional to the inputs the emulator generates."""
        return self.case.b * self.case.k * (self.case.m + self.case.n)


def commands(cases, emu, bundle, peers):
    """Every emulator run of the cases: ours and each peer of its shape."""
    runs = []
    for case in cases:
        size = ["-B", str(case.b), "-M", str(case.m)]
        runs.append(Run(case, None, [str(emu), str(bundle), "--chip",
                                     case.chip, "-N", str(case.n), "-K",
                                     str(case.k)] + size))
        for peer in peers:
            if (peer.chip, peer.n, peer.k) == (case.chip, case.n, case.k):
                runs.append(Run(case, peer, [str(emu), str(peer.path),
                                             "--abi=triton-peer", "--lds",
                                             str(peer.lds)] + size))
    return runs


def execute(pool, runs, failures):
    for run, (report, error) in zip(runs, pool.map(
            lambda r: run_timing(r.cmd), runs)):
        if error:
            first, count = failures.get(run.what(), (error, 0))
            failures[run.what()] = (first, count + 1)
        elif run.peer:
            run.case.peers[run.peer] = report
        else:
            run.case.ours = report


def run_all(runs, jobs):
    """Runs the commands in parallel and fills the cases.

    Each peer first runs its cheapest case: one that fails there (on an
    instruction the emulator lacks, say) is not run again. The rest run
    costliest first, which keeps the jobs busy to the end. Returns
    {what failed: (its first error, failed runs)}.
    """
    failures = {}
    probes = {}
    for run in sorted(runs, key=Run.cost):
        if run.peer:
            probes.setdefault(run.peer, run)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        execute(pool, list(probes.values()), failures)
        probed = set(probes.values())
        rest = [r for r in runs if r not in probed and
                not (r.peer and r.what() in failures)]
        execute(pool, sorted(rest, key=Run.cost, reverse=True), failures)
    return failures


def num(value, width, digits=3):
    text = "-" if value is None else f"{value:.{digits}f}"
    return text.rjust(width)


def print_notes(peers, failures, cases):
    for peer in peers:
        if not peer.lds_known:
            print(f"note: {peer.path.name}: the peers' README.md gives no "
                  f"dynamic LDS, so it runs with the {peer.chip} maximum "
                  f"({peer.lds} bytes) and its residency is pessimistic")
    for what, (error, count) in failures.items():
        runs = "1 run" if count == 1 else f"{count} runs"
        print(f"note: {what} failed ({runs}): {error}")
    reports = {c.chip: c.ours for c in cases if c.ours}
    launch = ", ".join(
        f"{chip} ({r['device']}) {r['launch_overhead_us']:.3f} us"
        for chip, r in reports.items())
    print(f"launch overhead, excluded from every time below: {launch or '-'}")
    print()


def print_table(cases):
    print("MODELLED kernel time (us); ratio = ours / best peer; "
          "x0.5 / x2 = the ratio at that memory latency")
    print(f"{'chip':7}{'proj':9}{'B':>5}{'M':>6}{'ours':>10}{'peer':>10}"
          f"{'ratio':>7}  {'limiter':9}{'lower':>9}{'ours/lb':>8}"
          f"{'x0.5':>7}{'x2':>7}")
    for c in cases:
        print(f"{c.chip:7}{c.projection:9}{c.b:>5}{c.m:>6}"
              f"{num(c.ours_us(), 10)}{num(c.peer_us(), 10)}"
              f"{num(c.ratio(), 7, 2)}  "
              f"{c.ours['limiter'] if c.ours else '-':9}"
              f"{num(c.lower_bound_us(), 9)}"
              f"{num(c.ours_over_bound(), 8, 2)}"
              f"{num(c.ratio(0.5), 7, 2)}{num(c.ratio(2.0), 7, 2)}")
    print()


def add(a, b):
    return a + b if a is not None and b is not None else None


def print_layers(cases):
    """Per (chip, B, M): the sum of the projections, ours and best peers."""
    layers = {}
    for c in cases:
        ours, peer, count = layers.get((c.chip, c.b, c.m), (0.0, 0.0, 0))
        layers[c.chip, c.b, c.m] = (add(ours, c.ours_us()),
                                    add(peer, c.peer_us()), count + 1)
    if any(count != len(PROJECTIONS) for _, _, count in layers.values()):
        return
    print("per layer (K-up + V-up), MODELLED kernel time (us)")
    print(f"{'chip':7}{'B':>5}{'M':>6}{'ours':>10}{'peer':>10}{'ratio':>7}")
    for (chip, b, m), (ours, peer, _) in layers.items():
        print(f"{chip:7}{b:>5}{m:>6}{num(ours, 10)}{num(peer, 10)}"
              f"{num(quotient(ours, peer), 7, 2)}")
    print()


def worst(cases, value):
    """'x.xx (proj B= M=)' for the case with the largest value, or '-'."""
    scored = [(value(c), c) for c in cases if value(c) is not None]
    if not scored:
        return "-"
    score, c = max(scored, key=lambda t: t[0])
    return f"{score:.2f} ({c.projection} B={c.b} M={c.m})"


def print_summary(cases):
    for chip in dict.fromkeys(c.chip for c in cases):
        mine = [c for c in cases if c.chip == chip]
        compared = [c for c in mine if c.ratio() is not None]
        met = sum(c.ratio() <= TARGET for c in compared)
        large = [c for c in mine if c.m >= LB_M]
        versus = (f"worst ratio {worst(mine, Case.ratio)}; {met}/"
                  f"{len(compared)} cases <= {TARGET}; worst ratio at latency "
                  f"x0.5 {worst(mine, lambda c: c.ratio(0.5))}, x2 "
                  f"{worst(mine, lambda c: c.ratio(2.0))}" if compared else
                  "no peer ran")
        print(f"{chip}: {versus}; M>={LB_M} worst ours/lower bound "
              f"{worst(large, Case.ours_over_bound)}")


def record(c):
    best = c.best_peer()
    rec = {"chip": c.chip, "projection": c.projection, "n": c.n, "k": c.k,
           "b": c.b, "m": c.m, "ours_us": c.ours_us(), "peer_us": c.peer_us(),
           "lower_bound_us": c.lower_bound_us(),
           "limiter": c.ours["limiter"] if c.ours else None,
           "ours_kernel": c.ours["kernel"] if c.ours else None,
           "peer_kernel": best[0].path.name if best else None}
    for side, value in (("ours", c.ours_us), ("peer", c.peer_us)):
        for scale in SCALES[1:]:
            rec[f"{side}_us_latency_x{scale:g}"] = value(scale)
    return rec


def write_json(cases, path):
    # One record per line: valid JSON that diffs and greps well.
    lines = ",\n".join(json.dumps(record(c)) for c in cases)
    path.write_text(f"[\n{lines}\n]\n")


def import_pyplot():
    try:
        import matplotlib
    except ImportError:
        raise UserError("--plot needs matplotlib (Debian: python3-matplotlib)"
                        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot
    return matplotlib.pyplot


def plot(cases, path, pyplot):
    """One row per (chip, projection), one panel per B: time against M."""
    rows = list(dict.fromkeys((c.chip, c.projection) for c in cases))
    batches = list(dict.fromkeys(c.b for c in cases))
    ms = sorted({c.m for c in cases})
    ticks = ms[::max(1, len(ms) // 4)]
    fig, axes = pyplot.subplots(len(rows), len(batches), squeeze=False,
                                figsize=(max(3.2 * len(batches), 6.4),
                                         2.8 * len(rows) + 0.6))
    series = (("lower bound", Case.lower_bound_us, ":", "tab:green"),
              ("best peer", Case.peer_us, "-s", "tab:orange"),
              ("ours", Case.ours_us, "-o", "tab:blue"))
    legend = {}
    for (chip, proj), row in zip(rows, axes):
        for b, ax in zip(batches, row):
            panel = [c for c in cases if (c.chip, c.projection, c.b) ==
                     (chip, proj, b)]
            for label, value, style, color in series:
                points = [(c.m, value(c)) for c in panel if value(c)]
                if points:
                    legend[label], = ax.plot(*zip(*points), style, color=color,
                                             markersize=3)
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, [str(m) for m in ticks], minor=False)
            ax.tick_params(axis="x", which="minor", bottom=False)
            ax.yaxis.set_minor_formatter(pyplot.NullFormatter())
            ax.set(yscale="log", xlabel="M", title=f"{chip} {proj} B={b}")
            ax.grid(True, which="both", alpha=0.3)
        row[0].set_ylabel("kernel time (us)")
    fig.suptitle("MODELLED kernel time (mla-fp8-emu --timing), launch "
                 "overhead excluded")
    fig.legend(legend.values(), legend.keys(), loc="lower center", ncol=3)
    margin = 0.4 / fig.get_figheight()  # for the title and the legend
    fig.tight_layout(rect=(0, margin, 1, 1 - margin / 2))
    fig.savefig(path, dpi=100)


def main(argv):
    args = parse_args(argv)
    pyplot = import_pyplot() if args.plot else None
    emu = find_tool("mla-fp8-emu", args.emu)
    peers_dir = args.peers or DEFAULT_PEERS
    peers = find_peers(peers_dir, args.chips) if peers_dir.is_dir() else []
    with tempfile.TemporaryDirectory(prefix="kernel-time-") as tmp:
        bundle = args.bundle
        projections = PROJECTIONS
        if args.shape:
            bundle = Path(tmp) / "bundle"
            generate_bundle(find_tool("mla-fp8-aot", args.aot, emu), bundle,
                            *args.shape, args.chips)
            projections = ((f"{args.shape[0]}x{args.shape[1]}",) + args.shape,)
        check_bundle(bundle, args.chips)
        cases = make_cases(args, projections)
        runs = commands(cases, emu, bundle, peers)
        start = time.monotonic()
        failures = run_all(runs, args.jobs)
    print(f"kernel-time: emulator runs took {time.monotonic() - start:.1f} s "
          f"on {args.jobs} jobs", file=sys.stderr)
    if not peers_dir.is_dir():
        print(f"note: no peers directory {peers_dir}: ours only")
    print_notes(peers, failures, cases)
    print_table(cases)
    print_layers(cases)
    print_summary(cases)
    if args.json:
        write_json(cases, args.json)
    if pyplot:
        plot(cases, args.plot, pyplot)
    return 1 if any(c.ours is None for c in cases) else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UserError as e:
        sys.exit(f"kernel-time: error: {e}")
