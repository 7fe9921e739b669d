"""pytest plugin entry point of harness_core (the conformance options live here)."""
