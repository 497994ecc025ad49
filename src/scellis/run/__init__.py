"""Runs (run layer): one training run as a session, from a record to its final status.

Above the planner (ir) and the training core (train): a session prepares a record's
pieces, plans its memory, drives ``train.fit``, records metrics and checkpoints in a
store, and answers pause/stop. The CLI prints its events; the tab forwards them.
"""
