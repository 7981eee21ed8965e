"""What every layer of neardup shares: documents, plans, settings, errors and the exact measures.

Modules: ``documents`` (numbered batches of ids and texts, document sources), ``plan`` (a method's
batch job as stages of plain functions), ``schemes`` (versioned, serializable settings),
``validation`` (parameter checks and their exceptions), ``errors`` (the exception classes),
``measures`` (exact Jaccard, weighted Jaccard and containment), ``components`` (clusters as
connected components of verified pairs, and the kept document of each), ``parallel`` (one thread
pool for nogil kernels) and ``arrays`` (array helpers). Nothing here depends on a method, an
engine or a file format.
"""
