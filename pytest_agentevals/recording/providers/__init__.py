"""How HTTP traffic of a model provider becomes a model_call event, and back."""
