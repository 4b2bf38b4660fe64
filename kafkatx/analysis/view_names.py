"""The two views an analysis answers from, and how a table names them (no Kafka rule here).

Apart from :mod:`kafkatx.analysis.restart_view` so that a command naming a view does not load
the model of Kafka's log load, which only the restart view runs.
"""

from __future__ import annotations

FORGOTTEN = "forgotten"  # a transaction outcome: open as found, forgotten by the load
AS_FOUND = "as_found"
AFTER_RESTART = "after_restart"
VIEW_LINES = {
    AS_FOUND: "view: as found (what the broker served when these files were taken)",
    AFTER_RESTART: "view: after restart (what a broker starting on exactly these files serves "
                   "once it has loaded them)",
}
