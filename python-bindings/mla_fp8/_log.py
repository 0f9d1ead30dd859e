"""Which kernel served which call: with ``MLA_FP8_LOG=1``, one line per
(kernel, device) through the ``mla_fp8`` logger, at INFO.

The variable is read when a call shape is first seen (the HIP path caches
its checks per call shape, and logs then); any value but empty or ``0``
turns logging on. Turned on, the logger's level is set to INFO and, where
neither it nor an ancestor has a handler (logging left unconfigured), one
writing to stderr is added: the lines appear without any logging set-up,
and through the application's handlers where it has some.
"""

import logging
import os
import sys
import threading

__all__ = ["ENV", "LOGGER", "enabled", "kernel_serves", "shape"]

#: The environment variable that turns the log on.
ENV = "MLA_FP8_LOG"
#: The logger's name.
LOGGER = "mla_fp8"

_lock = threading.Lock()
_logged = set()  # (kernel symbol, chip, bundle directory, device)
_configured = False


def enabled():
    """Whether $MLA_FP8_LOG asks for the log."""
    return os.environ.get(ENV, "") not in ("", "0")


def _logger():
    global _configured  # pylint: disable=global-statement
    logger = logging.getLogger(LOGGER)
    if not _configured:
        _configured = True
        logger.setLevel(logging.INFO)
        if not logger.hasHandlers():
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
            logger.addHandler(handler)
    return logger


def shape(batch, m, n, k, transpose_bm_in, transpose_bm):
    """A call's shape for the log: B, M, N, K and the layouts."""
    layout = [name for name, on in (("transpose_bm_in", transpose_bm_in),
                                    ("transpose_bm", transpose_bm)) if on]
    return (f"B={batch} M={m} N={n} K={k}" +
            (f" ({', '.join(layout)})" if layout else ""))


def kernel_serves(kernel, device, call_shape):
    """Logs, the first time for (kernel, device), that `kernel` serves a
    call of `call_shape` on `device` (e.g. 'cuda:0', 'emulator')."""
    if not enabled():
        return
    # pylint: disable=protected-access
    key = (kernel.symbol, kernel.chip, kernel._bundle.directory, device)
    with _lock:
        if key in _logged:
            return
        _logged.add(key)
        logger = _logger()
    upper = "inf" if kernel.max_rows == 0 else kernel.max_rows
    split = ", split-K" if kernel.workspace_bytes_per_block else ""
    logger.info("%s runs %s (%s, B*M %d..%s%s, from %s) for %s", device,
                kernel.symbol, kernel.chip, kernel.min_rows, upper, split,
                kernel._bundle.directory, call_shape)
