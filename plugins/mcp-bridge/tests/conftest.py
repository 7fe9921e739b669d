"""The bridge's tests: host tools served to the real CLIs (tools/npm) against the fake model."""
