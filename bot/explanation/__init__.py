"""Explaining one regression: what `regbot explain` and the demo show, built from the state."""
