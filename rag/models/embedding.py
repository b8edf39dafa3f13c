"""What every way of embedding shares (llama-embedding, /v1/embeddings): the error, the vector
checks, the model check.

    check_vectors([[0.6, 0.8]], 1) -> [[0.6, 0.8]];
    check_vectors([[0.0, 0.0]], 1) -> EmbeddingError
    model_mismatch({"embed_model": "e5.gguf", "embed_model_size": "9"}, "e5.gguf", "19")
    -> ("e5.gguf (9 Bytes)", "e5.gguf (19 Bytes)")
    # None when the index was built with this model

L2 normalisation is rag/store/vectors.py normalise (the store compares vectors by their dot
product).

Does not handle: embedding itself (rag/models/embed_binary.py, rag/models/embed_server.py),
prefixes.
"""
import math


class EmbeddingError(Exception):
    """Embedding failed or gave something we cannot trust; the message is one German line that names
    the fix."""


def check_vectors(vectors, expected, source="llama-embedding"):
    """Raise EmbeddingError unless there are `expected` vectors of one length, finite and non-zero.

    Shared by llama-embedding's output and OpenAI-compatible servers (rag/models/embed_server.py).
    Example: check_vectors([[0.6, 0.8]], 1) -> [[0.6, 0.8]];
             check_vectors([[0.0, 0.0]], 1) -> EmbeddingError
    """
    if len(vectors) != expected:
        raise EmbeddingError(f"{source} lieferte {len(vectors)} statt {expected} Vektoren – "
                             "nichts aus diesem Batch gespeichert; Version des Embedders prüfen.")
    dims = {len(v) if isinstance(v, list) else 0 for v in vectors}
    if len(dims) != 1 or 0 in dims:
        raise EmbeddingError(f"{source} lieferte Vektoren unterschiedlicher Länge {sorted(dims)}.")
    for v in vectors:
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in v):
            raise EmbeddingError(f"{source} lieferte NaN/Inf – anderes Modell oder --pooling "
                                 f"prüfen.")
        if not any(v):
            raise EmbeddingError(f"{source} lieferte einen Nullvektor – anderes Modell prüfen.")
    return vectors


def model_mismatch(meta, name, size=""):
    """(the index's model, this model), each with its size where known, when they differ; else None.

    Names must match, and sizes where both are known (a server reports none).
    Example: ({"embed_model": "a.gguf"}, "b.gguf") -> ("a.gguf", "b.gguf")
             ({"embed_model": "a.gguf"}, "a.gguf", "9") -> None
    """
    built, built_size = meta.get("embed_model"), meta.get("embed_model_size")
    if not built or (built == name and not (built_size and size and built_size != size)):
        return None
    return (built + (f" ({built_size} Bytes)" if built_size else ""),
            f"{name or 'unbekanntem Modell'}" + (f" ({size} Bytes)" if size else ""))


def check_dim(vec, meta):
    """The vector, if its dimension is the index's (else EmbeddingError naming the rebuild)."""
    if meta.get("dim") and str(len(vec)) != meta["dim"]:
        raise EmbeddingError(f"Frage-Vektor hat Dimension {len(vec)}, der Index {meta['dim']} – "
                             f"gleiches Modell verwenden oder neu bauen: python3 build_index.py "
                             f"--rebuild")
    return vec
