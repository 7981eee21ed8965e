#!/usr/bin/env python3
"""Near-duplicate removal with rensa 0.5, written the way its documentation suggests.

Word 5-gram shingles of the lower-cased text -> ``RMinHash`` (128
permutations, built in batches with ``RMinHash.from_token_sets``, the documented
bulk path; the same digests as ``update`` with the shingle list) ->
``RMinHashLSH`` at the threshold. rensa needs the band count to divide
num_perm; 16 bands of 8 rows put the S-curve's midpoint at (1/16)^(1/8) = 0.71,
below the threshold, so few true pairs are missed and verification removes the
rest. Each batch is inserted and then queried; a candidate pair (j, i) counts
once, with j < i, which is the same as querying each document before inserting
it. Pairs are kept when the MinHash Jaccard estimate reaches the threshold;
union-find joins them; the first document of each cluster is kept.

    python benchmarks/peers/rensa_dedup.py corpus.jsonl -o kept.jsonl
"""

import argparse
import re
import sys
from itertools import islice

import orjson
from rensa import RMinHash, RMinHashLSH

WORD = re.compile(r"\w+")
BATCH = 2048  # documents sketched per call; larger batches only hold more shingle lists


def shingles(text, n):
    tokens = WORD.findall(text.lower())
    if len(tokens) < n:
        return [" ".join(tokens)]
    # a list is enough: repeated shingles do not change a MinHash, and rensa hashes fast
    return list(map(" ".join, zip(*[tokens[i:] for i in range(n)])))


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
    ap.add_argument("--num-bands", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()

    lsh = RMinHashLSH(threshold=args.threshold, num_perm=args.num_perm, num_bands=args.num_bands)
    minhashes, parent = [], []
    with open(args.input, "rb") as f:
        while batch := [shingles(orjson.loads(line)["text"], args.ngram) for line in islice(f, BATCH)]:
            start = len(minhashes)
            mhs = RMinHash.from_token_sets(batch, args.num_perm, args.seed)
            minhashes.extend(mhs)
            parent.extend(range(start, start + len(mhs)))
            lsh.insert_pairs(list(zip(range(start, start + len(mhs)), mhs)))
            for i, candidates in enumerate(lsh.query_all(mhs), start):
                for j in candidates:
                    if j < i and minhashes[j].jaccard(minhashes[i]) >= args.threshold:
                        a, b = find(parent, i), find(parent, j)
                        parent[max(a, b)] = min(a, b)  # the earlier document stays the root

    kept = 0
    with open(args.input, "rb") as f, open(args.output, "wb") as out:
        for i, line in enumerate(f):
            if find(parent, i) == i:
                out.write(line if line.endswith(b"\n") else line + b"\n")
                kept += 1
    print(f"rensa: {len(parent)} documents, {kept} kept, {len(parent) - kept} removed", file=sys.stderr)


if __name__ == "__main__":
    main()
