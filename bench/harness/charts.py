# SPDX-License-Identifier: MIT
"""SVG charts, written by hand (stdlib only): horizontal bars with min-max
whiskers, and the --batch-bytes sweep's two-axis curve.
"""

import math

from .fmt import fmt_rate, human_bytes


def svg_escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_bars(path, title, items, unit, note=""):
    """Horizontal bar chart: items = [(label, value, lo, hi)], log scale when wide."""
    items = [i for i in items if i[1]]
    if not items:
        return
    W, lh, left, top = 860, 26, 300, 50
    H = top + lh * len(items) + 50
    vmax = max(i[3] or i[1] for i in items)
    vmin = min(i[2] or i[1] for i in items)
    logscale = vmax / max(vmin, 1e-12) > 50
    span = W - left - 90

    def x(v):
        if logscale:
            lo = math.floor(math.log10(vmin))
            hi = math.ceil(math.log10(vmax))
            return left + span * (math.log10(max(v, 10 ** lo)) - lo) / max(hi - lo, 1)
        return left + span * v / vmax
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="12">' % (W, H), '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="20" font-size="15" font-weight="bold">%s</text>' % svg_escape(title),
         '<text x="10" y="38" fill="#555">%s%s</text>' % (svg_escape(unit), svg_escape(
             " (log scale)" if logscale else "") + (" — " + svg_escape(note) if note else ""))]
    for k, (label, v, lo, hi) in enumerate(items):
        y = top + k * lh
        color = "#d9534f" if label.startswith("ingest") else "#5b8ff9"
        o.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 8, y + 15, svg_escape(label)))
        o.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (
            left, y + 3, max(1, x(v) - left), lh - 8, color))
        if lo and hi:
            o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="black"/>' % (x(lo), x(hi), y + 13, y + 13))
        o.append('<text x="%.1f" y="%d">%s</text>' % (x(hi or v) + 6, y + 15, svg_escape(fmt_rate(v, ""))))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def svg_sweep(path, title, pts, note=""):
    """pts = [(batch_bytes, mbps_med, mbps_lo, mbps_hi, rss_kib)]; log2 x."""
    if not pts:
        return
    W, H, L, R, T, B = 860, 420, 70, 80, 50, 60
    xs = [math.log2(p[0]) for p in pts]
    x0, x1 = min(xs), max(xs)
    ymax = max(p[3] for p in pts) * 1.1
    rmax = max(p[4] for p in pts) * 1.1

    def X(b):
        return L + (W - L - R) * (math.log2(b) - x0) / max(x1 - x0, 1)

    def Y(v):
        return T + (H - T - B) * (1 - v / ymax)

    def YR(v):
        return T + (H - T - B) * (1 - v / rmax)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="12">' % (W, H), '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="20" font-size="15" font-weight="bold">%s</text>' % svg_escape(title),
         '<text x="10" y="38" fill="#555">%s</text>' % svg_escape(note),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - R, H - B),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - B),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (W - R, T, W - R, H - B)]
    for p in pts:
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (
            X(p[0]), H - B + 16, svg_escape(human_bytes(p[0]).replace(".0 ", " "))))
    for k in range(6):
        v = ymax * k / 5
        o.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (L - 6, Y(v) + 4, v))
        v2 = rmax * k / 5
        o.append('<text x="%d" y="%.1f">%.0f</text>' % (W - R + 6, YR(v2) + 4, v2 / 1024))
    o.append('<text x="%d" y="%d" text-anchor="middle">--batch-bytes</text>' % ((L + W - R) // 2, H - 20))
    o.append('<text x="14" y="%d" fill="#d9534f" transform="rotate(-90 14 %d)">MB/s (median, min–max)</text>'
             % ((T + H - B) // 2 + 60, (T + H - B) // 2 + 60))
    o.append('<text x="%d" y="%d" fill="#5b8ff9" transform="rotate(90 %d %d)">peak RSS MiB</text>'
             % (W - 20, (T + H - B) // 2 - 40, W - 20, (T + H - B) // 2 - 40))
    o.append('<polyline fill="none" stroke="#d9534f" stroke-width="2" points="%s"/>' % " ".join(
        "%.1f,%.1f" % (X(p[0]), Y(p[1])) for p in pts))
    o.append('<polyline fill="none" stroke="#5b8ff9" stroke-width="2" stroke-dasharray="5,3" points="%s"/>'
             % " ".join("%.1f,%.1f" % (X(p[0]), YR(p[4])) for p in pts))
    for p in pts:
        o.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#d9534f"/>' % (
            X(p[0]), X(p[0]), Y(p[2]), Y(p[3])))
        o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="#d9534f"/>' % (X(p[0]), Y(p[1])))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
