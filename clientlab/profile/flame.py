"""Flame graphs as self-contained HTML (no URL fetched): each profiled cell's, in µs a request,
coloured by layer, and the differential graph of a slow cell against its language's fastest
(the slow cell's shape, each frame coloured by what grew, red, or shrank, blue: Brendan Gregg's
difffolded). Click a frame to zoom into it, the root to zoom out; the search box highlights the
frames whose name matches and says what share of the graph they hold."""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

from clientlab.profile.causes import language_of, layers_line, profile_of
from clientlab.profile.differential import Weighted
from clientlab.profile.folded import frames_of
from clientlab.profile.rules import Rules
from clientlab.store.profiles import cell_profiles

if TYPE_CHECKING:
    from clientlab.store import Store

MIN_US = 0.0   # every frame is kept: the renderer hides what is narrower than a pixel


@dataclass(frozen=True)
class Flame:
    key: str          # names its container in the page
    title: str
    kind: str         # "profile" or "differential"
    tree: dict[str, Any]
    caption: str = ""


def _rules(store: Store, cell: dict) -> Rules:
    rows = cell_profiles(store, cell["id"])
    return Rules.load(language_of(cell["driver"]), (rows[0].get("meta") or {}).get("folder") if rows else None)


def tree(w: Weighted, rules: Rules, fast: Weighted | None = None) -> dict[str, Any]:
    """The call tree {n: name, v: µs, l: layer, d: µs grown (differential), c: [children]}."""
    root: dict[str, Any] = {"n": "all", "v": 0.0, "l": "", "c": {}}
    if fast is not None:
        root["d"] = 0.0
        fast_at: dict[tuple[str, ...], float] = {}
        for stack, n in fast.folded.items():
            fr = tuple(frames_of(stack))
            for i in range(len(fr) + 1):
                fast_at[fr[:i]] = fast_at.get(fr[:i], 0.0) + n * fast.us_per_sample
    for stack, n in w.folded.items():
        us = n * w.us_per_sample
        node = root
        node["v"] += us
        path: tuple[str, ...] = ()
        for f in frames_of(stack):
            path += (f,)
            child = node["c"].get(f)
            if child is None:
                rule = rules._rule_for(f)
                child = node["c"][f] = {"n": f, "v": 0.0, "l": rule.layer if rule else "unattributed", "c": {}}
                if fast is not None:
                    child["d"] = -fast_at.get(path, 0.0)
            child["v"] += us
            node = child
    if fast is not None:
        root["d"] = -fast_at.get((), 0.0)

    def finish(node: dict[str, Any]) -> dict[str, Any]:
        if "d" in node:
            node["d"] = round(node["v"] + node["d"], 3)
        node["v"] = round(node["v"], 3)
        node["c"] = [finish(c) for c in sorted(node["c"].values(), key=lambda c: -c["v"]) if c["v"] > MIN_US]
        return node
    return finish(root)


def run_flames(store: Store, cells: list[dict[str, Any]]) -> list[Flame]:
    """Every profiled cell's flame graph, and for each cell with a cpu-gap finding the
    differential graph against the cell it names."""
    out: list[Flame] = []
    by_driver = {(c["driver"], c["scenario"]): c for c in cells}
    for c in cells:
        if not (c.get("figures") or {}).get("layers"):
            continue
        rules = _rules(store, c)
        w, _ = profile_of(store, c, rules)
        if w is None:
            continue
        figs = c.get("figures") or {}
        cost = figs["layers"].get("overhead")
        cpu_cost = (figs.get("profile") or {}).get("cpu_overhead")
        caption = layers_line(c) + (f"; profiling cost {cost * 100:+.0f} % wall time"
                                    + (f", {cpu_cost * 100:+.0f} % CPU a request" if cpu_cost is not None else "")
                                    + f" ({figs['layers']['profiler']}, {figs['layers']['samples']:,} samples)"
                                    if cost is not None else "")
        out.append(Flame(f"flame-{c['id']}", f"{c['driver']} × {c['scenario']}: µs a request of the profiled trials", "profile",
                         tree(w, rules), caption))
        for finding in (c.get("figures") or {}).get("findings") or []:
            fast = by_driver.get((finding.get("against"), c["scenario"])) if finding.get("rule") == "cpu-gap" else None
            if fast is None:
                continue
            wf, _ = profile_of(store, fast, _rules(store, fast))
            if wf is not None:
                out.append(Flame(f"diff-{c['id']}", f"{c['driver']} against {fast['driver']} × {c['scenario']}: "
                                 "µs a request grown (red) or shrunk (blue)", "differential", tree(w, rules, wf)))
    return out


CSS = """
.flame { position: relative; width: 100%; overflow: hidden; font: 11px "DejaVu Sans Mono", monospace; }
.flame div.f { position: absolute; height: 16px; box-sizing: border-box; border: 1px solid #fff;
  overflow: hidden; white-space: nowrap; cursor: pointer; padding: 0 2px; line-height: 14px; }
.flame div.f.match { background: #e0e !important; color: #fff; }
.flamebar { margin: 0.3em 0; } .flamebar input { width: 24em; } .flamebar .matched { margin-left: 1em; color: #555; }
"""

JS = r"""
(function () {
  var LAYER = {library: '#e8943a', runtime: '#d9c34a', tls: '#5fae5f', compression: '#4aa3c7', memory: '#b07cc6',
               kernel: '#c96a6a', harness: '#9a9a9a', unattributed: '#cfcfcf', '': '#bbb'};
  function colour(node, diff) {
    if (!diff) return LAYER[node.l] || '#ccc';
    var r = node.v > 0 ? node.d / node.v : 0; r = Math.max(-1, Math.min(1, r));
    if (r >= 0) return 'rgb(255,' + Math.round(235 - 180 * r) + ',' + Math.round(235 - 180 * r) + ')';
    return 'rgb(' + Math.round(235 + 180 * r) + ',' + Math.round(235 + 180 * r) + ',255)';
  }
  function depth(node) { var d = 0; node.c.forEach(function (c) { d = Math.max(d, depth(c)); }); return d + 1; }
  function draw(box, data, diff, focus, pattern) {
    var total = focus.v || 1, rows = depth(focus), width = box.clientWidth || 1000, matched = 0;
    box.innerHTML = ''; box.style.height = (rows * 17 + 2) + 'px';
    function place(node, x, level, path) {
      var w = node.v / total * width;
      if (w < 0.5) return;
      var div = document.createElement('div');
      div.className = 'f';
      div.style.left = x + 'px'; div.style.width = w + 'px'; div.style.bottom = (level * 17) + 'px';
      div.style.background = colour(node, diff);
      var text = node.n + ' — ' + node.v.toFixed(1) + ' µs (' + (node.v / total * 100).toFixed(1) + ' %)' +
                 (node.l ? ', ' + node.l : '') + (diff ? ', ' + (node.d >= 0 ? '+' : '') + node.d.toFixed(1) + ' µs' : '');
      div.title = text;
      div.textContent = w > 30 ? node.n : '';
      if (pattern && pattern.test(node.n)) {
        div.classList.add('match');
        if (!path.some(function (p) { return pattern.test(p); })) matched += node.v;
      }
      div.addEventListener('click', function () { draw(box, data, diff, node === focus ? data : node, pattern); });
      box.appendChild(div);
      var cx = x;
      node.c.forEach(function (c) { place(c, cx, level + 1, path.concat([node.n])); cx += c.v / total * width; });
    }
    place(focus, 0, 0, []);
    var label = document.getElementById(box.id + '-matched');
    if (label) label.textContent = pattern ? 'matched: ' + (matched / total * 100).toFixed(1) + ' %' : '';
    box.dataset.frames = String(box.childElementCount);
  }
  var boxes = Array.prototype.slice.call(document.querySelectorAll('div.flame'));
  boxes.forEach(function (box) {
    var data = JSON.parse(document.getElementById(box.id + '-tree').textContent);
    var diff = box.dataset.kind === 'differential';
    var search = document.getElementById(box.id + '-search');
    var redraw = function () {
      var p = null;
      if (search && search.value) { try { p = new RegExp(search.value, 'i'); } catch (e) { p = null; } }
      draw(box, data, diff, data, p);
    };
    if (search) search.addEventListener('input', redraw);
    redraw();
  });
  document.body.dataset.flamesReady = String(boxes.length);
})();
"""


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def section(flames: list[Flame]) -> str:
    """The flame graphs as HTML (the style, the containers, the data and the script)."""
    if not flames:
        return "<p>No cell was profiled in this run (clientlab run --profile, or clientlab profile).</p>"
    parts = [f"<style>{CSS}</style>"]
    for f in flames:
        k = escape(f.key, quote=True)
        caption = f'<p class="caption">{escape(f.caption)}</p>' if f.caption else ""
        parts.append(f'<h3>{escape(f.title)}</h3>{caption}<div class="flamebar">search <input id="{k}-search" '
                     f'placeholder="a regular expression"><span class="matched" id="{k}-matched"></span></div>'
                     f'<div class="flame" id="{k}" data-kind="{escape(f.kind, quote=True)}"></div>'
                     f'<script type="application/json" id="{k}-tree">{_json(f.tree)}</script>')
    parts.append(f"<script>{JS}</script>")
    return "".join(parts)


def page(title: str, flames: list[Flame]) -> str:
    """A page of its own holding `flames`."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title></head>'
            f'<body style="font-family: sans-serif; margin: 1em"><h1>{escape(title)}</h1>{section(flames)}</body></html>')
