#!/usr/bin/python3
"""The timing model against published real-GPU kernel times.

Usage: bench/calibrate.py [DIR] [--json FILE] [--plot FILE.png] [--emu PATH]
           [--jobs N]
       bench/calibrate.py --from-json FILE [--plot FILE.png]

DIR (default ../shared/calibration beside the repository) holds foreign code
objects and a kernels.json whose records describe them (arguments, grid,
workgroup, dynamic LDS) with their published measurements (`cases`: shape,
time_us, GPU, source, method). For every case this runs

    mla-fp8-emu --foreign DIR/kernels.json --file F -B b -M m -N n -K k
                --timing --json

which fills real inputs, runs the code object and checks Y against the
reference of its math (at the case's shape, or a smaller B and M where that
would take long) before it times the launch at the case's shape; the
prequant and int8 records compiled with a bias are checked with AITER's
rounding (the product rounded to bf16 before the bias is added; AITER's bf16
GEMM adds it in f32, as the default reference does). It prints, per case, the published time,
the modelled kernel time at memory-latency scales 0.5, 1 and 2, model /
published at 1, the term that limits the model, and the Y check; then the
median and the worst |ln(model / published)|.

--json writes one record per case (file, B, M, N, K, published_us, model_us,
ratio, and the rest of the row); --plot draws modelled against published,
log-log, with y = x and a +-25 % band (needs matplotlib; Debian:
python3-matplotlib). --from-json prints and plots a table that --json wrote,
without running anything (the model is deterministic: the same build gives
the same table).

Every modelled figure is the emulator's timing model of one launch on the
chip's nominal product (MI300X for gfx942, MI355X for gfx950); the model's
constants and their sources are in lib/Hardware/DeviceTiming.cpp and
docs/timing-model.md.
"""
import argparse
import concurrent.futures
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DIR = REPO.parent / "shared" / "calibration"
BAND = 0.25  # the issue's +-25 % band


class UserError(Exception):
    """A mistake in the command line or its inputs: one line, exit 1."""


def cases_of(directory):
    """(record, case) for every case of DIR/kernels.json."""
    path = directory / "kernels.json"
    try:
        data = json.loads(path.read_text())
    except OSError as error:
        raise UserError(f"{path}: {error.strerror}") from None
    except ValueError as error:
        raise UserError(f"{path}: not JSON ({error})") from None
    records = data.get("kernels") if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise UserError(f"{path}: no list of kernel records")
    out = []
    for record in records:
        for case in record.get("cases") or []:
            if isinstance(case.get("time_us"), (int, float)):
                out.append((record, case))
    if not out:
        raise UserError(f"{path}: no case with a published time_us")
    return path, out


def run_case(emu, kernels_json, record, case):
    """One case: the emulator's check and timing; a dict for the table."""
    argv = [emu, "--foreign", str(kernels_json), "--file", record["file"],
            "-B", str(case["B"]), "-M", str(case["M"]), "-N", str(case["N"]),
            "-K", str(case["K"]), "--timing", "--json", "--emu-threads", "1"]
    bias = bool((record.get("constexprs") or {}).get("HAS_BIAS"))
    # AITER's prequant and int8 kernels round the product to bf16 before
    # they add the bias; its bf16 GEMM adds it in f32.
    weights = next((a.get("type", "") for a in record.get("args", [])
                    if a.get("name") == "b_ptr"), "")
    if bias and weights != "*bf16":
        argv.append("--aiter-bias-rounding")
    row = {"file": record["file"], "chip": record.get("chip"),
           "B": case["B"], "M": case["M"], "N": case["N"], "K": case["K"],
           "published_us": float(case["time_us"]),
           "source": case.get("source", ""),
           "method": case.get("measured_how", ""), "bias": bias}
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        row["check"] = "FAIL"
        row["error"] = (done.stdout + done.stderr).strip().splitlines()[-1:]
        return row
    model = json.loads(done.stdout)
    scales = {1.0: model["kernel_us"]}
    for entry in model.get("sensitivity", []):
        scales[float(entry["latency_scale"])] = entry["kernel_us"]
    row.update(check="PASS", model_us=model["kernel_us"],
               model_us_x05=scales.get(0.5), model_us_x2=scales.get(2.0),
               limiter=model["limiter"], terms_us=model["terms_us"],
               lower_bound_us=model["lower_bound_us"],
               launch_overhead_us=model.get("launch_overhead_us"),
               workgroups=model["workgroups"],
               model_version=model.get("model_version", 1))
    row["ratio"] = row["model_us"] / row["published_us"]
    return row


def print_table(rows):
    header = (f"{'file':58} {'B':>4} {'M':>5} {'N':>5} {'K':>5} "
              f"{'published':>9} {'x0.5':>7} {'x1':>7} {'x2':>7} "
              f"{'x1/pub':>6} {'limit':>8} Y")
    print(header)
    for r in rows:
        if r["check"] != "PASS":
            print(f"{r['file']:58} {r['B']:4} {r['M']:5} {r['N']:5} "
                  f"{r['K']:5} {r['published_us']:9.2f} {'-':>7} {'-':>7} "
                  f"{'-':>7} {'-':>6} {'-':>8} FAIL {r.get('error')}")
            continue
        print(f"{r['file']:58} {r['B']:4} {r['M']:5} {r['N']:5} {r['K']:5} "
              f"{r['published_us']:9.2f} {r['model_us_x05']:7.2f} "
              f"{r['model_us']:7.2f} {r['model_us_x2']:7.2f} "
              f"{r['ratio']:6.2f} {r['limiter']:>8} PASS")


def summary(rows):
    passed = [r for r in rows if r["check"] == "PASS"]
    errors = [abs(math.log(r["ratio"])) for r in passed]
    if not errors:
        return {"cases": len(rows), "checked": 0}
    within = sum(1 for r in passed if abs(r["ratio"] - 1) <= BAND)
    worst = max(passed, key=lambda r: abs(math.log(r["ratio"])))
    by_source = {}
    for r in passed:
        by_source.setdefault(r["source"], []).append(r["ratio"])
    return {"cases": len(rows), "checked": len(passed),
            "model_versions": sorted({r["model_version"] for r in passed}),
            "median_ratio_by_source": {
                source: statistics.median(ratios)
                for source, ratios in sorted(by_source.items())},
            "within_25_percent": within,
            "median_abs_log_error": statistics.median(errors),
            "median_ratio": statistics.median(r["ratio"] for r in passed),
            "worst_abs_log_error": max(errors),
            "worst": f"{worst['file']} B={worst['B']} M={worst['M']} "
                     f"(model/published {worst['ratio']:.2f})"}


def plot(rows, path):
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise UserError("--plot needs matplotlib (Debian: "
                        "python3-matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    passed = [r for r in rows if r["check"] == "PASS"]
    figure, axes = plt.subplots(figsize=(6.5, 5.5))
    low = min(min(r["published_us"], r["model_us"]) for r in passed) / 1.5
    high = max(max(r["published_us"], r["model_us"]) for r in passed) * 1.5
    line = [low, high]
    axes.plot(line, line, color="black", linewidth=1, label="model = published")
    axes.fill_between(line, [v * (1 - BAND) for v in line],
                      [v * (1 + BAND) for v in line], color="0.85",
                      label="+-25 %")
    families = {}
    for r in passed:
        family = r["file"].split("_B")[0]
        families.setdefault(family, []).append(r)
    for family, members in sorted(families.items()):
        axes.errorbar([r["published_us"] for r in members],
                      [r["model_us"] for r in members],
                      # The bars span the three scales' times: a greedy
                      # schedule is not always monotonic in the latency.
                      yerr=[[r["model_us"] - min(r["model_us_x05"],
                                                 r["model_us_x2"],
                                                 r["model_us"])
                             for r in members],
                            [max(r["model_us_x05"], r["model_us_x2"],
                                 r["model_us"]) - r["model_us"]
                             for r in members]],
                      fmt="o", capsize=3, label=family)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(low, high)
    axes.set_xlabel("published real-GPU kernel time (us)")
    axes.set_ylabel("modelled kernel time (us), latency x1 (bars: x0.5, x2)")
    versions = sorted({str(r.get("model_version", 1)) for r in passed})
    axes.set_title("Timing model " + ", ".join(versions) +
                   " against published AITER kernel times")
    axes.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?", default=str(DEFAULT_DIR),
                        help="calibration directory (default %(default)s)")
    parser.add_argument("--json", metavar="FILE",
                        help="write one record per case here")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="modelled against published, log-log")
    parser.add_argument("--emu", default=str(REPO / "build" / "bin" /
                                             "mla-fp8-emu"),
                        help="the emulator (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="cases at a time (default: one per core)")
    parser.add_argument("--from-json", metavar="FILE",
                        help="print and plot a table --json wrote; runs "
                             "nothing")
    args = parser.parse_args()
    if args.from_json:
        try:
            rows = json.loads(Path(args.from_json).read_text())["cases"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise UserError(f"{args.from_json}: not a table --json wrote "
                            f"({error})") from None
        return report(rows, None, args.plot)
    if not os.access(args.emu, os.X_OK):
        raise UserError(f"{args.emu} is not built (./build.sh build)")
    if args.jobs < 1:
        raise UserError("--jobs must be at least 1")
    kernels_json, work = cases_of(Path(args.dir))
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda rc: run_case(args.emu, kernels_json, *rc),
                             work))
    return report(rows, args.json, args.plot)


def report(rows, json_path, plot_path):
    """Prints the table and its summary, writes the JSON and the plot."""
    print_table(rows)
    stats = summary(rows)
    print()
    if stats.get("checked"):
        print(f"{stats['checked']} of {stats['cases']} cases ran with Y "
              f"checked; {stats['within_25_percent']} within +-25 % of the "
              f"published time at latency x1; model/published median "
              f"{stats['median_ratio']:.2f}; |ln(model/published)| median "
              f"{stats['median_abs_log_error']:.3f}, worst "
              f"{stats['worst_abs_log_error']:.3f} ({stats['worst']}); "
              f"timing model version "
              f"{', '.join(map(str, stats['model_versions']))}")
        for source, ratio in stats["median_ratio_by_source"].items():
            print(f"  model/published median {ratio:.2f}: {source}")
    if json_path:
        Path(json_path).write_text(json.dumps(
            {"summary": stats, "cases": rows}, indent=1) + "\n")
    if plot_path:
        plot(rows, plot_path)
    return 0 if stats.get("checked") == len(rows) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as error:
        sys.exit(f"calibrate: {error}")
