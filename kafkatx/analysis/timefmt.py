"""Times for people: epoch milliseconds as ISO-8601 UTC and short durations (messages, tables).

Data keeps epoch milliseconds; only human-facing text goes through here.
"""

from __future__ import annotations

import datetime as dt


def iso_ms(ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC; -1/None shown as '-'."""
    if ms is None or ms < 0:
        return "-"
    try:
        t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return f"{ms}ms"
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def duration(ms: int) -> str:
    """A short duration: 850ms, 42s, 13m58s, 5h07m, 3d04h."""
    if ms < 1000:
        return f"{max(ms, 0)}ms"
    s = ms // 1000
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 172800:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"
