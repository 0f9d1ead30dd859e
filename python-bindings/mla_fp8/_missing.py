"""What the drop-in call does when the bundle has no kernel for a call.

By default a miss is an error: it names the missing kernel and the
``mla-fp8-aot`` command line that generates a bundle holding it.

With ``MLA_FP8_COMPILE_MISSING=1`` (or ``set_compile_missing(True)``) the
missing kernel is compiled on first use, with a one-line RuntimeWarning, into
a bundle of its own under the per-user cache,
``$XDG_CACHE_HOME/mla-fp8/missing/<kernel>`` (``~/.cache/...``); later calls
and later processes that opted in find it there without compiling. Only then
is the compiler (``_mla_fp8_compiler``, which maps libMLIR) imported, so a
serving process that never misses stays MLIR-free.

The cache follows ``mla-fp8-aot -o``'s rules: a ``.lock`` file is opened with
O_NOFOLLOW and O_NONBLOCK and must be an empty regular file (a link, a FIFO,
a directory or a file with contents is someone else's and left alone); below
the cache root nothing that is a symbolic link is followed; the generator is
never forced, so it replaces only an mla-fp8 bundle that holds nothing else
(a damaged one of the cache's own is compiled again) and refuses anything
else. Every failure, a read-only or full cache included, is the documented
ValueError, naming the path.
"""

import errno
import fcntl
import json
import os
import shlex
import stat
import threading
import warnings
from collections import namedtuple

from .bundle import Bundle, BundleError

__all__ = ["ENV_VAR", "set_compile_missing", "compile_missing_enabled"]

#: The environment variable that opts in to compiling misses.
ENV_VAR = "MLA_FP8_COMPILE_MISSING"

#: Activation types mla-fp8-aot generates kernels for in this version.
GENERATED_IN_TYPES = ("bf16", "f16")

_TRUE = ("1", "true", "yes", "on")

_lock = threading.Lock()
_override = None
_compiled = {}


class Miss(namedtuple("Miss", "chip n k group_size in_type out_type w_scale "
                              "has_bias")):
    """The fields that select a kernel, less M (every bundle serves all M)."""

    def describe(self):
        return (f"{self.chip} N={self.n} K={self.k} group_size="
                f"{self.group_size} in_type={self.in_type} out_type="
                f"{self.out_type} w_scale={self.w_scale}"
                f"{' with bias' if self.has_bias else ''}")

    def directory_name(self):
        return (f"{self.chip}-n{self.n}-k{self.k}-g{self.group_size}-"
                f"{self.in_type}-{self.out_type}-{self.w_scale}"
                f"{'-bias' if self.has_bias else ''}")


def set_compile_missing(enabled):
    """Whether a kernel missing from the bundle is compiled on first use
    (True), is an error (False), or as $MLA_FP8_COMPILE_MISSING says
    (None, the default)."""
    global _override  # pylint: disable=global-statement
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(f"enabled: expected True, False or None, got "
                        f"{type(enabled).__name__}")
    _override = enabled


def compile_missing_enabled():
    """Whether misses are compiled (see set_compile_missing)."""
    if _override is not None:
        return _override
    return os.environ.get(ENV_VAR, "").strip().lower() in _TRUE


def cache_root():
    """The per-user cache of mla-fp8, as mla-fp8-aot's default --cache-dir."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "mla-fp8")


def _manifest(bundle):
    """The bundle's manifest.json, which its loader already checked."""
    with open(os.path.join(bundle.directory, "manifest.json"), "rb") as f:
        return json.load(f)


def _model_flags(manifest):
    """The flags that reproduce the bundle's model dimensions."""
    model = manifest["model"]
    if model != "custom" and not model.endswith("-custom"):
        return [f"--model={model}"]
    flags = [f"--model={model[:-len('-custom')]}"] if model != "custom" \
        else []
    return flags + [f"--heads={manifest['heads']}",
                    f"--kv-lora-rank={manifest['kv_lora_rank']}",
                    f"--qk-nope-head-dim={manifest['qk_nope_head_dim']}",
                    f"--v-head-dim={manifest['v_head_dim']}"]


def _variant_flags(miss, max_m, bias):
    flags = [f"--max-m={max_m}",
             f"--weight-scale={miss.w_scale.replace('_', '-')}",
             f"--out-type={miss.out_type}",
             f"--group-size={miss.group_size}",
             f"--in-type={miss.in_type}"]
    return flags + (["--bias"] if bias else [])


def command(bundle, miss):
    """The mla-fp8-aot command line that generates a bundle holding `miss`,
    or None when this version cannot generate it.

    A shape of the bundle's model regenerates the model's bundle with the
    missing variant (chip, group size, types, bias); another shape gets a
    bundle of its own (its kernels, and those of the (K, N) shape that the
    tool's second projection adds).
    """
    if miss.in_type not in GENERATED_IN_TYPES:
        return None
    manifest = _manifest(bundle)
    output = f"{bundle.directory.rstrip(os.sep)}-{miss.directory_name()}"
    model_shapes = {
        (manifest["kv_lora_rank"], manifest["qk_nope_head_dim"]),
        (manifest["v_head_dim"], manifest["kv_lora_rank"])}
    # wo_a of a model with output groups (bundles before it lack the fields).
    if manifest.get("o_groups"):
        model_shapes.add((manifest["o_lora_rank"],
                          manifest["heads"] * manifest["head_dim"] //
                          manifest["o_groups"]))
    if (miss.n, miss.k) in model_shapes:
        tp = sorted({t for chip in manifest["chips"]
                     for kernel in chip["kernels"] for t in kernel["tp"]})
        chips = list(bundle.chips)
        if miss.chip not in chips:
            chips.append(miss.chip)
        has_bias = any(k.has_bias for k in bundle.kernels())
        flags = (_model_flags(manifest) +
                 [f"--tp={','.join(str(t) for t in tp)}",
                  f"--chips={','.join(chips)}"] +
                 _variant_flags(miss, bundle.max_m, miss.has_bias or
                                has_bias))
    else:
        flags = (["--heads=1", f"--kv-lora-rank={miss.n}",
                  f"--qk-nope-head-dim={miss.k}", f"--v-head-dim={miss.k}",
                  "--tp=1", f"--chips={miss.chip}"] +
                 _variant_flags(miss, bundle.max_m, miss.has_bias))
    return shlex.join(["mla-fp8-aot", *flags, "-o", output])


def hint(bundle, miss):
    """The way forward appended to a miss's error message."""
    line = command(bundle, miss)
    if line is None:
        return (f" (mla-fp8-aot generates {', '.join(GENERATED_IN_TYPES)} "
                f"activation kernels only)")
    return (f"; `{line}` generates a bundle with it, or set {ENV_VAR}=1 to "
            f"compile it into {cache_root()}/missing on first use")


def _load_if_complete(directory, miss):
    """The cached bundle at `directory` if it holds `miss`, else None. A
    damaged or older copy is left where it is: the generator replaces it
    only if it is an mla-fp8 bundle with nothing else inside (what this
    cache writes), and refuses anything else."""
    try:
        manifest = os.lstat(os.path.join(directory, "manifest.json"))
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(manifest.st_mode):
        return None
    try:
        bundle = Bundle(directory)
    except BundleError:
        return None
    if bundle.find_kernel(miss.chip, miss.n, miss.k, 0, 0,
                          out_type=miss.out_type, w_scale=miss.w_scale,
                          group_size=miss.group_size, in_type=miss.in_type,
                          has_bias=miss.has_bias) is None:
        return None
    return bundle


def _cannot(argument, miss, why):
    return ValueError(f"{argument()}: no kernel for {miss.describe()} in the "
                      f"bundle, and {why}")


class _CacheError(Exception):
    """Why the cache at a path cannot be used (becomes a ValueError)."""


def _os_reason(error):
    return error.strerror or type(error).__name__


def _cache_directory(path):
    """Makes sure `path`, a directory of this cache's own, is a real
    directory: created when missing, never followed when it is a symbolic
    link (the cache never writes outside itself)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        try:
            os.mkdir(path)
        except FileExistsError:
            pass  # another process made it meanwhile; checked below
        except OSError as error:
            raise _CacheError(f"{path}: cannot create the directory: "
                              f"{_os_reason(error)}") from None
        info = os.lstat(path)
    except OSError as error:
        raise _CacheError(f"{path}: {_os_reason(error)}") from None
    if stat.S_ISLNK(info.st_mode):
        raise _CacheError(f"{path} is a symbolic link; the cache never "
                          f"follows links out of itself: remove it")
    if not stat.S_ISDIR(info.st_mode):
        raise _CacheError(f"{path} exists and is not a directory; move it "
                          f"away")


def _lock_file(path):
    """An exclusive flock on the lock file `path`: an empty regular file,
    created if missing. Anything else there (a symbolic link, a FIFO, a
    directory, a file with contents) is someone else's: neither followed,
    nor opened for writing, nor changed. Returns the descriptor."""
    flags = (os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK |
             os.O_CLOEXEC)
    foreign = (f"{path} exists and is not an mla-fp8 lock file (an empty "
               f"regular file); move it away")
    while True:
        try:
            fd = os.open(path, flags, 0o666)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                raise _CacheError(foreign) from None
            raise _CacheError(f"{path}: cannot open the lock file: "
                              f"{_os_reason(error)}") from None
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode) or opened.st_size != 0:
                raise _CacheError(foreign)
            fcntl.flock(fd, fcntl.LOCK_EX)
            # The lock is on the file now at `path`, not one replaced or
            # removed meanwhile (then the loop takes the new one).
            try:
                named = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                named = None
            if named is not None and (named.st_dev, named.st_ino) == (
                    opened.st_dev, opened.st_ino):
                return fd
        except OSError as error:
            os.close(fd)
            raise _CacheError(f"{path}: cannot lock: "
                              f"{_os_reason(error)}") from None
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _compile(miss, max_m, argument):
    """The bundle in the cache that holds `miss`, compiled if needed;
    argument() names the argument that selected it, for errors."""
    root = cache_root()
    missing = os.path.join(root, "missing")
    directory = os.path.join(missing, miss.directory_name())
    try:
        # The cache's root is where the user put it (it may be a link);
        # below it, everything is the cache's own.
        try:
            os.makedirs(root, exist_ok=True)
        except OSError as error:
            raise _CacheError(f"{root}: cannot create the cache directory: "
                              f"{_os_reason(error)}") from None
        if not os.path.isdir(root):
            raise _CacheError(f"{root} is not a directory")
        _cache_directory(missing)
        # Processes of one server (vLLM's workers) miss together: one
        # compiles, the others wait and load its result.
        fd = _lock_file(directory + ".lock")
    except _CacheError as error:
        raise _cannot(argument, miss, f"the compile cache cannot be used: "
                                      f"{error}") from None
    try:
        return _compile_locked(miss, max_m, argument, directory)
    finally:
        os.close(fd)


def _compile_locked(miss, max_m, argument, directory):
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise _cannot(argument, miss, f"the compile cache cannot be used: "
                                      f"{directory}: {_os_reason(error)}") \
            from None
    if info is not None and not stat.S_ISDIR(info.st_mode):
        what = ("a symbolic link; the cache never follows links out of "
                "itself: remove it" if stat.S_ISLNK(info.st_mode) else
                "not a directory; move it away")
        raise _cannot(argument, miss, f"the compile cache cannot be used: "
                                      f"{directory} is {what}")
    bundle = _load_if_complete(directory, miss) if info else None
    if bundle is not None:
        return bundle
    if miss.in_type not in GENERATED_IN_TYPES:
        raise _cannot(argument, miss, f"mla-fp8-aot generates "
                                      f"{', '.join(GENERATED_IN_TYPES)}"
                                      f" activation kernels only")
    try:
        from . import aot  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        # A serving install without the compiler module (no MLIR).
        raise _cannot(argument, miss, f"{ENV_VAR}=1 needs mla_fp8's "
                                      f"compiler module, which does not "
                                      f"import here ({error})") from None
    warnings.warn(f"mla_fp8: compiling the missing kernel "
                  f"{miss.describe()} into {directory} ({ENV_VAR}=1)",
                  RuntimeWarning, stacklevel=3)
    try:
        # Not forced: the generator replaces an mla-fp8 bundle that holds
        # nothing else, and refuses any other directory (nothing of the
        # user's is replaced).
        aot.generate_bundle(
            # 128 heads: the ranges of rows are planned for max_m tokens of
            # the most heads a served model has, as a bundle's are.
            directory, heads=128, kv_lora_rank=miss.n,
            qk_nope_head_dim=miss.k, v_head_dim=miss.k, tp=[1],
            chips=[miss.chip], max_m=max_m, weight_scale=miss.w_scale,
            out_type=miss.out_type, group_size=miss.group_size,
            in_type=miss.in_type, bias=miss.has_bias,
            cache_dir=cache_root(), force=False)
    except ValueError as error:
        raise _cannot(argument, miss,
                      f"compiling it failed: {error}") from None
    except OSError as error:
        raise _cannot(argument, miss, f"compiling it failed: {directory}: "
                                      f"{_os_reason(error)}") from None
    bundle = _load_if_complete(directory, miss)
    if bundle is None:
        raise RuntimeError(f"{directory}: the compiled bundle has no "
                           f"kernel for {miss.describe()}")
    return bundle


def find_compiled(miss, m, batch, max_m, argument):
    """The kernel for `miss`, `m` and `batch` from the cache, compiling it
    once;
    argument() names the argument at fault should that fail."""
    with _lock:
        bundle = _compiled.get(miss)
        if bundle is None:
            bundle = _compiled[miss] = _compile(miss, max_m, argument)
    return bundle.find_kernel(miss.chip, miss.n, miss.k, m, batch,
                              out_type=miss.out_type, w_scale=miss.w_scale,
                              group_size=miss.group_size,
                              in_type=miss.in_type, has_bias=miss.has_bias)
