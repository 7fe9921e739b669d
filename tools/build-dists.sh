#!/usr/bin/env bash
# Build a wheel and an sdist of every distribution in the repository into OUT, then `twine check`
# them all.
#
#   tools/build-dists.sh [--no-isolation] [OUT]   (default OUT: dist/)
#
# Needs `build` and `twine` (the dev extra). --no-isolation builds with the interpreter's own
# setuptools (>= 77, also in the dev extra) instead of a fresh build environment per project:
# seconds instead of minutes, used by the test suite; release builds keep the isolation.
# Each project is copied to a scratch directory first, so the checkout gets no build/ or
# *.egg-info from the build, and the root sdist holds the package, not tests/ or tools/npm.
# PYTHON picks the interpreter (default: .venv/bin/python, else python3).
set -euo pipefail
isolation=()
if [ "${1:-}" = "--no-isolation" ]; then
    isolation=(--no-isolation)
    shift
fi
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)"
PYTHON="${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

# What each project ships: the root project is only harness_core plus its metadata files.
projects=(hookspecs)
for plugin in plugins/*/; do
    [ -f "$plugin/pyproject.toml" ] && projects+=("${plugin%/}")
done

copy() {  # copy SRC DEST: the project's files without build leftovers
    mkdir -p "$2"
    tar -C "$1" --exclude='__pycache__' --exclude='*.egg-info' --exclude='build' --exclude='dist' \
        --exclude='.pytest_cache' --exclude='.mypy_cache' --exclude='.ruff_cache' -cf - . \
        | tar -C "$2" -xf -
}

mkdir -p "$SCRATCH/root"
for item in pyproject.toml README.md harness_core; do
    copy_item="$ROOT/$item"
    if [ -d "$copy_item" ]; then copy "$copy_item" "$SCRATCH/root/$item"; else cp "$copy_item" "$SCRATCH/root/"; fi
done
built=("$SCRATCH/root")
for project in "${projects[@]}"; do
    copy "$ROOT/$project" "$SCRATCH/$project"
    built+=("$SCRATCH/$project")
done

for project in "${built[@]}"; do
    echo "build-dists: ${project#"$SCRATCH"/}" >&2
    "$PYTHON" -m build "${isolation[@]}" --sdist --wheel --outdir "$OUT" "$project" >"$SCRATCH/build.log" 2>&1 \
        || { cat "$SCRATCH/build.log" >&2; echo "build-dists: building ${project#"$SCRATCH"/} failed" >&2; exit 1; }
    if grep -q "Warning" "$SCRATCH/build.log"; then
        grep -A8 "Warning" "$SCRATCH/build.log" >&2
    fi
done

"$PYTHON" -m twine check --strict "$OUT"/*.whl "$OUT"/*.tar.gz
