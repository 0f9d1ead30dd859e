"""damage-cache-entry.py MODE CACHE_DIR: damages the one cache entry in
CACHE_DIR the way MODE says:
  flip        flips one bit of the code object's .text (checksum left stale)
  truncate    cuts the entry in half
  no-kernels  rewrites the index with "kernels": [] and a valid checksum
  split-k     changes every split_k of the index, with a valid checksum
  old-format  gives the entry an older format's header (checksum still valid)
"""
import glob
import hashlib
import json
import sys

mode, cache = sys.argv[1], sys.argv[2]
(path,) = glob.glob(cache + "/*.entry")
data = open(path, "rb").read()
magic, rest = data.split(b"\n", 1)
checksum_line, payload = rest.split(b"\n", 1)
index_line, object_line, body = payload.split(b"\n", 2)
index_bytes = int(index_line.split()[1])
index, code = body[:index_bytes], body[index_bytes:]


def rewrite(new_index):
    new_payload = b"index %d\nobject %d\n" % (len(new_index), len(code))
    new_payload += new_index + code
    digest = hashlib.sha256(new_payload).hexdigest().encode()
    return magic + b"\nsha256 " + digest + b"\n" + new_payload


if mode == "flip":
    damaged = bytearray(data)
    # A byte of the last kernel's code, well inside .text.
    damaged[len(data) - len(code) + 0x1000 + 8] ^= 0x10
    out = bytes(damaged)
elif mode == "truncate":
    out = data[: len(data) // 2]
elif mode == "no-kernels":
    out = rewrite(json.dumps({"kernels": []}).encode())
elif mode == "split-k":
    parsed = json.loads(index)
    for kernel in parsed["kernels"]:
        kernel["tile"]["split_k"] = 2 if kernel["tile"]["split_k"] == 1 else 1
    out = rewrite(json.dumps(parsed, separators=(",", ":")).encode())
elif mode == "old-format":
    out = b"mla-fp8 cache entry 1\n" + rest
else:
    sys.exit("unknown mode " + mode)
open(path, "wb").write(out)
print("damaged", mode)
