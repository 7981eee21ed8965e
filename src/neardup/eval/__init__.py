"""Judging and explaining results: scores against gold labels, one pair compared, an HTML report.

Modules: ``metrics`` (pairwise precision, recall and F1, macro F1, ARI and threshold sweeps
against gold clusters or pairs, the label files they read, and the expected errors of an LSH
banding for ``neardup tune``), ``compare`` (every measure of two texts side by side, with their
shared and differing shingles) and ``report`` (a self-contained HTML report of a dedup run, from
``report_template.html``).
"""
