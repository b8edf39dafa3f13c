"""RAG ohne Magie: the rooms of rag/, lowest first. A room imports only from rooms above it in this
list (tests/test_layers.py checks it).

    config    where things live: paths, URLs, environment variables
    tuned     every number that tunes the search and the answer, with the command, sets and figures
    text      German text: folding, compounds, stems; the one sentence splitter; Markdown units;
              instruction and credential flags
    privacy   personal data: check digits, names, addresses, masking with numbered placeholders
    store     the index: one interface, SQLite and PostgreSQL + pgvector, the packed vectors and
              their exact scan; who may read what, the users file
    models    llama.cpp and HTTP: one client, embeddings (binary, server), the answer server,
              starting llama-server
    audit     what is kept about answers after they were given: the audit log (one JSON line per
              answer, redacted when a page is forgotten) and the votes beside the index
    ingest    files to chunks: pages and front matter, chunking, formats (PDF, HTML, Word, reST),
              hidden text; forgetting a page for good
    search    ranking (lexical cascade, vectors, fusion), widening sections, expansion, follow-ups
    answer    before the model: what it sees, the one chooser, the prompt, whether it is asked, the
              guard's prompt side
    check     after the model: citations, support, facts, echo, see-also, the guard's answer side
    records   what a door hands the core and gets back: Settings, Events, the Answer
    core      the question pipeline: found, widened, chosen, judged, asked, checked; the audit line;
              as events
    report    the report for the wiki's authors: gaps, down-voted answers, hard-to-find sections
    doors     who asks in which format: terminal, shared flags, web page, OpenAI-compatible API, MCP

The two scripts are the story: build_index.py (read → chunk → embed → store) and ask_rag.py
(embed → rank → prompt → ask → show). docs/rundgang.md walks the post's steps through these
rooms.
"""
