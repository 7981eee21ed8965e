"""A self-contained HTML report of a dedup run: summary, similarity histogram, clusters, word diffs.

:func:`build_report` reads the clusters table that ``neardup dedup --clusters`` wrote (``id``,
``cluster`` = id of the kept document, ``similarity`` to it) and the same inputs, and writes one
HTML file that needs no network: the CSS, the script and the data (as JSON) are inline, and a
Content-Security-Policy forbids every request. It shows

- summary figures (documents, clusters, documents removed, similarities);
- a histogram of the members' similarities to their kept documents (inline SVG), and of the
  verified pairs' similarities when a pairs table is given;
- the clusters by size, filtered by a search box (ids and text);
- for a clicked cluster, each member side by side with its kept document, the differing words
  highlighted: the diff is computed here, at build time, by :func:`word_diff`, and stored as
  character ranges, so each text is embedded once however many members share it.

To stay usable for large runs, only the ``max_clusters`` largest clusters are detailed (the
summary and histogram count every cluster), at most ``max_members`` members per cluster, and
texts are cut at ``max_chars`` characters with a note saying so.
"""

from __future__ import annotations

import difflib
import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import orjson

from .. import __version__
from ..core.errors import InputError
from ..io import read_documents
from .metrics import Clusters, read_labels

_TOKEN = re.compile(r"\w+|[^\w\s]")


_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")


def word_diff(a: str, b: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character ranges of the words of ``a`` not matched in ``b`` and of ``b`` not matched in ``a``.

    Texts are split into words and punctuation marks (whitespace is ignored), compared case-
    insensitively with :class:`difflib.SequenceMatcher`, and every run of deleted, replaced or
    inserted tokens becomes one ``(start, end)`` range (end exclusive, Python string indices).

    >>> a, b = "The cat sat on the mat.", "The dog sat on the mat!"
    >>> da, db = word_diff(a, b)
    >>> [a[s:e] for s, e in da], [b[s:e] for s, e in db]
    (['cat', '.'], ['dog', '!'])
    """
    ta = [(m.start(), m.end(), m.group().casefold()) for m in _TOKEN.finditer(a)]
    tb = [(m.start(), m.end(), m.group().casefold()) for m in _TOKEN.finditer(b)]
    matcher = difflib.SequenceMatcher(None, [t[2] for t in ta], [t[2] for t in tb], autojunk=False)
    out_a: list[tuple[int, int]] = []
    out_b: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            out_a.append((ta[i1][0], ta[i2 - 1][1]))
        if j2 > j1:
            out_b.append((tb[j1][0], tb[j2 - 1][1]))
    return out_a, out_b


def _utf16(text: str, ranges: list[tuple[int, int]]) -> list[int]:
    """Flatten ranges to [s0, e0, s1, e1, ...] in UTF-16 code units (JavaScript string indices)."""
    if not ranges:
        return []
    if text.isascii() or max(map(ord, text)) < 0x10000:
        return [x for r in ranges for x in r]
    extra = np.concatenate([[0], np.cumsum([ord(c) >= 0x10000 for c in text])])
    return [int(x + extra[x]) for r in ranges for x in r]


def histogram_svg(
    values: Sequence[float],
    *,
    title: str,
    x_label: str = "similarity",
    y_label: str = "count",
    threshold: float | None = None,
    width: int = 400,
    height: int = 230,
    bin_width: float = 0.01,
) -> str:
    """An inline SVG bar chart of similarities in bins of ``bin_width`` (from the lowest value, or
    the threshold if lower, to 1), with a title, labelled axes and a dashed line at ``threshold``.

    >>> svg = histogram_svg([0.8, 0.85, 0.85, 1.0], title="demo", threshold=0.82)
    >>> svg.startswith("<svg") and svg.count('class="bar"') == 20 and 'class="threshold"' in svg
    True
    """
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    esc = html.escape(title)
    if len(values) == 0:
        return f'<p class="empty">{esc}: nothing to show.</p>'
    low = float(values.min()) if threshold is None else min(float(values.min()), threshold)
    lo = round(math.floor(max(0.0, low) / 0.05 + 1e-9) * 0.05, 2)
    nbins = max(1, round((1.0 - lo) / bin_width))
    idx = np.clip(((values - lo) / bin_width + 1e-9).astype(np.int64), 0, nbins - 1)
    counts = np.bincount(idx, minlength=nbins)
    left, right, top, bottom = 56, 12, 42, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = int(counts.max())
    bar = plot_w / nbins
    base = top + plot_h
    parts = [
        f'<svg class="hist" role="img" aria-label="{esc}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>',
        f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" class="t">{esc} ({len(values):,})</text>',
    ]
    for k, c in enumerate(counts.tolist()):
        h = plot_h * c / peak if peak else 0
        x0 = lo + k * bin_width
        parts.append(
            f'<rect x="{left + k * bar + 0.5:.1f}" y="{base - h:.1f}" width="{max(bar - 1, 1):.1f}" '
            f'height="{h:.1f}" class="bar"><title>{x0:.2f}-{x0 + bin_width:.2f}: {c:,}</title></rect>'
        )
    parts.append(f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" class="axis"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" class="axis"/>')
    ticks = 5
    for q in range(ticks + 1):
        x = left + plot_w * q / ticks
        parts.append(f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" class="axis"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle" class="a">{lo + (1 - lo) * q / ticks:.2f}</text>'
        )
    parts.append(f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" class="a">{peak:,}</text>')
    parts.append(f'<text x="{left - 6}" y="{base}" text-anchor="end" class="a">0</text>')
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle" class="l">'
        f"{html.escape(x_label)}</text>"
    )
    cy = top + plot_h / 2
    parts.append(
        f'<text x="14" y="{cy:.1f}" text-anchor="middle" class="l" transform="rotate(-90 14 {cy:.1f})">'
        f"{html.escape(y_label)}</text>"
    )
    if threshold is not None and lo <= threshold <= 1.0:
        x = left + plot_w * (threshold - lo) / (1.0 - lo) if lo < 1.0 else left
        anchor = "end" if x > left + plot_w * 0.8 else "start"
        dx = -4 if anchor == "end" else 4
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{base}" class="threshold">'
            f"<title>threshold {threshold:g}</title></line>"
        )
        parts.append(
            f'<text x="{x + dx:.1f}" y="{top - 6}" text-anchor="{anchor}" class="th">threshold {threshold:g}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class ReportStats:
    """What :func:`build_report` wrote."""

    documents: int
    clusters: int
    shown_clusters: int
    missing_texts: int
    bytes: int


def _group(labels: Clusters) -> tuple[list[str], dict[str, list[int]], np.ndarray]:
    ids = [str(x) for x in _pylist(labels.ids)]
    clusters = _pylist(labels.cluster)
    sim = np.full(len(ids), np.nan) if labels.similarity is None else np.asarray(labels.similarity, dtype=np.float64)
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(clusters):
        if c is not None:
            groups.setdefault(str(c), []).append(i)
    return ids, {c: m for c, m in groups.items() if len(m) >= 2}, sim


def _pylist(values) -> list:
    return values.to_pylist() if hasattr(values, "to_pylist") else list(values)


def build_report(
    inputs: Sequence[str],
    clusters_path: str,
    output: str,
    *,
    pairs_path: str | None = None,
    text_field: str = "text",
    id_field: str | None = None,
    on_error: str = "fail",
    max_clusters: int = 2000,
    max_members: int = 50,
    max_chars: int = 4000,
    title: str | None = None,
    threshold: float | None = None,
) -> ReportStats:
    """Write the HTML report of a dedup run to ``output`` (see the module docstring).

    ``inputs``, ``text_field``, ``id_field`` and ``on_error`` must be as given to the dedup run,
    so that the ids of the clusters table are found. ``threshold`` is the run's (``--threshold``):
    the page states it, draws it on the histograms and, with a pairs table, shows for each member
    below it the chain of verified pairs that joined it to its kept document (clusters are
    connected components, so a member can be less similar to the kept document than the
    threshold). Raises ``InputError`` when a table cannot be read or the inputs are not the
    documents of the clusters table.
    """
    labels = read_labels(clusters_path)
    if not isinstance(labels, Clusters):
        raise InputError(
            clusters_path,
            None,
            "expected a clusters table (id, cluster[, similarity]), got a pairs table; pass pairs with --pairs",
            reason="invalid",
        )
    ids, groups, sim = _group(labels)
    pair_sims = None
    pairs = None
    if pairs_path:
        pairs = read_labels(pairs_path)
        if getattr(pairs, "similarity", None) is None or isinstance(pairs, Clusters):
            raise InputError(
                pairs_path,
                None,
                "expected a pairs table with a similarity column (id_a, id_b, similarity)",
                reason="invalid",
            )
        pair_sims = pairs.similarity

    def kept_of(cluster: str, members: list[int]) -> int:
        return next((i for i in members if ids[i] == cluster), members[0])

    order = sorted(groups, key=lambda c: (-len(groups[c]), _nan_last(_min_sim(sim, groups[c], c, ids)), c))
    shown = order[:max_clusters]
    needed: dict[str, int] = {}
    for c in shown:
        members = groups[c]
        kept = kept_of(c, members)
        others = sorted((i for i in members if i != kept), key=lambda i: (_nan_last(sim[i]), ids[i]))
        for i in [kept, *others[:max_members]]:
            needed.setdefault(ids[i], len(needed))
    texts: dict[str, str] = {}
    lengths: dict[str, int] = {}
    n_docs = 0
    table_ids = set(ids)
    unseen = set(ids)
    extra: list[str] = []
    n_extra = 0
    for batch in read_documents(inputs, text_field=text_field, id_field=id_field, on_error=on_error):
        n_docs += len(batch)
        for doc_id, text in zip(batch.ids, batch.texts):
            unseen.discard(doc_id)
            if doc_id not in table_ids:
                n_extra += 1
                if len(extra) < _SHOWN_IDS:
                    extra.append(doc_id)
            if doc_id in needed and doc_id not in texts:
                texts[doc_id] = text[:max_chars]
                lengths[doc_id] = len(text)
    _check_same_documents(clusters_path, ids, unseen, extra, n_extra, n_docs)

    doc_index: dict[str, int] = {}
    docs: list[list] = []

    def doc_ref(doc_id: str) -> int:
        if doc_id not in doc_index:
            doc_index[doc_id] = len(docs)
            docs.append([doc_id, texts.get(doc_id), lengths.get(doc_id, 0)])
        return doc_index[doc_id]

    below = threshold is not None and pairs is not None
    links = _links_within(pairs, ids, groups, shown) if below else {}
    cluster_rows = []
    for c in shown:
        members = groups[c]
        kept = kept_of(c, members)
        others = sorted((i for i in members if i != kept), key=lambda i: (_nan_last(sim[i]), ids[i]))
        kept_text = texts.get(ids[kept])
        rows = []
        for i in others[:max_members]:
            text = texts.get(ids[i])
            marks_kept: list[int] = []
            marks: list[int] = []
            if kept_text is not None and text is not None:
                da, db = word_diff(kept_text, text)
                marks_kept, marks = _utf16(kept_text, da), _utf16(text, db)
            row = {"d": doc_ref(ids[i]), "s": _json_float(sim[i]), "k": marks_kept, "m": marks}
            if below and not sim[i] >= threshold:
                path = _chain(links.get(c, {}), ids[kept], ids[i])
                row["c"] = None if path is None else [[doc_ref(x), _json_float(w)] for x, w in path]
            rows.append(row)
        cluster_rows.append(
            {
                "id": c,
                "kept": doc_ref(ids[kept]),
                "size": len(members),
                "min": _json_float(_min_sim(sim, members, c, ids)),
                "members": rows,
                "more": max(0, len(others) - max_members),
            }
        )

    clustered = [i for m in groups.values() for i in m]
    removed = sum(len(m) - 1 for m in groups.values())
    member_values = np.array([sim[i] for c, m in groups.items() for i in m if i != kept_of(c, m)], dtype=np.float64)
    finite = member_values[np.isfinite(member_values)]
    summary = [
        ("threshold", f"{threshold:g}" if threshold is not None else "not given (--threshold)"),
        ("documents", f"{max(n_docs, len(ids)):,}"),
        ("clusters (2+ documents)", f"{len(groups):,}"),
        ("documents in clusters", f"{len(clustered):,}"),
        ("removed (all but the kept one)", f"{removed:,}"),
        ("largest cluster", f"{max((len(m) for m in groups.values()), default=0):,}"),
        ("mean similarity to kept", f"{finite.mean():.3f}" if len(finite) else "n/a"),
        ("lowest similarity to kept", f"{finite.min():.3f}" if len(finite) else "n/a"),
    ]
    if pair_sims is not None:
        summary.append(("verified pairs", f"{len(pair_sims):,}"))
    notes = []
    if len(shown) < len(order):
        notes.append(f"Only the {len(shown):,} largest of {len(order):,} clusters are detailed (--max-clusters).")
    missing = len(needed) - len(texts)
    if missing:
        notes.append(f"{missing:,} clustered documents were not found in the inputs; their texts are not shown.")
    if threshold is not None and pairs is None:
        notes.append("Give the run's pairs table (--pairs) to see how members below the threshold were joined.")
    hist = histogram_svg(
        member_values,
        title="Similarity of members to their kept document",
        y_label="members",
        threshold=threshold,
    )
    if pair_sims is not None:
        hist += histogram_svg(pair_sims, title="Similarity of verified pairs", y_label="pairs", threshold=threshold)
    data = {
        "docs": docs,
        "clusters": cluster_rows,
        "maxChars": max_chars,
        "maxMembers": max_members,
        "threshold": threshold,
    }
    page = render_report(data, title=title or _default_title(inputs), summary=summary, histogram=hist, notes=notes)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return ReportStats(max(n_docs, len(ids)), len(groups), len(shown), missing, len(page.encode("utf-8")))


def _default_title(inputs: Sequence[str]) -> str:
    """The page title: the input's name (the first two and a count for more)."""
    names = [Path(str(x).rstrip("/")).name or str(x) for x in inputs]
    if len(names) > 2:
        return f"{names[0]}, {names[1]} and {len(names) - 2} more: neardup report"
    return f"{' and '.join(names)}: neardup report"


def _links_within(pairs, ids: list[str], groups: dict[str, list[int]], shown: list[str]) -> dict:
    """The verified pairs inside each shown cluster: cluster -> id -> [(other id, similarity)]."""
    cluster_of = {ids[i]: c for c in shown for i in groups[c]}
    out: dict[str, dict[str, list[tuple[str, float]]]] = {}
    sims = np.asarray(pairs.similarity, dtype=np.float64) if pairs.similarity is not None else None
    for k, (a, b) in enumerate(zip(_pylist(pairs.a), _pylist(pairs.b))):
        c = cluster_of.get(str(a))
        if c is None or cluster_of.get(str(b)) != c:
            continue
        w = float(sims[k]) if sims is not None else math.nan
        adj = out.setdefault(c, {})
        adj.setdefault(str(a), []).append((str(b), w))
        adj.setdefault(str(b), []).append((str(a), w))
    return out


def _chain(adj: dict[str, list[tuple[str, float]]], start: str, goal: str) -> list[tuple[str, float]] | None:
    """The chain of verified pairs from ``start`` to ``goal`` with the fewest links (among those,
    the first found taking the most similar pairs first), as [(next id, similarity of the link)];
    None when the pairs do not connect them.

    >>> adj = {"k": [("a", 0.9)], "a": [("k", 0.9), ("m", 0.85)], "m": [("a", 0.85)]}
    >>> _chain(adj, "k", "m")
    [('a', 0.9), ('m', 0.85)]
    """
    prev: dict[str, tuple[str, float]] = {start: (start, math.nan)}
    frontier = [start]
    while frontier and goal not in prev:
        nxt = []
        for u in frontier:
            for v, w in sorted(adj.get(u, ()), key=lambda e: (-_nan_low(e[1]), e[0])):
                if v not in prev:
                    prev[v] = (u, w)
                    nxt.append(v)
        frontier = nxt
    if goal not in prev:
        return None
    path = []
    node = goal
    while node != start:
        u, w = prev[node]
        path.append((node, w))
        node = u
    return path[::-1]


def _nan_low(x: float) -> float:
    return -math.inf if math.isnan(x) else x


_SHOWN_IDS = 5
"""Ids named in the message of a mismatch between the inputs and the clusters table."""


def _check_same_documents(
    clusters_path: str, ids: list[str], unseen: set[str], extra: list[str], n_extra: int, n_docs: int
) -> None:
    """Raise ``InputError`` unless the inputs hold exactly the documents of the clusters table.

    ``neardup dedup --clusters`` writes one row per input document, so any id of the table that
    the inputs lack, or any input id the table lacks, means the inputs are not the run's: other
    files, a changed file (``FILE:LINE`` ids then point at other texts) or another ``--id-field``.
    A report from them would show wrong or missing texts, so it is refused, naming a few ids.
    """
    if not unseen and not extra and n_docs == len(ids):
        return

    def some(values, total: int) -> str:
        values = sorted(values)[:_SHOWN_IDS]
        more = f" and {total - len(values):,} more" if total > len(values) else ""
        return ", ".join(repr(v) for v in values) + more

    problems = []
    if unseen:
        problems.append(f"{len(unseen):,} of its {len(ids):,} ids are not in the inputs ({some(unseen, len(unseen))})")
    if extra:
        problems.append(f"the inputs hold {n_extra:,} ids it does not list ({some(extra, n_extra)})")
    if not problems:
        problems.append(f"it lists {len(ids):,} documents, the inputs hold {n_docs:,} (repeated ids)")
    raise InputError(
        clusters_path,
        None,
        "the inputs are not the documents of this clusters table: "
        + "; ".join(problems)
        + "; give the same inputs, --id-field and --text-field as to the dedup run",
        reason="missing id field",
    )


def _min_sim(sim: np.ndarray, members: list[int], cluster: str, ids: list[str]) -> float:
    """The lowest known similarity of a member other than the kept one (NaN if none is known)."""
    values = [x for x in (float(sim[i]) for i in members if ids[i] != cluster) if not math.isnan(x)]
    return min(values) if values else math.nan


def _nan_last(x: float) -> float:
    return math.inf if math.isnan(x) else x


def _json_float(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


def render_report(
    data: dict, *, title: str, summary: list[tuple[str, str]], histogram: str, notes: Sequence[str] = ()
) -> str:
    """Fill the HTML template: ``data`` is embedded as JSON (``<`` escaped, so no text ends the script).

    >>> page = render_report({"docs": [], "clusters": []}, title="t</title>", summary=[("a", "1")], histogram="")
    >>> "t&lt;/title&gt;" in page and "</script><script" not in page
    True
    """
    template = resources.files(__package__).joinpath("report_template.html").read_text(encoding="utf-8")
    payload = orjson.dumps(data).decode().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    values = {
        "TITLE": html.escape(title),
        "SUMMARY": "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in summary),
        "HISTOGRAM": histogram,
        "NOTES": "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes),
        "VERSION": html.escape(__version__),
        "DATA": payload,
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
