"""The stacks pipeline: py-spy and text dumps → snapshots → merged tree → stall findings."""
