"""harness_core sessions on Temporal."""
