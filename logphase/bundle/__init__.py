"""`logphase bundle`: one .tar.gz for a bug report — logs (cut when huge), analysis, stacks, versions, redacted."""
