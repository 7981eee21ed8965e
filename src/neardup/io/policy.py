"""How records are read, and what the scanners of every format share.

A :class:`Policy` says which fields hold the text and the id and what a bad record does
(``on_error="fail"`` raises its :class:`~neardup.core.errors.InputError`, ``"skip"`` counts it
by reason in :class:`ReadStats`). The functions below word those errors, one stable reason each
(the reasons are listed in :mod:`neardup.io.read`). Every scanner yields :class:`Chunk` s.
"""

from __future__ import annotations

import errno
import os
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import zstandard

from ..core.errors import InputChangedError, InputError
from .arrow import pa
from .paths import is_url, local_path

MISSING = object()


_ON_ERROR = ("fail", "skip")
_ID_POLICIES = ("field", "line")


def unreadable_errors() -> tuple[type[BaseException], ...]:
    return (OSError, EOFError, zlib.error, zstandard.ZstdError, pa.ArrowException)


@dataclass
class ReadStats:
    """Counters filled while reading (pass one to :func:`~neardup.io.read.read_documents` to watch progress).

    Attributes:
        files: input files opened (each ``.txt``/``.html`` file of a directory counts).
        documents: documents read (skipped records excluded).
        skipped: records skipped with ``on_error="skip"``; an unreadable file counts once.
        reasons: reason -> number of skipped records, e.g. ``{"malformed JSON": 2}``.
        bytes_read: bytes of input consumed: the decompressed stream for JSONL and CSV, the file
            size for Parquet and ``.txt``/``.html`` files.
        sources: ``(path, format, documents)`` of each input source read, in reading order (the
            expanded inputs: every shard of a folder, every match of a glob).
        line_ids: documents whose id is ``FILE:LINE`` because ``id_policy="line"`` found their
            id missing or repeated.
        details: ``None``, or a list that gets ``(path, line, reason, message)`` of every skipped
            record (``line`` is None for a whole file), for ``--skipped``.
        snapshot: what each local input file was when first opened (see below).
        file_errors: the message of each file skipped or read only in part (``on_error="skip"``),
            such as ``"x.jsonl.gz: truncated compressed stream after 575 records (byte offset
            ...)"``: a file-level problem is counted once, so its message says what was lost.
    """

    files: int = 0
    documents: int = 0
    skipped: int = 0
    reasons: Counter = field(default_factory=Counter)
    bytes_read: int = 0
    sources: list = field(default_factory=list)
    line_ids: int = 0
    details: list | None = None
    file_errors: list = field(default_factory=list)
    snapshot: dict = field(default_factory=dict, repr=False)
    """(size, modification time, inode) of each local input file as first opened: a later pass
    given this snapshot refuses a file that changed since (:meth:`Policy.opening`)."""


# --------------------------------------------------------------------------------------------
# The policy, and the errors it rejects
@dataclass(frozen=True)
class Policy:
    """How records are read: which fields, what to do with a bad one, where to count."""

    text_field: str
    id_field: str | None
    on_error: str
    stats: ReadStats
    html: bool = False
    """Convert the text field of records from HTML (files of a directory: by extension)."""
    main_content: bool = False
    """Keep only the main block of each HTML page."""
    id_policy: str = "field"
    """``"line"``: a record whose ``id_field`` value is missing, empty or repeats an earlier
    record's gets the id ``FILE:LINE`` (:meth:`line_id`) instead of being a bad record."""
    reject_empty_ids: bool = False
    """A record whose id is the empty string is a bad record (reason ``"empty id"``): what an
    index needs (``neardup index add``); the batch job accepts it."""
    seen_ids: set = field(default_factory=set, compare=False, repr=False)
    """The ids given so far in this pass (``id_policy="line"`` only)."""

    def line_id(self, doc_id: str | None, path: str, line: int) -> str:
        """With ``id_policy="line"``: ``doc_id``, or ``FILE:LINE`` when it is missing (None or
        empty) or an earlier record of this pass has it already."""
        if doc_id is None or doc_id == "" or doc_id in self.seen_ids:
            self.stats.line_ids += 1
            return f"{path}:{line}"
        self.seen_ids.add(doc_id)
        return doc_id

    snapshot: dict | None = None
    """path -> (size, mtime, inode) of the files as a job's first pass opened them; None: no check."""
    utf8_texts: bool = False
    """A very long JSONL text field without escapes may be read as a
    :class:`~neardup.text.utf8.Utf8Text` (its bytes, no ``str``), and the threaded reader hands
    the texts of a block its kernel read whole as a :class:`~neardup.text.utf8.PackedTexts`:
    the job's stages take those."""

    def opening(self, path: str) -> None:
        """Note a local input file about to be read: the first time, what it is; after that,
        refuse it if it changed (a job reads its inputs several times, and a file rewritten in
        between, even to as many records, would pair the decisions of one version with the
        records of another)."""
        if self.snapshot is None or is_url(path):
            return
        try:
            st = os.stat(local_path(path))
        except OSError:
            return  # opening it will say why
        now = (st.st_size, st.st_mtime_ns, st.st_ino)
        before = self.snapshot.setdefault(path, now)
        if before != now:
            size = f"{before[0]:,} bytes then, {now[0]:,} now" if before[0] != now[0] else "same size, newer time"
            raise InputChangedError(
                f"{path}: the file changed while the job ran ({size}); the job reads its inputs more than "
                "once, so they must stay the same until it ends: run it again"
            )

    def reject(self, err: InputError) -> None:
        """Raise ``err`` (fail) or count it as one skipped record (skip)."""
        if self.on_error == "fail":
            raise err
        self.stats.skipped += 1
        self.stats.reasons[err.reason] += 1
        if self.stats.details is not None:
            self.stats.details.append((err.path, err.line, err.reason, err.message))
        if err.line is None:
            self.stats.file_errors.append(str(err))


def make_policy(
    text_field,
    id_field,
    on_error,
    stats,
    html=False,
    main_content=False,
    id_policy="field",
    snapshot=None,
    reject_empty_ids=False,
) -> Policy:
    """A checked :class:`Policy`; ``snapshot``: that of a job's first pass (else this policy's
    stats start one, so that the pass that reads with them records it)."""
    if on_error not in _ON_ERROR:
        raise ValueError(f"on_error must be 'fail' or 'skip', got {on_error!r}")
    if id_policy not in _ID_POLICIES:
        raise ValueError(f"id_policy must be 'field' or 'line', got {id_policy!r}")
    if id_policy == "line" and id_field is None:
        raise ValueError("id_policy='line' needs an id_field (without one, ids are 'id' when present, else FILE:LINE)")
    if not isinstance(text_field, str) or not text_field:
        raise ValueError(f"text_field must be a non-empty string, got {text_field!r}")
    if id_field is not None and (not isinstance(id_field, str) or not id_field):
        raise ValueError(f"id_field must be None or a non-empty string, got {id_field!r}")
    stats = stats if stats is not None else ReadStats()
    snapshot = snapshot if snapshot is not None else stats.snapshot
    return Policy(
        text_field,
        id_field,
        on_error,
        stats,
        bool(html),
        bool(main_content),
        id_policy=id_policy,
        snapshot=snapshot,
        reject_empty_ids=bool(reject_empty_ids),
    )


def kind_of(value: Any) -> str:
    """JSON-ish name of a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _field_list(names: Iterable[str]) -> str:
    names = list(names)
    if not names:
        return "no fields"
    shown = ", ".join(repr(n) for n in names[:20])
    return f"fields {shown}{', ...' if len(names) > 20 else ''}"


def missing_text(path: str, line: int, names: Iterable[str], text_field: str) -> InputError:
    return InputError(
        path,
        line,
        f"missing text field {text_field!r}; the record has {_field_list(names)}; "
        "use --text-field to name the field that holds the text",
        reason="missing text field",
    )


def text_not_str(path: str, line: int, value: Any, text_field: str) -> InputError:
    return InputError(
        path,
        line,
        f"text field {text_field!r} must be a string, got {kind_of(value)}",
        reason="text not a string",
    )


def missing_id(path: str, line: int, names: Iterable[str], id_field: str, null: bool) -> InputError:
    what = "is null" if null else f"is missing; the record has {_field_list(names)}"
    return InputError(
        path,
        line,
        f"id field {id_field!r} {what}; use --id-field to name the field that holds the id "
        "(or leave it out to use 'id' when present, else path:line)",
        reason="missing id field",
    )


def empty_id(path: str, line: int) -> InputError:
    return InputError(
        path, line, "the id is an empty string; an index needs a non-empty id for every document", reason="empty id"
    )


def bad_utf8(path: str, line: int | None, exc: UnicodeDecodeError, where: str) -> InputError:
    return InputError(
        path,
        line,
        f"invalid UTF-8 at byte offset {exc.start} of the {where} ({exc.reason}); inputs must be UTF-8 encoded",
        reason="invalid UTF-8",
    )


def unreadable(path: str, exc: BaseException) -> InputError:
    if isinstance(exc, OSError) and os.path.islink(path) and not os.path.exists(path):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        why = "a loop of links" if exc.errno == errno.ELOOP else "nothing there"
        return InputError(
            path,
            None,
            f"cannot read the file: a symbolic link to {target!r}, which leads to {why}",
            reason="unreadable file",
        )
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return InputError(path, None, f"cannot read the file (corrupt or truncated?): {detail}", reason="unreadable file")


# --------------------------------------------------------------------------------------------
# What the scanners (one per input format: csv, jsonl, parquet, textdir) yield: Chunk's of valid
# records, numbered implicitly by order, so read_documents and write_kept agree on numbering and
# skipping by construction.
class Chunk(NamedTuple):
    ids: list[str]
    texts: list[str]
    payload: Any  # the original records, only when scanned with full=True (see each scanner)
