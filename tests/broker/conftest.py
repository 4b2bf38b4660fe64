from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.broker.serve_process import ServeProcess


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    """Start ``kafkatx serve`` on a log dir under tmp_path; every process is killed at the end."""
    started: list[ServeProcess] = []

    def start(*args: str, log_dir: Path | None = None) -> ServeProcess:
        proc = ServeProcess(log_dir or tmp_path / "logdir", tuple(args)).start()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
