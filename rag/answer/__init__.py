"""Before the model: what it sees (context), the one chooser, the prompt, whether it is asked
(answerable, judge), the injection guard's prompt side. What happens after its text exists:
rag/check/."""
