"""``report.html`` and notebook tables: the report tables as great-tables, in one self-contained page.

:func:`gt_table` turns rows of the report-table model (:func:`~evalframe.report.tables.report_rows`)
into a ``great_tables.GT`` (rows grouped by system; a missed target in red); notebooks get it
through ``ev.table(...)`` and ``ev._repr_html_()``. :func:`render_html` writes the whole report
as one file: a header (pipeline, input file and its sha256; no date, so reruns give the same
bytes), the tables, the further result tables, and the plots as base64 PNG. Nothing is fetched
from the network: the page uses the reader's system fonts, has no script, and any ``@import``
or external URL that a great-tables version might add is removed (:func:`strip_external`).
"""

from __future__ import annotations

import base64
import html
import re

import polars as pl

from evalframe.report.formatting import Footnotes
from evalframe.report.tables import HEADERS, ReportData, Section, report_rows, report_notes, report_sections, shown_columns

_IMPORT = re.compile(r"@import\s+url\([^)]*\)\s*;?")
_EXTERNAL_LINK = re.compile(r"<link\b[^>]*href=[\"']https?://[^>]*>", re.IGNORECASE)

PAGE_STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif;
       color: #222; max-width: 1400px; margin: 0 auto; padding: 1.5em; line-height: 1.4; }
header { border-bottom: 2px solid #0072B2; margin-bottom: 1em; }
header dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1em; }
header dt { font-weight: 600; } header dd { margin: 0; font-family: ui-monospace, monospace; word-break: break-all; }
nav ul { columns: 3; }
section { margin: 2em 0; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; width: calc(50% - 1.2em); }
figure img { width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #555; text-align: center; }
.notes li { margin: 0.2em 0; }
"""


def strip_external(text: str) -> str:
    """``text`` without ``@import url(...)`` rules and ``<link>`` tags to http(s) URLs."""
    return _EXTERNAL_LINK.sub("", _IMPORT.sub("", text))


def _anchor(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def gt_table(rows: pl.DataFrame, title: str, *, table_id: str, subtitle: str | None = None):
    """A ``great_tables.GT`` of report-table rows (one grouping), grouped by system."""
    import great_tables as gt

    columns = shown_columns(rows)
    digits, superscripts = list("0123456789"), list("⁰¹²³⁴⁵⁶⁷⁸⁹")
    mark = pl.when(pl.col("target_met")).then(pl.lit(" ✓ met")).when(~pl.col("target_met")).then(pl.lit(" ✗ not met"))
    body = rows.with_columns(
        metric=pl.concat_str(
            pl.col("metric"), pl.when(pl.col("direction") == "higher is better").then(pl.lit(" ↑")).otherwise(pl.lit(" ↓"))
        ),
        value_text=pl.concat_str(
            pl.col("value_text"),
            pl.col("footnote").cast(pl.String).str.replace_many(digits, superscripts).fill_null(""),
        ),
        # the same text as tables.target_text, as an expression
        target=pl.concat_str(
            pl.col("target").str.replace(">=", "≥", literal=True).str.replace("<=", "≤", literal=True),
            pl.when(pl.col("target") != "").then(mark).fill_null(""),
        ),
        n=pl.col("n").map_elements(lambda n: f"{n:,}", return_dtype=pl.String),
    ).select(columns)
    table = (
        gt.GT(body, groupname_col="system" if "system" in columns else None, id=table_id)
        .tab_header(title=title, subtitle=subtitle)
        .cols_label(**{c: HEADERS[c] for c in columns if c != "system"})
        .cols_align(align="right", columns=[c for c in ("value_text", "ci_text", "n") if c in columns])
        .cols_width({"interpretation": "34%"})
        .tab_options(table_font_size="13px", row_group_font_weight="bold", column_labels_font_weight="bold")
    )
    missed = [i for i, met in enumerate(rows.get_column("target_met").to_list()) if met is False]
    if missed:
        table = table.tab_style(gt.style.text(color="#B00020", weight="bold"), gt.loc.body(columns="target", rows=missed))
    return table


def _gt_html(table) -> str:
    return strip_external(table.as_raw_html())


def section_html(section: Section) -> str:
    """One report section (:func:`~evalframe.report.tables.report_sections`) as a great-tables HTML table."""
    import great_tables as gt

    table = gt.GT(section.table, id=f"s-{_anchor(section.title)}").tab_header(title=section.title.replace("`", ""))
    right = [c for c in section.table.columns if c not in ("metric", "subset", "target", "interpretation", "check", "severity")]
    if right:
        table = table.cols_align(align="right", columns=right)
    if "interpretation" in section.table.columns:
        table = table.cols_width({"interpretation": "30%"})
    return _gt_html(table.tab_options(table_font_size="13px", column_labels_font_weight="bold"))


def overview_html(data: ReportData) -> str:
    """The overall values with the systems side by side, as HTML (a notebook's view of a result)."""
    sections = report_sections(data, Footnotes())
    return section_html(sections[0]) if sections else ""


def render_html(data: ReportData, figures: dict[str, object] | None = None, *,
                html_png: dict[str, bytes] | None = None) -> str:
    """``report.html``: one self-contained page (module docstring). ``figures`` maps a plot's
    name to its Figure or to its PNG bytes (:func:`evalframe.report.plots.save`); ``html_png``
    holds plots' :func:`~evalframe.report.plots.compact_png` bytes made already (in the plot workers)."""
    from evalframe.report.plots import HTML_PNG, compact_png, save

    footnotes = Footnotes()
    sections = report_sections(data, footnotes)
    pipeline = data.info.get("pipeline") or {}
    source = data.info.get("input") or {}
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(data.name)} — evalframe report</title>",
        f"<style>{PAGE_STYLE}</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1>{esc(data.name)} — report</h1>",
    ]
    if pipeline.get("description"):
        parts.append(f"<p>{esc(pipeline['description'])}</p>")
    parts.append("<dl>")
    if pipeline.get("source"):
        parts.append(f"<dt>Pipeline</dt><dd>{esc(str(pipeline['source']))}</dd>")
    size = f" ({source['rows']:,} rows)" if source.get("rows") else ""
    parts.append(f"<dt>Input</dt><dd>{esc(str(source.get('path') or '(in-memory table)'))}{size}</dd>")
    parts.append(f"<dt>sha256</dt><dd>{esc(str(source.get('sha256') or '—'))}</dd>")
    notes = report_notes(data)
    parts += ["</dl>", "<ul class=\"notes\">", *(f"<li>{esc(note)}</li>" for note in notes), "</ul>", "</header>"]

    figure_names = list(figures or {})
    toc = [f'<li><a href="#{_anchor(section.title)}">{esc(section.title.replace("`", ""))}</a></li>'
           for section in sections if section.level == 2]
    if figure_names:
        toc.append('<li><a href="#plots">Plots</a></li>')
    parts += ["<nav><h2>Contents</h2><ul>", *toc, "</ul></nav>"]
    for section in sections:
        parts += [f'<section id="{_anchor(section.title)}">', section_html(section), "</section>"]
    if figure_names:
        parts += ['<section id="plots">', "<h2>Plots</h2>"]
        for stem, figure in (figures or {}).items():
            compact = (html_png or {}).get(stem)
            if compact is None:
                compact = compact_png(figure) if isinstance(figure, bytes) else save(figure, HTML_PNG)
            encoded = base64.b64encode(compact).decode("ascii")
            caption = stem.replace("_", " ")
            parts.append(f'<figure id="{_anchor(stem)}"><img src="data:image/png;base64,{encoded}" alt="{esc(caption)}">'
                         f"<figcaption>{esc(caption)}</figcaption></figure>")
        parts.append("</section>")
    if footnotes.reasons:
        parts += ['<section id="footnotes"><h2>Notes</h2><ol class="notes">',
                  *(f"<li>{esc(reason)}</li>" for reason in footnotes.reasons), "</ol></section>"]
    parts += ["<p>↑ higher is better, ↓ lower is better. Generated by evalframe.</p>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


def overall_gt(data: ReportData, *, grouping: str | None = None, metrics: list[str] | None = None,
               systems: list[str] | None = None):
    """The report table of one grouping (default the first: overall) as a ``GT``, optionally
    restricted to some metrics and systems (``ev.table(...)``)."""
    from evalframe.errors import ConfigError
    from evalframe.report.tables import grouping_title

    groupings = dict(data.groupings())
    grouping = grouping or next(iter(groupings), "overall")
    if grouping not in groupings:
        raise ConfigError(f"no grouping `{grouping}` in this result (groupings: {', '.join(groupings)})")
    title = grouping_title(grouping, groupings[grouping])
    rows = report_rows(data).filter(pl.col("table") == title)
    if metrics:
        unknown = sorted(set(metrics) - set(rows.get_column("metric").to_list()))
        if unknown:
            raise ConfigError(f"metrics {unknown} are not in this result")
        rows = rows.filter(pl.col("metric").is_in(metrics))
    if systems:
        rows = rows.filter(pl.col("system").is_in(systems))
    return gt_table(rows, title, table_id=f"t-{_anchor(title)}", subtitle=data.name)
