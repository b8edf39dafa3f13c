"""The audit room: what the project keeps about answers after they were given. For now the votes
on answers (feedback.py); the audit log itself is rag/answer/audit.py.
"""
