#!/usr/bin/env python3
"""Draw criterion medians as grouped horizontal bars in an SVG (no plotting library).

Usage: scripts/bench_plot.py OUT.svg GROUP [GROUP...]
Benchmarks are named CASE/METHOD inside each group (criterion's target/criterion/GROUP/
CASE_METHOD/new/estimates.json); each CASE gets a block of bars, one per METHOD, on a
log scale of time.
"""
import json
import math
import pathlib
import sys

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]


def medians(group):
    out = {}
    for est in sorted(pathlib.Path("target/criterion", group).glob("*/new/estimates.json")):
        meta = json.loads((est.parent / "benchmark.json").read_text())
        fid = meta.get("function_id") or est.parent.parent.name
        case, _, method = fid.partition("/")
        if not method:
            case, method = group, fid
        out.setdefault(f"{group}: {case}", {})[method] = json.loads(est.read_text())["median"]["point_estimate"]
    return out


def fmt(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def main():
    out, groups = sys.argv[1], sys.argv[2:]
    data = {}
    for g in groups:
        data.update(medians(g))
    if not data:
        sys.exit("no criterion results found under target/criterion")
    methods = sorted({m for d in data.values() for m in d})
    color = {m: COLORS[i % len(COLORS)] for i, m in enumerate(methods)}
    values = [v for d in data.values() for v in d.values()]
    lo, hi = math.log10(min(values)) - 0.2, math.log10(max(values)) + 0.2
    width, label_w, bar_h, gap = 900, 300, 14, 12
    rows = sum(len(d) for d in data.values())
    height = rows * bar_h + len(data) * (gap + 18) + 60
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="10" y="18" font-size="13">median time per operation (log scale)</text>']
    y = 36
    for case, d in data.items():
        svg.append(f'<text x="10" y="{y + 11}" font-weight="bold">{case}</text>')
        y += 18
        for m, v in sorted(d.items(), key=lambda kv: kv[1]):
            w = (math.log10(v) - lo) / (hi - lo) * (width - label_w - 90)
            svg.append(f'<text x="20" y="{y + 11}">{m}</text>')
            svg.append(f'<rect x="{label_w}" y="{y}" width="{max(w, 1):.1f}" height="{bar_h - 2}" fill="{color[m]}"/>')
            svg.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 11}">{fmt(v)}</text>')
            y += bar_h
        y += gap
    svg.append("</svg>")
    pathlib.Path(out).write_text("\n".join(svg) + "\n")
    print(f"wrote {out}: {len(data)} cases")


if __name__ == "__main__":
    main()
