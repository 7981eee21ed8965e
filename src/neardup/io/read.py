"""Reading the documents of the batch job: :func:`read_documents` streams numbered batches of ids and texts.

Inputs (the format is chosen by the path, :mod:`neardup.io.formats`):

* a single ``.txt``, ``.html`` or ``.htm`` file: one document, as in a directory of them;
* a directory: every ``*.txt``, ``*.html`` and ``*.htm`` file under it (extension in any case),
  recursively, in sorted path order; one document per file, id = the file's path joined from the
  given directory, text = the file decoded as UTF-8; for HTML files, the text is the page's visible
  text (:func:`neardup.text.html.html_to_text`; the file may also be in the charset its ``<meta>``
  declares when it is not UTF-8);
* ``.jsonl``, ``.ndjson``, ``.json`` (JSON Lines, one object per line), optionally ``.gz``/``.zst``;
* ``.csv`` with a header row, optionally ``.gz``/``.zst``;
* ``.parquet`` and ``.arrow`` (Arrow IPC file or stream, as Hugging Face ``save_to_disk`` writes);
* folders of such shards, globs, ``-`` (standard input), named pipes (both read once and
  copied) and fsspec URLs (:mod:`neardup.io.paths`).

With ``html=True`` the text field of JSONL, CSV and Parquet records holds HTML and is converted
the same way (``main_content=True`` keeps only the main block of each page, for HTML files too).
Only the text the methods see is converted: :func:`~neardup.io.write.write_kept` writes the
original records and files (raw HTML).

Documents are numbered 0, 1, 2, ... in read order across all inputs; a skipped record gets no
number. Ids: the ``id_field`` value if ``id_field`` is given (a record without it is an error);
otherwise the record's ``id`` field if it has one (non-strings keep their JSON text: ``true``,
integers with all their digits, objects compact; null, and an empty CSV cell, count as absent),
else ``"{path}:{line}"`` with the 1-based line (the physical line where a CSV record starts,
header = line 1; the 1-based row for Parquet).

Bad records raise :class:`~neardup.core.errors.InputError` naming the file and line (``on_error="fail"``)
or are skipped and counted by reason in :class:`~neardup.io.policy.ReadStats` (``on_error="skip"``).
The reasons are stable keys: ``"malformed JSON"``, ``"not a JSON object"``, ``"missing text
field"``, ``"text not a string"``, ``"missing id field"``, ``"invalid UTF-8"``, ``"malformed CSV
row"`` (also an unterminated quote: the record is skipped and reading starts again on the next
line, :mod:`neardup.io.csv`), ``"truncated file"`` (a ``.gz``/``.zst`` stream cut short: every
complete record before the cut is read) and ``"unreadable file"`` (a corrupt or unopenable file);
a file-level problem is counted once, reading goes on with the next file, the records before the
damage stay read, and its message (which file, after how many records) is kept in
``ReadStats.file_errors`` for the summary. Blank JSONL and CSV lines are not records and are
ignored. A path that does not exist or has an unknown extension, and a CSV header or Parquet
schema that names a column twice, raise ``InputError`` whatever ``on_error`` says: the first is a
mistake in the command, the second would otherwise drop the whole file. A file that changed
between two passes of a job raises :class:`~neardup.core.errors.InputChangedError`.

Speed: JSONL and CSV are read in binary, in blocks of whole lines (:mod:`neardup.io.streams`); each
JSONL block is scanned by one kernel call (:mod:`neardup.io.jsonl_scan`) and only the lines it
declines are parsed with ``orjson``; a job's engine has the blocks scanned on its worker threads
(:mod:`neardup.io.jsonl_threads`), the calling thread only reading them. Parquet is read in Arrow
record batches of only the needed columns. Reading holds the texts of a few batches at a time, never the whole input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from ..core.documents import DocBatch
from ..core.parallel import Threads
from ..text.html import html_to_text
from ..text.utf8 import TextRuns
from .csv import scan_csv
from .jsonl import scan_jsonl
from .jsonl_threads import scan_jsonl_threaded
from .parquet import scan_parquet
from .paths import expand_inputs
from .policy import Chunk, Policy, ReadStats, make_policy
from .textdir import scan_txtdir


def scan(path: str, fmt: str, pol: Policy, full: bool, rows: int) -> Iterator[Chunk]:
    if fmt == "jsonl":
        return scan_jsonl(path, pol, full)
    if fmt == "csv":
        return scan_csv(path, pol, full)
    if fmt in ("parquet", "arrow"):
        return scan_parquet(path, pol, full, rows, fmt)
    return scan_txtdir(path, pol, full)


def resolve_inputs(paths, input_format: str | None = None) -> list[tuple[str, str]]:
    """The ``(path, format)`` sources of ``paths``: :func:`neardup.io.paths.expand_inputs`."""
    return expand_inputs(paths, input_format)


def read_documents(
    paths,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    on_error: str = "fail",
    batch_size: int = 2048,
    stats: ReadStats | None = None,
    html: bool = False,
    main_content: bool = False,
    input_format: str | None = None,
    id_policy: str = "field",
    snapshot: dict | None = None,
    reject_empty_ids: bool = False,
) -> Iterator[DocBatch]:
    """Stream the documents of ``paths`` (read in the order given) as
    :class:`~neardup.core.documents.DocBatch` es.

    Every batch but the last holds ``batch_size`` documents. Paths are checked before this
    returns (a missing path or unknown extension raises :class:`~neardup.core.errors.InputError`
    at once); records are
    read lazily. ``stats``, if given, is updated as batches are produced.

    ``paths`` may name files, folders of shards, globs, ``-`` (standard input) and fsspec URLs
    (:mod:`neardup.io.paths`); ``input_format`` (``jsonl``, ``csv``, ``parquet``, ``arrow``)
    overrides the extensions.

    ``id_policy="line"`` (with ``id_field``): a record whose id is missing, empty or repeats an
    earlier record's gets ``FILE:LINE`` (counted in ``stats.line_ids``) instead of being a bad record.

    ``snapshot``: the :attr:`~neardup.io.policy.ReadStats.snapshot` of an earlier pass of the
    same job; a local file that changed since raises
    :class:`~neardup.core.errors.InputChangedError` (the pass that reads with ``stats`` records
    its own snapshot there).

    ``reject_empty_ids=True``: a record whose id is the empty string is a bad record (reason
    ``"empty id"``, with its file and line), as an index needs; read by the record parser
    rather than the JSONL kernel, so slower: ``neardup index add`` reads so only to name the
    records an empty id was found in.

    ``html=True``: the text field of JSONL, CSV and Parquet records is HTML, converted with
    :func:`neardup.text.html.html_to_text` (``.html``/``.htm`` files of a directory are always converted,
    ``.txt`` files never). ``main_content=True``: keep only the main block of each HTML page.

    >>> import gzip, json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "docs.jsonl.gz")
    >>> with gzip.open(path, "wt") as f:
    ...     for i in range(1, 4):
    ...         print(json.dumps({"id": f"doc-{i}", "text": f"text {i}"}), file=f)
    ...     print("not json", file=f)
    >>> stats = ReadStats()
    >>> for batch in read_documents([path], on_error="skip", stats=stats):
    ...     print(batch.start, batch.ids[:2])
    0 ['doc-1', 'doc-2']
    >>> dict(stats.reasons)
    {'malformed JSON': 1}
    >>> import shutil; shutil.rmtree(os.path.dirname(path))
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    pol = make_policy(text_field, id_field, on_error, stats, html, main_content, id_policy, snapshot, reject_empty_ids)
    sources = resolve_inputs(paths, input_format)
    return _batches(sources, pol, batch_size)


def _batches(
    sources: list[tuple[str, str]], pol: Policy, batch_size: int, threads: Threads | None = None
) -> Iterator[DocBatch]:
    def chunks():
        for path, fmt in sources:
            before = pol.stats.documents
            for chunk_ids, chunk_texts in _records(path, fmt, pol, batch_size, threads):
                pol.stats.documents += len(chunk_ids)
                yield chunk_ids, chunk_texts
            pol.stats.sources.append((path, fmt, pol.stats.documents - before))

    return batched(chunks(), batch_size)


def batched(chunks: Iterable[tuple[list[str], Sequence]], batch_size: int) -> Iterator[DocBatch]:
    """The records of ``(ids, texts)`` chunks as batches of ``batch_size``, numbered from 0 (the
    last may be shorter): a batch's texts are a list, or a :class:`~neardup.text.utf8.TextRuns`
    where the chunks held packed spans (:func:`_take`)."""
    start = 0
    ids: list[str] = []
    runs: list = []  # the texts read and not yet batched, as the readers' chunks gave them
    held = 0
    for chunk_ids, chunk_texts in chunks:
        ids += chunk_ids
        if len(chunk_texts):
            runs.append(chunk_texts)
            held += len(chunk_texts)
        while held >= batch_size:
            texts, runs = _take(runs, batch_size)
            yield DocBatch(start, ids[:batch_size], texts)
            del ids[:batch_size]
            held -= batch_size
            start += batch_size
    if ids:
        yield DocBatch(start, ids, _take(runs, held)[0])


def _take(runs: list, n: int) -> tuple[Sequence, list]:
    """The first ``n`` texts of ``runs`` (lists, or :class:`~neardup.text.utf8.PackedTexts` from
    the threaded JSONL reader), and the runs left: a list when every run is one, else a
    :class:`~neardup.text.utf8.TextRuns`."""
    taken, left = [], list(runs)
    while n:
        run = left.pop(0)
        if len(run) > n:
            left.insert(0, run[n:])
            run = run[:n]
        taken.append(run)
        n -= len(run)
    if not taken:
        return [], left
    if all(type(run) is list for run in taken):
        return (taken[0] if len(taken) == 1 else [t for run in taken for t in run]), left
    return TextRuns(taken), left


def _records(
    path: str, fmt: str, pol: Policy, batch_size: int, threads: Threads | None
) -> Iterator[tuple[list[str], list[str]]]:
    """The ``(ids, texts)`` chunks of one source, texts converted from HTML when asked; JSONL
    read with ``id_policy="field"`` is scanned on ``threads`` when given
    (:mod:`neardup.io.jsonl_threads`)."""
    convert = pol.html and fmt != "txtdir"
    if threads is not None and fmt == "jsonl" and pol.id_policy == "field":
        for chunk in scan_jsonl_threaded(path, pol, threads, convert):
            yield chunk.ids, chunk.texts
        return
    for chunk in scan(path, fmt, pol, False, batch_size):
        if convert:
            yield chunk.ids, [html_to_text(t, main_content=pol.main_content) for t in chunk.texts]
        else:
            yield chunk.ids, chunk.texts
