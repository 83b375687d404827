#!/usr/bin/env python3
"""Print criterion's medians as a Markdown table, with ratios to a baseline.

Usage: scripts/bench_table.py GROUP [BASELINE]
Reads target/criterion/GROUP/*/new/{estimates,benchmark}.json (criterion's own output).
Benchmarks named CASE/METHOD are compared with BASELINE as a method of the same case;
others with the benchmark named BASELINE. The ratio is baseline time / this time
(above 1: faster than the baseline).
"""
import json
import pathlib
import sys


def load(group):
    rows = []
    for bench in sorted(pathlib.Path("target/criterion", group).glob("*/new")):
        est = json.loads((bench / "estimates.json").read_text())
        meta = json.loads((bench / "benchmark.json").read_text())
        med = est["median"]
        tp = meta.get("throughput") or {}
        rows.append(
            {
                "name": meta.get("function_id") or bench.parent.name,
                "median_s": med["point_estimate"] / 1e9,
                "lo_s": med["confidence_interval"]["lower_bound"] / 1e9,
                "hi_s": med["confidence_interval"]["upper_bound"] / 1e9,
                "bytes": tp.get("Bytes") or tp.get("BytesDecimal"),
            }
        )
    return rows


def fmt_time(s):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def main():
    group = sys.argv[1]
    base = sys.argv[2] if len(sys.argv) > 2 else None
    rows = load(group)
    if not rows:
        sys.exit(f"no criterion results for {group!r} under target/criterion")
    by_name = {r["name"]: r["median_s"] for r in rows}
    print(f"| {group} | median | 95% CI of median | GiB/s | speed vs {base or '-'} |")
    print("|---|---|---|---|---|")
    for r in rows:
        case = r["name"].rpartition("/")[0]
        base_s = by_name.get(f"{case}/{base}" if case else base)
        gibs = f"{r['bytes'] / r['median_s'] / 2**30:.2f}" if r["bytes"] else "-"
        ratio = f"{base_s / r['median_s']:.2f}" if base_s else "-"
        ci = f"{fmt_time(r['lo_s'])} – {fmt_time(r['hi_s'])}"
        print(f"| {r['name']} | {fmt_time(r['median_s'])} | {ci} | {gibs} | {ratio} |")


if __name__ == "__main__":
    main()
