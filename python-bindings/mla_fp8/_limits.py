"""Sizes a kernel launch may have, checked before anything is allocated or
launched (include/mla-fp8/Runtime/Limits.h; docs/limits.md says where each
comes from). Every error names the argument at fault."""

import numpy as np

from ._abi import (EMULATOR_MAX_BATCH, EMULATOR_MAX_DIM,  # noqa: F401
                   EMULATOR_MAX_HOST_BYTES, EMULATOR_MAX_M,
                   EMULATOR_MAX_THREADS, EMULATOR_W_BYTES_PER_ELEMENT,
                   EMULATOR_X_BYTES_PER_ELEMENT,
                   EMULATOR_Y_BYTES_PER_ELEMENT, KERNEL_MAX_ELEMENTS,
                   MAX_GRID_WORK_ITEMS, rows_overlap)

_SEE = "(docs/limits.md)"


def view_end(shape, strides):
    """One past the largest element offset a view touches (0 if empty)."""
    if any(d == 0 for d in shape):
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(shape, strides))


def check_kernel_extent(name, what, end):
    """Refuses a buffer whose touched elements reach past the kernels'
    index range."""
    if end > KERNEL_MAX_ELEMENTS:
        raise ValueError(f"{name}: {what} reaches element {end - 1}; the "
                         f"kernels address at most {KERNEL_MAX_ELEMENTS} "
                         f"elements of a buffer {_SEE}")


def check_kernel_sizes(batch, m, n, k, x_end, y_end, y_name, has_bias,
                       x_name="X", w_name="WQ"):
    """The GPU kernels' bounds on X, WQ, bias and Y (ends in elements)."""
    check_kernel_extent(x_name, f"the (B={batch}, M={m}, K={k}) view", x_end)
    check_kernel_extent(w_name, f"(B={batch}, N={n}, K={k})", batch * n * k)
    if has_bias:
        check_kernel_extent("bias", f"(B={batch}, N={n})", batch * n)
    check_kernel_extent(y_name, f"the (B={batch}, M={m}, N={n}) output",
                        y_end)


def check_emulator_sizes(batch, m, n, k, x_name="X", w_name="WQ",
                         workspace=0):
    """The emulator's own, lower bounds (those of mla-fp8-emu); `workspace`:
    the bytes of the launch's split-K workspace, once its kernel is known."""
    for name, what, value, limit in (
            (x_name, "B", batch, EMULATOR_MAX_BATCH),
            (x_name, "M", m, EMULATOR_MAX_M),
            (w_name, "N", n, EMULATOR_MAX_DIM),
            (x_name, "K", k, EMULATOR_MAX_DIM)):
        if value > limit:
            raise ValueError(f"{name}: {what} = {value}; the emulator runs "
                             f"at most {limit} {_SEE}")
    needed = emulator_host_bytes(batch, m, n, k, workspace)
    if needed > EMULATOR_MAX_HOST_BYTES:
        raise ValueError(f"{x_name}: B={batch}, M={m}, N={n}, K={k} need "
                         f"{needed} bytes of host memory to emulate (X, W, "
                         f"Y and the split-K workspace with their copies); "
                         f"the emulator takes at most "
                         f"{EMULATOR_MAX_HOST_BYTES} (4 GiB) {_SEE}")


def emulator_host_bytes(batch, m, n, k, workspace=0):
    """The host memory one emulation allocates (Limits.h,
    getEmulatorHostBytes); a split-K workspace is held twice."""
    rows = max(m, 1)
    return (batch * rows * k * EMULATOR_X_BYTES_PER_ELEMENT +
            batch * n * k * EMULATOR_W_BYTES_PER_ELEMENT +
            batch * rows * n * EMULATOR_Y_BYTES_PER_ELEMENT + 2 * workspace)


def check_launch(kernel, m, batch, x_name="X"):
    """The kernel's grid for (m, batch) and its workspace, against the
    launch's and the kernels' bounds. Returns the grid."""
    grid = kernel.grid(m, batch)
    for axis, (count, size) in enumerate(zip(grid, kernel.workgroup_size)):
        if count * max(size, 1) > MAX_GRID_WORK_ITEMS:
            raise ValueError(f"{x_name}: M={m}, B={batch} need {count} "
                             f"workgroups of {size} along grid axis "
                             f"{'xyz'[axis]}; a launch takes at most "
                             f"{MAX_GRID_WORK_ITEMS} work-items per axis "
                             f"{_SEE}")
    check_kernel_extent(x_name,
                        f"the split-K workspace for M={m}, B={batch}",
                        -(-kernel.workspace_bytes(m, batch) // 4))
    return grid


def check_rows_disjoint(name, stride_b, batch, stride_m, m, n):
    """Refuses an output whose distinct (b, m) rows share elements."""
    if batch and m and rows_overlap(stride_b, batch, stride_m, m, n):
        raise ValueError(f"{name}: its strides ({stride_b} along B, "
                         f"{stride_m} along M) make distinct rows of N={n} "
                         f"elements overlap")


def check_numpy_disjoint(name, out, inputs):
    """Refuses an output array that shares memory with an input array."""
    too_hard = getattr(getattr(np, "exceptions", np), "TooHardError")
    for other_name, other in inputs:
        if other is None or out.size == 0 or other.size == 0:
            continue
        try:
            shared = np.shares_memory(out, other, max_work=1 << 20)
        except too_hard:
            shared = np.may_share_memory(out, other)
        if shared:
            raise ValueError(f"{name}: shares memory with {other_name}; the "
                             f"output must not overlap an input")


def _address_views(views):
    """numpy arrays standing for strided memory views given as (address,
    shape, element strides, itemsize): they share the views' addresses
    (relative to the lowest), so numpy.shares_memory answers for them. They
    are never read; nothing is allocated."""
    low = min(v[0] for v in views)
    span = max(v[0] - low + view_end(v[1], v[2]) * v[3] for v in views)
    base = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8),
                                           shape=(max(span, 1),),
                                           strides=(1,))
    return [np.lib.stride_tricks.as_strided(
        base[address - low:], shape=tuple(shape) + (itemsize,),
        strides=tuple(s * itemsize for s in strides) + (1,))
        for address, shape, strides, itemsize in views]


def check_views_disjoint(name, out, inputs):
    """Refuses an output view that shares a byte with an input view; views
    are (address, shape, element strides, itemsize), as torch tensors give
    them. Exact (numpy.shares_memory on stand-in arrays) when byte ranges
    meet; views in disjoint ranges are accepted at once."""
    too_hard = getattr(getattr(np, "exceptions", np), "TooHardError")
    out_start = out[0]
    out_end = out_start + view_end(out[1], out[2]) * out[3]
    for other_name, other in inputs:
        start = other[0]
        end = start + view_end(other[1], other[2]) * other[3]
        if not (out_start < out_end and start < end and out_start < end and
                start < out_end):
            continue
        a, b = _address_views([out, other])
        try:
            shared = np.shares_memory(a, b, max_work=1 << 20)
        except too_hard:
            shared = True
        if shared:
            raise ValueError(f"{name}: its memory overlaps {other_name}'s; "
                             f"the output must not overlap an input")
