"""Writes OUT/kernels.json with FILE's first record of SRC/kernels.json only,
edited: --swap A,B swaps two arguments' names; --offset NAME,VALUE moves
one; the code object is copied beside it."""
import argparse
import json
import shutil
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("src")
parser.add_argument("file")
parser.add_argument("out")
parser.add_argument("--swap")
parser.add_argument("--offset")
args = parser.parse_args()
records = json.loads((Path(args.src) / "kernels.json").read_text())["kernels"]
record = next(r for r in records if r["file"] == args.file)
by_name = {a["name"]: a for a in record["args"]}
if args.swap:
    first, second = args.swap.split(",")
    by_name[first]["name"], by_name[second]["name"] = second, first
if args.offset:
    name, value = args.offset.split(",")
    by_name[name]["offset"] = int(value)
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
(out / "kernels.json").write_text(json.dumps({"kernels": [record]}))
shutil.copy(Path(args.src) / args.file, out / args.file)
