"""The Triton peer code objects that the emulator tests run (C++ and lit)
are ELF files; without ../shared the test is skipped, with the reason."""

import os


def test_peer_kernels_are_code_objects(peer_kernels_dir):
    names = sorted(f for f in os.listdir(peer_kernels_dir)
                   if f.endswith(".hsaco"))
    assert names, f"no .hsaco in {peer_kernels_dir}"
    for name in names:
        with open(os.path.join(peer_kernels_dir, name), "rb") as f:
            assert f.read(4) == b"\x7fELF", name
