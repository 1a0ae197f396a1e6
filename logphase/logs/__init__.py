"""The log pipeline: reader → matcher → timeline (pure except the reader)."""
