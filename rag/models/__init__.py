"""The models, over their processes and HTTP: one HTTP client (http), embeddings (embedding: the
shared contract; embed_binary, embed_server; embed_query: a question's vectors), the answer server
(llm) and what its stream goes through (answer_stream), starting llama-server (server_process)."""
