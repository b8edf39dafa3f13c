"""From files to chunks: reading pages and front matter (pages), chunking, the formats (PDF, HTML, Word), hidden text, and the indexing run."""
