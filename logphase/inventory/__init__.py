"""The message inventory: the templates SGLang, vLLM and torch print, taken from their released wheels."""
