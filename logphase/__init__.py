"""logphase: is a multi-GPU LLM server hung or still starting — and if hung, where?"""

__version__ = "0.1.0"
