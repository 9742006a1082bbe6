# SPDX-License-Identifier: MIT
"""How numbers are written in the tables and charts.
"""




def fmt_time(s):
    if s is None:
        return "-"
    if s >= 10:
        return "%.1f s" % s
    if s >= 1:
        return "%.2f s" % s
    if s >= 0.01:
        return "%.0f ms" % (s * 1e3)
    if s >= 0.001:
        return "%.1f ms" % (s * 1e3)
    return "%.0f µs" % (s * 1e6)


def fmt_rate(x, unit):
    if x is None:
        return "-"
    if x >= 1e6:
        return "%.2fM %s" % (x / 1e6, unit)
    if x >= 1e4:
        return "%.0fk %s" % (x / 1e3, unit)
    if x >= 1e3:
        return "%.1fk %s" % (x / 1e3, unit)
    if x >= 10:
        return "%.0f %s" % (x, unit)
    return "%.2f %s" % (x, unit)


def fmt_mb(x):
    return "-" if x is None else ("%.0f" % x if x >= 100 else "%.1f" % x if x >= 1 else "%.2f" % x)


def human_bytes(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return "%.1f %s" % (n / div, unit)
    return "%d B" % n


def pct(x):
    return "%.1f%%" % (100 * x)
