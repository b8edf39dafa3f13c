"""The report for the wiki's authors (ask_rag.py --report, /bericht): knowledge gaps grouped by
topic (gaps.py, clusters.py), down-voted answers (rag/audit/feedback.py), sections hard to find
(hard.py), each with its page's owners (owners.py); build.py puts them together, markdown.py
writes them as text.
"""
