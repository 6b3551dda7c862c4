"""Line styles and left-out points for bench/report.py's gnuplot plots.

Each implementation has a colour family of its own (rlock: blues; each
peer another hue), and within it each variant a shade, a dash type and a
point type, so that no two lines share a colour and rlock's lines read as
one group against the peers'. A point that cannot be drawn (no value, or
one at or below zero on a log axis) is not dropped silently: it is drawn
at the axis floor with a downward triangle of its line's colour, and the
legend says what that marker means.
"""
import math

FAMILIES = {
    # One shade per entry of VARIANTS, so that no two variants share one.
    "rlock": ["#08306b", "#2171b5", "#4292c6", "#6baed6", "#08519c", "#3f51b5", "#9ecae1",
              "#5c7cfa"],  # blues
    "redisson": ["#a63603", "#e6550d", "#fd8d3c", "#7f2704", "#fdae6b"],  # oranges
    "node-redisson": ["#006d2c", "#41ab5d"],  # greens
    "redlock": ["#54278f", "#9e9ac8"],  # purples
    "redis-semaphore": ["#252525", "#8c8c8c"],  # greys
    "redis-py": ["#ae017e", "#f768a1"],  # magentas
}
OTHER = ["#01665e", "#35978f", "#80cdc1"]  # teals, for an implementation not listed
VARIANTS = ["default", "tuned", "fair", "handoff", "multi", "multi-tuned", "tls", "cluster"]
DASHES = [1, 2, 4, 5, 3]
POINTS = [7, 5, 9, 13, 15]  # filled circle, square, triangle, diamond, pentagon
EDGE_POINT = 11  # filled downward triangle: a point drawn at the axis floor
REFERENCE = "#d62728"  # reference lines (round trips, ceilings): no family's hue


def variant_index(variant):
    v = variant or "default"
    return VARIANTS.index(v) if v in VARIANTS else len(VARIANTS)


def colour(impl, variant="default"):
    family = FAMILIES.get(impl, OTHER)
    return family[min(variant_index(variant), len(family) - 1)]


def line_style(impl, variant="default"):
    """gnuplot's style words for one implementation and variant's line."""
    i = variant_index(variant)
    return "lw 2 lc rgb '%s' dt %d pt %d ps 1.2" % (
        colour(impl, variant), DASHES[i % len(DASHES)], POINTS[i % len(POINTS)])


def edge_style(impl, variant="default"):
    return "lc rgb '%s' pt %d ps 1.8" % (colour(impl, variant), EDGE_POINT)


def drawable(value, log):
    return value is not None and not (log and value <= 0)


def log_floor(values):
    """The bottom of a log axis below every value given (a power of ten)."""
    pos = [v for v in values if v is not None and v > 0]
    if not pos:
        return 1.0
    return 10.0 ** math.floor(math.log10(min(pos)) - 0.3)


def edge_key(log):
    """A legend entry (a plot element of no data) for the floor marker."""
    what = "no value or ≤ 0" if log else "no value"
    return "NaN with points lc rgb '#404040' pt %d ps 1.8 title 'left out (%s)'" % (
        EDGE_POINT, what)
