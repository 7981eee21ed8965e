#!/usr/bin/env python3
"""Near-duplicate removal with datasketch 2.x, written the way its documentation suggests.

Word 5-gram shingles of the lower-cased text -> MinHash (128 permutations,
built with ``MinHash.generator``, the documented fast path that reuses the
permutation state) -> ``MinHashLSH`` at the threshold. Each document is queried
before it is inserted; candidates are kept when the MinHash Jaccard estimate
reaches the threshold; union-find joins them; the first document of each
cluster is kept.

    python benchmarks/peers/datasketch_dedup.py corpus.jsonl -o kept.jsonl
"""

import argparse
import re
import sys

import orjson
from datasketch import MinHash, MinHashLSH

WORD = re.compile(r"\w+")


def shingles(text, n):
    tokens = WORD.findall(text.lower())
    if len(tokens) < n:
        return {" ".join(tokens).encode()}
    return {" ".join(g).encode() for g in zip(*[tokens[i:] for i in range(n)])}


def find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--ngram", type=int, default=5)
    ap.add_argument("--num-perm", type=int, default=128)
    args = ap.parse_args()

    def shingle_sets():
        with open(args.input, "rb") as f:
            for line in f:
                yield shingles(orjson.loads(line)["text"], args.ngram)

    lsh = MinHashLSH(threshold=args.threshold, num_perm=args.num_perm)
    minhashes, parent = [], []
    for i, m in enumerate(MinHash.generator(shingle_sets(), num_perm=args.num_perm)):
        parent.append(i)
        for j in lsh.query(m):
            if minhashes[j].jaccard(m) >= args.threshold:
                a, b = find(parent, i), find(parent, j)
                parent[max(a, b)] = min(a, b)  # the earlier document stays the root
        lsh.insert(i, m, check_duplication=False)
        minhashes.append(m)

    kept = 0
    with open(args.input, "rb") as f, open(args.output, "wb") as out:
        for i, line in enumerate(f):
            if find(parent, i) == i:
                out.write(line if line.endswith(b"\n") else line + b"\n")
                kept += 1
    print(f"datasketch: {len(parent)} documents, {kept} kept, {len(parent) - kept} removed", file=sys.stderr)


if __name__ == "__main__":
    main()
