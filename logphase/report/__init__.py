"""The Report model and its pure renderers (table, json, markdown)."""
