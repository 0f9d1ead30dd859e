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

Every process, vLLM's worker processes included, can have it:
``write_pth(directory=None)`` writes ``mla_fp8_aiter.pth`` into the
interpreter's site-packages (or `directory`). When ``MLA_FP8_REPLACE_AITER=1``
is set, its one line adds an import finder and imports nothing; without the
variable it only reads the environment. The finder decides when AITER's
modules are imported, once sys.path and the other finders are whatever
site.py, sitecustomize and the program made them: the two modules of the
function become this package's (mla_fp8 is imported then); AITER's packages
are AITER's, or stand-ins as above where no other finder finds them. Unlike
``install_aiter_shim()``, this imports AITER's packages on the way to the two
modules, so an AITER whose package fails to import fails there too.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
import threading
import types
import warnings

from .serving import \
    batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant as _call  # noqa: E501

__all__ = ["install_aiter_shim", "install_from_environment", "write_pth",
           "fill_shim_module", "FUNCTION", "MODULES", "PACKAGES", "ENV_VAR"]

#: The environment variable that installs the shim in every process that
#: has the .pth file of write_pth().
ENV_VAR = "MLA_FP8_REPLACE_AITER"

PTH_NAME = "mla_fp8_aiter.pth"

_TRUE = ("1", "true", "yes", "on")

#: The function's name in AITER.
FUNCTION = "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant"  # noqa: E501

#: The two AITER modules that define it (the older flat path first).
MODULES = (
    "aiter.ops.triton." + FUNCTION,
    "aiter.ops.triton.gemm.batched." + FUNCTION,
)

#: Marks the modules and packages this shim made.
MARKER = "__mla_fp8_shim__"

#: The packages on the way to MODULES.
PACKAGES = ("aiter", "aiter.ops", "aiter.ops.triton", "aiter.ops.triton.gemm",
            "aiter.ops.triton.gemm.batched")

# What the .pth line runs when the variable is set, in a namespace of its
# own. It imports nothing and decides nothing at start-up, when site.py may
# not yet have added the directories holding numpy, AITER or this package.
# One finder decides at each import of an AITER name: MODULES get this
# package's function (importing mla_fp8 then); PACKAGES are whatever the
# other finders find, those added later included (an editable AITER's), and
# stand-ins where none does. It keeps itself first in sys.meta_path, so that
# a finder inserted before it later (another editable install's) cannot
# serve MODULES: sys.meta_path becomes a list that puts it back first after
# every change, and each find_spec call checks again. A program that assigns
# sys.meta_path a new list with its own finder first escapes both, until the
# shim is next asked about a name; such a program calls install_aiter_shim()
# after the assignment. A venv runs the line twice: the finder is added once.
_HOOK_SOURCE = f"""
import importlib.machinery
import sys
import threading

# The AITER names this thread is asking the other finders about: a finder
# that, like this one, asks every finder (this one included) is answered
# None for them, instead of recursing without end.
_asking = threading.local()


class ShimLoader:
    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        try:
            import mla_fp8.aiter_shim
        except Exception as error:
            raise ImportError(
                f"{{module.__name__}} is mla_fp8's ({ENV_VAR} is set), but "
                f"mla_fp8 cannot be imported: {{error}}") from error
        mla_fp8.aiter_shim.fill_shim_module(module)


class StandInLoader:
    {MARKER} = True

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        setattr(module, {MARKER!r}, True)


class AiterFinder:
    {MARKER} = True

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if sys.meta_path and sys.meta_path[0] is not cls and \\
                cls in sys.meta_path:
            sys.meta_path.remove(cls)
            sys.meta_path.insert(0, cls)
        if name in {MODULES!r}:
            return importlib.machinery.ModuleSpec(name, ShimLoader)
        if name not in {PACKAGES!r}:
            return None
        asking = getattr(_asking, "names", None)
        if asking is None:
            asking = _asking.names = set()
        if name in asking:
            return None
        asking.add(name)
        try:
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is not cls and find is not None:
                    spec = find(name, path, target)
                    if spec is not None:
                        return spec
        finally:
            asking.discard(name)
        return importlib.machinery.ModuleSpec(name, StandInLoader,
                                              is_package=True)


# sys.meta_path, kept with AiterFinder first through every change: a finder
# inserted before it later (another editable install) would otherwise serve
# MODULES until the shim is next asked about anything.
class FinderFirst(list):
    {MARKER} = True

    def _first(self):
        if self and self[0] is not AiterFinder and AiterFinder in self:
            list.remove(self, AiterFinder)
            list.insert(self, 0, AiterFinder)


def _keeping_first(name):
    def method(self, *args, **kwargs):
        result = getattr(list, name)(self, *args, **kwargs)
        self._first()
        return result
    method.__name__ = name
    return method


for _name in ("insert", "append", "extend", "__setitem__", "__iadd__",
              "__imul__", "sort", "reverse"):
    setattr(FinderFirst, _name, _keeping_first(_name))


if not any(getattr(finder, {MARKER!r}, False) for finder in sys.meta_path):
    sys.meta_path.insert(0, AiterFinder)
if not getattr(sys.meta_path, {MARKER!r}, False):
    sys.meta_path = FinderFirst(sys.meta_path)
"""

# site.py runs a .pth line that starts with "import"; this one runs the hook
# only when the variable asks for it.
_PTH_LINE = (f"import os; os.environ.get('{ENV_VAR}', '').strip().lower() in "
             f"{_TRUE!r} and exec({_HOOK_SOURCE!r}, "
             f"{{'__name__': 'mla_fp8_aiter_pth'}})\n")

_lock = threading.Lock()


def _parents(name):
    """'a.b.c' -> ['a', 'a.b']."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def fill_shim_module(module):
    """Makes `module` (one of MODULES) hold mla_fp8's function."""
    module.__doc__ = (f"mla_fp8's drop-in in place of AITER's "
                      f"{module.__name__}.")
    setattr(module, FUNCTION, _call)
    module.__all__ = [FUNCTION]
    setattr(module, MARKER, True)


def _shim_module(name):
    module = types.ModuleType(name)
    fill_shim_module(module)
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
    spec = importlib.util.find_spec("aiter")
    # The .pth's finder answers with a stand-in where AITER is missing.
    return spec is not None and not getattr(spec.loader, MARKER, False)


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


def install_from_environment():
    """install_aiter_shim() when $MLA_FP8_REPLACE_AITER is 1 (or true, yes,
    on); returns its result, or None when the variable is not set."""
    if os.environ.get(ENV_VAR, "").strip().lower() not in _TRUE:
        return None
    return install_aiter_shim()


def write_pth(directory=None):
    """Writes mla_fp8_aiter.pth into `directory` (default: this
    interpreter's site-packages) and returns its path. Processes started
    with $MLA_FP8_REPLACE_AITER=1 then install the shim first thing;
    mla_fp8 must be importable there (installed, or on PYTHONPATH)."""
    if directory is None:
        directory = sysconfig.get_paths()["purelib"]
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory: {directory} is not a directory")
    path = os.path.join(directory, PTH_NAME)
    with open(path, "w", encoding="utf-8") as f:
        f.write(_PTH_LINE)
    return path

