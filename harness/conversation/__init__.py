"""One run's conversation: the append-only event log (`events`), the view folded from it that the model is sent
(`view`), the context a strategy acts through (`context`), and views rebuilt from a saved log (`replay`)."""
