"""MLIR text in, MLIR text out: the project's dialect, passes and pipelines.

MLIR's own Python bindings cannot be built against the Debian packages, so
this goes through a narrow text interface of the project's C++ API. Importing
this module loads the compiler (_mla_fp8_compiler, which maps libMLIR);
serving never needs it.
"""

from ._native import compiler_module
from ._checks import check_str

_mla_fp8_compiler = compiler_module(
    "mla_fp8.ir (parse_and_print, run_pipeline)")

__all__ = ["parse_and_print", "run_pipeline"]


def parse_and_print(ir_text, *, generic=False):
    """Parses and verifies a module, and prints it back.

    Args:
      ir_text: the module as MLIR text.
      generic: print the generic operation form.

    Raises:
      ValueError: with the MLIR diagnostics when the IR does not parse or
        verify.
    """
    check_str(ir_text, "ir_text")
    return _mla_fp8_compiler.parse_and_print(ir_text, bool(generic))


def run_pipeline(ir_text, pipeline_str, *, generic=False):
    """Runs a textual pass pipeline on a module and prints the result.

    Args:
      ir_text: the module as MLIR text.
      pipeline_str: anchored on the module, e.g.
        "builtin.module(mlafp8-fuse-prequant)" or
        "builtin.module(mlafp8-to-rocdl{chip=gfx950})".
      generic: print the generic operation form.

    Raises:
      ValueError: with the diagnostics when the IR, the pipeline or a pass
        fails.
    """
    check_str(ir_text, "ir_text")
    check_str(pipeline_str, "pipeline_str")
    return _mla_fp8_compiler.run_pipeline(ir_text, pipeline_str,
                                          bool(generic))
