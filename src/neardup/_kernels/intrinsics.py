"""LLVM-level kernels: 64 ASCII bytes a step, eight short hashes at once, unaligned words, prefetches, folds.

numba cannot express AVX-512 byte compression (``vpcompressb``), its AVX2 stand-in (``pshufb``
with controls from a table), or a byte shuffle that cuts eight overlapping windows from one load,
so these are numba ``@intrinsic`` s that emit the LLVM IR directly. The shingling kernels
(:mod:`neardup._kernels.shingles`) use them where they pay off; each has a plain numba
equivalent there that gives the same bytes and hashes (tests compare both, also with
``NUMBA_CPU_NAME=haswell`` and ``x86-64``).

* ``ascii64``, ``chars64``, ``chars64_pos``, ``words64``: the first pass over 64 ASCII bytes
  (lower-casing, separators to one space, token/character starts), compiled in only when the
  numba target has AVX-512 VBMI2 and BW (:data:`SIMD64`: bytes packed with ``vpcompressb``) or
  else AVX2 (:data:`PACK8`: 8 bytes at a time with ``pshufb``); :data:`STEP64` is either.
* ``hash8_short``: nd64 (:mod:`neardup._kernels.hashing`) of eight consecutive windows of at most
  8 bytes from one 16-byte load, as LLVM vectors (every CPU).
* ``load8``, ``store8``, ``ctz``: unaligned little-endian 8-byte loads and stores and a trailing
  zero count, for the JSON Lines scanner's 8 bytes at a time (:mod:`neardup._kernels.jsonl`).
* ``copy_into``: ``dst[d:d+n] = src[s:s+n]`` as one ``memmove`` (numba's slice assignment compiles
  about 2 s of shape checks and error formatting into the first kernel of a process that uses it,
  which a first run waits for).
* ``prefetch``: a cache-line prefetch, for the LSH index's probes (:mod:`neardup._kernels.lsh`).
* ``fold32x64``, ``fold32x16``, ``fold32x8``, ``fold64x64``, ``fold64x8``: the classic MinHash
  fold permutation-major, a block of permutations' minima held in vector registers while the
  hashes stream past (numba's loops keep them in memory), through 32-bit lanes for AVX2 and in
  64-bit lanes for AVX-512DQ (:mod:`neardup._kernels.minhash`, whose plain fold gives the same
  values; tests compare them).
"""

from __future__ import annotations

import sys

from llvmlite import ir
from llvmlite import ir as llvm_ir
from numba.core import cgutils, types
from numba.core.registry import cpu_target
from numba.extending import intrinsic

from .hashing import F1, F2, P1, P2, SEED

BIG_ENDIAN = sys.byteorder == "big"


def _target_has(feature: str) -> bool:
    """Whether numba compiles for an x86-64 CPU with ``feature`` (an LLVM feature name): the
    target numba uses (host, or ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``), not merely the machine.

    With ``NUMBA_CPU_FEATURES`` empty numba passes no feature list and LLVM takes the named CPU's
    own, which llvmlite cannot list: ``avx2`` is then told by compiling a 256-bit integer add for
    that CPU, and every other feature counts as absent (so such targets with AVX-512 get the
    AVX2 steps, which they run correctly)."""
    triple, cpu, features = cpu_target.target_context.codegen().magic_tuple()
    if not triple.startswith("x86_64"):
        return False
    if features:
        return f"+{feature}" in features.split(",")
    return feature == "avx2" and _emits_ymm_add(triple, cpu)


def _emits_ymm_add(triple: str, cpu: str) -> bool:
    import llvmlite.binding as ll

    module = ll.parse_assembly(
        "define <8 x i32> @f(<8 x i32> %a, <8 x i32> %b) {\n %c = add <8 x i32> %a, %b\n ret <8 x i32> %c\n}"
    )
    machine = ll.Target.from_triple(triple).create_target_machine(cpu=cpu, features="")
    return "vpaddd\t%ymm" in machine.emit_assembly(module)


SIMD64 = _target_has("avx512vbmi2") and _target_has("avx512bw")
"""The 64-byte first-pass steps pack bytes with ``vpcompressb`` (AVX-512 VBMI2)."""

PACK8 = not SIMD64 and _target_has("avx2")
"""The 64-byte first-pass steps pack bytes 8 at a time with ``pshufb`` and a table (AVX2
targets without VBMI2)."""

STEP64 = SIMD64 or PACK8
"""First passes take 64 ASCII bytes a step (compiled in only where one of the packs exists)."""


_I1, _I8, _I32, _I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)


_V8, _M64 = ir.VectorType(_I8, 64), ir.VectorType(_I1, 64)


def _splat(builder, value, vty):
    """A vector of ``vty`` with every lane ``value`` (an int, or an IR value of the lane type)."""
    if isinstance(value, int):
        return ir.Constant(vty, [value] * vty.count)
    one = builder.insert_element(ir.Constant(vty, ir.Undefined), value, ir.Constant(_I32, 0))
    return builder.shuffle_vector(
        one, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(_I32, vty.count), [0] * vty.count)
    )


def _compress(builder, values, keep, dest):
    """Store the lanes of ``values`` whose ``keep`` bit (i64) is set, packed, at ``dest``, and
    return the packed vector (None with :data:`PACK8`).

    With ``vpcompressb`` into a register and a full 64-byte store (the memory form, which LLVM
    picks for its generic compress-store, made the character pass 13 times slower on AMD Zen 4).
    With :data:`PACK8` (no byte compress) 8 lanes at a time: the ``pshufb`` control that moves a
    group's kept lanes to its front comes from a table indexed by the group's 8 keep bits, two
    groups share one shuffle, and each group's 8 bytes are stored where the kept lanes before it
    end. Either way 64 bytes at ``dest`` must be writable."""
    if PACK8:
        v2 = ir.VectorType(_I64, 2)
        for q in range(4):
            chunk = builder.shuffle_vector(
                values,
                ir.Constant(_V8, ir.Undefined),
                ir.Constant(ir.VectorType(_I32, 16), list(range(16 * q, 16 * q + 16))),
            )
            packed = builder.bitcast(_pshufb(builder, chunk, _row_pair(builder, _PACK_ROWS, keep, q)), v2)
            for h in (0, 1):
                at = builder.gep(dest, [_kept_before(builder, keep, 2 * q + h)])
                builder.store(
                    builder.extract_element(packed, ir.Constant(_I32, h)),
                    builder.bitcast(at, _I64.as_pointer()),
                    align=1,
                )
        return None
    packed = _compress_reg(builder, values, builder.bitcast(keep, _M64))
    builder.store(packed, builder.bitcast(dest, _V8.as_pointer()), align=1)
    return packed


def _pack_tables() -> bytes:
    """Two tables of 256 rows of 8 bytes, by a group's 8 mask bits m: the positions of m's set
    bits in order, then 0x80 (``pshufb`` zeroes such lanes); and for each of the 8 positions, how
    many of m's bits are set below it."""
    pack = [([j for j in range(8) if m >> j & 1] + [0x80] * 8)[:8] for m in range(256)]
    below = [[(m & ((1 << j) - 1)).bit_count() for j in range(8)] for m in range(256)]
    return bytes(b for row in pack + below for b in row)


_TABLES = _pack_tables()
_PACK_ROWS, _BELOW_ROWS = 0, 256


def _table_row(builder, first, m):
    """Row ``first + m`` (``m`` an i64 in 0..255) of :func:`_pack_tables` as an i64."""
    module = builder.module
    table = module.globals.get("neardup.pack_tables")
    if table is None:
        table = cgutils.global_constant(
            module, "neardup.pack_tables", ir.Constant(ir.ArrayType(_I8, len(_TABLES)), bytearray(_TABLES))
        )
    at = builder.shl(builder.add(m, ir.Constant(_I64, first)), ir.Constant(_I64, 3))
    return builder.load(builder.bitcast(builder.gep(table, [ir.Constant(_I64, 0), at]), _I64.as_pointer()), align=1)


def _row_pair(builder, first, mask, q):
    """The table rows of bytes 2q and 2q + 1 of the i64 ``mask`` side by side, 16 bytes; pack
    rows of the second get 8 added, to pick lanes from the upper half of 16."""
    v2, v16 = ir.VectorType(_I64, 2), ir.VectorType(_I8, 16)
    pair = ir.Constant(v2, ir.Undefined)
    for h in (0, 1):
        pair = builder.insert_element(
            pair, _table_row(builder, first, _mask_byte(builder, mask, 2 * q + h)), ir.Constant(_I32, h)
        )
    pair = builder.bitcast(pair, v16)
    return builder.add(pair, ir.Constant(v16, [0] * 8 + [8] * 8)) if first == _PACK_ROWS else pair


def _mask_byte(builder, mask, g):
    """Bits 8g..8g+7 of the i64 ``mask``, as an i64."""
    return builder.and_(builder.lshr(mask, ir.Constant(_I64, 8 * g)), ir.Constant(_I64, 255))


def _kept_before(builder, mask, g):
    """How many bits of the i64 ``mask`` are set below bit 8g."""
    if g == 0:
        return ir.Constant(_I64, 0)
    return _ctpop(builder, builder.and_(mask, ir.Constant(_I64, (1 << 8 * g) - 1)))


def _pshufb(builder, values, ctrl):
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ctrl.type, [ctrl.type, ctrl.type]), "llvm.x86.ssse3.pshuf.b.128"
    )
    return builder.call(fn, [values, ctrl])


def _compress_reg(builder, values, keep):
    """The lanes of ``values`` whose ``keep`` bit is set, packed into the low lanes (zeros above)."""
    if SIMD64:
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_V8, [_V8, _V8, _M64]), "llvm.x86.avx512.mask.compress.v64i8"
        )
        return builder.call(fn, [values, ir.Constant(_V8, [0] * 64), keep])
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(_V8, [_V8, _M64, _V8]), "llvm.experimental.vector.compress.v64i8"
    )
    return builder.call(fn, [values, keep, ir.Constant(_V8, [0] * 64)])


def _ctpop(builder, x):
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_I64, [_I64]), "llvm.ctpop.i64")
    return builder.call(fn, [x])


def _load64(context, builder, arrty, arr, i):
    data = context.make_array(arrty)(context, builder, arr).data
    return builder.load(builder.bitcast(builder.gep(data, [i]), _V8.as_pointer()), align=1)


def _lowered(builder, c, lowbit):
    """``c`` with A-Z lower-cased when ``lowbit`` (i8) is 32."""
    upper = builder.icmp_unsigned("<", builder.sub(c, _splat(builder, 65, _V8)), _splat(builder, 26, _V8))
    return builder.or_(c, builder.select(upper, _splat(builder, lowbit, _V8), _splat(builder, 0, _V8)))


@intrinsic
def ascii64(typingctx, doc, i):
    """Whether the 64 bytes ``doc[i:i + 64]`` are all ASCII."""
    if not _bytes_arrays(doc):
        return None
    sig = types.boolean(doc, types.int64)

    def codegen(context, builder, signature, args):
        c = _load64(context, builder, signature.args[0], args[0], args[1])
        high = builder.bitcast(builder.icmp_signed("<", c, _splat(builder, 0, _V8)), _I64)
        return builder.icmp_unsigned("==", high, ir.Constant(_I64, 0))

    return sig, codegen


def _chars64_codegen(with_pos):
    def codegen(context, builder, signature, args):
        if with_pos:
            doc_v, i_v, buf_v, pos_v, blen_v, nch_v, prev_v, low_v = args
        else:
            doc_v, i_v, buf_v, blen_v, prev_v, low_v = args
        c = _load64(context, builder, signature.args[0], doc_v, i_v)
        sep = builder.or_(
            builder.icmp_unsigned("<=", c, _splat(builder, 32, _V8)),
            builder.icmp_unsigned("==", c, _splat(builder, 127, _V8)),
        )
        mapped = builder.select(sep, _splat(builder, 32, _V8), _lowered(builder, c, low_v))
        sepbits = builder.bitcast(sep, _I64)
        keep = builder.not_(builder.and_(sepbits, builder.or_(builder.shl(sepbits, ir.Constant(_I64, 1)), prev_v)))
        dest = builder.gep(context.make_array(signature.args[2])(context, builder, buf_v).data, [blen_v])
        _compress(builder, mapped, keep, dest)
        if with_pos:
            v64 = ir.VectorType(_I64, 64)
            where = builder.add(ir.Constant(v64, list(range(64))), _splat(builder, blen_v, v64))
            pos_data = context.make_array(signature.args[3])(context, builder, pos_v).data
            builder.store(where, builder.bitcast(builder.gep(pos_data, [nch_v]), v64.as_pointer()), align=8)
        return context.make_tuple(
            builder,
            signature.return_type,
            [builder.add(blen_v, _ctpop(builder, keep)), builder.lshr(sepbits, ir.Constant(_I64, 63))],
        )

    return codegen


def _bytes_arrays(*arrays) -> bool:
    return all(isinstance(a, types.Array) and a.ndim == 1 and a.dtype == types.uint8 for a in arrays)


@intrinsic
def chars64(typingctx, doc, i, buf, blen, prev, lowbit):
    """:func:`~neardup._kernels.shingles._char_ascii_plain`'s loop over the 64 ASCII bytes
    ``doc[i:i + 64]`` in one step: returns (blen, prev) after them. Separators (bytes <= 32 and
    DEL) become spaces, a space after a space is dropped (``prev``: the byte before was a
    separator), and the kept bytes are packed into ``buf[blen:]`` (``vpcompressb``, or ``pshufb``
    with :data:`PACK8`; 64 bytes there must be writable)."""
    if not _bytes_arrays(doc, buf):
        return None
    i64 = types.int64
    return types.UniTuple(i64, 2)(doc, i64, buf, i64, i64, types.uint8), _chars64_codegen(False)


@intrinsic
def chars64_pos(typingctx, doc, i, buf, pos, blen, nch, prev, lowbit):
    """:func:`chars64`, also setting ``pos[nch + k] = blen + k`` for k in 0..63 (each kept
    byte is one character; the entries past the kept ones are overwritten later), for the
    ASCII stretches of a text that is not all ASCII."""
    if not (_bytes_arrays(doc, buf) and isinstance(pos, types.Array) and pos.ndim == 1 and pos.dtype == types.int64):
        return None
    i64 = types.int64
    return types.UniTuple(i64, 2)(doc, i64, buf, pos, i64, i64, i64, types.uint8), _chars64_codegen(True)


def _store_starts(builder, starts, keep, blen, dest):
    """:data:`PACK8`'s token starts: for each set bit j of ``starts`` (input lanes), in order, the
    output offset of lane j, ``blen`` + the ``keep`` bits below j, as int64 from ``dest`` on.

    8 lanes at a time (two groups a shuffle): the counts below each lane of a group come from a
    table by its keep bits, the group's starts (at most 4, each after a non-word byte) are packed
    to the front with ``pshufb``, widened and stored, 4 int64 where the group's starts begin (so
    32 entries from ``dest`` must be writable). A scalar loop over the set bits (``tzcnt``) took
    15% longer on the benchmark corpus, where a 64-byte step holds about 11 starts."""
    v16, v4 = ir.VectorType(_I8, 16), ir.VectorType(_I64, 4)
    for q in range(4):
        packed = _pshufb(builder, _row_pair(builder, _BELOW_ROWS, keep, q), _row_pair(builder, _PACK_ROWS, starts, q))
        for h in (0, 1):
            g = 2 * q + h
            four = builder.shuffle_vector(
                packed,
                ir.Constant(v16, ir.Undefined),
                ir.Constant(ir.VectorType(_I32, 4), list(range(8 * h, 8 * h + 4))),
            )
            base = builder.add(blen, _kept_before(builder, keep, g))
            offsets = builder.add(builder.zext(four, v4), _splat(builder, base, v4))
            at = builder.gep(dest, [_kept_before(builder, starts, g)])
            builder.store(offsets, builder.bitcast(at, v4.as_pointer()), align=8)


@intrinsic
def words64(typingctx, doc, i, buf, tok, blen, nt, prev, lowbit):
    """:func:`~neardup._kernels.shingles._word_tokens`' ASCII loop over the 64 bytes
    ``doc[i:i + 64]`` in one step: returns (blen, tokens, prev) after them.

    Word bytes (0-9, A-Z, a-z) are kept and the first non-word byte after each is kept as a
    space, packed into ``buf[blen:]`` with ``vpcompressb``. Token starts are found in the packed
    bytes (a word byte after a space, or after a non-word output when ``prev`` is 0) and their
    offsets packed the same way, then written to ``tok[nt:nt + 32]`` (64 bytes hold at most 32
    starts; ``tok`` must have room). With :data:`PACK8` the bytes are packed with ``pshufb`` and
    the starts taken from the input (a word byte after a non-word one, or first when ``prev`` is
    0: the same tokens), their offsets by :func:`_store_starts`."""
    if not (_bytes_arrays(doc, buf) and isinstance(tok, types.Array) and tok.ndim == 1 and tok.dtype == types.int64):
        return None
    i64 = types.int64
    sig = types.UniTuple(i64, 3)(doc, i64, buf, tok, i64, i64, i64, types.uint8)

    def codegen(context, builder, signature, args):
        doc_v, i_v, buf_v, tok_v, blen_v, nt_v, prev_v, low_v = args
        c = _load64(context, builder, signature.args[0], doc_v, i_v)
        digit = builder.icmp_unsigned("<", builder.sub(c, _splat(builder, 48, _V8)), _splat(builder, 10, _V8))
        alpha = builder.icmp_unsigned(
            "<",
            builder.sub(builder.or_(c, _splat(builder, 32, _V8)), _splat(builder, 97, _V8)),
            _splat(builder, 26, _V8),
        )
        word = builder.or_(digit, alpha)
        mapped = builder.select(word, _lowered(builder, c, low_v), _splat(builder, 32, _V8))
        wbits = builder.bitcast(word, _I64)
        keep = builder.or_(wbits, builder.or_(builder.shl(wbits, ir.Constant(_I64, 1)), prev_v))
        dest = builder.gep(context.make_array(signature.args[2])(context, builder, buf_v).data, [blen_v])
        packed = _compress(builder, mapped, keep, dest)
        count = _ctpop(builder, keep)
        tok_data = context.make_array(signature.args[3])(context, builder, tok_v).data
        if PACK8:
            starts = builder.and_(wbits, builder.not_(builder.or_(builder.shl(wbits, ir.Constant(_I64, 1)), prev_v)))
            _store_starts(builder, starts, keep, blen_v, builder.gep(tok_data, [nt_v]))
        else:
            valid = builder.select(
                builder.icmp_unsigned("==", count, ir.Constant(_I64, 64)),
                ir.Constant(_I64, -1),
                builder.sub(builder.shl(ir.Constant(_I64, 1), count), ir.Constant(_I64, 1)),
            )
            outw = builder.bitcast(builder.icmp_unsigned("!=", packed, _splat(builder, 32, _V8)), _I64)
            starts = builder.and_(
                builder.and_(outw, valid), builder.not_(builder.or_(builder.shl(outw, ir.Constant(_I64, 1)), prev_v))
            )
            where = _compress_reg(builder, ir.Constant(_V8, list(range(64))), builder.bitcast(starts, _M64))
            first = builder.shuffle_vector(
                where, ir.Constant(_V8, ir.Undefined), ir.Constant(ir.VectorType(_I32, 32), list(range(32)))
            )
            v64 = ir.VectorType(_I64, 32)
            offsets = builder.add(builder.zext(first, v64), _splat(builder, blen_v, v64))
            builder.store(offsets, builder.bitcast(builder.gep(tok_data, [nt_v]), v64.as_pointer()), align=8)
        return context.make_tuple(
            builder,
            signature.return_type,
            [
                builder.add(blen_v, count),
                builder.add(nt_v, _ctpop(builder, starts)),
                builder.lshr(wbits, ir.Constant(_I64, 63)),
            ],
        )

    return sig, codegen


_V64 = ir.VectorType(_I64, 8)


def _const64(x) -> ir.Constant:
    return ir.Constant(_V64, [int(x)] * 8)


def _nd64_step(builder, h, w):
    """``rotl64(h ^ (w * P1), 31) * P2`` on 8 lanes."""
    x = builder.xor(h, builder.mul(w, _const64(P1)))
    x = builder.or_(builder.shl(x, _const64(31)), builder.lshr(x, _const64(33)))
    return builder.mul(x, _const64(P2))


def _fmix64_vec(builder, h):
    for f in (F1, F2):
        h = builder.mul(builder.xor(h, builder.lshr(h, _const64(33))), _const64(f))
    return builder.xor(h, builder.lshr(h, _const64(33)))


@intrinsic
def hash8_short(typingctx, buf, s, mask, n, out, at):
    """``out[at + s + r] = hash_span(buf, s + r, s + r + n)`` for r in 0..7, n <= 8 (``mask``
    keeps the low n bytes of a word).

    The 8 windows are cut from one 16-byte load with a byte shuffle (``vpermb`` with AVX-512
    VBMI; plain IR, so any target compiles it), which costs half of what 8-lane gathers of
    unaligned words do; then nd64's one word step and finaliser on the 8 lanes."""
    if not (_bytes_arrays(buf) and isinstance(out, types.Array) and out.ndim == 1 and out.dtype == types.uint64):
        return None
    i64, u64 = types.int64, types.uint64
    sig = types.void(buf, i64, u64, u64, out, i64)

    def codegen(context, builder, signature, args):
        buf_v, s_v, mask_v, n_v, out_v, at_v = args
        v16 = ir.VectorType(_I8, 16)
        data = context.make_array(signature.args[0])(context, builder, buf_v).data
        raw = builder.load(builder.bitcast(builder.gep(data, [s_v]), v16.as_pointer()), align=1)
        windows = builder.shuffle_vector(
            raw,
            ir.Constant(v16, ir.Undefined),
            ir.Constant(ir.VectorType(_I32, 64), [r + j for r in range(8) for j in range(8)]),
        )
        w = builder.and_(builder.bitcast(windows, _V64), _splat(builder, mask_v, _V64))
        h = _fmix64_vec(builder, builder.xor(_nd64_step(builder, _const64(SEED), w), _splat(builder, n_v, _V64)))
        dest = builder.gep(
            context.make_array(signature.args[4])(context, builder, out_v).data, [builder.add(at_v, s_v)]
        )
        builder.store(h, builder.bitcast(dest, _V64.as_pointer()), align=8)
        return context.get_dummy_value()

    return sig, codegen


# --------------------------------------------------------------------------------------------
# Word-at-a-time primitives, and a prefetch
@intrinsic
def load8(typingctx, arr, idx):
    """The 8 bytes ``arr[idx:idx+8]`` as one little-endian uint64 (unaligned, unchecked)."""

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        index = context.cast(builder, args[1], sig.args[1], types.intp)
        ptr = builder.bitcast(builder.gep(ary.data, [index]), ir.IntType(64).as_pointer())
        word = builder.load(ptr, align=1)
        return builder.bswap(word) if BIG_ENDIAN else word

    return types.uint64(arr, idx), codegen


@intrinsic
def store8(typingctx, arr, idx, val):
    """Write uint64 ``val`` to ``arr[idx:idx+8]`` little-endian (unaligned, unchecked)."""

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        index = context.cast(builder, args[1], sig.args[1], types.intp)
        ptr = builder.bitcast(builder.gep(ary.data, [index]), ir.IntType(64).as_pointer())
        builder.store(builder.bswap(args[2]) if BIG_ENDIAN else args[2], ptr, align=1)
        return context.get_dummy_value()

    return types.void(arr, idx, val), codegen


@intrinsic
def copy_into(typingctx, dst, d, src, s, n):
    """``dst[d:d+n] = src[s:s+n]`` for 1-D C-contiguous arrays of one dtype, ``dst`` writable
    (bounds unchecked; the ranges may overlap)."""
    if not (
        isinstance(dst, types.Array)
        and isinstance(src, types.Array)
        and dst.mutable
        and dst.dtype == src.dtype
        and dst.ndim == src.ndim == 1
        and dst.layout == src.layout == "C"
    ):
        return None

    def codegen(context, builder, sig, args):
        out = context.make_array(sig.args[0])(context, builder, args[0])
        inp = context.make_array(sig.args[2])(context, builder, args[2])
        start_d, start_s, count = (context.cast(builder, args[i], sig.args[i], types.intp) for i in (1, 3, 4))
        item = context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype))
        cgutils.raw_memmove(builder, builder.gep(out.data, [start_d]), builder.gep(inp.data, [start_s]), count, item)
        return context.get_dummy_value()

    return types.void(dst, d, src, s, n), codegen


@intrinsic
def ctz(typingctx, val):
    """Trailing zero bits of a nonzero uint64, as int64."""

    def codegen(context, builder, sig, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.int64(types.uint64), codegen


@intrinsic
def prefetch(typingctx, arr, index):
    """Start loading the cache line of ``arr[index]`` (``index`` a tuple) without waiting for it;
    an index out of bounds is harmless (a prefetch never faults)."""

    def codegen(context, builder, signature, args):
        aryty, indexty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        index = cgutils.unpack_tuple(builder, args[1], len(indexty))
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, index, wraparound=False)
        i8p = llvm_ir.IntType(8).as_pointer()
        i32 = llvm_ir.IntType(32)
        fnty = llvm_ir.FunctionType(llvm_ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch." + i8p.intrinsic_name)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return types.void(arr, index), codegen


# --------------------------------------------------------------------------------------------
# The classic MinHash fold through 32-bit lanes, permutation-major
def _fold32_codegen(nvec):
    lanes = 8 * nvec
    v32 = ir.VectorType(_I32, 8)
    v64 = ir.VectorType(_I64, 4)
    v64x8 = ir.VectorType(_I64, 8)
    low32 = ir.Constant(v64, [0xFFFFFFFF] * 4)
    shift32 = ir.Constant(v64, [32] * 4)
    # the top halves of the even and odd 64-bit products, back in permutation order
    tops = ir.Constant(ir.VectorType(_I32, 8), [1, 9, 3, 11, 5, 13, 7, 15])

    def codegen(context, builder, signature, args):
        hs_t, _, _, al_t, ah_t, b_t, _, acc_t = signature.args
        hs_v, lo_v, hi_v, al_v, ah_v, b_v, j_v, acc_v = args

        def ptr(aryty, ary, index, vty):
            data = context.make_array(aryty)(context, builder, ary).data
            return builder.bitcast(builder.gep(data, [index]), vty.as_pointer())

        blocks, cur = [], []
        for v in range(nvec):
            at = builder.add(j_v, ir.Constant(_I64, 8 * v))
            al = builder.load(ptr(al_t, al_v, at, v32), align=4)
            ah = builder.load(ptr(ah_t, ah_v, at, v32), align=4)
            b = builder.load(ptr(b_t, b_v, at, v64x8), align=8)
            undef8 = ir.Constant(v64x8, ir.Undefined)
            b_even = builder.shuffle_vector(b, undef8, ir.Constant(ir.VectorType(_I32, 4), [0, 2, 4, 6]))
            b_odd = builder.shuffle_vector(b, undef8, ir.Constant(ir.VectorType(_I32, 4), [1, 3, 5, 7]))
            al64 = builder.bitcast(al, v64)
            blocks.append((al, ah, builder.and_(al64, low32), builder.lshr(al64, shift32), b_even, b_odd))
            slot = cgutils.alloca_once(builder, v32)
            builder.store(builder.load(ptr(acc_t, acc_v, at, v32), align=4), slot)
            cur.append(slot)
        hs_data = context.make_array(hs_t)(context, builder, hs_v).data

        undef = ir.Constant(v32, ir.Undefined)
        lo, hi = (1, 0) if BIG_ENDIAN else (0, 1)
        with cgutils.for_range_slice(builder, lo_v, hi_v, ir.Constant(_I64, 1)) as (i, _):
            # one broadcast load of x; its 32-bit halves by in-lane shuffles (moving them through
            # general registers cost six more instructions per hash and block)
            x = _splat(builder, builder.load(builder.gep(hs_data, [i])), v64)
            x32 = builder.bitcast(x, v32)
            xl = builder.shuffle_vector(x32, undef, ir.Constant(v32, [2 * (q // 2) + lo for q in range(8)]))
            xh = builder.shuffle_vector(x32, undef, ir.Constant(v32, [2 * (q // 2) + hi for q in range(8)]))
            xl64 = builder.and_(x, low32)
            for (al, ah, al_even, al_odd, b_even, b_odd), slot in zip(blocks, cur):
                even = builder.add(builder.mul(al_even, xl64), b_even)
                odd = builder.add(builder.mul(al_odd, xl64), b_odd)
                upper = builder.shuffle_vector(builder.bitcast(even, v32), builder.bitcast(odd, v32), tops)
                cross = builder.add(builder.mul(ah, xl), builder.mul(al, xh))
                top = builder.add(upper, cross)
                c = builder.load(slot)
                builder.store(builder.select(builder.icmp_unsigned("<", top, c), top, c), slot)
        for v, slot in enumerate(cur):
            at = builder.add(j_v, ir.Constant(_I64, 8 * v))
            builder.store(builder.load(slot), ptr(acc_t, acc_v, at, v32), align=4)
        return context.get_dummy_value()

    return lanes, codegen


def _fold32_intrinsic(nvec):
    lanes, codegen = _fold32_codegen(nvec)

    def typer(typingctx, hashes, lo, hi, al, ah, b, j, acc):
        def contiguous(a, dtype):
            return isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" and a.dtype == dtype

        if not (
            contiguous(hashes, types.uint64)
            and contiguous(al, types.uint32)
            and contiguous(ah, types.uint32)
            and contiguous(b, types.uint64)
            and contiguous(acc, types.uint32)
        ):
            return None
        i64 = types.int64
        return types.void(hashes, i64, i64, al, ah, b, i64, acc), codegen

    typer.__name__ = f"fold32x{lanes}"
    typer.__doc__ = f"""``acc[j + l] = min(acc[j + l], top half of (a x + b) mod 2**64 over x in hashes[lo:hi])``
    for the {lanes} permutations l = 0..{lanes - 1} from ``j``, with ``a = ah 2**32 + al`` (unchecked
    bounds; C-contiguous arrays). See :func:`~neardup._kernels.minhash.fold_minhash32` for the math."""
    return intrinsic(typer)


fold32x8 = _fold32_intrinsic(1)
fold32x16 = _fold32_intrinsic(2)
fold32x64 = _fold32_intrinsic(8)


def _fold64_codegen(nvec):
    v64 = ir.VectorType(_I64, 8)

    def codegen(context, builder, signature, args):
        hs_t, _, _, a_t, b_t, _, acc_t = signature.args
        hs_v, lo_v, hi_v, a_v, b_v, j_v, acc_v = args

        def ptr(aryty, ary, index):
            data = context.make_array(aryty)(context, builder, ary).data
            return builder.bitcast(builder.gep(data, [index]), v64.as_pointer())

        blocks = []
        for v in range(nvec):
            at = builder.add(j_v, ir.Constant(_I64, 8 * v))
            slot = cgutils.alloca_once(builder, v64)
            builder.store(builder.load(ptr(acc_t, acc_v, at), align=8), slot)
            blocks.append((builder.load(ptr(a_t, a_v, at), align=8), builder.load(ptr(b_t, b_v, at), align=8), slot))
        hs_data = context.make_array(hs_t)(context, builder, hs_v).data
        with cgutils.for_range_slice(builder, lo_v, hi_v, ir.Constant(_I64, 1)) as (i, _):
            x = _splat(builder, builder.load(builder.gep(hs_data, [i])), v64)
            for a, b, slot in blocks:
                top = builder.add(builder.mul(a, x), b)
                c = builder.load(slot)
                builder.store(builder.select(builder.icmp_unsigned("<", top, c), top, c), slot)
        for v, (_, _, slot) in enumerate(blocks):
            at = builder.add(j_v, ir.Constant(_I64, 8 * v))
            builder.store(builder.load(slot), ptr(acc_t, acc_v, at), align=8)
        return context.get_dummy_value()

    return codegen


def _fold64_intrinsic(nvec):
    codegen = _fold64_codegen(nvec)

    def typer(typingctx, hashes, lo, hi, a, b, j, acc):
        def contiguous(x):
            return isinstance(x, types.Array) and x.ndim == 1 and x.layout == "C" and x.dtype == types.uint64

        if not all(contiguous(x) for x in (hashes, a, b, acc)):
            return None
        i64 = types.int64
        return types.void(hashes, i64, i64, a, b, i64, acc), codegen

    typer.__name__ = f"fold64x{8 * nvec}"
    typer.__doc__ = f"""``acc[j + l] = min(acc[j + l], (a[j + l] x + b[j + l]) mod 2**64 over x in hashes[lo:hi])``
    for l = 0..{8 * nvec - 1} (unchecked bounds; C-contiguous uint64 arrays): 64-bit lanes, for
    targets with a 64-bit lane multiply and unsigned minimum (AVX-512DQ: ``vpmullq``, ``vpminuq``)."""
    return intrinsic(typer)


fold64x64 = _fold64_intrinsic(8)
fold64x8 = _fold64_intrinsic(1)
