"""Personal data in German text, lowest module first: checks (check digits, the Match record),
tables (cells by column title), addresses, name_words, name_forms and names (person names), detect
(finding, counting, what stays readable) and mask (placeholders, flags,
RAG_PII_KINDS/RAG_PII_KEEP)."""
