"""Loaded for every test of the repository (tests/, hookspecs/tests, plugins/*/tests)."""

# Under CI a skip fails the run with its reason (see tests/strict_skips.py).
pytest_plugins = ("tests.strict_skips",)
