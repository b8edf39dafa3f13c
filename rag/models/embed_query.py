"""The question's vectors, from the model the index was built with (llama-embedding or a
/v1/embeddings server).

    query_vectors(["Wie lege ich eine Mailbox an?"], meta, "models/e5.gguf", "llama-embedding")
    -> [[0.012, -0.031, …]]
    # with the index's query prefix (e5: "query: "), checked against meta's dim

Does not handle: building an index (build_index.py embeds the chunks), caching vectors.
"""
import os

from rag.models import embed_binary
from rag.models import embed_server
from rag.models.embedding import EmbeddingError, check_dim, model_mismatch


def query_vectors(questions, meta, model, binary, via="binary", url=None, model_name=None,
                  api_key=None):
    """The vectors of `questions` (the question and its expansions, in one call) from the same model
    as the index `meta` describes, each with the query prefix the index stored (e5: "query: ");
    EmbeddingError with the rebuild command when the model differs.

    via "binary": llama-embedding with the GGUF `model`; "server": any OpenAI-compatible
    /v1/embeddings at `url`.
    """
    questions = [embed_binary.stored_query_prefix(meta, model) + question for question in questions]
    if via == "server":
        vecs, served = embed_server.embed_texts(questions, url, model_name, api_key)
        mismatch = model_mismatch(meta, served)
        if mismatch:
            raise EmbeddingError(
                f"der Embedding-Server unter {url} rechnet mit {mismatch[1]}, der Index wurde "
                f"mit {mismatch[0]} gebaut – Server mit demselben Modell starten "
                f"(--embed-model-name) oder neu bauen: python3 build_index.py --rebuild "
                f"--embed-via server")
        return [check_dim(vec, meta) for vec in vecs]
    if not os.path.isfile(model):
        raise EmbeddingError(f"Embedding-Modell {model} nicht gefunden – einrichten mit: "
                             f"python3 scripts/setup_llama.py (oder --model / RAG_EMBED_MODEL)")
    mismatch = model_mismatch(meta, os.path.basename(model), str(os.path.getsize(model)))
    if mismatch:
        raise EmbeddingError(f"der Index wurde mit {mismatch[0]} (Dimension {meta.get('dim')}) "
                             f"gebaut, eingestellt ist {mismatch[1]} – dasselbe Modell angeben "
                             f"(--model/RAG_EMBED_MODEL) oder neu bauen: python3 build_index.py "
                             f"--rebuild")
    return [check_dim(vec, meta) for vec in embed_binary.embed_texts(questions, binary, model)]
