"""Judging (pure): logs, stacks and outside evidence → verdict, culprits, budgets and exit code."""
