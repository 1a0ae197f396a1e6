"""`python -m logphase`: the same entry point as the `logphase` console script."""

from logphase.cli import main

main()
