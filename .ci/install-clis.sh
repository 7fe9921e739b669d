#!/usr/bin/env bash
# Install the pinned agent-harness CLIs (tools/npm/package.json) into tools/npm/node_modules.
# Also pinned there: pi-mcp-adapter, the pi extension the pi adapter loads for host tools (MCP);
# the adapter finds it through its `pi-mcp-adapter` binary in node_modules/.bin.
#
# - Project-local: binaries land in tools/npm/node_modules/.bin (nothing global).
# - Cached: skipped when every pinned package is already installed at its pinned version.
# - One package's failure does not cost the others: if the locked install fails, each package is
#   installed on its own (into tools/npm/node_modules/.isolated/<name>, bins linked into node_modules/.bin)
#   and the ones that cannot be installed are printed with the reason.
# - Exit status 0 when every pinned package is installed at its pinned version, 3 when some are
#   not (printed, marked MISSING): outside CI their tests then skip; `./dev test` under CI fails.
#
# Usage: .ci/install-clis.sh [--force]
set -uo pipefail
cd "$(dirname "$0")/../tools/npm" || exit 0

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "install-clis: node/npm not found; every real-CLI test will be skipped" >&2
    exit 3
fi

force=0
[ "${1:-}" = "--force" ] && force=1

# Print "name<TAB>pinned<TAB>installed" for each pinned dependency.
versions() {
    node -e '
const fs = require("fs"), path = require("path");
const deps = require("./package.json").dependencies;
for (const [name, want] of Object.entries(deps)) {
  let have = "-";
  for (const base of ["node_modules", path.join("node_modules", ".isolated", name.replace("/", "__"), "node_modules")]) {
    try { have = JSON.parse(fs.readFileSync(path.join(base, name, "package.json"))).version; break; } catch (e) {}
  }
  console.log(`${name}\t${want}\t${have}`);
}'
}

missing() { versions | awk -F'\t' '$2 != $3 {print $1 "@" $2}'; }

if [ "$force" = 0 ] && [ -z "$(missing)" ]; then
    echo "install-clis: all pinned CLIs already installed (cached):"
    versions | awk -F'\t' '{print "  " $1 " " $3}'
    exit 0
fi

npm_flags=(--no-audit --no-fund --loglevel=error)
log=$(mktemp)
if [ -f package-lock.json ]; then
    # `npm install` with the lock, not `npm ci`: npm ci rejects any lock of these CLIs as out of
    # sync (it wants entries for their other platforms' optional binaries, which npm never writes
    # into the lock here), while npm install installs exactly the locked tree.
    npm install --no-save "${npm_flags[@]}" >"$log" 2>&1
else
    npm install "${npm_flags[@]}" >"$log" 2>&1
fi
rc=$?
if [ $rc -ne 0 ]; then
    echo "install-clis: locked install failed (rc=$rc); installing each CLI on its own:" >&2
    tail -n 15 "$log" | sed 's/^/  npm: /' >&2
    mkdir -p node_modules/.bin
    for spec in $(missing); do
        name=${spec%@*}
        dir=node_modules/.isolated/${name//\//__}
        mkdir -p "$dir"
        if npm install --prefix "$dir" "${npm_flags[@]}" "$spec" >"$log" 2>&1; then
            for bin in "$dir"/node_modules/.bin/*; do
                [ -e "$bin" ] && ln -sf "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" node_modules/.bin/
            done
            echo "install-clis: installed $spec on its own" >&2
        else
            echo "install-clis: could NOT install $spec; its tests will be skipped. npm said:" >&2
            tail -n 8 "$log" | sed 's/^/  npm: /' >&2
        fi
    done
fi
rm -f "$log"

echo "install-clis: pinned / installed:"
versions | awk -F'\t' '{flag = ($2 == $3) ? "" : "   <-- MISSING"; print "  " $1 " " $2 " / " $3 flag}'
ls node_modules/.bin 2>/dev/null | tr '\n' ' ' | sed 's/^/install-clis: bins: /'
echo
if [ -n "$(missing)" ]; then
    echo "install-clis: not installed: $(missing | tr '\n' ' ')" >&2
    exit 3
fi
exit 0
