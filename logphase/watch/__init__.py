"""The live watch: a followed log ingested as it arrives, the state machine, the health probe, the loop at its edge."""
