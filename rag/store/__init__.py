"""Where the index lives: the interface (base), SQLite (sqlite), PostgreSQL + pgvector (postgres), the packed vectors and their exact scan (vectors)."""
