"""Closed-form torch operators and models: Kuramoto attention, SSA and the OSN block, the transformer baseline."""
