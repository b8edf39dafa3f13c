"""The models, over their processes and HTTP: one HTTP client (http), embeddings (embedding, embed_binary, embed_server), the answer server (llm), starting llama-server (server_process)."""
