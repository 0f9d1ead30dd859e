"""The native serving module _mla_fp8, imported on first use.

Serving (bundles, kernel lookup, launches through HIP) is pure Python. The
native module runs the emulator, the reference and the bit conversions; it
links LLVM's runtime library, which a ROCm machine need not have, so that
nothing imports it until one of those is asked for.
"""

import importlib
import threading

__all__ = ["NativeModuleMissingError", "compiler_module", "native_module"]

_lock = threading.Lock()
_modules = {}


class NativeModuleMissingError(ImportError):
    """The native module is not installed or cannot be loaded."""


def _load(name, purpose, needs):
    module = _modules.get(name)
    if module is not None:
        return module
    with _lock:
        if name not in _modules:
            try:
                _modules[name] = importlib.import_module("." + name,
                                                         __package__)
            except ImportError as error:
                raise NativeModuleMissingError(
                    f"{purpose} needs mla_fp8's native module {name} (built "
                    f"by `./build.sh build`; it needs {needs}): {error}. "
                    f"Serving on a GPU needs neither native module") \
                    from error
    return _modules[name]


def native_module(purpose):
    """The _mla_fp8 extension module; `purpose` (e.g. "the reference")
    names what needs it in the error raised when it is missing."""
    return _load("_mla_fp8", purpose, "LLVM 22's runtime library, "
                 "libLLVM.so.22")


def compiler_module(purpose):
    """The _mla_fp8_compiler extension module, likewise."""
    return _load("_mla_fp8_compiler", purpose, "LLVM's and MLIR's runtime "
                 "libraries")
