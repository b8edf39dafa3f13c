"""What makes an answer: the prompt, what the model sees (context), the answerability check, support and citations, the fact check, the injection guard, the audit log."""
