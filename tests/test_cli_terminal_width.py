"""Tables that fit an SRE's terminal (issue 26 item 1): at 80, 120 and 200 columns in a real
pseudo-terminal, the numbers that identify and explain a row (topic, partition, log start,
LEO, HW, LSO; offsets and outcomes in timeline, dump, groups and replay) are never cut or
dropped: less important columns give way (said under the table), long text wraps."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.terminal import ROOT, run_in_terminal

LOGDIR = "fixtures/logdir"
WIDTHS = (80, 120, 200)


def as_json(*args: str) -> object:
    proc = subprocess.run([sys.executable, "-m", "kafkatx", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    if "--format" in args and args[args.index("--format") + 1] == "jsonl":
        return [json.loads(line) for line in proc.stdout.splitlines()]
    return json.loads(proc.stdout)


def shown(args: list[str], width: int) -> str:
    status, out, err = run_in_terminal(args, width)
    assert status in (0, 1), err
    assert not re.search(r"\d…|…\d", out), out  # no number cut
    return out


def row_with(out: str, width: int, *cells: object) -> str:
    """The table row holding ``cells`` as whole words, in this order; it fits the terminal
    (prose such as findings is soft-wrapped by the terminal instead)."""
    pattern = r"(?<!\S)" + r"\s+".join(re.escape(str(c)) for c in cells) + r"(?![^\s,])"
    found = [line for line in out.splitlines() if re.search(pattern, line)]
    assert found, f"no line with {cells}:\n{out}"
    assert len(found[0]) <= width, found[0]
    return found[0]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["lso", "inspect"])
def test_partition_offsets_are_whole_at_every_width(command: str, width: int) -> None:
    out = shown([command, LOGDIR], width)
    for r in as_json("lso", LOGDIR, "--format", "json"):  # type: ignore[union-attr]
        row_with(out, width, r["topic"], r["partition"], r["log_start_offset"], r["log_end_offset"],
                 r["high_watermark"], r["last_stable_offset"])
    row_with(out, width, "4003/7@19")  # what holds payments-0 stays
    if width == 80:
        assert "left out at 80 columns:" in out


@pytest.mark.parametrize("width", WIDTHS)
def test_timeline_keeps_outcomes_and_offsets(width: int) -> None:
    out = shown(["timeline", LOGDIR], width)
    for t in as_json("timeline", LOGDIR, "--format", "jsonl"):  # type: ignore[union-attr]
        row_with(out, width, t["transactional_id"], f"{t['producer_id']}/{t['producer_epoch']}")
        assert re.search(rf"\b{t['outcome']}\b", row_with(out, width, t["transactional_id"]))
    for text in ("7..12", "COMMIT@14", "9..10", "ABORT@13", "19..21"):
        row_with(out, width, text)


@pytest.mark.parametrize("width", WIDTHS)
def test_dump_offsets_and_positions_are_whole(width: int) -> None:
    out = shown(["dump", f"{LOGDIR}/payments-0"], width)
    batches = [b for b in as_json("dump", f"{LOGDIR}/payments-0", "--format", "jsonl")
               if b["kind"] == "batch"]  # type: ignore[union-attr]
    assert batches
    for b in batches:
        offsets = (str(b["base_offset"]) if b["base_offset"] == b["last_offset"]
                   else f"{b['base_offset']}..{b['last_offset']}")
        row_with(out, width, offsets)
        assert re.search(rf"\b{b['position']}\b", row_with(out, width, offsets))


@pytest.mark.parametrize("width", WIDTHS)
def test_groups_and_replay_keep_their_offsets(width: int) -> None:
    out = shown(["groups", LOGDIR], width)
    row_with(out, width, "payments", 0, 15)  # committed
    assert re.search(r"\b19\s+32\s+17\b", out)  # LSO, HW, lag
    out = shown(["replay", LOGDIR, "--topic", "payments", "--partition", "0", "--records",
                 "--show-hidden"], width)
    for offset in (0, 9, 19, 31):
        row_with(out, width, offset)
