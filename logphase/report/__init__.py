"""The Report and its sections, what the formats share of them, and the formats (report/formats/)."""
