"""`kafkatx timeline` (and the joined findings in `inspect`/`verify`) as a user runs them.

The HTML page is loaded in headless Chromium (Debian's ``chromium`` package) and the bars the
script drew are counted in the DOM it dumps; without Chromium the test fails (it is part of
the CI image), it does not skip.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.command import kafkatx
from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"
NOW = "2025-11-21T05:00:00Z"
LATER = "2025-11-21T05:10:00Z"  # ledger-writer's last write over 15 minutes old: lso_pinned
ABORT = ("kafka-transactions.sh --bootstrap-server <broker:9092> abort --topic payments "
         "--partition 0 --start-offset 19")
CONTRACT = {"transactional_id", "producer_id", "producer_epoch", "outcome", "start_timestamp_ms",
            "end_timestamp_ms", "coordinator_states", "partitions", "findings"}
PARTITION_KEYS = {"topic", "partition", "first_offset", "last_offset", "marker_offset",
                  "marker_type"}


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return kafkatx(*args, columns=200)


def jsonl(*args: str | Path) -> list[dict]:
    proc = run("timeline", *args, "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


# table and jsonl ------------------------------------------------------------------------------


def test_table_on_the_fixture() -> None:
    proc = run("timeline", "--now", NOW, LOGDIR)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:4] == ["transactional", "id", "pid/epoch", "start"]
    rows = {ln.split()[0]: ln for ln in lines[1:] if ln.split() and
            ln.split()[0].endswith("-writer")}
    assert re.search(r"4001/2\s+2025-11-21T04:41:00.900Z\s+1s\s+committed", rows["payments-writer"])
    assert re.search(r"4002/0 .* aborted\s+payments-0 9\.\.10 ABORT@13", rows["refunds-writer"])
    assert re.search(r"4003/7 .* 13m59s\+\s+hanging\s+payments-0 19\.\.21 no marker, hanging",
                     rows["ledger-writer"])
    assert "hanging_transaction" in rows["ledger-writer"]
    assert f"hanging ledger-writer payments-0 from offset 19: {ABORT}" in proc.stdout
    assert "note: coordinator: __transaction_state partitions 9, 15, 39 of 50 present" in (
        proc.stdout)


def test_jsonl_contract() -> None:
    objs = jsonl(LOGDIR)
    assert [o["transactional_id"] for o in objs] == ["payments-writer", "refunds-writer",
                                                     "ledger-writer"]
    for o in objs:
        assert o.keys() >= CONTRACT
        assert o["outcome"] in ("committed", "aborted", "open", "hanging")
        for s in o["coordinator_states"]:
            assert s.keys() >= {"state", "timestamp_ms", "offset"}
        for p in o["partitions"]:
            assert p.keys() >= PARTITION_KEYS
    pay, refund, ledger = objs
    assert [(p["topic"], p["partition"], p["first_offset"], p["last_offset"],
             p["marker_offset"], p["marker_type"]) for p in pay["partitions"]] == [
        ("__consumer_offsets", 41, 1, 2, 3, "COMMIT"), ("payments", 0, 7, 12, 14, "COMMIT"),
        ("payments", 1, 0, 1, 2, "COMMIT")]
    assert [s["state"] for s in pay["coordinator_states"]] == [
        "Ongoing", "Ongoing", "PrepareCommit", "CompleteCommit"]
    assert [(c["group"], c["topic"], c["partition"], c["offset"], c["visible"])
            for c in pay["offset_commits"]] == [("payments-app", "payments", 0, 15, True),
                                                ("payments-app", "payments", 1, 3, True)]
    assert refund["outcome"] == "aborted" and refund["end_timestamp_ms"] == 1_763_700_062_010
    assert (ledger["producer_id"], ledger["producer_epoch"], ledger["outcome"]) == (
        4003, 7, "hanging")
    (p0,) = ledger["partitions"]
    assert (p0["first_offset"], p0["last_offset"], p0["marker_offset"], p0["marker_type"]) == (
        19, 21, None, None)
    hang = next(f for f in ledger["findings"] if f["kind"] == "hanging_transaction")
    assert hang["remediation"] == ABORT and hang["transactional_id"] == "ledger-writer"


def test_filters() -> None:
    assert [o["transactional_id"] for o in jsonl(LOGDIR, "--transactional-id",
                                                 "refunds-writer")] == ["refunds-writer"]
    assert [o["producer_id"] for o in jsonl(LOGDIR, "--producer-id", "4003",
                                            "--producer-id", "4001")] == [4001, 4003]
    assert [o["transactional_id"] for o in jsonl(LOGDIR, "--since", "2025-11-21T04:45:00Z")] == [
        "ledger-writer"]
    assert [o["transactional_id"] for o in jsonl(LOGDIR, "--until", "1763700061000")] == [
        "payments-writer"]


def test_an_id_whose_coordinator_partition_was_not_copied() -> None:
    proc = run("timeline", LOGDIR, "--transactional-id", "TesttranId", "--format", "jsonl")
    assert proc.returncode == 0 and proc.stdout == ""
    assert ("transactional id TesttranId: its coordinator partition __transaction_state-48 "
            "(partitionFor, of 50) is not among the evidence") in proc.stderr


@pytest.mark.parametrize("args", [
    ["--since", "2025-11-21T05:00:00Z", "--until", "2025-11-21T04:00:00Z"],
    ["--format", "csv"],
    ["--producer-id", "-1"],
])
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = run("timeline", LOGDIR, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr


def test_missing_path_is_one_line() -> None:
    proc = run("timeline", ROOT / "no-such-dir")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


# html -----------------------------------------------------------------------------------------


class _Marks(HTMLParser):
    """Collects the SVG marks of the dumped DOM: (tag, class tokens, attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: list[tuple[str, set[str], dict[str, str | None]]] = []
        self.body: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag in ("rect", "line"):
            self.marks.append((tag, set((a.get("class") or "").split()), a))

    def count(self, tag: str, *classes: str) -> int:
        return sum(1 for t, c, _ in self.marks if t == tag and set(classes) <= c)


def chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("headless Chromium is needed to check the HTML page: install Debian's "
                    "`chromium` package (apt-get install -y chromium)")
    return exe


def headless(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=180)


def test_html_page_draws_the_gantt_in_chromium(tmp_path: Path) -> None:
    before = snapshot_tree(LOGDIR)
    page = tmp_path / "timeline.html"
    proc = run("timeline", "--now", NOW, LOGDIR, "--format", "html", "--output", page)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {page} (3 transaction(s))" in proc.stderr and proc.stdout == ""
    assert_unchanged(LOGDIR, before)
    source = page.read_text(encoding="utf-8")
    # Self-contained: nothing is fetched (the only URL is the SVG namespace).
    assert not re.search(r"""(src|href)\s*=""", source)
    assert set(re.findall(r"https?://[^\s\"'<>]+", source)) == {"http://www.w3.org/2000/svg"}
    dumped = headless(page, tmp_path / "profile", "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _Marks()
    dom.feed(dumped.stdout)
    # Bars per transaction and partition (plus one per transaction on the coordinator lane),
    # coloured by outcome: payments-writer commits on 3 partitions, refunds-writer aborts on
    # one, ledger-writer hangs on payments-0.
    assert dom.count("rect", "bar", "committed") == 4
    assert dom.count("rect", "bar", "aborted") == 2
    assert dom.count("rect", "bar", "hanging") == 2
    assert dom.count("rect", "bar", "open") == 0
    assert dom.body.get("data-rendered") == "8"
    hanging = {a.get("data-lane") for t, c, a in dom.marks if {"bar", "hanging"} <= c}
    assert hanging == {"coordinator", "payments-0"}
    assert {a.get("data-transactional-id") for t, c, a in dom.marks
            if {"bar", "hanging"} <= c} == {"ledger-writer"}
    assert dom.count("line", "tick", "COMMIT") == 3 and dom.count("line", "tick", "ABORT") == 1
    assert dom.count("line", "lso") == 3  # one per data partition
    assert "HANGING ledger-writer" in dumped.stdout
    assert "<title>" in dumped.stdout  # hover titles


def test_html_screenshot_renders(tmp_path: Path) -> None:
    page = tmp_path / "timeline.html"
    assert run("timeline", LOGDIR, "--format", "html", "--output", page).returncode == 0
    shot = tmp_path / "shot.png"
    proc = headless(page, tmp_path / "profile", "--window-size=1320,600",
                    f"--screenshot={shot}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_output_inside_the_evidence_is_refused() -> None:
    before = snapshot_tree(LOGDIR)
    proc = run("timeline", LOGDIR, "--format", "html", "--output", LOGDIR / "timeline.html")
    assert proc.returncode == 2
    assert "inside the inspected path" in proc.stderr
    assert_unchanged(LOGDIR, before)


def test_jsonl_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    proc = run("timeline", LOGDIR, "--format", "jsonl", "--output", out)
    assert proc.returncode == 0 and proc.stdout == ""
    assert len(out.read_text().splitlines()) == 3


# the joined findings in inspect / verify ------------------------------------------------------


def test_inspect_puts_the_hanging_transaction_first() -> None:
    proc = run("inspect", "--now", LATER, LOGDIR, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    head = findings[0]
    assert (head["kind"], head["topic"], head["partition"], head["offset"],
            head["transactional_id"], head["severity"], head["remediation"]) == (
        "hanging_transaction", "payments", 0, 19, "ledger-writer", "error", ABORT)
    (pinned,) = [f for f in findings if f["kind"] == "lso_pinned"]
    assert pinned["transactional_id"] == "ledger-writer" and pinned["remediation"] == ABORT
    assert pinned["message"].endswith("(see hanging_transaction)")
    assert not [f for f in findings if f["kind"] == "open_transaction"]
    table = run("inspect", "--now", LATER, LOGDIR)
    errors = [ln for ln in table.stdout.splitlines() if ln.startswith("error")]
    assert re.match(r"error\s+hanging_transaction payments-0 offset 19: ledger-writer", errors[0])
    assert re.match(r"error\s+lso_pinned payments-0 offset 19", errors[1])


def test_verify_fails_on_the_hanging_transaction() -> None:
    proc = run("verify", LOGDIR, "--format", "json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False
    kinds = [f["kind"] for f in doc["findings"] if f["severity"] == "error"]
    assert kinds == ["hanging_transaction"]
    opened = [f for f in doc["findings"] if f["kind"] == "open_transaction"]
    assert [f["transactional_id"] for f in opened] == ["ledger-writer"]
