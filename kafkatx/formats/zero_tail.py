"""Where the zero-filled tail of a preallocated file starts (index files, ``segment.index.bytes``).

A live or crashed segment's ``.index``/``.timeindex`` is 10 MB by default, nearly all zeros:
searched from the end a megabyte at a time with numpy, not byte by byte.
"""

from __future__ import annotations

import numpy as np

_STEP = 1 << 20


def zero_tail_start(data: bytes | memoryview, end: int) -> int:
    """The position just past the last non-zero byte of ``data[:end]`` (0: all zeros)."""
    buf = np.frombuffer(data, dtype=np.uint8, count=end)
    while end > 0:
        start = max(0, end - _STEP)
        chunk = buf[start:end]
        if np.count_nonzero(chunk):
            return start + int(np.flatnonzero(chunk)[-1]) + 1
        end = start
    return 0
