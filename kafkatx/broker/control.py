"""``serve --control-port``: change the fault rules of a running broker from a test.

A line protocol on loopback, one command per line, one answer line per command (``ok ...`` or
``error: ...``), so a test in another process (or the same one) can inject a fault at the moment
it wants one, without restarting the broker:

    add RULE      a ``--fault`` rule (``drop-marker:orders-0``, ``crash-after:prepare-commit``, ...)
    remove RULE   take it away again
    clear         no fault at all
    list          the rules in force, ``;``-separated

With ``--brokers N`` the rules apply to every broker, and three more commands act on one:

    stop-broker ID    a clean (controlled) shutdown of broker ID
    kill-broker ID    broker ID stops at once, writing nothing more (as after SIGKILL)
    start-broker ID   broker ID starts again on its port and log dir
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from kafkatx.broker.faults import FaultRuleError, Faults, parse_rule
from kafkatx.broker.protocol.handlers import load_handlers

GetFaults = Callable[[], Faults]
SetFaults = Callable[[Faults], None]


def apply_command(line: str, faults: Faults) -> tuple[Faults, str]:
    """The fault set after ``line`` and the answer to send."""
    verb, _, arg = line.strip().partition(" ")
    arg = arg.strip()
    try:
        if verb == "add":
            rule = parse_rule(arg, load_handlers())
            return Faults((*faults.rules, rule)), f"ok {rule}"
        if verb == "remove":
            rule = parse_rule(arg, load_handlers())
            if rule not in faults.rules:
                return faults, f"error: {rule} is not in force"
            return Faults(tuple(r for r in faults.rules if r != rule)), f"ok {rule}"
        if verb == "clear":
            return Faults(()), "ok"
        if verb == "list":
            return faults, "ok " + ";".join(str(r) for r in faults.rules)
    except FaultRuleError as exc:
        return faults, f"error: {exc}"
    return faults, f"error: unknown command {verb!r} (add, remove, clear, list)"


Extra = Callable[[str], Awaitable[str | None]]


async def start_control(host: str, port: int, get: GetFaults, put: SetFaults,
                        extra: Extra | None = None) -> asyncio.Server:
    """Listen for control connections; each line is applied in the broker's event loop
    (``extra`` answers the lines it knows first, None for the others)."""

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while line := await reader.readline():
                text = line.decode("utf-8", "replace")
                answer = await extra(text) if extra is not None else None
                if answer is None:
                    faults, answer = apply_command(text, get())
                    put(faults)
                writer.write(answer.encode() + b"\n")
                await writer.drain()
        writer.close()

    return await asyncio.start_server(session, host, port)
