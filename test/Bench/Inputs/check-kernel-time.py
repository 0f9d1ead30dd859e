"""Checks a kernel-time.py table against its --json records.

Usage: check-kernel-time.py TABLE JSON CASES

Every record's times must be the table row's (as printed, to 3 decimals), the
ratio ours / peer, and each per-layer row the sum of its chip, B and M's two
projections. CASES is the number of records expected.
"""
import json
import sys


def close(text, value, digits):
    """Whether a printed cell is the value to its digits, or '-' for None."""
    if value is None:
        return text == "-"
    return abs(float(text) - value) <= 10**-digits


def main():
    table, cases = sys.argv[1], int(sys.argv[3])
    with open(sys.argv[2]) as f:
        records = json.load(f)
    assert len(records) == cases, f"{len(records)} records, expected {cases}"
    rows, layers = {}, {}
    for line in open(table):
        cells = line.split()
        if len(cells) == 12 and cells[2].isdigit():
            rows[cells[0], cells[1], int(cells[2]), int(cells[3])] = cells
        elif len(cells) == 6 and cells[1].isdigit():
            layers[cells[0], int(cells[1]), int(cells[2])] = cells
    sums = {}
    for r in records:
        cells = rows.pop((r["chip"], r["projection"], r["b"], r["m"]))
        ratio = r["ours_us"] / r["peer_us"] if r["peer_us"] else None
        for text, value, digits in ((cells[4], r["ours_us"], 3),
                                    (cells[5], r["peer_us"], 3),
                                    (cells[6], ratio, 2),
                                    (cells[8], r["lower_bound_us"], 3)):
            assert close(text, value, digits), (cells, r)
        assert cells[7] == r["limiter"], (cells, r)
        ours, peer = sums.get((r["chip"], r["b"], r["m"]), (0.0, 0.0))
        sums[r["chip"], r["b"], r["m"]] = (
            ours + r["ours_us"], None if peer is None or r["peer_us"] is None
            else peer + r["peer_us"])
    assert not rows, f"table rows without a record: {list(rows)}"
    for key, (ours, peer) in sums.items():
        cells = layers.pop(key)
        assert close(cells[3], ours, 3) and close(cells[4], peer, 3), (
            cells, ours, peer)
    assert not layers, f"per-layer rows without records: {list(layers)}"
    print(f"OK: {cases} records, {len(sums)} per-layer sums")


if __name__ == "__main__":
    main()
