"""German text, below everything else: folding, compounds and stems (german), the one sentence
splitter (sentences), flags for instructions and credentials in text (safety)."""
