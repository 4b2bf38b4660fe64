"""Long broker work (a clean, a retention pass) as a generator of steps, run through at once or
in slices of the event loop with its fsyncs and big computations in a worker thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from pathlib import Path

from kafkatx.broker.logs.partition_log import fsync_files

#: What a clean yields between two pieces of work: None (the caller may serve other work
#: now), files to fsync, or a computation on the clean's own data (the decoding and mapping
#: of one big batch) whose result it is sent back; both may run in a worker thread.
Step = list[Path] | Callable[[], object] | None
Steps = Generator[Step, object, int]


def run_steps(steps: Generator[Step, object, object]) -> object:
    """A clean run through at once (fsyncs and computations in this thread); its result."""
    try:
        step = next(steps)
        while True:
            result: object = None
            if callable(step):
                result = step()
            elif step:
                fsync_files(step)
            step = steps.send(result)
    except StopIteration as done:
        return done.value


#: While a clean runs the event loop serves other work at least this often.
SLICE_S = 0.02


async def run_steps_in_slices(steps: Generator[Step, object, object],
                              slice_s: float = SLICE_S) -> object:
    """A clean run in slices of at most about ``slice_s`` seconds, other connections served
    between them, its fsyncs and big batches in a worker thread; its result."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        step = next(steps)
        while True:
            result: object = None
            if callable(step):
                result = await asyncio.to_thread(step)
                started = loop.time()
            elif step:
                await asyncio.to_thread(fsync_files, step)
                started = loop.time()
            elif loop.time() - started >= slice_s:
                await asyncio.sleep(0)
                started = loop.time()
            step = steps.send(result)
    except StopIteration as done:
        return done.value
    finally:
        steps.close()  # cancelled (the broker stops): the clean undoes its files at once
