#!/usr/bin/env python3
"""Plot the rows scripts/bench-allreduce.sh kept (-o FILE) as SVG.

    plot_bench.py ROWS.tsv OUT_PREFIX

For every collective in ROWS, OUT_PREFIX-COLL.svg: one row of panels per
layout, time (us) and busbw (GB/s) against size, both on log scales, one
line per tool (the median over rounds of the out-of-place figure, as the
tables print). Plain SVG written here (no plotting library is needed), and
a PNG beside it where rsvg-convert (librsvg2-bin) is installed.
"""
import math
import os
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict

TOOLS = [("ringpoint", "#d62728"), ("before", "#ff9896"), ("ompi", "#1f77b4"),
         ("ompi-ucx", "#2ca02c"), ("gloo", "#9467bd"),
         ("ucx-raw", "#7f7f7f")]  # UCX's own exchange: the floor over TCP
LAYOUTS = {"np2": "2 ranks, 1 node", "np4": "4 ranks on 2 cores",
           "tcp": "2 ranks, UCX_TLS=tcp,self"}
W, H, PAD = 360, 240, 48


def load(path):
    d = defaultdict(list)  # (coll, layout, tool, size) -> [(time, busbw)]
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) != 9:
            continue
        layout, tool, coll, _, size, t, bw = f[:7]
        try:
            d[(coll, layout, tool, int(size))].append((float(t), float(bw)))
        except ValueError:
            continue
    return d


def human(n):
    for unit, f in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= f:
            return f"{n // f}{unit}"
    return str(n)


def panel(out, x0, y0, title, series, ylabel):
    """series: [(color, name, [(size, value)])], log-log."""
    pts = [(s, v) for _, _, ps in series for s, v in ps if s > 0 and v > 0]
    out.append(f'<text x="{x0 + W / 2}" y="{y0 - 8}" text-anchor="middle" '
               f'font-size="12">{title}</text>')
    out.append(f'<rect x="{x0}" y="{y0}" width="{W}" height="{H}" '
               'fill="none" stroke="#888"/>')
    if not pts:
        return
    lx = [math.log10(s) for s, _ in pts]
    ly = [math.log10(v) for _, v in pts]
    xmin, xmax = min(lx), max(lx) if max(lx) > min(lx) else min(lx) + 1
    ymin, ymax = math.floor(min(ly)), math.ceil(max(ly))
    ymax = ymax if ymax > ymin else ymin + 1

    def X(s):
        return x0 + (math.log10(s) - xmin) / (xmax - xmin) * W

    def Y(v):
        return y0 + H - (math.log10(v) - ymin) / (ymax - ymin) * H

    for e in range(ymin, ymax + 1):
        y = Y(10 ** e)
        out.append(f'<line x1="{x0}" x2="{x0 + W}" y1="{y}" y2="{y}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{x0 - 4}" y="{y + 4}" text-anchor="end" '
                   f'font-size="9">{10 ** e:g}</text>')
    for s in sorted({s for s, _ in pts}):
        out.append(f'<text x="{X(s)}" y="{y0 + H + 12}" text-anchor="middle" '
                   f'font-size="8">{human(s)}</text>')
    out.append(f'<text x="{x0 - 34}" y="{y0 + H / 2}" font-size="10" '
               f'transform="rotate(-90 {x0 - 34} {y0 + H / 2})" '
               f'text-anchor="middle">{ylabel}</text>')
    for color, _, ps in series:
        ps = [(s, v) for s, v in ps if s > 0 and v > 0]
        if ps:
            path = " ".join(f"{X(s):.1f},{Y(v):.1f}" for s, v in ps)
            out.append(f'<polyline points="{path}" fill="none" '
                       f'stroke="{color}" stroke-width="1.5"/>')


def plot(d, coll, path):
    layouts = [l for l in LAYOUTS if any(k[0] == coll and k[1] == l for k in d)]
    out = []
    width, height = 2 * (W + 2 * PAD), len(layouts) * (H + 2 * PAD) + 40
    for i, layout in enumerate(layouts):
        y0 = 40 + i * (H + 2 * PAD) + PAD
        for j, (what, idx) in enumerate((("time (us)", 0), ("busbw (GB/s)", 1))):
            series = []
            for tool, color in TOOLS:
                sizes = sorted(k[3] for k in d if k[:3] == (coll, layout, tool))
                ps = [(s, statistics.median(v[idx] for v in d[(coll, layout, tool, s)]))
                      for s in sizes]
                if ps:
                    series.append((color, tool, ps))
            panel(out, j * (W + 2 * PAD) + PAD, y0,
                  f"{coll}, {LAYOUTS[layout]}: {what}", series, what)
    legend = [f'<text x="{PAD + 90 * k}" y="20" font-size="12" fill="{c}">{t}</text>'
              for k, (t, c) in enumerate(TOOLS)]
    with open(path, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
                f'height="{height}" font-family="sans-serif">\n'
                f'<rect width="100%" height="100%" fill="white"/>\n')
        f.write("\n".join(legend + out))
        f.write("\n</svg>\n")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_bench.py ROWS.tsv OUT_PREFIX")
    d = load(sys.argv[1])
    # "half": ucx-exchange-bench at half the size, the floor over TCP that
    # the script's summary derives; no plot of its own.
    for coll in sorted({k[0] for k in d} - {"half"}):
        if not any(k[0] == coll and k[3] > 0 for k in d):
            continue  # a barrier: one size, nothing to draw
        svg = f"{sys.argv[2]}-{coll}.svg"
        plot(d, coll, svg)
        print(svg)
        # A PNG beside it for viewers that show no SVG, where Debian's
        # librsvg2-bin (rsvg-convert) is installed.
        tool = shutil.which("rsvg-convert")
        if tool is not None:
            png = os.path.splitext(svg)[0] + ".png"
            subprocess.run([tool, "--background-color=white", "-o", png, svg],
                           check=True)
            print(png)


if __name__ == "__main__":
    main()
