#!/usr/bin/python3
"""Modelled kernel time of an mla-fp8 bundle against foreign kernels.

Usage: bench/kernel-time.py BUNDLE [--peers DIR]... [--json FILE]
           [--plot FILE.png] [--emu PATH] [--jobs N] [--chips ...]
           [--batches ...] [--ms ...]
       bench/kernel-time.py --shape N,K [--aot PATH] [same options]

For each chip, each DeepSeek-R1 projection (K-up: N=512, K=128; V-up: N=128,
K=512), batch B and token count M, runs `mla-fp8-emu --timing --json` on our
kernel and on every foreign kernel of the same chip, N and K in the peers
directories. It prints one table of ours against them, the per-layer sums
(K-up + V-up) and a summary line per chip.

--peers DIR may be given more than once (default: ../shared/peer-kernels
beside the repository and, when present, its aiter/ folder). A DIR is one of
two forms. With a kernels.json, each record that gives a chip, N and K is a
foreign kernel of that shape, run as `mla-fp8-emu --foreign DIR/kernels.json
--file F -B b -M m -N n -K k --timing --json`, which checks Y against the
reference before it times the launch: a kernel whose Y check fails is not
timed and is reported in a note. Without one, DIR is in the README-table form
of ../shared/peer-kernels: every *.hsaco whose file name gives the chip, N and
K (e.g. triton_gfx942_N512_K128_BM16_BN128_w8.hsaco) runs with
--abi=triton-peer and the dynamic LDS that DIR/README.md's table gives.

A record with "even_mn": true was compiled with the EVEN_MN fast path
(unmasked stores): it is valid only where M and N divide by its tile, its
config's BLOCK_SIZE_M and BLOCK_SIZE_N, and is not run at any other case (its
Y would be wrong). A record with even_mn false, or without it, is valid at
every case.

The columns: "peer" is the fastest README-table (Triton) peer, as before;
"aiter" is AITER as dispatched: of the records that have an m_bucket (AITER's
prequant kernel compiled per M bucket, ../shared/peer-kernels/aiter), the one
AITER picks for M, i.e. the bucket with the smallest m_max >= M (M_LEQ_16,
M_LEQ_32, ..., M_LEQ_256), else the bucket whose m_max is null ('any'); in
that bucket, its even_mn record where that is valid, else its record without
even_mn, as AITER's JIT picks ("-" where the bucket has neither); "foreign"
is the fastest of every foreign kernel valid at that case (all peers
directories, all AITER buckets and variants). Each is followed by ours / it,
also at 0.5x and 2x of the memory latency (the one compared with at each
scale is the fastest at that scale; AITER as dispatched is its one record at
every scale). The summary line says how many cases are at most 0.8x the best
peer, 0.8x AITER as dispatched and 1.0x the best foreign kernel.

Every figure is MODELLED time, not a measurement: the emulator's timing model
of one launch on the chip's nominal product (MI300X for gfx942, MI355X for
gfx950), whose constants and their sources are in
lib/Hardware/DeviceTiming.cpp; the table names the model's version. Times are
what a profiler's kernel trace would show: the waves' time plus the model's
dispatch window; the launch overhead is left out. The model's global-memory
latency is uncertain, hence the ratios at 0.5x and 2x of it.

--json writes one record per case: ours_us, peer_us, aiter_us (null where
AITER's pick is absent or did not run), best_foreign_us (null where no
foreign kernel ran), lower_bound_us, floor_us, the kernels behind them, and
the times at 0.5x and 2x of the memory latency. lower_bound_us is the model's
window + max(HBM, issue), what the launch would take if every memory wait
were hidden.
floor_us is the emulator's own floor_us (docs/timing-model.md): the lower
bound, or the dispatch window plus the one dependent chain no kernel avoids
(a global load's round trip and a store's), whichever is longer.

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
TARGET = 0.8  # the goal for ours / best peer and / AITER
FOREIGN_TARGET = 1.0  # the goal for ours / best foreign kernel
FLOOR_SLACK = 1.05  # where 0.8x AITER is below the floor: within 5 % of it
LB_M = 64  # from this M on, ours is compared with the model's lower bound
BUCKET_LIMIT = re.compile(r"M_LEQ_(\d+)$")


class UserError(Exception):
    """A mistake in the command line or its inputs: one line, exit status 1."""


@dataclass(frozen=True)
class Peer:
    """A README-table (Triton) peer, run with --abi=triton-peer."""
    path: Path
    chip: str
    n: int
    k: int
    lds: int
    lds_known: bool

    def name(self):
        return self.path.name

    def what(self):
        return f"peer {self.path.name}"


@dataclass(frozen=True)
class Foreign:
    """A record of a kernels.json, run with --foreign (Y checked)."""
    kernels_json: Path
    file: str
    chip: str
    n: int
    k: int
    m_bucket: str | None  # AITER's M bucket, for AITER's per-bucket builds
    m_max: int | None  # the bucket's largest M; None: any M
    # The (BLOCK_SIZE_M, BLOCK_SIZE_N) of an EVEN_MN build, valid only where
    # it divides M and N; None: no even_mn, valid everywhere.
    even_tile: tuple[int, int] | None = None

    def name(self):
        return self.file

    def valid(self, m, n):
        """Whether the kernel's Y is right at M and N (docstring)."""
        return (self.even_tile is None or
                (m % self.even_tile[0] == 0 and n % self.even_tile[1] == 0))

    def what(self):
        return f"foreign {self.kernels_json.parent.name}/{self.file}"


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
    foreign: dict = field(default_factory=dict)  # Foreign -> report, the same
    aiter: Foreign | None = None  # the AITER record dispatched for M

    def ours_us(self, scale=1.0):
        return model_us(self.ours, scale) if self.ours else None

    def best_peer(self, scale=1.0):
        """(peer, us) of the fastest peer at this latency scale, or None."""
        return fastest(self.peers, scale)

    def peer_us(self, scale=1.0):
        best = self.best_peer(scale)
        return best[1] if best else None

    def ratio(self, scale=1.0):
        return quotient(self.ours_us(scale), self.peer_us(scale))

    def aiter_us(self, scale=1.0):
        """AITER as dispatched: its bucket's time; None if none or failed."""
        report = self.foreign.get(self.aiter)
        return model_us(report, scale) if report else None

    def aiter_ratio(self, scale=1.0):
        return quotient(self.ours_us(scale), self.aiter_us(scale))

    def best_foreign(self, scale=1.0):
        """(kernel, us) of the fastest foreign kernel of any kind, or None."""
        return fastest({**self.peers, **self.foreign}, scale)

    def foreign_us(self, scale=1.0):
        best = self.best_foreign(scale)
        return best[1] if best else None

    def foreign_ratio(self, scale=1.0):
        return quotient(self.ours_us(scale), self.foreign_us(scale))

    def lower_bound_us(self, scale=1.0):
        return (model_us(self.ours, scale, "lower_bound_us") if self.ours
                else None)

    def floor_us(self, scale=1.0):
        """The emulator's floor_us (docstring); None from a model before
        version 2, which gave none."""
        return (model_us(self.ours, scale, "floor_us")
                if self.ours and "floor_us" in self.ours else None)

    def ours_over_bound(self):
        return quotient(self.ours_us(), self.lower_bound_us())


def model_us(report, scale, key="kernel_us"):
    """Kernel time (or `key`) of an emulator report at a latency scale."""
    if scale == report["latency_scale"]:
        return report[key]
    for entry in report["sensitivity"]:
        if entry["latency_scale"] == scale:
            return entry[key]
    raise UserError(f"the emulator's report has no latency scale {scale}")


def fastest(reports, scale):
    """(kernel, us) of the fastest of {kernel: report} at a scale, or None."""
    timed = ((p, model_us(r, scale)) for p, r in reports.items())
    return min(timed, key=lambda t: t[1], default=None)


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
                        action="append",
                        help="directory of foreign kernels, a kernels.json "
                        "or README-table form; repeatable (default: "
                        f"{DEFAULT_PEERS} and its aiter/)")
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
    for peers in args.peers or []:
        if not peers.is_dir():
            parser.error(f"--peers {peers} is not a directory")
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


def bucket_limit(record):
    """A record's m_max; from its bucket's name where it has no m_max."""
    if "m_max" in record:
        return record["m_max"]
    match = BUCKET_LIMIT.search(record["m_bucket"])
    return int(match[1]) if match else None


def even_tile(path, record):
    """(BLOCK_SIZE_M, BLOCK_SIZE_N) of a record whose even_mn is true, None
    where it is false or absent."""
    even = record.get("even_mn", False)
    if not isinstance(even, bool):
        raise UserError(f"{path}: {record['file']}: even_mn is not true or "
                        "false")
    if not even:
        return None
    config = record.get("config")
    tile = tuple(config.get(key) for key in ("BLOCK_SIZE_M", "BLOCK_SIZE_N")
                 ) if isinstance(config, dict) else ()
    if len(tile) != 2 or not all(type(t) is int and t > 0 for t in tile):
        raise UserError(f"{path}: {record['file']}: even_mn is true but its "
                        "config gives no BLOCK_SIZE_M and BLOCK_SIZE_N")
    return tile


def find_records(peers_dir, chips):
    """Foreign kernels of DIR/kernels.json for the chips, and a note or None.

    A record is a foreign kernel of the shape its N and K give; records that
    give none (the calibration set's) are left out, with a note.
    """
    path = peers_dir / "kernels.json"
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise UserError(f"{path}: {e.strerror}") from None
    except ValueError as e:
        raise UserError(f"{path}: not JSON ({e})") from None
    records = data.get("kernels") if isinstance(data, dict) else data
    if not isinstance(records, list) or not all(
            isinstance(r, dict) and isinstance(r.get("file"), str)
            for r in records):
        raise UserError(f"{path}: not a list of kernel records with a file")
    kernels, shapeless = {}, set()
    for r in records:
        n, k = r.get("N"), r.get("K")
        if not (isinstance(n, int) and isinstance(k, int)):
            shapeless.add(r["file"])
        elif r.get("chip") in chips and r["file"] not in kernels:
            bucket = r.get("m_bucket")
            kernels[r["file"]] = Foreign(
                path, r["file"], r["chip"], n, k, bucket,
                bucket_limit(r) if bucket else None, even_tile(path, r))
    what = (f"{len(shapeless)} code objects" if len(shapeless) > 1 else
            "1 code object")
    note = (f"{path}: the records of {what} give no N and K and are not "
            "compared" if shapeless else None)
    return list(kernels.values()), note


def find_foreign(dirs, chips):
    """(Triton peers, kernels.json records, notes) of the peers dirs."""
    peers, records, notes = [], [], []
    for peers_dir in dirs:
        if (peers_dir / "kernels.json").is_file():
            found, note = find_records(peers_dir, chips)
            records += found
            notes += [note] if note else []
        else:
            peers += find_peers(peers_dir, chips)
    return peers, records, notes


def dispatch(records, m, n):
    """The AITER record AITER picks for M and N, from records of one shape.

    The bucket with the smallest m_max >= M, else the one whose m_max is
    null ('any'); in it, the even_mn record where it is valid at M and N,
    else the one without even_mn. None where there is no such bucket or
    record.
    """
    limits = {r.m_max for r in records}
    fits = [limit for limit in limits if limit is not None and limit >= m]
    if not fits and None not in limits:
        return None
    bucket = [r for r in records if r.m_max == (min(fits) if fits else None)]
    even = [r for r in bucket if r.even_tile and r.valid(m, n)]
    plain = [r for r in bucket if not r.even_tile]
    return (even or plain or [None])[0]


def first_line(text):
    """The first line of a tool's error, without the tool's name."""
    lines = text.strip().splitlines() or ["(no message)"]
    return re.sub(r"^mla-fp8-\w+: (error: )?", "", lines[0])


def run_timing(cmd):
    """(report, None) from an emulator run in timing mode, or (None, error).

    A --foreign run whose Y check fails prints FAIL and is not timed.
    """
    done = subprocess.run(cmd + ["--timing", "--json", "--emu-threads=1"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        fail = [line for line in done.stdout.splitlines()
                if line.startswith("FAIL: ")]
        if fail:
            return None, f"Y check failed, not timed: {fail[0][6:]}"
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
    peer: Peer | Foreign | None  # None: ours
    cmd: list

    def what(self):
        """What a failure is reported against."""
        return (self.peer.what() if self.peer else
                f"ours {self.case.chip} {self.case.projection}")

    def cost(self):
        """Proportional to the inputs the emulator generates."""
        return self.case.b * self.case.k * (self.case.m + self.case.n)


def commands(cases, emu, bundle, peers, records):
    """Every emulator run of the cases: ours and each foreign kernel of its
    shape. Sets each case's AITER as dispatched."""
    runs = []
    for case in cases:
        size = ["-B", str(case.b), "-M", str(case.m)]
        shape = ["-N", str(case.n), "-K", str(case.k)]
        runs.append(Run(case, None, [str(emu), str(bundle), "--chip",
                                     case.chip] + shape + size))
        for peer in peers:
            if (peer.chip, peer.n, peer.k) == (case.chip, case.n, case.k):
                runs.append(Run(case, peer, [str(emu), str(peer.path),
                                             "--abi=triton-peer", "--lds",
                                             str(peer.lds)] + size))
        mine = [r for r in records
                if (r.chip, r.n, r.k) == (case.chip, case.n, case.k)]
        for r in mine:
            if r.valid(case.m, case.n):  # an even_mn build only where valid
                runs.append(Run(case, r, [str(emu), "--foreign",
                                          str(r.kernels_json), "--file",
                                          r.file] + size + shape))
        case.aiter = dispatch([r for r in mine if r.m_bucket], case.m,
                              case.n)
    return runs


def execute(pool, runs, failures):
    for run, (report, error) in zip(runs, pool.map(
            lambda r: run_timing(r.cmd), runs)):
        if error:
            first, count = failures.get(run.what(), (error, 0))
            failures[run.what()] = (first, count + 1)
        elif isinstance(run.peer, Peer):
            run.case.peers[run.peer] = report
        elif run.peer:
            run.case.foreign[run.peer] = report
        else:
            run.case.ours = report


def run_all(runs, jobs):
    """Runs the commands in parallel and fills the cases.

    Each foreign kernel first runs its cheapest case: one that fails there
    (on an instruction the emulator lacks, or its Y check, say) is not run
    again. The rest run
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


def print_notes(peers, notes, failures, cases):
    for note in notes:
        print(f"note: {note}")
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
    versions = sorted({str(r.get("model_version", 1)) for r in reports.values()})
    print(f"timing model version {', '.join(versions) or '-'}")
    print(f"launch overhead, excluded from every time below: {launch or '-'}")
    print()


def print_table(cases):
    print("MODELLED kernel time (us); ratio = ours / best peer, /aiter = "
          "ours / AITER as dispatched, /foreign = ours / best foreign; "
          "x0.5 / x2 = the ratio before them at that memory latency")
    print(f"{'chip':7}{'proj':9}{'B':>5}{'M':>6}{'ours':>10}{'peer':>10}"
          f"{'ratio':>7}  {'limiter':9}{'lower':>9}{'ours/lb':>8}"
          f"{'x0.5':>7}{'x2':>7}{'aiter':>10}{'/aiter':>7}{'x0.5':>7}"
          f"{'x2':>7}{'foreign':>10}{'/foreign':>9}{'x0.5':>7}{'x2':>7}")
    for c in cases:
        print(f"{c.chip:7}{c.projection:9}{c.b:>5}{c.m:>6}"
              f"{num(c.ours_us(), 10)}{num(c.peer_us(), 10)}"
              f"{num(c.ratio(), 7, 2)}  "
              f"{c.ours['limiter'] if c.ours else '-':9}"
              f"{num(c.lower_bound_us(), 9)}"
              f"{num(c.ours_over_bound(), 8, 2)}"
              f"{num(c.ratio(0.5), 7, 2)}{num(c.ratio(2.0), 7, 2)}"
              f"{num(c.aiter_us(), 10)}{num(c.aiter_ratio(), 7, 2)}"
              f"{num(c.aiter_ratio(0.5), 7, 2)}"
              f"{num(c.aiter_ratio(2.0), 7, 2)}"
              f"{num(c.foreign_us(), 10)}{num(c.foreign_ratio(), 9, 2)}"
              f"{num(c.foreign_ratio(0.5), 7, 2)}"
              f"{num(c.foreign_ratio(2.0), 7, 2)}")
    print()


def add(a, b):
    return a + b if a is not None and b is not None else None


def print_layers(cases):
    """Per (chip, B, M): the sum of the projections, ours and the foreign
    kernels (best peer, AITER as dispatched, best foreign)."""
    layers = {}
    for c in cases:
        sums = layers.get((c.chip, c.b, c.m), (0.0, 0.0, 0.0, 0.0, 0))
        layers[c.chip, c.b, c.m] = tuple(
            add(total, value) for total, value in zip(
                sums, (c.ours_us(), c.peer_us(), c.aiter_us(),
                       c.foreign_us(), 1)))
    if any(sums[-1] != len(PROJECTIONS) for sums in layers.values()):
        return
    print("per layer (K-up + V-up), MODELLED kernel time (us)")
    print(f"{'chip':7}{'B':>5}{'M':>6}{'ours':>10}{'peer':>10}{'ratio':>7}"
          f"{'aiter':>10}{'/aiter':>7}{'foreign':>10}{'/foreign':>9}")
    for (chip, b, m), (ours, peer, aiter, foreign, _) in layers.items():
        print(f"{chip:7}{b:>5}{m:>6}{num(ours, 10)}{num(peer, 10)}"
              f"{num(quotient(ours, peer), 7, 2)}{num(aiter, 10)}"
              f"{num(quotient(ours, aiter), 7, 2)}{num(foreign, 10)}"
              f"{num(quotient(ours, foreign), 9, 2)}")
    print()


def worst(cases, value):
    """'x.xx (proj B= M=)' for the case with the largest value, or '-'."""
    scored = [(value(c), c) for c in cases if value(c) is not None]
    if not scored:
        return "-"
    score, c = max(scored, key=lambda t: t[0])
    return f"{score:.2f} ({c.projection} B={c.b} M={c.m})"


def met(cases, ratio, target, what):
    """'n/m cases <= target x WHAT (worst x.xx (...))' over the cases."""
    compared = [c for c in cases if ratio(c) is not None]
    count = sum(ratio(c) <= target for c in compared)
    return (f"{count}/{len(compared)} cases <= {target}x {what} (worst "
            f"{worst(compared, ratio)})")


def print_summary(cases):
    for chip in dict.fromkeys(c.chip for c in cases):
        mine = [c for c in cases if c.chip == chip]
        compared = [c for c in mine if c.ratio() is not None]
        count = sum(c.ratio() <= TARGET for c in compared)
        large = [c for c in mine if c.m >= LB_M]
        versus = (f"worst ratio {worst(mine, Case.ratio)}; {count}/"
                  f"{len(compared)} cases <= {TARGET}; worst ratio at latency "
                  f"x0.5 {worst(mine, lambda c: c.ratio(0.5))}, x2 "
                  f"{worst(mine, lambda c: c.ratio(2.0))}" if compared else
                  "no peer ran")
        aiter = (met(mine, Case.aiter_ratio, TARGET, "AITER as dispatched")
                 if any(c.aiter_us() for c in mine) else
                 "no AITER as dispatched ran")
        foreign = (met(mine, Case.foreign_ratio, FOREIGN_TARGET,
                       "best foreign")
                   if any(c.foreign_us() for c in mine) else
                   "no foreign kernel ran")
        print(f"{chip}: {versus}; M>={LB_M} worst ours/lower bound "
              f"{worst(large, Case.ours_over_bound)}; {aiter}; {foreign}")
        goal = [c for c in mine if c.aiter_us() is not None]
        if goal:
            print(f"{chip}: goal {goal_met(goal)}")


def goal_met(cases):
    """The goal against AITER as dispatched: ours <= 0.8x it, or within 5 %
    of the floor where 0.8x it lies below the floor; and <= 1.0x it at 0.5x
    and 2x of the memory latency."""
    def nominal(c):
        floor = c.floor_us()
        return (c.aiter_ratio() <= TARGET or
                (floor is not None and TARGET * c.aiter_us() < floor and
                 c.ours_us() <= FLOOR_SLACK * floor))
    def scaled(c):
        return all(c.aiter_ratio(s) is not None and c.aiter_ratio(s) <= 1.0
                   for s in SCALES[1:])
    missed = [c for c in cases if not nominal(c)]
    shown = ", ".join(f"{c.projection} B={c.b} M={c.m} "
                      f"{c.aiter_ratio():.2f}" for c in missed[:6])
    return (f"{len(cases) - len(missed)}/{len(cases)} cases <= {TARGET}x "
            f"AITER as dispatched or within {FLOOR_SLACK - 1:.0%} of the "
            f"floor" + (f" (missed: {shown}"
                        f"{', ...' if len(missed) > 6 else ''})" if missed
                        else "") +
            f"; {sum(map(scaled, cases))}/{len(cases)} <= 1.0x it at "
            f"latency x0.5 and x2")


def record(c):
    best, foreign = c.best_peer(), c.best_foreign()
    rec = {"chip": c.chip, "projection": c.projection, "n": c.n, "k": c.k,
           "b": c.b, "m": c.m, "ours_us": c.ours_us(), "peer_us": c.peer_us(),
           "aiter_us": c.aiter_us(), "best_foreign_us": c.foreign_us(),
           "lower_bound_us": c.lower_bound_us(), "floor_us": c.floor_us(),
           "limiter": c.ours["limiter"] if c.ours else None,
           "ours_kernel": c.ours["kernel"] if c.ours else None,
           "peer_kernel": best[0].name() if best else None,
           "aiter_kernel": c.aiter.file if c.aiter_us() else None,
           "best_foreign_kernel": foreign[0].name() if foreign else None}
    for side, value in (("ours", c.ours_us), ("peer", c.peer_us),
                        ("aiter", c.aiter_us),
                        ("best_foreign", c.foreign_us),
                        ("floor", c.floor_us)):
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
              ("AITER as dispatched", Case.aiter_us, "-^", "tab:red"),
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
    fig.legend(legend.values(), legend.keys(), loc="lower center", ncol=4)
    margin = 0.4 / fig.get_figheight()  # for the title and the legend
    fig.tight_layout(rect=(0, margin, 1, 1 - margin / 2))
    fig.savefig(path, dpi=100)


def main(argv):
    args = parse_args(argv)
    pyplot = import_pyplot() if args.plot else None
    emu = find_tool("mla-fp8-emu", args.emu)
    dirs = args.peers or [d for d in (DEFAULT_PEERS, DEFAULT_PEERS / "aiter")
                          if d.is_dir()]
    peers, records, notes = find_foreign(dirs, args.chips)
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
        runs = commands(cases, emu, bundle, peers, records)
        start = time.monotonic()
        failures = run_all(runs, args.jobs)
    print(f"kernel-time: emulator runs took {time.monotonic() - start:.1f} s "
          f"on {args.jobs} jobs", file=sys.stderr)
    if not dirs:
        print(f"note: no peers directory {DEFAULT_PEERS}: ours only")
    print_notes(peers, notes, failures, cases)
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
