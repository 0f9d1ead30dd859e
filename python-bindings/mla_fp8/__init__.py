"""mla_fp8: group-quantized FP8 batched matmuls for MLA, from Python.

Numpy convention
----------------
numpy has no bf16 or fp8 dtypes, so every bf16, f16 and fp8 array travels as
its raw bits, with the format named by a string argument:

* bf16 and f16 arrays are ``uint16`` (``in_type``/``out_type`` is ``"bf16"``
  or ``"f16"``),
* fp8 arrays are ``uint8`` (``fp8_format`` is the MLIR type name:
  ``"f8E4M3FNUZ"`` (gfx942), ``"f8E4M3FN"`` (gfx950), ``"f8E5M2FNUZ"``,
  ``"f8E5M2"``),
* scales are ``float32``.

Functions that take floats round them to nearest even on entry: float64
inputs to float32 (numpy's cast), then to the narrow format. Passing an array
of the wrong dtype where bits are expected raises ``TypeError`` naming the
argument, so that floats are never silently read as bits. Every argument error
raises ``TypeError`` (wrong kind of object) or ``ValueError`` (wrong value),
with the argument's name first in the message.

Modules
-------
``formats``    bit conversions (to_bf16_bits, from_bf16_bits, ...)
``reference``  the exact reference of SPEC.md and weight quantization
``ir``         parse/print MLIR text and run pass pipelines (compiler)
``bundle``     load an AOT bundle and pick the kernel for a shape and M
``aot``        compile_spec / generate_bundle, as mla-fp8-aot (compiler)

``weights``    quantize_weights_for_chip, convert_ocp_weights_for_chip
``emulator``   run_kernel_emulated: a bundle kernel on the gfx9 emulator
``hip``        the HIP launcher (ctypes, on the process's libamdhip64)
``workspace``  split-K workspaces, graph capture, prepare()
``serving``    the drop-in call
               batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant
               (numpy arrays and CPU tensors: emulator; torch tensors on
               ROCm: HIP) and set_bundle / get_bundle
``torch_op``   the torch custom op mla_fp8::prequant_bmm behind the torch
               path (registered on first use where torch has custom_op)
``aiter_shim`` install_aiter_shim: AITER's import paths of the drop-in call
               resolve to mla_fp8's

Native parts
------------
``import mla_fp8`` loads no native module, and serving needs none: the bundle
loader with all its checks, the kernel lookup and the HIP launcher are pure
Python. ``_mla_fp8`` (linking LLVM's runtime library, never MLIR) runs the
emulator, the reference and the bit conversions; it is imported the first
time one of those is used. The compiler (``ir``, ``aot``) is
``_mla_fp8_compiler``, linking MLIR; it is imported the first time
``mla_fp8.aot``, ``mla_fp8.ir`` or one of their functions (``compile_spec``,
``generate_bundle``, ``parse_and_print``, ``run_pipeline``) is used. A
serving process on a GPU thus maps neither LLVM nor MLIR.
"""

import importlib
import importlib.util

from .formats import (FP8_FORMATS, fp8_max, to_bf16_bits, from_bf16_bits,
                      to_f16_bits, from_f16_bits, quantize_fp8,
                      dequantize_fp8)
from .reference import (reference_prequant_bmm, quantize_weights,
                        reencode_e4m3fn_to_fnuz)
from .bundle import Bundle, BundleError, Kernel, load_bundle
from .weights import (supported_chips, fp8_format_for_chip,
                      quantize_weights_for_chip, convert_ocp_weights_for_chip)
from .emulator import run_kernel_emulated
from .serving import (
    batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant,
    set_bundle, get_bundle, BundleNotFoundError)
from ._missing import set_compile_missing
from .aiter_shim import install_aiter_shim
from .hip import HipError, HipUnavailableError
from .workspace import prepare

# Names of the compiler's submodules, resolved on first use (PEP 562) so that
# importing the package does not load MLIR.
_COMPILER_NAMES = {
    "compile_spec": "aot",
    "generate_bundle": "aot",
    "parse_and_print": "ir",
    "run_pipeline": "ir",
}
_COMPILER_MODULES = ("aot", "ir")


def __getattr__(name):
    if name in _COMPILER_MODULES:
        return importlib.import_module("." + name, __name__)
    if name in _COMPILER_NAMES:
        module = importlib.import_module("." + _COMPILER_NAMES[name],
                                         __name__)
        value = globals()[name] = getattr(module, name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_COMPILER_NAMES) |
                  set(_COMPILER_MODULES))


# The public API: `from mla_fp8 import *` loads the compiler where it is
# installed (and leaves its names out where it is not, as in the serving
# wheel); `import mla_fp8` does not.
__all__ = [
    "FP8_FORMATS", "fp8_max", "to_bf16_bits", "from_bf16_bits", "to_f16_bits",
    "from_f16_bits", "quantize_fp8", "dequantize_fp8",
    "reference_prequant_bmm", "quantize_weights", "reencode_e4m3fn_to_fnuz",
    "parse_and_print", "run_pipeline", "Bundle", "BundleError", "Kernel",
    "load_bundle", "compile_spec", "generate_bundle", "supported_chips",
    "fp8_format_for_chip",
    "quantize_weights_for_chip", "convert_ocp_weights_for_chip",
    "run_kernel_emulated",
    "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
    "set_bundle", "get_bundle", "BundleNotFoundError", "set_compile_missing",
    "install_aiter_shim", "HipError", "HipUnavailableError", "prepare",
]



def _has_compiler():
    try:
        return importlib.util.find_spec("._mla_fp8_compiler",
                                        __name__) is not None
    except ImportError:
        return False


if not _has_compiler():
    __all__ = [name for name in __all__ if name not in _COMPILER_NAMES]
