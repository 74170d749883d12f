"""corecode: train LLM teams (a Planner and a Coder) to write code."""

__version__ = "0.1.0"
