"""Edits a bundle's manifest.json: edit-manifest.py DIR KEY=VALUE... [--keep-digest]

KEY is a dotted path into chips[0].kernels[1] (e.g. grid.x); VALUE is JSON.
The digest file is rewritten to match unless --keep-digest is given.
"""
import hashlib
import json
import sys

directory = sys.argv[1]
keep = "--keep-digest" in sys.argv
with open(directory + "/manifest.json") as f:
    manifest = json.load(f)
for assignment in sys.argv[2:]:
    if assignment == "--keep-digest":
        continue
    key, value = assignment.split("=", 1)
    node = manifest["chips"][0]["kernels"][1]
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    node[last] = json.loads(value)
text = json.dumps(manifest, indent=2)
with open(directory + "/manifest.json", "w") as f:
    f.write(text)
if not keep:
    with open(directory + "/manifest.sha256", "w") as f:
        f.write(hashlib.sha256(text.encode()).hexdigest() + "  manifest.json\n")
