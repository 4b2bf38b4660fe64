"""``kafkatx timeline`` on several brokers' copies (fixtures/served-replicas, written by
``kafkatx serve --brokers 3`` under librdkafka) tells what ``inspect`` tells: each partition's
transactions from its authoritative copy, the copies' disagreement as the replica comparison's
findings; and its HTML page shows the findings with their numbered remediation steps
(issue 26 item 8)."""

from __future__ import annotations

import html as h
import json
import re
from pathlib import Path

from tests.test_cli_timeline import run

REPLICAS = Path(__file__).resolve().parent.parent / "fixtures" / "served-replicas"
UNCLEAN = REPLICAS / "unclean-lost-marker"
REPLICA_KINDS = {"replica_lagging", "replica_divergence", "replica_lost_committed_records",
                 "replica_content_mismatch", "replica_marker_mismatch",
                 "replica_outcome_mismatch"}


def _key(f: dict) -> tuple:
    return (f["kind"], f["topic"], f["partition"], f["offset"])


def inspect_findings(path: Path) -> list[dict]:
    proc = run("inspect", path, "--now", "data", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["findings"]


def timeline_rows(path: Path) -> tuple[list[dict], str]:
    proc = run("timeline", path, "--now", "data", "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_rows_agree_with_inspect_on_every_replica_case() -> None:
    """No row is hanging without inspect's hanging_transaction finding for it, and every
    finding on a row is one inspect reports (the diverged copy's lane is never shown)."""
    for case in sorted(REPLICAS.iterdir()):
        told = {_key(f) for f in inspect_findings(case)}
        rows, _ = timeline_rows(case)
        for row in rows:
            mine = {_key(f) for f in row["findings"]}
            assert mine <= told, (case.name, mine - told)
            if row["outcome"] == "hanging":
                assert any(f["kind"] == "hanging_transaction" for f in row["findings"]), row
            for p in row["partitions"]:
                hanging = [f for f in told if f[0] == "hanging_transaction"
                           and (f[1], f[2]) == (p["topic"], p["partition"])
                           and f[3] == p["first_offset"]]
                if p["marker_offset"] is not None:  # a COMMIT/ABORT is never called hanging
                    assert not hanging, (case.name, p)


def test_unclean_election_rows_carry_the_replica_findings() -> None:
    """The authoritative copy (broker-2, the uncleanly elected leader) holds checkout-0's
    second transaction open: hanging, with the marker mismatch against broker-1's COMMIT in
    its divergent tail on the same row; the divergence itself (no transaction of the
    authoritative copy) goes to stderr with the jsonl."""
    rows, stderr = timeline_rows(UNCLEAN)
    (hanging,) = [r for r in rows if r["outcome"] == "hanging"]
    assert [(p["topic"], p["partition"], p["first_offset"], p["marker_offset"])
            for p in hanging["partitions"]] == [("payments", 0, 3, None)]
    assert {f["kind"] for f in hanging["findings"]} >= {"hanging_transaction",
                                                        "replica_marker_mismatch"}
    assert "kafkatx: warning replica_divergence payments-0 offset 5:" in stderr
    assert "kafkatx: error replica_lost_committed_records payments-0 offset 5:" in stderr
    replica_told = {_key(f) for f in inspect_findings(UNCLEAN) if f["kind"] in REPLICA_KINDS}
    assert replica_told >= {("replica_divergence", "payments", 0, 5),
                            ("replica_marker_mismatch", "payments", 0, 3)}
    table = run("timeline", UNCLEAN, "--now", "data")
    assert table.returncode == 0, table.stderr
    shown = set(re.findall(r"^(?:error|warning|info)\s+(\w+) (\S+) offset (\d+):",
                           table.stdout, re.M))
    assert {(k, tp, int(o)) for k, tp, o in shown} == {
        (k, f"{t}-{p}", o) for k, t, p, o in replica_told}
    assert re.search(r"^replicas: where brokers' copies disagree", table.stdout, re.M)


def test_html_page_has_the_findings_and_numbered_steps(tmp_path: Path) -> None:
    page = tmp_path / "unclean.html"
    proc = run("timeline", UNCLEAN, "--now", "data", "--html", page)
    assert proc.returncode == 0, proc.stderr
    source = page.read_text(encoding="utf-8")
    findings = source[source.index('<div class="findings">'):source.index("<table>")]
    for f in inspect_findings(UNCLEAN):
        if f["kind"] in REPLICA_KINDS - {"replica_lagging"} or f["kind"] == "hanging_transaction":
            assert f"<b>{f['kind']}</b>" in findings, f["kind"]
    (hanging,) = [f for f in inspect_findings(UNCLEAN) if f["kind"] == "hanging_transaction"]
    steps = hanging["remediation_steps"]
    assert len(steps) > 1
    (plan,) = re.findall(r"<ol>(.*?)</ol>", findings)
    items = re.findall(r"<li>(.*?)</li>", plan)
    assert len(items) == len(steps)
    for item, step in zip(items, steps, strict=True):
        assert h.unescape(re.sub(r"<code>.*", "", item)) == step["what"]
        assert f"<code>{h.escape(step['command'])}</code>" in item


def test_html_option_is_format_html_output(tmp_path: Path) -> None:
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    assert run("timeline", UNCLEAN, "--now", "data", "--html", a).returncode == 0
    assert run("timeline", UNCLEAN, "--now", "data", "-f", "html", "-o", b).returncode == 0
    assert a.read_text() == b.read_text()
    both = run("timeline", UNCLEAN, "--html", a, "-o", b)
    assert both.returncode == 2 and "--html FILE is --format html --output FILE" in both.stderr
    other = run("timeline", UNCLEAN, "--html", a, "-f", "jsonl")
    assert other.returncode == 2
    helptext = " ".join(run("timeline", "--help").stdout.split())
    assert "html a page for a browser" in helptext
    assert "html for scripts" not in helptext and "/html" not in helptext
