"""Small command-line demonstrations (``oscsim kuramoto-demo``)."""
