"""Writes a kernels.json of chosen records of another, for kernel-time tests.

Usage: make-kernels-json.py FROM_KERNELS_JSON TO_DIR FILE[:EDIT]...

Copies each FILE's record (and its code object) from FROM into TO_DIR's
kernels.json. EDIT changes the copy: 'plain' drops its M bucket (a foreign
kernel that is not AITER's per-bucket build), 'badgrid' also gives it the
grid (B, 1, 1), one tile per batch, so Y is incomplete and fails its check.
"""
import json
import shutil
import sys
from pathlib import Path


def main():
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    data = json.loads(source.read_text())
    records = {r["file"]: r for r in data["kernels"]}
    chosen = []
    for arg in sys.argv[3:]:
        name, _, edit = arg.partition(":")
        record = dict(records[name])
        if edit in ("plain", "badgrid"):
            record.pop("m_bucket")
            record.pop("m_max")
        if edit == "badgrid":
            record["grid"] = "(B, 1, 1)"
        shutil.copy(source.parent / name, out / name)
        chosen.append(record)
    (out / "kernels.json").write_text(json.dumps({"kernels": chosen}))


if __name__ == "__main__":
    main()
