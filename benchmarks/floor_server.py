"""The floor: the least a Python stdio JSON-RPC server can cost. It reads a line,
parses it, and answers with a constant. handrail's figures are reported against it."""

import json
import sys


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" in message:
            out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(message["id"]).encode() + b',"result":{}}\n')
            out.flush()


if __name__ == "__main__":
    main()
