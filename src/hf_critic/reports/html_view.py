"""The run viewer: one self-contained HTML file of a run (``hf-critic view``), in the manner of ``inspect view`` and
promptfoo's viewer, but a file: no server, no network.

The page (``templates/view.html.j2``, rendered by Jinja2 with autoescaping on) holds the run's figures above its
rows: headline figures with their 95% intervals, outcome counts, the calibration of the confidences, the plots as
data URIs, ``report.md``; then every row (question, response(s), critique, verdict, confidence, status, human label,
outcome) with filters (outcome, category, low confidence), sorting by confidence and search, and two critics side by
side on the rows where their verdicts differ. The rows travel as one JSON document (gzip-compressed and base64-encoded:
:func:`packed`) that the page's script writes into the table with ``textContent`` only: judged text is never parsed
as HTML, so a response holding ``<script>`` shows as text.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

from .._version import __version__
from .figures import Measured, calibration_table, data_uri, headline, measure
from .runs import Run
from .view_rows import OUTCOMES, disagreements

__all__ = ["packed", "render_view", "write_view"]

TEMPLATE = "view.html.j2"


def _template():
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("hf_critic.reports", "templates"),
        autoescape=True,  # every value the template writes is escaped (the file is .j2, not .html: force it)
        undefined=jinja2.StrictUndefined,
    )
    return environment.get_template(TEMPLATE)


def packed(data: dict) -> str:
    """``data`` as the page carries it: JSON, gzip-compressed, base64-encoded (a third of the JSON's size on long
    English texts; the page unpacks it with the browser's ``DecompressionStream``)."""
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def _sources(run: Run) -> list[str]:
    return [*(f.source for f in run.figures), *(r.path for r in run.row_sets), *(c["path"] for c in run.calibrations)]


def render_view(measured: Measured, *, title: str = "hf-critic run") -> str:
    """The HTML page of a measured run.

    Args:
        measured: the run, its figures and rows (:func:`~hf_critic.reports.figures.measure`).
        title: the page's title.

    Returns:
        The page, one string (UTF-8 when written).
    """
    run, figures, page = measured.run, measured.figures, measured.page
    sets = [{**{k: s[k] for k in ("name", "path", "counts")}, "calibration": calibration_table(s)} for s in page.sets]
    images = [
        {"name": name, "source": f.source, "uri": data_uri(png)} for f in figures for name, png in f.images.items()
    ]
    return _template().render(
        title=title,
        version=__version__,
        sources=_sources(run),
        notes=measured.notes,
        headline=headline(figures),
        outcomes=OUTCOMES,
        sets=sets,
        calibrations=run.calibrations,
        images=images,
        markdowns=[{"source": f.source, "text": f.markdown} for f in figures if f.markdown],
        data=packed({"texts": page.texts, "sets": page.sets, "pairs": disagreements(page)}),
    )


def write_view(
    run: Run,
    path: str | Path,
    *,
    title: str = "hf-critic run",
    bootstrap: int = 200,
    plots: bool = True,
    tolerance: float = 1.0,
) -> Path:
    """Measure ``run`` (:func:`~hf_critic.reports.figures.measure` with ``bootstrap``, ``plots``, ``tolerance``) and
    write its page to ``path`` (UTF-8, atomically).

    Returns:
        The path written.
    """
    from ..io import write_text

    measured = measure(run, bootstrap=bootstrap, plots=plots, tolerance=tolerance)
    return write_text(Path(path), render_view(measured, title=title))
