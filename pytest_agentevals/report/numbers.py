"""Numbers as a person reads them on the page and in the summary: tokens, dollars, durations, rates."""

from __future__ import annotations

import math


def count(value: float | None) -> str:
    """1234 -> '1,234'; None -> 'n/a'."""
    return "n/a" if value is None else f"{value:,.0f}"


def tokens(value: float | None) -> str:
    """A token count, short: 812, 14.2k, 1.41M."""
    if value is None:
        return "n/a"
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.2f}M"
    if size >= 1e4:
        return f"{value / 1e3:.1f}k"
    return f"{value:,.0f}"


def usd(value: float | None) -> str:
    """Dollars with the precision small runs need: $0.0012, $0.57, $12.30, $1,234."""
    if value is None:
        return "n/a"
    size = abs(value)
    if size >= 1000:
        return f"${value:,.0f}"
    if size >= 10:
        return f"${value:,.2f}"
    return f"${value:.4f}"


def usd_tick(value: float) -> str:
    """An axis label in dollars, no trailing zeros: $0, $0.25, $1.5, $120."""
    text = f"{value:,.6f}".rstrip("0").rstrip(".")
    return f"${text}"


def percent(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value * 100:.{digits}f}%"


def ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def duration(seconds: float | None) -> str:
    """8.2 s, 4 m 05 s, 30 h 12 m."""
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} m {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} m"


def size(value: int) -> str:
    """Bytes: 812 B, 14.2 KB, 3.1 MB."""
    if value < 1000:
        return f"{value} B"
    if value < 1_000_000:
        return f"{value / 1000:.1f} KB"
    return f"{value / 1_000_000:.1f} MB"
