"""The ``neardup`` command line (click), a module per command.

``main`` is the command group (the ``neardup`` entry point); ``dedup`` removes near-duplicates
from files, ``tune`` chooses an LSH banding, ``compare`` explains one pair of documents,
``evaluate`` (``neardup eval``) scores results against gold labels and ``report`` writes an HTML
report of a run. ``options`` makes the method options from the methods' configs, ``groups``
the sections of ``--help`` (an option declares its group), ``config_file`` reads ``--config
FILE.toml``, ``progress`` shows a job's progress, the first run's kernel compilation and the
summary, and ``common`` holds what the commands share. Human-readable output goes to stderr, machine-readable output
(``--json`` of tune, compare and eval) to stdout; exit codes: 0 success, 1 data error (the
message names the file and line), 2 usage error.
"""
