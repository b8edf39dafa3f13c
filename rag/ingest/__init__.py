"""From files to an index, the steps of build_index.py: pages (read, convert, front matter, what
changed), chunking, embed_chunks (the transports), indexing (embed and store, one transaction per
page), report, watch (--watch); formats/ (PDF, HTML, Word), rst/ (reStructuredText, Sphinx) and
hidden (text a reader does not see)."""
