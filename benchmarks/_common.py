"""Helpers the benchmark scripts share. The scripts run as ``python benchmarks/<name>.py``, which puts this
folder on ``sys.path``, so they import it as ``_common``."""

from __future__ import annotations

from pathlib import Path

__all__ = ["subplots", "save_figure"]


def subplots(*args, **kwargs):
    """``matplotlib.pyplot.subplots`` on the non-interactive Agg backend (the scripts only write files)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def save_figure(fig, path, *, dpi: int = 110) -> str:
    """Lay out ``fig`` and write it to ``path`` (parent folders are created); returns the path as given."""
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path
