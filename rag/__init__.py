"""RAG ohne Magie: the rooms of rag/, lowest first. A room imports only from rooms above it in this list
(tests/test_layers.py checks it).

    config    where things live: paths, URLs, environment variables
    text      German text: folding, compounds, stems; the one sentence splitter; instruction and credential flags
    privacy   personal data: check digits, names, addresses, masking with numbered placeholders
    store     the index: one interface, SQLite and PostgreSQL + pgvector, the packed vectors and their exact scan
    models    llama.cpp and HTTP: one client, embeddings (binary, server), the answer server, starting llama-server
    audit     what is kept about answers after they were given: the votes beside the index
    ingest    files to chunks: pages and front matter, chunking, formats (PDF, HTML, Word), hidden text
    search    ranking (lexical cascade, vectors, fusion), query expansion, follow-ups
    answer    the prompt, what the model sees, the answerability, support, fact and injection checks, the audit log
    core      the question pipeline: embed → rank → protect → prompt → stream → check → audit, as events
    report    the report for the wiki's authors: gaps, down-voted answers, hard-to-find sections
    doors     who asks in which format: terminal, shared flags, web page, OpenAI-compatible API, MCP

The two scripts are the story: build_index.py (read → chunk → embed → store) and ask_rag.py
(embed → rank → prompt → ask → show). docs/rundgang.md walks the post's steps through these rooms.
"""
