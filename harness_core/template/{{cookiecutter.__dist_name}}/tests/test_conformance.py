"""The harness_core conformance kit, one test per check, against the *installed* plugin.

It opens sessions on a real SQLite ledger, runs turns, cancels a running turn, resumes in a new
controller, closes twice, exports, and judges every event. `harness conformance
{{ cookiecutter.plugin_name }}` runs the same kit from the command line.
"""

from harness_core.pytest_plugin import conformance_tests

test_conformance = conformance_tests({{ cookiecutter.plugin_name | tojson }}, timeout=30)
