"""Which libamdhip64 the HIP path uses: the copy already mapped into the
process (torch's), else the explicit setting, else the system's.

The proof that the mapped runtime is torch's uses real shared libraries: two
copies of a tiny fake libamdhip64.so, compiled here with the system's C
compiler, each answering hipGetDevice with its own number. A fake torch
package maps one of them the way a ROCm torch wheel maps torch/lib's; the
other sits in $ROCM_PATH. Those checks run in a child process, so that this
one never maps a fake runtime."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
import types

import pytest

from mla_fp8 import hip

FAKE_HIP = r"""
#include <stddef.h>
int hipGetDevice(int *device) { *device = COPY; return 0; }
int hipSetDevice(int device) { (void)device; return 0; }
int hipModuleLoadData(void **module, const void *image) {
  (void)module; (void)image; return 0;
}
int hipModuleGetFunction(void **function, void *module, const char *name) {
  (void)function; (void)module; (void)name; return 0;
}
int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, void *stream, void **params,
                          void **extra) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
  (void)shared; (void)stream; (void)params; (void)extra; return 0;
}
int hipMalloc(void **pointer, size_t size) {
  (void)pointer; (void)size; return 2;
}
int hipFree(void *pointer) { (void)pointer; return 0; }
int hipMemsetAsync(void *p, int v, size_t n, void *stream) {
  (void)p; (void)v; (void)n; (void)stream; return 0;
}
int hipStreamSynchronize(void *stream) { (void)stream; return 0; }
int hipStreamIsCapturing(void *stream, int *status) {
  (void)stream; *status = 0; return 0;
}
int hipStreamGetCaptureInfo(void *stream, int *status,
                            unsigned long long *id) {
  (void)stream; *status = 0; *id = 0; return 0;
}
const char *hipGetErrorString(int status) {
  (void)status; return "hipErrorOutOfMemory";
}
"""

TORCH_INIT = """
import ctypes, os
# As a ROCm wheel does: torch/lib's libamdhip64 is loaded with the package.
_hip = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib",
                                "libamdhip64.so"), mode=ctypes.RTLD_GLOBAL)
"""


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """{"torch": site dir holding torch/ with copy 1 in torch/lib,
    "rocm": a ROCM_PATH holding copy 2, "other": a directory holding copy
    3}; skipped, saying why, without a C compiler or /proc/self/maps."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler (cc) to build the fake libamdhip64")
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("needs /proc/self/maps (Linux)")
    root = tmp_path_factory.mktemp("hip-copies")
    source = root / "fake_hip.c"
    source.write_text(FAKE_HIP, encoding="utf-8")
    dirs = {"torch": root / "site" / "torch" / "lib",
            "rocm": root / "rocm" / "lib", "other": root / "other"}
    for number, directory in enumerate(dirs.values(), 1):
        directory.mkdir(parents=True)
        subprocess.run([compiler, "-shared", "-fPIC", f"-DCOPY={number}",
                        str(source), "-o",
                        str(directory / "libamdhip64.so")], check=True)
    (root / "site" / "torch" / "__init__.py").write_text(TORCH_INIT,
                                                        encoding="utf-8")
    return {"torch": root / "site", "rocm": root / "rocm",
            "other": root / "other"}


def run_child(code, env=None):
    """Runs `code` in a fresh interpreter with this one's mla_fp8."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("ROCM_PATH", hip.LIBRARY_ENV)}
    environ.update(env or {})
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                            env=environ, capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_mapped_runtime_is_torchs(copies):
    """With torch imported, the runtime is torch's mapped copy, even with
    $ROCM_PATH naming another one; opening it maps nothing new."""
    torch_lib = copies["torch"] / "torch" / "lib" / "libamdhip64.so"
    run_child(f"""
        import sys
        sys.path.insert(0, {str(copies["torch"])!r})
        import torch
        from mla_fp8 import hip
        before = hip.mapped_hip_libraries()
        assert before == [{str(torch_lib)!r}], before
        assert hip.find_hip_library() == {str(torch_lib)!r}
        runtime = hip.get_runtime()
        # hipGetDevice answers 1 in torch's copy, 2 in $ROCM_PATH's.
        assert runtime.current_device() == 1
        assert runtime.path == {str(torch_lib)!r}
        assert hip.mapped_hip_libraries() == before
        """, {"ROCM_PATH": str(copies["rocm"])})


def test_torchs_copy_wins_among_several(copies):
    """When something else mapped a second copy too, torch's is used; a
    setting naming a copy that is not mapped is refused."""
    torch_lib = copies["torch"] / "torch" / "lib" / "libamdhip64.so"
    other = copies["other"] / "libamdhip64.so"
    rocm = copies["rocm"] / "lib" / "libamdhip64.so"
    run_child(f"""
        import ctypes, os, sys
        sys.path.insert(0, {str(copies["torch"])!r})
        import torch
        ctypes.CDLL({str(other)!r})
        from mla_fp8 import hip
        assert sorted(hip.mapped_hip_libraries()) == sorted(
            [{str(torch_lib)!r}, {str(other)!r}])
        assert hip.find_hip_library() == {str(torch_lib)!r}
        os.environ[{hip.LIBRARY_ENV!r}] = {str(rocm)!r}
        try:
            hip.find_hip_library()
            raise AssertionError("a copy that is not mapped was accepted")
        except hip.HipUnavailableError as error:
            assert "is not the libamdhip64 this process already has" in \\
                str(error), error
        # The setting may pick one of the mapped copies.
        os.environ[{hip.LIBRARY_ENV!r}] = {str(other)!r}
        assert hip.find_hip_library() == {str(other)!r}
        assert hip.get_runtime().current_device() == 3
        """)


def test_explicit_setting_without_a_mapped_copy(copies):
    """Nothing mapped: $MLA_FP8_HIP_LIBRARY comes before $ROCM_PATH, and the
    copy loaded is the one it names."""
    other = copies["other"] / "libamdhip64.so"
    run_child(f"""
        from mla_fp8 import hip
        assert hip.mapped_hip_libraries() == []
        assert hip.find_hip_library() == {str(other)!r}
        runtime = hip.get_runtime()
        assert runtime.current_device() == 3
        assert hip.mapped_hip_libraries() == [{str(other)!r}]
        # Calls go to that copy: its hipMalloc fails with its own message.
        try:
            runtime.malloc(0, 16, 0)
            raise AssertionError("the fake hipMalloc succeeded")
        except hip.HipError as error:
            assert "hipMalloc failed: hipErrorOutOfMemory" in str(error)
        """, {"ROCM_PATH": str(copies["rocm"]),
              hip.LIBRARY_ENV: str(other)})


def test_rocm_path_without_a_mapped_copy(copies):
    rocm = copies["rocm"] / "lib" / "libamdhip64.so"
    run_child(f"""
        from mla_fp8 import hip
        assert hip.find_hip_library() == {str(rocm)!r}
        assert hip.get_runtime().current_device() == 2
        """, {"ROCM_PATH": str(copies["rocm"])})


def write_maps(tmp_path, paths):
    """A /proc/self/maps stand-in listing `paths` (plus unrelated lines)."""
    lines = ["7f0000000000-7f0000001000 r--p 00000000 00:00 0 [heap]",
             "7f0000001000-7f0000002000 r-xp 00000000 08:01 12 "
             "/usr/lib/libc.so.6",
             "7f0000002000-7f0000003000 rw-p 00000000 00:00 0 "]
    for number, path in enumerate(paths):
        for perms in ("r--p", "r-xp"):
            lines.append(f"7f10{number:08x}-7f20{number:08x} {perms} 00000000 "
                         f"08:01 {100 + number} {path}")
    maps = tmp_path / "maps"
    maps.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return maps


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.delenv(hip.LIBRARY_ENV, raising=False)
    monkeypatch.setattr(hip.ctypes.util, "find_library", lambda name: None)
    return monkeypatch


def test_mapped_entries(tmp_path, clean_env):
    """Every mapped libamdhip64 (versioned names, spaces in paths, deleted
    files) once, in map order; other objects, also those whose names start
    the same way, are not."""
    runtimes = ["/opt/my rocm/lib/libamdhip64.so.6.4.60400",
                "/x/torch/lib/libamdhip64.so",
                "/y/libamdhip64.so.6 (deleted)"]
    others = ["/x/libamdhip64_helper.so", "/x/libamdhip64.so.bak",
              "/x/libamdhip64.so.6.x", "/x/libamdhip64.sox",
              "/x/libamdhip64"]
    paths = runtimes[:1] + others + runtimes[1:]
    clean_env.setattr(hip, "_MAPS", str(write_maps(tmp_path, paths)))
    assert hip.mapped_hip_libraries() == runtimes
    clean_env.setattr(hip, "_MAPS", str(tmp_path / "absent"))
    assert hip.mapped_hip_libraries() == []


def test_deleted_mapped_copy(tmp_path, clean_env):
    """The mapped runtime's file was deleted or replaced since it was
    loaded: the error says so and that the process must restart, also when
    the setting names the new file."""
    new = tmp_path / "libamdhip64.so"
    new.write_bytes(b"")
    maps = write_maps(tmp_path, [f"{new} (deleted)"])
    clean_env.setattr(hip, "_MAPS", str(maps))
    replaced = (f"^the HIP runtime this process loaded, {re.escape(str(new))}"
                f", was deleted or replaced on disk since it was loaded "
                r"\(ROCm or torch reinstalled\?\), so it cannot be opened "
                r"again: restart the process$")
    with pytest.raises(hip.HipUnavailableError, match=replaced):
        hip.find_hip_library()
    clean_env.setenv(hip.LIBRARY_ENV, str(new))
    with pytest.raises(hip.HipUnavailableError, match=replaced):
        hip.find_hip_library()
    hip.reset_runtime()
    try:
        with pytest.raises(hip.HipUnavailableError, match=replaced):
            hip.get_runtime(loader=lambda path: pytest.fail(path))
    finally:
        hip.reset_runtime()


def test_several_mapped_without_torch(tmp_path, clean_env):
    """Two mapped copies and no torch to tell which: the error names both
    and the setting that picks one."""
    la, lb = (tmp_path / "1" / "libamdhip64.so",
              tmp_path / "2" / "libamdhip64.so")
    for path in (la, lb):
        path.parent.mkdir()
        path.write_bytes(b"")
    clean_env.setattr(hip, "_MAPS", str(write_maps(tmp_path, [la, lb])))
    clean_env.delitem(sys.modules, "torch", raising=False)
    with pytest.raises(hip.HipUnavailableError,
                       match=f"several libamdhip64 copies mapped "
                       f"\\({re.escape(str(la))}, {re.escape(str(lb))}\\) "
                       f"and none is torch's: set {hip.LIBRARY_ENV}"):
        hip.find_hip_library()
    # The setting picks one, by any name of the same file.
    alias = tmp_path / "alias.so"
    alias.symlink_to(lb)
    clean_env.setenv(hip.LIBRARY_ENV, str(alias))
    assert hip.find_hip_library() == str(lb)
    # A fake torch package holding the second copy makes it torch's.
    clean_env.delenv(hip.LIBRARY_ENV)
    torch = types.ModuleType("torch")
    torch.__file__ = str(tmp_path / "2" / "__init__.py")
    clean_env.setitem(sys.modules, "torch", torch)
    assert hip.find_hip_library() == str(lb)


def test_search_order_without_a_mapped_copy(tmp_path, clean_env):
    """Setting, then $ROCM_PATH, then the loader's path, then /opt/rocm;
    the error names each place tried."""
    clean_env.setattr(hip, "_MAPS", str(write_maps(tmp_path, [])))
    explicit, rocm = tmp_path / "mine.so", tmp_path / "rocm"
    explicit.write_bytes(b"")
    (rocm / "lib").mkdir(parents=True)
    (rocm / "lib" / "libamdhip64.so").write_bytes(b"")
    clean_env.setenv("ROCM_PATH", str(rocm))
    clean_env.setenv(hip.LIBRARY_ENV, str(explicit))
    assert hip.find_hip_library() == str(explicit)
    clean_env.setenv(hip.LIBRARY_ENV, str(tmp_path / "missing.so"))
    with pytest.raises(hip.HipUnavailableError,
                       match=f"{hip.LIBRARY_ENV}=.*missing.so: no such file"):
        hip.find_hip_library()
    clean_env.delenv(hip.LIBRARY_ENV)
    assert hip.find_hip_library() == str(rocm / "lib" / "libamdhip64.so")
    clean_env.setenv("ROCM_PATH", str(tmp_path / "none"))
    clean_env.setattr(hip.ctypes.util, "find_library",
                      lambda name: "libamdhip64.so.6")
    assert hip.find_hip_library() == "libamdhip64.so.6"
    clean_env.setattr(hip.ctypes.util, "find_library", lambda name: None)
    clean_env.setattr(hip.os.path, "isfile",
                      lambda path: path == "/opt/rocm/lib/libamdhip64.so")
    assert hip.find_hip_library() == "/opt/rocm/lib/libamdhip64.so"
    clean_env.setattr(hip.os.path, "isfile", lambda path: False)
    assert hip.find_hip_library() is None
    hip.reset_runtime()
    try:
        with pytest.raises(hip.HipUnavailableError,
                           match=r"not found \(tried: the process's mapped "
                           r"libamdhip64 \(none\); \$MLA_FP8_HIP_LIBRARY "
                           r"\(unset\); .*none/lib/libamdhip64.so; the "
                           r"loader's search path; /opt/rocm/lib/"):
            hip.get_runtime()
    finally:
        hip.reset_runtime()
