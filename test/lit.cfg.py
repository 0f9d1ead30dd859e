# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MLA-FP8"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "Unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mlafp8_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools = [
    ToolSubst("mla-fp8-opt", unresolved="ignore"),
    ToolSubst("mla-fp8-aot", unresolved="ignore"),
    ToolSubst("mla-fp8-emu", unresolved="ignore"),
    "llvm-objdump",
    "llvm-readelf",
    "llvm-mc",
]
llvm_config.add_tool_substitutions(tools, [config.mlafp8_tools_dir, config.llvm_tools_dir])
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%mlafp8_src", config.mlafp8_src_root))
config.substitutions.append(("%shared", os.path.join(config.mlafp8_src_root, "..", "shared")))

# The foreign code objects in ../shared (the Triton peer kernels, the
# calibration set) are not part of the repository: tests that run them say
# `REQUIRES: peer-kernels` or `REQUIRES: calibration-kernels` and are reported
# unsupported in a clone without them. Where CI=true or
# MLAFP8_REQUIRE_PEER_KERNELS=1 they must run, so their absence is an error.
def shared_feature(feature, directory, what):
    path = os.path.join(config.mlafp8_src_root, "..", "shared", directory)
    if os.path.isdir(path):
        config.available_features.add(feature)
    elif os.environ.get("CI") == "true" or os.environ.get("MLAFP8_REQUIRE_PEER_KERNELS") == "1":
        lit_config.fatal(
            what + " required (CI=true or MLAFP8_REQUIRE_PEER_KERNELS=1) but "
            + os.path.normpath(path) + " is missing")
    else:
        lit_config.note(
            "no " + os.path.normpath(path)
            + ": tests that REQUIRE " + feature + " are unsupported")


shared_feature("peer-kernels", "peer-kernels", "peer kernels")
shared_feature("calibration-kernels", "calibration", "calibration kernels")
