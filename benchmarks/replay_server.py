"""The replay floor: a Python stdio server that answers each request with the bytes
handrail answered to the same request (recorded by benchmarks/stdio_bench.py), its
id spliced in. It reads and parses each line as the `{}` floor does, then writes an
answer as large as handrail's: what is left between handrail and this floor is
handrail's own work, not the size of the answer crossing the pipe.

    python benchmarks/replay_server.py ANSWERS.json
"""

import json
import sys


def main() -> None:
    # [request line without its id, answer before the id, answer after the id]
    with open(sys.argv[1], encoding="utf-8") as file:
        recorded = json.load(file)
    answers = {key.encode(): (head.encode(), tail.encode()) for key, head, tail in recorded}
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" in message:
            rid = json.dumps(message["id"]).encode()
            found = answers.get(line.replace(b'"id": ' + rid, b"", 1))
            if found is None:
                out.write(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{}}\n')
            else:
                out.write(found[0] + rid + found[1])
            out.flush()


if __name__ == "__main__":
    main()
