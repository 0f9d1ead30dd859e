"""The "pyargs" campaign: bad arguments to the Python API. Part of bench/campaign/run.py."""

import json
import random
from pathlib import Path

from bundles import SHAPES, fork_map, import_package, problem_inputs
from common import (Campaign, crash_line, fill_tmpfs, fixture, rmtree,
                    try_mount_tmpfs, umount)


PY_PERTURBATIONS = [
    "huge-m", "huge-m", "huge-m", "w_scale", "w_scale", "w_scale",
    "group_size", "group_size", "group_size", "dtype", "x-dtype", "x-shape",
    "x-view", "x-view", "wq", "wq", "bias", "bias", "yq", "yq", "yq",
    "yq-overlap", "splitK", "flags", "chip", "api", "api",
]


def build_pyargs(spec):
    """Child: the arguments of one drop-in call from `spec`; returns
    (args, kwargs, reference-kwargs or None when the reference cannot be
    computed)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    from numpy.lib.stride_tricks import as_strided  # pylint: disable=C0415
    rng = random.Random(spec["seed"])
    proj = spec["proj"]
    n, k = SHAPES[proj]
    batch, m = spec["B"], spec["M"]
    with_bias = spec["bias"]
    x, wq, w_scale, bias = problem_inputs(proj, m, batch, with_bias)
    kw = {"group_size": 128, "bias": bias}
    tbm, tbm_in = spec["tbm"], spec["tbm_in"]
    X = np.ascontiguousarray(x.transpose(1, 0, 2)) if tbm_in else x
    W, S = wq, w_scale
    y_shape = (m, batch, n) if tbm else (batch, m, n)
    p = spec["perturb"]
    note = p
    feasible = True
    if p == "huge-m":
        # As large as numpy can still describe (size * 2 bytes < 2**63).
        big = rng.choice([2**31 - 1, 2**31, 2**32, 2**32 + 1, 2**40,
                          2**44, 2**48])
        note = f"M={big}"
        shape = (big, batch, k) if tbm_in else (batch, big, k)
        X = as_strided(x, shape=shape, strides=(0, 0, 2))
        if rng.random() < 0.7:
            ys = (big, batch, n) if tbm else (batch, big, n)
            kw["YQ"] = as_strided(np.zeros(n, np.uint16), shape=ys,
                                  strides=(0, 0, 2))
            note += " with a zero-stride YQ"
        feasible = False
    elif p == "w_scale":
        choice = rng.choice(["None", "str", "empty", "nan", "inf", "zero",
                             "neg", "too-many", "int-array", "2d", "object",
                             "complex", "list", "float64", "huge-list"])
        note = f"w_scale={choice}"
        S = {"None": None, "str": "abc", "empty": np.array([], np.float32),
             "nan": np.float32("nan"), "inf": np.float32("inf"),
             "zero": np.float32(0), "neg": -w_scale,
             "too-many": np.ones(batch + 1, np.float32),
             "int-array": np.array([1], np.int32),
             "2d": np.ones((1, 1), np.float32), "object": object(),
             "complex": 1 + 2j, "list": [float(np.asarray(w_scale).ravel()[0])],
             "float64": np.float64(np.asarray(w_scale).ravel()[0]),
             "huge-list": [1.0] * 100000}[choice]
    elif p == "group_size":
        value = rng.choice([2**70, 0, -128, 127, 64, 256, 1.5, "128", None,
                            True, 2**63, 2**64, -2**70, 128.0])
        note = f"group_size={value!r}"
        kw["group_size"] = value
    elif p == "dtype":
        value = rng.choice(["f32", np.float32, 0, "bf16", "f16", "",
                            "bfloat16", np.float16, object()])
        note = f"dtype={value!r}"
        kw["dtype"] = value
    elif p == "x-dtype":
        dt = rng.choice([np.float32, np.uint8, np.int16, np.bool_, np.float16,
                         np.int64, object])
        note = f"X dtype {np.dtype(dt).name}"
        X = X.astype(dt)
    elif p == "x-shape":
        choice = rng.choice(["2d", "4d", "B0", "M0", "K-mismatch", "scalar",
                             "list"])
        note = f"X {choice}"
        if choice == "2d":
            X = X.reshape(-1, k)
        elif choice == "4d":
            X = X[None]
        elif choice == "B0":
            X = X[:, :0] if tbm_in else X[:0]
        elif choice == "M0":
            X = X[:0] if tbm_in else X[:, :0]
        elif choice == "K-mismatch":
            X = X[..., :k // 2]
        elif choice == "scalar":
            X = np.uint16(1)
        else:
            X = X.tolist()
    elif p == "x-view":
        choice = rng.choice(["k-stride-2", "reversed-m", "reversed-b",
                             "fortran", "zero-stride-rows", "unaligned",
                             "readonly", "slice-of-wider"])
        note = f"X {choice}"
        if choice == "k-stride-2":
            wide = np.repeat(X, 2, axis=2)
            X = wide[..., ::2]
        elif choice == "reversed-m":
            X = X[::-1] if tbm_in else X[:, ::-1]
        elif choice == "reversed-b":
            X = X[:, ::-1] if tbm_in else X[::-1]
        elif choice == "fortran":
            X = np.asfortranarray(X)
        elif choice == "zero-stride-rows":
            shp = X.shape
            X = as_strided(X, shape=shp, strides=(0, 0, 2) if tbm_in else
                           (X.strides[0], 0, 2))
        elif choice == "unaligned":
            buf = np.zeros(X.nbytes + 1, np.uint8)
            view = buf[1:].view(np.uint16).reshape(X.shape)
            view[...] = X
            X = view
        elif choice == "readonly":
            X = X.copy()
            X.flags.writeable = False
        else:
            wide = np.zeros(X.shape[:2] + (k + 64,), np.uint16)
            wide[..., :k] = X
            X = wide[..., :k]
    elif p == "wq":
        choice = rng.choice(["f32", "noncontig", "N0", "B-mismatch",
                             "K-mismatch", "fortran", "int8"])
        note = f"WQ {choice}"
        if choice == "f32":
            W = W.astype(np.float32)
        elif choice == "noncontig":
            W = np.repeat(W, 2, axis=2)[..., ::2]
        elif choice == "N0":
            W = W[:, :0]
        elif choice == "B-mismatch":
            W = np.concatenate([W, W])
        elif choice == "K-mismatch":
            W = np.ascontiguousarray(W[..., :k // 2])
        elif choice == "fortran":
            W = np.asfortranarray(W)
        else:
            W = W.view(np.int8)
    elif p == "bias":
        choice = rng.choice(["shape", "f32", "1d", "noncontig", "huge"])
        note = f"bias {choice}"
        base = bias if bias is not None else np.zeros((batch, n), np.uint16)
        kw["bias"] = {"shape": base[:, :n // 2], "f32":
                      base.astype(np.float32), "1d": base.reshape(-1),
                      "noncontig": np.repeat(base, 2, axis=1)[:, ::2],
                      "huge": np.zeros((batch, n + 1), np.uint16)}[choice]
    elif p in ("yq", "yq-overlap"):
        choice = "overlap" if p == "yq-overlap" else rng.choice(
            ["shape", "readonly", "reversed", "n-stride-2", "f16-dtype",
             "uint8", "slice-of-wider", "list", "fortran"])
        note = f"YQ {choice}"
        if choice == "overlap":
            kw["YQ"] = as_strided(np.zeros(y_shape[2] * 2, np.uint16),
                                  shape=y_shape, strides=(0, 0, 2))
        elif choice == "shape":
            kw["YQ"] = np.zeros((y_shape[0], y_shape[1], n + 1), np.uint16)
        elif choice == "readonly":
            y = np.zeros(y_shape, np.uint16)
            y.flags.writeable = False
            kw["YQ"] = y
        elif choice == "reversed":
            kw["YQ"] = np.zeros(y_shape, np.uint16)[:, ::-1]
        elif choice == "n-stride-2":
            kw["YQ"] = np.zeros(y_shape[:2] + (2 * n,), np.uint16)[..., ::2]
        elif choice == "f16-dtype":
            kw["YQ"] = np.zeros(y_shape, np.float16)
        elif choice == "uint8":
            kw["YQ"] = np.zeros(y_shape, np.uint8)
        elif choice == "slice-of-wider":
            kw["YQ"] = np.zeros(y_shape[:2] + (n + 64,), np.uint16)[..., :n]
        elif choice == "fortran":
            kw["YQ"] = np.asfortranarray(np.zeros(y_shape, np.uint16))
        else:
            kw["YQ"] = np.zeros(y_shape, np.uint16).tolist()
    elif p == "splitK":
        value = rng.choice([0, -1, 2**70, "x", 4, 1.5, None])
        note = f"splitK={value!r}"
        kw["splitK"] = value
    elif p == "flags":
        value = rng.choice(["yes", 2, None, 1.0, "False"])
        which = rng.choice(["transpose_bm", "transpose_bm_in"])
        note = f"{which}={value!r}"
        kw[which] = value
    elif p == "chip":
        value = rng.choice(["gfx950", "", "gfx942\0", 942, "GFX942",
                            "gfx90a"])
        note = f"chip={value!r}"
        kw["chip"] = value
    kw.setdefault("transpose_bm", tbm)
    kw.setdefault("transpose_bm_in", tbm_in)
    return (X, W, S), kw, feasible, note


def pyargs_call(spec):
    """Child: one drop-in call with bad arguments, checked against the
    reference; returns 'ok', or 'wrong: why'."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import mla_fp8  # pylint: disable=import-outside-toplevel
    if spec["perturb"] == "api":
        return pyargs_api(spec)
    mla_fp8.set_bundle(spec["bundle"])
    (X, W, S), kw, feasible, note = build_pyargs(spec)
    yq = kw.get("YQ")
    y_before = None
    if isinstance(yq, np.ndarray) and yq.size < 10**7:
        y_before = yq.copy()
    Y = mla_fp8.\
        batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant(  # noqa: E501
            X, W, S, **kw)
    if not feasible:
        return f"wrong: accepted {note} and returned"
    if yq is not None and Y is not yq:
        return "wrong: did not return YQ"
    # The reference decides what the arguments mean.
    tbm_in = kw["transpose_bm_in"]
    tbm = kw["transpose_bm"]
    try:
        x = np.asarray(X)
        x = x.transpose(1, 0, 2) if tbm_in is True else x
        out_type = {"f16": "f16", "float16": "f16"}.get(
            str(kw.get("dtype")), "bf16")
        out = None
        if isinstance(yq, np.ndarray):
            out = np.lib.stride_tricks.as_strided(
                np.zeros(yq.size + yq.shape[-1] * 4, np.uint16),
                shape=yq.shape, strides=yq.strides) if 0 in yq.strides \
                else np.zeros(yq.shape, np.uint16)
        ref = mla_fp8.reference_prequant_bmm(
            x, np.asarray(W), S, fp8_format="f8E4M3FNUZ",
            group_size=kw["group_size"], out_type=out_type,
            bias=kw.get("bias"), transpose_bm=bool(tbm), out=out)
    except Exception as error:  # pylint: disable=broad-except
        return (f"wrong: accepted {note}, which the reference refuses "
                f"({type(error).__name__}: {str(error)[:100]})")
    got = np.asarray(Y)
    if got.shape != ref.shape:
        return f"wrong: {note}: Y shape {got.shape}, reference {ref.shape}"
    conv = mla_fp8.from_f16_bits if out_type == "f16" else \
        mla_fp8.from_bf16_bits
    a, b = conv(np.ascontiguousarray(got)), conv(ref)
    if not np.allclose(a, b, rtol=2e-2, atol=2e-2, equal_nan=True):
        bad = int(np.sum(~np.isclose(a, b, rtol=2e-2, atol=2e-2,
                                     equal_nan=True)))
        untouched = y_before is not None and np.array_equal(got, y_before)
        return (f"wrong: {note}: {bad} of {a.size} values differ from the "
                f"reference" + (" (Y untouched)" if untouched else ""))
    return "ok"


def pyargs_api(spec):
    """Child: the package's other entry points with bad arguments."""
    import mla_fp8  # pylint: disable=import-outside-toplevel
    rng = random.Random(spec["seed"])
    bundle = mla_fp8.load_bundle(spec["bundle"])
    kernel = bundle.kernels()[0]
    choice = rng.choice(["grid-2^40", "grid-2^32", "grid-neg", "grid-huge-b",
                         "workspace-huge", "find-huge-m", "find-bad",
                         "gen-equal-dims", "gen-full-disk", "gen-sentinel",
                         "gen-huge"])
    # A grid is either refused or exact: y = ceil(M / block_m), z = B.
    sizes = {"grid-2^40": (2**40, 2), "grid-2^32": (2**36, 2**33),
             "grid-neg": (-1, 2), "grid-huge-b": (1, 2**70)}
    if choice in sizes:
        m, b = sizes[choice]
        grid = tuple(kernel.grid(m, b))
        if m < 0:
            return f"wrong: grid({m}, {b}) accepted: {grid}"
        want = (-(-m // kernel.block_m), b)
        if grid[0] > 0 and tuple(grid[1:]) == want:
            return "ok"
        return f"wrong: grid({m}, {b}) = {grid}, not (x, {want[0]}, {b})"
    if choice == "workspace-huge":
        kernel.workspace_bytes(2**62, 2**62)
        return "ok"
    if choice == "find-huge-m":
        bundle.find_kernel("gfx942", 512, 128, 2**70, 16)
        return "ok"
    if choice == "find-bad":
        bundle.find_kernel(rng.choice([None, 942, ""]), "512", -1, None, -1)
        return "ok"
    out = Path(spec["work"]) / "gen"
    if choice == "gen-equal-dims":
        mla_fp8.generate_bundle(str(out), heads=4, kv_lora_rank=128,
                                qk_nope_head_dim=128, v_head_dim=128, tp=[1],
                                chips=["gfx942"], max_m=16)
        return "ok"
    if choice == "gen-full-disk":
        if not Path(spec["full"]).is_dir():
            raise RuntimeError("no full file system here (skipped)")
        mla_fp8.generate_bundle(str(Path(spec["full"]) / "out"), heads=4,
                                kv_lora_rank=512, qk_nope_head_dim=128,
                                v_head_dim=128, tp=[1], chips=["gfx942"],
                                max_m=16)
        return "wrong: generate_bundle reported success on a full disk"
    if choice == "gen-sentinel":
        user = Path(spec["work"]) / "userdir"
        user.mkdir(parents=True, exist_ok=True)
        (user / "notes.txt").write_text("precious\n")
        try:
            mla_fp8.generate_bundle(str(user), heads=4, kv_lora_rank=512,
                                    qk_nope_head_dim=128, v_head_dim=128,
                                    tp=[1], chips=["gfx942"], max_m=16)
        finally:
            if not (user / "notes.txt").exists():
                # Reported through the result: data loss.
                print("DATALOSS", flush=True)
        return "ok" if (user / "notes.txt").exists() else \
            "dataloss: generate_bundle deleted a user's directory"
    mla_fp8.generate_bundle(str(out), heads=rng.choice([2**40, -1, 2**70]),
                            max_m=rng.choice([2**63, 0]))
    return "wrong: generate_bundle accepted huge dimensions"


def campaign_pyargs(ctx):
    camp = Campaign(ctx, "pyargs")
    base = fixture(ctx, "ref-bias")
    import_package(ctx)
    work = ctx.work / "pyargs"
    for m in work.glob("*/full"):
        umount(m)
    rmtree(work)
    work.mkdir(parents=True)
    total = ctx.count("pyargs")
    tasks = []
    for i in range(total):
        rng = ctx.rng("pyargs", i)
        cdir = work / str(i)
        spec = {"seed": rng.randrange(2**32), "proj": rng.choice(list(SHAPES)),
                "B": rng.randint(1, 3), "M": rng.randint(1, 4),
                "bias": rng.random() < 0.3, "tbm": rng.random() < 0.3,
                "tbm_in": rng.random() < 0.3,
                "perturb": rng.choice(PY_PERTURBATIONS),
                "bundle": str(base), "work": str(cdir),
                "full": str(cdir / "full")}
        tasks.append((i, spec))

    def prepared():
        for i, spec in tasks:
            cdir = Path(spec["work"])
            cdir.mkdir(parents=True)
            if spec["perturb"] == "api" and \
                    try_mount_tmpfs(ctx, cdir / "full", "64k"):
                fill_tmpfs(cdir / "full")
            yield i, spec

    def on_result(task, result):
        i, spec = task
        if "died" in result:
            cls = "crash"
            detail = result["died"] + ": " + crash_line(result["stderr"])
        elif "exc" in result:
            cls, detail = "refused", f"{result['exc']}: {result['msg'][:160]}"
        elif result["ok"] == "ok":
            cls, detail = "ok", ""
        elif result["ok"].startswith("dataloss"):
            cls, detail = "dataloss", result["ok"]
        else:
            cls, detail = "wrong", result["ok"]
        if cls == "crash" and "DATALOSS" in result.get("stderr", ""):
            cls = "dataloss"
        cmd = (f"PYTHONPATH={ctx.build / 'python-bindings'} /usr/bin/python3 "
               f"-c 'import sys; sys.path.insert(0, \"{Path(__file__).resolve().parent}\"); "
               f"import importlib.util as u; s = u.spec_from_file_location"
               f"(\"r\", \"{Path(__file__).resolve()}\"); r = "
               f"u.module_from_spec(s); s.loader.exec_module(r); "
               f"import json; print(r.pyargs_call(json.load(open("
               f"\"spec.json\"))))'")
        camp.record(i, cls, detail, cmd=cmd,
                    files={"spec.json": json.dumps(spec, indent=1),
                           "stderr.txt": result.get("stderr", "")},
                    extra={"spec": spec})
        umount(Path(spec["work"]) / "full")
        rmtree(spec["work"])

    fork_map(ctx, camp, prepared(), pyargs_call, ctx.py_timeout, on_result)
    return camp


# --------------------------------------------------------------------------
# Driver
