"""``--now``: the moment ages are measured from.

ISO-8601 (``Z`` or an offset; naive means UTC), epoch milliseconds, ``now``, ``now-2h``,
``now+15m``, ``90m ago``; and two words for the evidence's own time: ``capture`` (the default:
when the evidence was captured, its newest file time; the newest record where file times say
nothing) and ``data`` (the newest record of each partition). ``KAFKATX_NOW`` sets the default
(e.g. ``KAFKATX_NOW=data`` for output that does not depend on when files were copied).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import time
from typing import Any

import click

from kafkatx.engines.inspection import CAPTURE, DATA

NOW_ENV = "KAFKATX_NOW"
_EARLIEST_PLAUSIBLE_MS = 10**11  # 1973: smaller "epoch ms" values are seconds given by mistake
_LATEST_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the last instant ISO-8601 can say
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000,
            "w": 7 * 86_400_000}
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w)")
_RELATIVE = re.compile(r"^now\s*(?:([+-])\s*(\S+))?$|^(\S+)\s+ago$")


def duration_ms(text: str) -> int | None:
    """``1h30m``, ``90s``, ``2d`` -> milliseconds; None when it is not a duration."""
    text = text.replace(" ", "")
    if not text or _DURATION.sub("", text):
        return None
    return sum(int(n) * _UNIT_MS[unit] for n, unit in _DURATION.findall(text))


class NowParam(click.ParamType):
    """A moment -> epoch ms; with ``keywords``, ``capture`` and ``data`` pass through."""

    name = "TIME"

    def __init__(self, *, keywords: bool = False) -> None:
        self.keywords = keywords

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | str:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        if self.keywords and text.lower() in (CAPTURE, DATA):
            return text.lower()
        relative = _RELATIVE.match(text.lower())
        if relative is not None:
            sign, amount, ago = relative.groups()
            offset = duration_ms(amount or ago or "") if (amount or ago) else 0
            if offset is None:
                self.fail(f"{text!r}: {amount or ago!r} is not a duration (e.g. 90s, 15m, "
                          "2h, 1d12h)", param, ctx)
            now = int(time.time() * 1000)
            return now + offset if sign == "+" else now - offset
        if text.isdigit():
            ms = int(text)
            if ms < _EARLIEST_PLAUSIBLE_MS:
                self.fail(f"{text!r} is before 1973 as epoch milliseconds; did you give seconds? "
                          f"(use {ms * 1000})", param, ctx)
            if ms > _LATEST_MS:
                self.fail(f"{text!r} is after the year 9999 as epoch milliseconds", param, ctx)
            return ms
        try:
            when = dt.datetime.fromisoformat(text)
        except ValueError:
            words = ", capture, data" if self.keywords else ""
            self.fail(f"{text!r} is neither ISO-8601 (e.g. 2025-11-21T05:00:00Z), epoch "
                      f"milliseconds nor now, now-2h, 90m ago{words}", param, ctx)
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return int(when.timestamp() * 1000)


def default_now(given: int | str | None) -> int | str:
    """``--now`` as given, else ``KAFKATX_NOW``, else ``capture``."""
    if given is not None:
        return given
    env = os.environ.get(NOW_ENV)
    if not env:
        return CAPTURE
    try:
        return NowParam(keywords=True).convert(env, None, None)
    except click.BadParameter as exc:
        raise click.UsageError(f"{NOW_ENV}={env}: {exc.format_message()}") from None


NOW_HELP = ("The moment transaction ages are measured from: ISO-8601 (UTC when no offset is "
            "given), epoch milliseconds, now, now-2h, 90m ago; capture: when the evidence was "
            "captured (its newest file time; the newest record where file times say nothing); "
            "data: the newest record of each partition. Default: capture, or $KAFKATX_NOW. "
            "A time before the newest record is refused.")
