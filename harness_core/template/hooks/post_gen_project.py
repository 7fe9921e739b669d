"""Keep only the files of the chosen kind."""

import os
import shutil

KIND = {{ cookiecutter.kind | tojson }}
PACKAGE = {{ cookiecutter.__package_name | tojson }}

# Files that belong to exactly one kind (relative to the generated project).
OWNED = {
    "harness": [
        f"{PACKAGE}/harness.py",
        "tests/test_harness.py",
    ],
    "harness-cli": [
        f"{PACKAGE}/adapter.py",
        f"{PACKAGE}/fake_agent.py",
        f"{PACKAGE}/plugin.py",
        "tests/test_adapter.py",
    ],
    "sandbox": [
        f"{PACKAGE}/provider.py",
        f"{PACKAGE}/plugin.py",
        "tests/test_sandbox.py",
    ],
    "credentials": [
        f"{PACKAGE}/resolver.py",
        f"{PACKAGE}/plugin.py",
        "tests/test_credentials.py",
    ],
}
# Files only harness kinds get.
HARNESS_ONLY = ["tests/test_conformance.py"]

keep = set(OWNED[KIND])
remove = {path for paths in OWNED.values() for path in paths} - keep
if KIND not in ("harness", "harness-cli"):
    remove.update(HARNESS_ONLY)
for path in sorted(remove):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
