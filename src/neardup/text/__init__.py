"""From raw text to what the methods compare: normalization, tokens, shingles, markup removal, word lists.

Modules: ``normalize`` (NFKC, case folding, the tokenization rules and slow Python references of
the tokenizer), ``shingles`` (shingling settings and texts to sets of 64-bit shingle hashes, on
the kernels of :mod:`neardup._kernels.shingles`), ``html`` (the visible text of HTML pages) and
``stopwords`` (the default English antecedents and stopwords of SpotSigs).
"""
