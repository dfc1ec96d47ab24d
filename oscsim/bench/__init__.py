"""Benchmarks that run the competitors in the same process (``oscsim bench ...``)."""
