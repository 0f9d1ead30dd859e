"""The native serving module _mla_fp8, imported on first use.

Serving (bundles, kernel lookup, launches through HIP) is pure Python. The
native module runs the emulator, the reference and the bit conversions; it
links LLVM's runtime library, which a ROCm machine need not have, so that
nothing imports it until one of those is asked for.
"""

import importlib
import threading

__all__ = ["NativeModuleMissingError", "native_module"]

_lock = threading.Lock()
_module = None


class NativeModuleMissingError(ImportError):
    """The native module is not installed or cannot be loaded."""


def native_module(purpose):
    """The _mla_fp8 extension module; `purpose` (e.g. "the reference")
    names what needs it in the error raised when it is missing."""
    global _module  # pylint: disable=global-statement
    if _module is not None:
        return _module
    with _lock:
        if _module is None:
            try:
                _module = importlib.import_module("._mla_fp8", __package__)
            except ImportError as error:
                raise NativeModuleMissingError(
                    f"{purpose} needs mla_fp8's native module _mla_fp8 "
                    f"(built by `./build.sh build` with LLVM 22's runtime "
                    f"library, libLLVM.so.22): {error}. Serving on a GPU "
                    f"needs neither") from error
    return _module
