#!/usr/bin/env python3
"""Writes the manifest inputs of the regression corpus from a fresh bundle.

Each input is the bundle's manifest with one contradiction that once loaded
without an error (issue 9), or a neighbour of one. The code object's digest
and size are written as @SHA256(gfx942.hsaco)@ and @BYTES(gfx942.hsaco)@, which
the manifest harness fills in from the bundle it is given, so the inputs stay
valid when the compiler's output changes. Beside each input, <input>.expect
holds a text the loader's error must contain: the field at fault.

Usage (after a layout change, regenerate and review the diff):
  mla-fp8-aot --chips=gfx942 --tp=8 --max-m=16 --no-cache -o /tmp/b
  test/Regression/make-manifest-corpus.py /tmp/b test/Regression/manifest
"""

import copy
import json
import os
import sys


def kup(m):
    return next(k for k in m["chips"][0]["kernels"] if k["projection"] == "k_up")


def vup(m):
    return next(k for k in m["chips"][0]["kernels"] if k["projection"] == "v_up")


def setter(path, value):
    """A mutation that sets kup(m)[path...] to value."""

    def mutate(m):
        node = kup(m)
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def other_projection_symbol(m):
    kup(m)["symbol"] = vup(m)["symbol"]


def missing_symbol(m):
    kup(m)["symbol"] = kup(m)["symbol"] + "_missing"


def moved_arg(m):
    # "m" moves onto w: the layout no longer matches the kernel's.
    for arg in kup(m)["args"]:
        if arg.get("name") == "m":
            arg["offset"] += 8


def renamed_arg(m):
    # The sixth argument claims another argument's name: a launcher packing
    # by name would put x_stride_b where the kernel reads w_scale.
    kup(m)["args"][5]["name"] = "x_stride_b"


def unnamed_arg(m):
    del kup(m)["args"][0]["name"]


def flipped(field, values):
    def mutate(m):
        k = kup(m)
        k[field] = values[1] if k[field] == values[0] else values[0]

    return mutate


# name -> (mutation, the text the error must name)
MUTATIONS = {
    "grid-x-zero": (setter(["grid", "x"], 0), "grid.x"),
    "grid-z-one": (setter(["grid", "z"], 1), "grid.z"),
    "grid-y-wrong-divisor": (setter(["grid", "y"], "ceil(M/1)"), "grid.y"),
    "grid-divisor-overflow": (
        setter(["grid", "y"], "ceil(M/99999999999999999999)"), "grid.y"),
    "grid-divisor-int64-max": (
        setter(["grid", "y"], "ceil(M/9223372036854775807)"), "grid.y"),
    "workgroup-size-32": (setter(["workgroup_size"], [32, 1, 1]),
                          "workgroup_size"),
    "has-bias-flipped": (flipped("has_bias", [False, True]), "has_bias"),
    "w-scale-flipped": (flipped("w_scale", ["per_tensor", "per_batch"]),
                        "w_scale"),
    "out-type-flipped": (flipped("out_type", ["bf16", "f16"]), "out_type"),
    "kernarg-size-huge": (setter(["kernarg_size"], 1000000000000),
                          "kernarg_size"),
    "kernarg-size-mismatch": (setter(["kernarg_size"], 96), "kernarg_size"),
    "workspace-huge": (setter(["workspace_bytes_per_block"], 10**15),
                       "workspace_bytes_per_block"),
    "lds-bytes-mismatch": (setter(["lds_bytes"], 0), "lds_bytes"),
    "symbol-other-projection": (other_projection_symbol, "symbol"),
    "symbol-missing": (missing_symbol, "symbol"),
    "arg-moved": (moved_arg, "args"),
    "arg-renamed": (renamed_arg, "args[5].name"),
    "arg-unnamed": (unnamed_arg, "args[0].name"),
    "tile-stages-5": (setter(["tile", "stages"], 5), "tile.stages"),
    "tile-occupancy-1": (setter(["tile", "occupancy"], 1), "tile.occupancy"),
    "tile-mfma-unknown": (setter(["tile", "mfma"], "m16n16k16"), "tile.mfma"),
    "tile-mfma-gfx950-only": (setter(["tile", "mfma"], "m16n16k128"),
                              "tile.mfma"),
    "tile-block-not-mfma-multiple": (setter(["tile", "mfma"], "m32n32k16"),
                                     "tile.mfma"),
    "group-size-8": (setter(["group_size"], 8), "group_size"),
    "lds-bytes-beyond-chip": (setter(["lds_bytes"], 65537), "lds_bytes"),
    "code-object-outside": (
        lambda m: m["chips"][0].update(code_object="../gfx942.hsaco"),
        "code_object"),
    "sha256-mismatch": (
        lambda m: m["chips"][0].update(sha256="0" * 64), "sha256"),
}


def template(manifest):
    m = copy.deepcopy(manifest)
    for chip in m["chips"]:
        name = chip["code_object"]
        chip["sha256"] = "@SHA256(%s)@" % name
        chip["bytes"] = "@BYTES(%s)@" % name
    return m


def dump(m):
    text = json.dumps(m, indent=2, sort_keys=True) + "\n"
    # The size is a number once the harness fills it in.
    for chip in m["chips"]:
        if isinstance(chip["bytes"], str):
            text = text.replace('"%s"' % chip["bytes"], chip["bytes"])
    return text


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bundle, out = sys.argv[1:]
    with open(os.path.join(bundle, "manifest.json")) as f:
        base = template(json.load(f))
    os.makedirs(out, exist_ok=True)
    for name, (mutate, field) in MUTATIONS.items():
        m = copy.deepcopy(base)
        mutate(m)
        path = os.path.join(out, "reject-%s.json" % name)
        with open(path, "w") as f:
            f.write(dump(m))
        if field:
            with open(path + ".expect", "w") as f:
                f.write(field + "\n")


if __name__ == "__main__":
    main()
