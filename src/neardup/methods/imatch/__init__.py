"""I-Match: documents with the same set of mid-frequency terms, one or several lexicons.

Modules: ``signatures`` (term sets, document frequencies, lexicon signatures), ``scheme``,
``plan`` (the batch job) and ``config`` (the settings).
"""

from .config import IMatchConfig

__all__ = ["IMatchConfig"]
