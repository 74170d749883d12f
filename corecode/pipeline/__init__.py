"""Pipeline glue: the stages that tie packages together (evaluate every method, collect metrics)."""
