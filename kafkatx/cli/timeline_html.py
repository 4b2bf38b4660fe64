"""``kafkatx timeline --format html``: one self-contained page with a Gantt view.

Everything is inline (CSS, the data as JSON, the script that draws the SVG): the page opens
from a file with no network. One lane per partition (plus one for the coordinator), a bar per
transaction and partition coloured by outcome, markers as ticks, the LSO of each partition as
a dashed line, hanging transactions outlined and labelled, a legend, and a hover title on
every mark. The findings (the replica comparison's too) with their numbered remediation steps
follow the chart, then a table of the transactions; both work without the script.
"""

from __future__ import annotations

import html
import json

from kafkatx.analysis.coordinator_transactions import tp_name
from kafkatx.analysis.findings import Finding, Step, rank
from kafkatx.analysis.timefmt import iso_ms
from kafkatx.analysis.timeline import Timeline, TimelineTransaction
from kafkatx.cli.render import merged_steps, plan_key
from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC

_CSS = """
body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 16px 24px;
       color: #202124; background: #fff; }
h1 { font-size: 18px; margin: 0 0 4px; }
.sub { color: #5f6368; margin-bottom: 12px; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; margin: 8px 0 12px; align-items: center; }
.legend span { display: inline-flex; gap: 6px; align-items: center; }
.sw { width: 22px; height: 10px; display: inline-block; border-radius: 2px; }
.sw.committed { background: #34a853; } .sw.aborted { background: #9aa0a6; }
.sw.open { background: #fbbc04; } .sw.hanging { background: #d93025; outline: 2px solid #7a0000; }
.sw.tick { width: 3px; height: 14px; background: #1a73e8; }
.sw.lso { width: 0; height: 14px; border-left: 2px dashed #b00020; }
svg text { font-size: 11px; fill: #3c4043; }
svg .lane-bg { fill: #f8f9fa; } svg .lane-bg.alt { fill: #fff; }
svg .lane-label { font-weight: 600; } svg .lane-note { fill: #80868b; }
svg .axis line { stroke: #dadce0; } svg .axis text { fill: #5f6368; }
rect.bar { rx: 2; ry: 2; } rect.bar:hover { stroke: #202124; stroke-width: 1.5; }
rect.bar.committed { fill: #34a853; } rect.bar.aborted { fill: #9aa0a6; }
rect.bar.open { fill: #fbbc04; }
rect.bar.hanging { fill: #d93025; stroke: #7a0000; stroke-width: 2.5; }
text.hanging-label { fill: #b00020; font-weight: 700; }
line.tick { stroke-width: 3; } line.tick.COMMIT { stroke: #0b8043; }
line.tick.ABORT { stroke: #5f6368; }
line.state { stroke: #1a73e8; stroke-width: 2; }
line.lso { stroke: #b00020; stroke-width: 2; stroke-dasharray: 5 3; }
text.lso-label { fill: #b00020; font-weight: 600; }
line.now { stroke: #5f6368; stroke-dasharray: 2 3; }
svg .axis rect.cut { fill: #eceff1; } svg .axis text.cut-label { fill: #80868b; }
table { border-collapse: collapse; margin-top: 18px; }
th, td { text-align: left; padding: 3px 10px 3px 0; vertical-align: top; }
td:nth-child(-n+5) { white-space: nowrap; }
th { border-bottom: 1px solid #dadce0; }
td.hanging { color: #b00020; font-weight: 700; } td.open { color: #a56300; }
.notes { color: #5f6368; margin-top: 12px; }
.findings { margin-top: 16px; max-width: 1280px; }
.findings h2 { font-size: 15px; margin: 0 0 6px; }
.finding { margin: 0 0 10px; }
.finding .sev { font-weight: 700; text-transform: uppercase; font-size: 11px; }
.finding .sev.error { color: #b00020; } .finding .sev.warning { color: #a56300; }
.finding .sev.info { color: #5f6368; }
.finding .loc { color: #80868b; }
.finding ol { margin: 4px 0 0; padding-left: 22px; }
.finding code { display: block; white-space: pre-wrap; word-break: break-all;
                background: #f1f3f4; padding: 2px 6px; margin: 2px 0; user-select: all; }
"""

# Draws the SVG from the embedded JSON (kept small and dependency-free on purpose).
_JS = r"""
(function () {
  const data = JSON.parse(document.getElementById('timeline-data').textContent);
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.getElementById('gantt');
  const W = 1280, LABEL = 200, RIGHT = 150, ROW = 16, GAP = 4, PAD = 8, AXIS = 30;
  const GAPW = 28, MINW = 10;
  const iso = ms => new Date(ms).toISOString();
  const hms = ms => iso(Math.round(ms)).slice(11, 23);
  const dur = ms => ms < 1000 ? Math.round(ms) + 'ms' : ms < 120000 ? Math.floor(ms / 1000) +
    's' : ms < 7200000 ? Math.floor(ms / 60000) + 'm' + String(Math.floor(ms / 1000) % 60)
    .padStart(2, '0') + 's' : Math.floor(ms / 3600000) + 'h' + String(Math.floor(ms / 60000) %
    60).padStart(2, '0') + 'm';
  const el = (name, attrs, parent, title) => {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (title) { const t = document.createElementNS(NS, 'title'); t.textContent = title;
                 e.appendChild(t); }
    parent.appendChild(e); return e;
  };
  const now = data.now_ms;
  const items = [];  // bars: {lane, start, end, cls, title, txn, marker?, states?}
  const laneKey = (t, p) => t + '-' + p;
  const lanes = [{key: 'coordinator', label: 'coordinator', note: '@TXN_TOPIC@'}];
  for (const l of data.lanes) {
    lanes.push({key: laneKey(l.topic, l.partition), label: laneKey(l.topic, l.partition),
                note: l.copied ? (l.broker || '') : 'not copied', lane: l});
  }
  for (const t of data.transactions) {
    const who = (t.transactional_id || 'producer ' + t.producer_id) + ' (' + t.producer_id +
                '/' + (t.producer_epoch === null ? '?' : t.producer_epoch) + ')';
    const open = t.outcome === 'open' || t.outcome === 'hanging';
    if (t.coordinator_states.length) {
      const s = t.start_timestamp_ms;
      const e = t.end_timestamp_ms !== null ? t.end_timestamp_ms : (open ? now : s);
      items.push({lane: 'coordinator', start: s, end: Math.max(e, s), cls: t.outcome, txn: t,
        toNow: t.end_timestamp_ms === null && open,
        title: who + ': ' + t.outcome + '\n' + t.coordinator_states.map(
          c => c.state + ' ' + c.producer_id + '/' + c.producer_epoch + ' at ' +
               iso(c.timestamp_ms) + ' (offset ' + c.offset + ')').join('\n'),
        states: t.coordinator_states});
    }
    for (const p of t.partitions) {
      if (p.first_timestamp_ms === null && p.marker_timestamp_ms === null) continue;
      const s = p.first_timestamp_ms !== null ? p.first_timestamp_ms : p.marker_timestamp_ms;
      let e = p.marker_timestamp_ms;
      const waiting = ['open', 'hanging', 'marker_pending'].includes(p.status);
      if (e === null) e = waiting && now > s ? now :
                          (p.last_timestamp_ms !== null ? p.last_timestamp_ms : s);
      const cls = p.status === 'committed' || p.status === 'aborted' || p.status === 'hanging'
                  ? p.status : (t.outcome === 'hanging' ? 'hanging' : 'open');
      let title = who + ' in ' + laneKey(p.topic, p.partition) + ': ' + cls +
        '\ndata offsets ' + p.first_offset + '..' + p.last_offset +
        (p.first_timestamp_ms !== null ? ' from ' + iso(p.first_timestamp_ms) : '');
      title += p.marker_offset !== null
        ? '\n' + p.marker_type + ' marker at offset ' + p.marker_offset + ', ' +
          iso(p.marker_timestamp_ms) + ' (producer epoch ' + p.marker_producer_epoch +
          ', coordinator epoch ' + p.marker_coordinator_epoch + ')'
        : '\nno marker' + (p.note ? ': ' + p.note : '');
      items.push({lane: laneKey(p.topic, p.partition), start: s, end: Math.max(e, s), cls: cls,
                  txn: t, title: title, marker: p.marker_offset !== null ? p : null,
                  toNow: p.marker_timestamp_ms === null && e === now});
    }
  }
  const points = data.lanes.filter(l => l.lso_timestamp_ms !== null).map(l => l.lso_timestamp_ms);

  // A piecewise-linear time scale: busy spans get the width, long idle gaps are cut short.
  function scale(compress) {
    // A bar still open at "now" marks its start, not the idle time up to now, as busy.
    const iv = items.map(i => i.toNow ? [i.start, i.start] : [i.start, i.end])
      .concat(points.map(p => [p, p]));
    if (now > 0) iv.push([now, now]);
    if (!iv.length) iv.push([0, 1000]);
    iv.sort((a, b) => a[0] - b[0]);
    const merged = [];
    for (const [a, b] of iv) {
      const last = merged[merged.length - 1];
      if (last && a <= last[1]) last[1] = Math.max(last[1], b); else merged.push([a, b]);
    }
    let total = merged[merged.length - 1][1] - merged[0][0];
    if (total < 1000) { merged[merged.length - 1][1] = merged[0][0] + 1000; total = 1000; }
    const edge = m => Math.min(total * 0.01, Math.max((m[1] - m[0]) * 0.1, 50));
    merged[0][0] -= edge(merged[0]);
    merged[merged.length - 1][1] += edge(merged[merged.length - 1]);
    const segs = [];
    merged.forEach((m, i) => {
      segs.push({t0: m[0], t1: m[1], cut: false});
      if (i + 1 < merged.length) {
        const g = merged[i + 1][0] - m[1];
        segs.push({t0: m[1], t1: merged[i + 1][0], cut: compress && g > total * 0.06});
      }
    });
    const width = W - LABEL - RIGHT;
    const cuts = segs.filter(s => s.cut).length, free = segs.filter(s => !s.cut);
    // Cut short, busy spans share the width by the square root of their length, so a burst
    // of a second stays readable beside a minute-long transaction; uncut, time is linear.
    const weight = s => compress ? Math.sqrt(s.t1 - s.t0) : s.t1 - s.t0;
    const lin = free.reduce((a, s) => a + weight(s), 0) || 1;
    const avail = width - cuts * GAPW - free.length * MINW;
    let xx = LABEL;
    for (const s of segs) {
      s.x0 = xx;
      s.w = s.cut ? GAPW : MINW + Math.max(avail, 0) * weight(s) / lin;
      xx += s.w;
    }
    const x = ms => {
      if (ms <= segs[0].t0) return segs[0].x0;
      for (const s of segs) if (ms <= s.t1) {
        return s.x0 + (s.t1 > s.t0 ? (ms - s.t0) / (s.t1 - s.t0) : 0) * s.w;
      }
      const l = segs[segs.length - 1]; return l.x0 + l.w;
    };
    return {x: x, segs: segs};
  }

  function draw(compress) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const {x, segs} = scale(compress);
    const rows = {};
    for (const it of items.slice().sort((a, b) => a.start - b.start)) {
      const r = rows[it.lane] || (rows[it.lane] = []);
      let i = r.findIndex(end => x(it.start) > end + 2);
      if (i < 0) { i = r.length; r.push(0); }
      r[i] = Math.max(x(it.end), x(it.start) + 4) + (it.cls === 'hanging' ? 130 : 0);
      it.row = i;
    }
    let y = AXIS;
    const laneTop = {}, laneH = {};
    lanes.forEach((l, k) => {
      const n = Math.max(2, (rows[l.key] || []).length);
      const h = PAD * 2 + n * (ROW + GAP);
      laneTop[l.key] = y; laneH[l.key] = h;
      el('rect', {x: 0, y: y, width: W, height: h, class: 'lane-bg' + (k % 2 ? ' alt' : '')},
         svg);
      el('text', {x: 6, y: y + PAD + 11, class: 'lane-label'}, svg).textContent = l.label;
      el('text', {x: 6, y: y + PAD + 25, class: 'lane-note'}, svg).textContent = l.note;
      y += h;
    });
    const H = y + 8;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('width', W); svg.setAttribute('height', H);
    const axis = el('g', {class: 'axis'}, svg);
    el('text', {x: 6, y: 12}, axis).textContent = iso(segs[0].t0).slice(0, 10) + ' (UTC)';
    let lastLabel = -1e9;
    for (const s of segs) {
      if (s.cut) {
        const mx = s.x0 + s.w / 2;
        el('rect', {x: s.x0 + 4, y: AXIS, width: s.w - 8, height: H - AXIS - 8,
                    class: 'cut'}, axis, 'idle for ' + dur(s.t1 - s.t0) + ' (cut short)');
        el('text', {x: mx, y: 24, class: 'cut-label', 'text-anchor': 'middle'}, axis)
          .textContent = '+' + dur(s.t1 - s.t0);
        continue;
      }
      const n = Math.max(1, Math.floor(s.w / 170));
      for (let i = 0; i <= n; i++) {
        const ms = s.t0 + (s.t1 - s.t0) * i / n, tx = x(ms);
        el('line', {x1: tx, x2: tx, y1: AXIS - 4, y2: H - 8}, axis);
        if (tx - lastLabel > 95) {
          el('text', {x: tx + 2, y: 12}, axis).textContent = hms(ms);
          lastLabel = tx;
        }
      }
    }
    if (now > 0) {
      el('line', {x1: x(now), x2: x(now), y1: AXIS, y2: H - 8, class: 'now'}, svg,
         'now: ' + iso(now));
    }
    for (const it of items) {
      const top = laneTop[it.lane] + PAD + it.row * (ROW + GAP);
      const x1 = x(it.start), w = Math.max(x(it.end) - x1, 4);
      el('rect', {x: x1, y: top, width: w, height: ROW, class: 'bar ' + it.cls,
        'data-transactional-id': it.txn.transactional_id || '',
        'data-producer-id': it.txn.producer_id, 'data-lane': it.lane}, svg, it.title);
      if (it.cls === 'hanging') {
        el('text', {x: x1 + w + 4, y: top + 12, class: 'hanging-label'}, svg).textContent =
          'HANGING ' + (it.txn.transactional_id || it.txn.producer_id);
      }
      if (it.marker) {
        const m = it.marker, mx = x(m.marker_timestamp_ms);
        el('line', {x1: mx, x2: mx, y1: top - 3, y2: top + ROW + 3,
                    class: 'tick ' + m.marker_type}, svg,
           m.marker_type + ' marker, offset ' + m.marker_offset + ', ' +
           iso(m.marker_timestamp_ms) + ', coordinator epoch ' + m.marker_coordinator_epoch);
      }
      for (const st of it.states || []) {
        const sx = x(st.timestamp_ms);
        el('line', {x1: sx, x2: sx, y1: top - 2, y2: top + ROW + 2, class: 'state'}, svg,
           st.state + ' at ' + iso(st.timestamp_ms) + ' (@TXN_TOPIC@-' + st.partition +
           ' offset ' + st.offset + ')');
      }
    }
    for (const l of data.lanes) {
      if (!l.copied) continue;
      const key = laneKey(l.topic, l.partition), top = laneTop[key], h = laneH[key];
      const at = l.lso_timestamp_ms !== null ? l.lso_timestamp_ms : l.last_timestamp_ms;
      if (at === null) continue;
      const held = l.lso_source === 'open_transaction' ||
                   l.lso_source === 'unreplicated_transaction';
      const lx = x(at);
      el('line', {x1: lx, x2: lx, y1: top + 2, y2: top + h - 2, class: 'lso'}, svg,
         'LSO ' + l.last_stable_offset + (held ? ' (held by the transaction from ' + iso(at) +
         ')' : ' = HW ' + l.high_watermark) + '; log end offset ' + l.log_end_offset);
      el('text', {x: lx + 3, y: top + h - 4, class: 'lso-label'}, svg).textContent =
        'LSO ' + l.last_stable_offset + (held ? '' : ' = HW');
    }
    document.body.setAttribute('data-rendered', String(items.length));
  }
  const box = document.getElementById('compress');
  box.addEventListener('change', () => draw(box.checked));
  draw(box.checked);
})();
""".replace("@TXN_TOPIC@", TRANSACTION_STATE_TOPIC)


def _row(t: TimelineTransaction, now_ms: int) -> str:
    parts = []
    for e in t.partitions:
        text = tp_name(e.tp)
        if e.first_offset is not None:
            text += f" {e.first_offset}..{e.last_offset}"
        text += (f" {e.marker_type}@{e.marker_offset}" if e.marker_offset is not None
                 else f" ({e.status.replace('_', ' ')})")
        parts.append(text)
    epoch = "?" if t.producer_epoch is None else str(t.producer_epoch)
    cells = [t.transactional_id or "-", f"{t.producer_id}/{epoch}", iso_ms(t.start_timestamp_ms),
             iso_ms(t.end_timestamp_ms), t.outcome, "; ".join(parts) or "-",
             ", ".join(t.anomalies) or "-"]
    tds = "".join(
        f'<td class="{html.escape(t.outcome)}">{html.escape(c)}</td>' if i == 4
        else f"<td>{html.escape(c)}</td>" for i, c in enumerate(cells))
    return f"<tr>{tds}</tr>"


def page_findings(tl: Timeline) -> list[tuple[Finding, tuple[Step, ...]]]:
    """Every finding the page shows, ranked, each transaction's plan once however many
    copies hold it (as ``inspect`` tells them), with its remediation steps."""
    found: dict[int, Finding] = {}
    for f in [f for t in tl.transactions for f in t.findings] + tl.replica_findings:
        found.setdefault(id(f), f)
    plans: dict[tuple[object, ...], list[Finding]] = {}
    for f in rank(list(found.values())):
        plans.setdefault(plan_key(f), []).append(f)
    return [(copies[0], merged_steps(copies) if any(f.remediation_steps for f in copies)
             else ()) for copies in plans.values()]


def _finding_html(f: Finding, steps: tuple[Step, ...]) -> str:
    where = f"{f.topic}-{f.partition}" if f.topic is not None else ""
    if f.offset is not None:
        where += f" offset {f.offset}"
    head = (f'<span class="sev {html.escape(f.level)}">{html.escape(f.level)}</span> '
            f"<b>{html.escape(f.kind)}</b> {html.escape(where)}: {html.escape(f.message)}")
    if f.location:
        head += f' <span class="loc">({html.escape(f.location)})</span>'
    items = "".join(
        f"<li>{html.escape(s.what)}" + (f"<code>{html.escape(s.command)}</code>"
                                         if s.command else "") + "</li>" for s in steps)
    remedy = f"<div>remediation:<ol>{items}</ol></div>" if steps else ""
    return f'<div class="finding">{head}{remedy}</div>'


def _findings_html(tl: Timeline) -> str:
    shown = page_findings(tl)
    if not shown:
        return '<div class="findings"><h2>Findings</h2>none</div>'
    return ('<div class="findings"><h2>Findings and remediation</h2>'
            + "".join(_finding_html(f, steps) for f, steps in shown) + "</div>")


def render_html(tl: Timeline, *, title: str = "kafkatx timeline") -> str:
    """The whole page as one string (UTF-8 HTML5)."""
    payload = json.dumps(tl.to_dict(), ensure_ascii=True, separators=(",", ":"))
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    counts = {o: sum(t.outcome == o for t in tl.transactions)
              for o in ("committed", "aborted", "open", "hanging")}
    summary = ", ".join(f"{n} {o}" for o, n in counts.items())
    head = ["transactional id", "pid/epoch", "start (UTC)", "end (UTC)", "outcome",
            "partitions", "anomalies"]
    rows = "\n".join(_row(t, tl.now_ms) for t in tl.transactions)
    notes = "".join(f"<div>note: {html.escape(n)}</div>" for n in tl.notes)
    legend = "".join(
        f'<span><i class="sw {cls}"></i>{label}</span>' for cls, label in (
            ("committed", "committed"), ("aborted", "aborted"), ("open", "open (no marker yet)"),
            ("hanging", "hanging (no marker will come)"), ("tick", "COMMIT/ABORT marker"),
            ("lso", "last stable offset")))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; \
style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>{html.escape(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
<div class="sub">{len(tl.transactions)} transaction(s): {html.escape(summary)}; \
times in UTC, now = {html.escape(iso_ms(tl.now_ms))}. Hover a bar or a tick for details.</div>
<div class="legend">{legend}<span>blue ticks on the coordinator lane: state changes</span>
<label><input type="checkbox" id="compress" checked> cut idle time short</label></div>
<svg id="gantt" xmlns="http://www.w3.org/2000/svg" role="img" \
aria-label="transactions per partition over time"></svg>
<noscript><p>The chart needs JavaScript; the table below has the same transactions.</p></noscript>
{_findings_html(tl)}
<div class="notes">{notes}</div>
<table>
<thead><tr>{"".join(f"<th>{html.escape(h)}</th>" for h in head)}</tr></thead>
<tbody>
{rows}
</tbody>
</table>
<script type="application/json" id="timeline-data">{payload}</script>
<script>{_JS}</script>
</body>
</html>
"""
