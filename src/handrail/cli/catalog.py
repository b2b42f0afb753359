"""`handrail check`, `list`, `sources`, `graph` and `walk`: the workflow files and the
catalog they make, for people."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from handrail.cli import options
from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE
from handrail.model.version import __version__


def add_check(check: argparse.ArgumentParser) -> None:
    check.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (recursive)")
    check.add_argument(
        "--format",
        choices=["text", "json", "sarif"],
        default="text",
        help="text (default): a line per problem; json; sarif, for code-scanning tools",
    )
    options.add_file_size_option(check)
    options.add_check_options(check, serving=False)
    from handrail.cli.migrate import add_against_runs_options  # lazy: the run modules load with it

    add_against_runs_options(check)


def add_list(listing: argparse.ArgumentParser) -> None:
    options.add_source_options(listing)
    listing.add_argument("--format", choices=["text", "json"], default="text", help="default text")


def add_sources(sources: argparse.ArgumentParser) -> None:
    options.add_source_options(sources)
    sources.add_argument("--json", action="store_true", help="the sources as JSON")


def add_graph(graph: argparse.ArgumentParser) -> None:
    graph.add_argument("workflow_id", metavar="ID", help="the workflow's id")
    graph.add_argument(
        "--format", choices=["mermaid", "dot"], default="mermaid", help="Mermaid (default) or Graphviz dot"
    )
    options.add_source_options(graph)


def add_walk(walk: argparse.ArgumentParser) -> None:
    walk.add_argument("workflow_id", metavar="ID", help="the workflow's id")
    walk.add_argument("--context", default=None, metavar="JSON", help="the initial context, a JSON object")
    walk.add_argument(
        "--auto",
        action="store_true",
        help="answer every prompt with a canned output and the first value a condition looks for",
    )
    options.add_source_options(walk)


def check_files(paths: Sequence[str]) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    missing: list[str] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.json") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            missing.append(item)
    return files, missing


def check(args: argparse.Namespace) -> int:
    from handrail.compiler import compile_path  # lazy: loaded when the command runs

    files, missing = check_files(args.paths)
    for item in missing:
        print(f"handrail check: no such file or folder: {item}", file=sys.stderr)
    if missing:
        return EXIT_USAGE
    for item in args.paths:  # "checked 0 files" alone reads as a clean bill
        if Path(item).is_dir() and not any(f.is_relative_to(item) for f in files):
            print(f"handrail check: warning: no workflow files (*.json) in {item}", file=sys.stderr)
    config = options.check_config_of(args, "check")
    if config is None:
        return EXIT_USAGE
    # command names are checked only against a configuration that names some
    commands = config.commands if config.commands_configured else None
    diagnostics: list[Any] = []
    compiled = []
    for path in files:
        result = compile_path(path, max_bytes=args.max_file_size, commands=commands)
        diagnostics.extend(result.diagnostics)
        if result.workflow is not None:
            compiled.append((result.file, result.workflow))
    diagnostics.extend(_subworkflow_problems(compiled))
    workflows: list[Any] = [workflow for _, workflow in compiled]
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    if args.format == "json":
        print(json.dumps([d.as_dict() for d in diagnostics], indent=2, ensure_ascii=False))
    elif args.format == "sarif":
        print(json.dumps(sarif(diagnostics), indent=2, ensure_ascii=False))
    else:
        from handrail.cli.colour import severity  # lazy: only where diagnostics are printed

        for d in diagnostics:
            print(severity(d.render(), d.severity, sys.stdout))
        noun = "file" if len(files) == 1 else "files"
        print(
            f"checked {len(files)} {noun}: {errors} error{'s' * (errors != 1)}, "
            f"{warnings} warning{'s' * (warnings != 1)}"
        )
    if args.against_runs:
        from handrail.cli.migrate import stranded  # lazy: loads the run store

        errors += stranded(args, workflows)
    return EXIT_ERRORS if errors else EXIT_OK


def _subworkflow_problems(compiled: list[tuple[str, Any]]) -> list[Any]:
    """Sub-workflow steps checked across the files (unknown ids, cycles), the bundled
    workflows counting as known."""
    if not any(getattr(n, "subworkflow", None) for _, w in compiled for n in w.nodes.values()):
        return []  # the usual check: nothing to load
    from handrail.catalog import load_catalog  # lazy: only files with sub-workflow steps need it
    from handrail.catalog.subworkflows import subworkflow_problems  # lazy: as above

    bundled = load_catalog(bundled=True).snapshot().entries
    return subworkflow_problems(compiled, bundled)


def sarif(diagnostics: Sequence[Any]) -> dict[str, Any]:
    from handrail.compiler.codes import CODES  # lazy: loaded when the command runs

    used = sorted({d.code for d in diagnostics})
    rules = [{"id": code, "shortDescription": {"text": CODES.get(code, code)}} for code in used]
    results = []
    for d in diagnostics:
        message = d.message + (f" ({d.hint})" if d.hint else "")
        results.append(
            {
                "ruleId": d.code,
                "level": "error" if d.severity == "error" else "warning",
                "message": {"text": message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": Path(d.file).as_posix()},
                            "region": {"startLine": d.line, "startColumn": d.column},
                        },
                        "logicalLocations": [{"fullyQualifiedName": d.pointer or "/", "kind": "element"}],
                    }
                ],
            }
        )
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "handrail",
                        "version": __version__,
                        "informationUri": "https://handrail.dev",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }


def list_command(args: argparse.Namespace) -> int:
    catalog = options.catalog_of(args, quiet=True)  # every problem is printed below, once
    snapshot = catalog.snapshot()
    rows = [
        {
            "id": e.item.id,
            "name": e.item.name,
            "version": e.item.version,
            "source": e.source.name,
            "file": e.item.file,
            "steps": e.item.step_count,
            "stale": e.stale,
            **({"git": dict(e.origin)} if e.origin is not None else {}),
        }
        for e in snapshot.entries.values()
    ]
    broken = [d.as_dict() for d in snapshot.problems]
    code = EXIT_ERRORS if any(d.severity == "error" for d in snapshot.problems) else EXIT_OK
    if _named_missing(args):
        code = EXIT_USAGE
    if args.format == "json":
        print(json.dumps({"workflows": rows, "diagnostics": broken}, indent=2, ensure_ascii=False))
        return code
    width = max([len(r["id"]) for r in rows] + [2])
    for r in rows:
        stale = "  (file broken: serving last good version)" if r["stale"] else ""
        commit = f"  (git {str(r['git']['commit'])[:12]})" if "git" in r else ""
        print(
            f"{r['id']:<{width}}  {r['version']:<8} {r['steps']:>3} steps  {r['source']:<8} "
            f"{r['name']}{stale}{commit}"
        )
    if broken:  # on stderr: the listing on stdout stays a listing (`handrail list | ...`)
        print(f"{len(broken)} problem{'s' * (len(broken) != 1)} in workflow files:", file=sys.stderr)
        from handrail.cli.colour import severity  # lazy: only where diagnostics are printed

        for d in snapshot.problems:
            print("  " + severity(d.render(), d.severity, sys.stderr), file=sys.stderr)
    print(f"\n{len(rows)} workflow{'s' * (len(rows) != 1)}")
    return code


def _named_missing(args: argparse.Namespace) -> bool:
    """Whether a --workflows path is not there: a usage mistake, as for `check`."""
    paths = [Path(item).expanduser() for item in args.workflows if not item.startswith("git+")]
    return any(not path.exists() and not path.is_symlink() for path in paths)


def sources(args: argparse.Namespace) -> int:
    catalog = options.catalog_of(args)
    snapshot = catalog.snapshot()
    if args.json:
        print(json.dumps({"sources": _sources_json(catalog.sources, snapshot)}, indent=2, ensure_ascii=False))
        return EXIT_OK
    for rank, source in enumerate(catalog.sources, 1):
        exists = source.path.exists()
        count = snapshot.per_source.get(source, 0)
        state = f"{count} workflow{'s' * (count != 1)}" if exists else "missing"
        if source.git is not None:  # the repository, the commit served, and a failed fetch
            git = source.git
            at = f"commit {git.commit}" if git.commit else "nothing fetched"
            print(f"{rank}. {source.name:<28} {git.spec.shown}  [{state}, {at}]")
            print(f"     checkout {source.path}")
            if git.error:
                print(f"     cannot fetch: {git.error}")
        else:
            print(f"{rank}. {source.name:<28} {source.path}  [{state}]")
        for workflow_id, winner, loser in snapshot.overrides:
            if winner == source:
                print(f"     overrides `{workflow_id}` from {loser.name} ({loser.path})")
    print("\nLater sources take precedence over earlier ones.")
    return EXIT_OK


def _sources_json(sources: list[Any], snapshot: Any) -> list[dict[str, Any]]:
    """The sources as `handrail sources` lists them, in precedence order (last wins)."""
    found: list[dict[str, Any]] = []
    for source in sources:
        entry: dict[str, Any] = {
            "name": source.name,
            "path": str(source.path),
            "exists": source.path.exists(),
            "workflows": snapshot.per_source.get(source, 0),
            "overrides": [
                {"id": wid, "source": loser.name, "path": str(loser.path)}
                for wid, winner, loser in snapshot.overrides
                if winner == source
            ],
        }
        if source.git is not None:
            entry["git"] = {
                "spec": source.git.spec.shown,
                "commit": source.git.commit,
                "error": source.git.error,
            }
        found.append(entry)
    return found


def workflow_of(args: argparse.Namespace, command: str) -> Any:
    """The workflow named by args.workflow_id, or None after saying on stderr that there is none."""
    import difflib  # lazy: loaded when the command runs

    snapshot = options.catalog_of(args).snapshot()
    found = snapshot.get(args.workflow_id)
    if found is None:
        message = f"handrail {command}: no workflow `{args.workflow_id}`"
        close = difflib.get_close_matches(args.workflow_id, list(snapshot.entries), n=3, cutoff=0.5)
        broken = snapshot.why_broken(args.workflow_id)
        if broken is not None:
            message = f"handrail {command}: `{args.workflow_id}` is in a broken file: {broken.render()}"
        elif close:
            message += "; did you mean " + " or ".join(f"`{c}`" for c in close) + "?"
        elif snapshot.entries:
            message += " (`handrail list` shows them all)"
        print(message, file=sys.stderr)
    return found


def graph(args: argparse.Namespace) -> int:
    from handrail.compiler.graph import render  # lazy: loaded when the command runs

    workflow = workflow_of(args, "graph")
    if workflow is None:
        return EXIT_ERRORS
    sys.stdout.write(render(workflow, args.format))
    return EXIT_OK


def walk_command(args: argparse.Namespace) -> int:
    from handrail.cli.walk import walk  # lazy: loaded when the command runs

    context: Any = {}
    if args.context is not None:
        from handrail.compiler.source import parse_json  # lazy: loaded when the command runs

        context, problem = parse_json(args.context)  # worded as `handrail check` words a file
        if problem is not None:
            why = problem.message.removeprefix("invalid JSON: ").replace("the file ends", "it ends")
            print(f"handrail walk: --context is not JSON, at column {problem.column}: {why}", file=sys.stderr)
            return EXIT_USAGE
        if not isinstance(context, dict):
            print("handrail walk: --context must be a JSON object", file=sys.stderr)
            return EXIT_USAGE
    workflow = workflow_of(args, "walk")
    if workflow is None:
        return EXIT_ERRORS
    code: int = walk(workflow, sys.stdin, sys.stdout, context=context, auto=args.auto)
    return code
