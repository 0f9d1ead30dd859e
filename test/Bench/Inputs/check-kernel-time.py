"""Checks a kernel-time.py table against its --json records.

Usage: check-kernel-time.py TABLE JSON CASES

Every record's times must be the table row's (as printed, to 3 decimals):
ours, the best peer, AITER as dispatched and the best foreign kernel, with
the ratios ours / each of them; each per-layer row the sum of its chip, B
and M's two projections; floor_us the larger of the lower bound and one load and one
store latency. CASES is the number of records expected.
"""
import json
import sys

# The dispatch window plus (load + store) cycles / clock (GHz) of each chip's
# default product, from lib/Hardware/DeviceTiming.cpp: the chain floor_us
# takes where it exceeds the lower bound, in us.
CHAIN_US = {"gfx942": 1.1 + 1400 / 2100, "gfx950": 1.1 + 1400 / 2400}


def close(text, value, digits):
    """Whether a printed cell is the value to its digits, or '-' for None."""
    if value is None:
        return text == "-"
    return abs(float(text) - value) <= 10**-digits


def quotient(a, b):
    return a / b if a is not None and b else None


def add(a, b):
    return None if a is None or b is None else a + b


def main():
    table, cases = sys.argv[1], int(sys.argv[3])
    with open(sys.argv[2]) as f:
        records = json.load(f)
    assert len(records) == cases, f"{len(records)} records, expected {cases}"
    rows, layers = {}, {}
    for line in open(table):
        cells = line.split()
        if len(cells) == 20 and cells[2].isdigit():
            rows[cells[0], cells[1], int(cells[2]), int(cells[3])] = cells
        elif len(cells) == 10 and cells[1].isdigit():
            layers[cells[0], int(cells[1]), int(cells[2])] = cells
    sums = {}
    for r in records:
        cells = rows.pop((r["chip"], r["projection"], r["b"], r["m"]))
        ours = r["ours_us"]
        for text, value, digits in (
                (cells[4], ours, 3), (cells[5], r["peer_us"], 3),
                (cells[6], quotient(ours, r["peer_us"]), 2),
                (cells[8], r["lower_bound_us"], 3),
                (cells[12], r["aiter_us"], 3),
                (cells[13], quotient(ours, r["aiter_us"]), 2),
                (cells[16], r["best_foreign_us"], 3),
                (cells[17], quotient(ours, r["best_foreign_us"]), 2)):
            assert close(text, value, digits), (cells, r)
        assert cells[7] == r["limiter"], (cells, r)
        assert (r["aiter_us"] is None) == (r["aiter_kernel"] is None), r
        # The best foreign kernel is the fastest of all, the peer included.
        for other in (r["peer_us"], r["aiter_us"]):
            assert other is None or r["best_foreign_us"] <= other, r
        # The real emulator's floor (the stand-in of kernel-time-even-mn.test
        # reports its own, half its time).
        if r["ours_kernel"] != "ours":
            floor = max(r["lower_bound_us"], CHAIN_US[r["chip"]])
            assert abs(r["floor_us"] - floor) < 1e-9, r
        key = r["chip"], r["b"], r["m"]
        sums[key] = tuple(add(a, b) for a, b in zip(
            sums.get(key, (0.0,) * 4),
            (ours, r["peer_us"], r["aiter_us"], r["best_foreign_us"])))
    assert not rows, f"table rows without a record: {list(rows)}"
    for key, (ours, peer, aiter, foreign) in sums.items():
        cells = layers.pop(key)
        for text, value in ((cells[3], ours), (cells[4], peer),
                            (cells[6], aiter), (cells[8], foreign)):
            assert close(text, value, 3), (cells, ours, peer, aiter, foreign)
    assert not layers, f"per-layer rows without records: {list(layers)}"
    print(f"OK: {cases} records, {len(sums)} per-layer sums")


if __name__ == "__main__":
    main()
