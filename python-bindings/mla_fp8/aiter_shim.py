"""AITER's import paths of the drop-in call, resolved to mla_fp8's.

vLLM and SGLang import the Triton kernel's wrapper from AITER by one of two
module paths (``MODULES``). ``install_aiter_shim()`` makes both give
mla_fp8's function, so that their code runs the bundle's kernels unchanged:

* With AITER installed, only those two modules change: each becomes a small
  module holding mla_fp8's function, set in ``sys.modules`` and as the
  attribute of AITER's real parent package; a copy of AITER's module that
  was already imported gets mla_fp8's function as well. The rest of AITER
  is untouched. Code that bound AITER's function to a name before the shim
  was installed keeps that binding: install the shim first.
* Without AITER, the two modules and stand-ins for their parent packages
  (``aiter``, ``aiter.ops``, ...) are put in ``sys.modules``. The stand-ins
  hold nothing else and have no directory: importing any other AITER module
  still raises ModuleNotFoundError. For the rest of the process, though,
  ``import aiter`` gives the stand-in (an AITER installed meanwhile is not
  seen) and ``importlib.util.find_spec("aiter")`` finds it, so code that
  probes for AITER that way believes it present.

Installing twice changes nothing the second time.
"""

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import types
import warnings

from .serving import \
    batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant as _call  # noqa: E501

__all__ = ["install_aiter_shim", "FUNCTION", "MODULES"]

#: The function's name in AITER.
FUNCTION = "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant"  # noqa: E501

#: The two AITER modules that define it (the older flat path first).
MODULES = (
    "aiter.ops.triton." + FUNCTION,
    "aiter.ops.triton.gemm.batched." + FUNCTION,
)

#: Marks the modules and packages this shim made.
MARKER = "__mla_fp8_shim__"

_lock = threading.Lock()


def _parents(name):
    """'a.b.c' -> ['a', 'a.b']."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _shim_module(name):
    module = types.ModuleType(name, f"mla_fp8's drop-in in place of AITER's "
                                    f"{name}.")
    setattr(module, FUNCTION, _call)
    module.__all__ = [FUNCTION]
    setattr(module, MARKER, True)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    return module


def _stand_in_package(name):
    """An empty package: its __path__ holds no directory, so importing any
    other submodule raises ModuleNotFoundError."""
    package = types.ModuleType(name, "mla_fp8's stand-in: AITER is not "
                                     "installed.")
    package.__path__ = []
    package.__spec__ = importlib.machinery.ModuleSpec(name, None,
                                                      is_package=True)
    setattr(package, MARKER, True)
    return package


def _aiter_installed():
    """Whether a real AITER is imported or can be."""
    loaded = sys.modules.get("aiter")
    if loaded is not None:
        return not getattr(loaded, MARKER, False)
    return importlib.util.find_spec("aiter") is not None


def install_aiter_shim():
    """Makes AITER's two module paths of the drop-in call resolve to
    mla_fp8's function (see the module's description), idempotently.

    Returns:
      dict: "modules": the module names now serving mla_fp8's function;
      "aiter_installed": whether a real AITER was found; "stand_ins": the
      stand-in packages this call created (none with AITER, none the
      second time).
    """
    with _lock:
        installed = _aiter_installed()
        for name in MODULES:
            current = sys.modules.get(name)
            if current is not None and not getattr(current, MARKER, False):
                # AITER's own module, imported earlier: later lookups of its
                # attribute get mla_fp8's function too.
                setattr(current, FUNCTION, _call)
            if current is None or not getattr(current, MARKER, False):
                sys.modules[name] = _shim_module(name)
        stand_ins = []
        if installed:
            for name in MODULES:
                parent, _, leaf = name.rpartition(".")
                try:
                    package = importlib.import_module(parent)
                except Exception as error:  # pylint: disable=broad-except
                    # `from <module> import ...` still works: the module is
                    # in sys.modules and Python does not import its parents.
                    warnings.warn(f"mla_fp8: AITER's package {parent} does "
                                  f"not import ({error}); `import {name}` "
                                  f"will fail, `from {name} import "
                                  f"{FUNCTION}` works", RuntimeWarning,
                                  stacklevel=2)
                    continue
                setattr(package, leaf, sys.modules[name])
        else:
            # `import a.b.c` needs a and a.b in sys.modules (a module found
            # there is returned without importing its parents).
            for name in MODULES:
                parent = None
                for package_name in _parents(name) + [name]:
                    module = sys.modules.get(package_name)
                    if module is None:
                        module = sys.modules[package_name] = \
                            _stand_in_package(package_name)
                        stand_ins.append(package_name)
                    if parent is not None:
                        setattr(parent, package_name.rpartition(".")[2],
                                module)
                    parent = module
        return {"modules": list(MODULES), "aiter_installed": installed,
                "stand_ins": stand_ins}
