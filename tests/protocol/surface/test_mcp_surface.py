"""The optional MCP a client may use, through a real `handrail start` process:
`logging/setLevel` with `notifications/message`, `completion/complete`,
`resources/subscribe` and `unsubscribe` with `notifications/resources/updated`,
and -32002 for an unknown resource. Raw lines first, then the official SDK client,
then what the stateless HTTP transport does with the same requests."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import CORPUS
from tests.helpers.http import HttpServer
from tests.helpers.server import LATEST, ROOT, Server

LOOPS = CORPUS / "workflows" / "examples" / "loops"
pytestmark = [pytest.mark.corpus, pytest.mark.slow]  # serves and edits copies of the corpus's loop examples
BATCH = "simple-batch-example"
RETRY = "simple-retry-example"
WAIT = 15.0  # the catalog looks every fraction of a second; a loaded machine may take longer


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Two workflows the test may edit while the server runs."""
    shutil.copy(LOOPS / "simple-batch.json", tmp_path / "simple-batch.json")
    shutil.copy(LOOPS / "simple-retry.json", tmp_path / "simple-retry.json")
    return tmp_path


@pytest.fixture
def live(folder: Path) -> Iterator[Server]:
    with Server("--no-bundled", "--workflows", str(folder)) as server:
        server.initialize()
        server.result("resources/list")  # the catalog is compiled: later changes are news
        yield server


def wait_for(server: Server, found: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The first notification `found` accepts, pinging so that queued ones are read."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for note in server.notifications:
            if found(note):
                return note
        server.result("ping")
        time.sleep(0.05)
    raise AssertionError(f"no such notification within {WAIT}s; got {server.notifications}")


def messages(server: Server) -> list[dict[str, Any]]:
    return [n["params"] for n in server.notifications if n["method"] == "notifications/message"]


def edit(path: Path, **changes: Any) -> None:
    document = json.loads(path.read_text("utf-8"))
    document.update(changes)
    path.write_text(json.dumps(document), "utf-8")


# -- capabilities -------------------------------------------------------------------------------


def test_initialize_declares_logging_completions_and_subscriptions(live: Server) -> None:
    assert live.initialized is not None
    capabilities = live.initialized["capabilities"]
    assert capabilities["logging"] == {} and capabilities["completions"] == {}
    assert capabilities["resources"] == {"listChanged": True, "subscribe": True}


def test_the_template_for_workflow_uris_is_listed(live: Server) -> None:
    [template] = live.result("resources/templates/list")["resourceTemplates"]
    assert template["uriTemplate"] == "workflow://{id}"


# -- logging ------------------------------------------------------------------------------------


def test_log_records_at_or_above_the_level_reach_the_client(live: Server, folder: Path) -> None:
    assert live.result("logging/setLevel", {"level": "warning"}) == {}
    (folder / "simple-retry.json").write_text('{"id": "simple-retry-example",', "utf-8")
    record = wait_for(live, lambda n: n["method"] == "notifications/message")["params"]
    assert record["level"] == "warning" and record["logger"] == "handrail.catalog"
    assert "simple-retry.json" in record["data"]
    assert live.stderr_has("simple-retry.json"), "stderr keeps the log as before"
    assert all(m["level"] != "info" for m in messages(live)), "info is below the level set"
    assert "workflows reloaded" not in live.stderr, "stderr keeps its own level (warning)"

    assert live.result("logging/setLevel", {"level": "info"}) == {}
    shutil.copy(LOOPS / "simple-retry.json", folder / "simple-retry.json")
    record = wait_for(
        live, lambda n: n["method"] == "notifications/message" and n["params"]["level"] == "info"
    )
    assert record["params"] == {
        "level": "info",
        "logger": "handrail.catalog",
        "data": "workflows reloaded: 2 in service",
    }
    assert "workflows reloaded" not in live.stderr


def test_no_log_record_is_sent_before_a_level_is_set(live: Server, folder: Path) -> None:
    (folder / "simple-retry.json").write_text("{", "utf-8")
    assert live.stderr_has("simple-retry.json")
    wait_for(live, lambda n: n["method"] == "notifications/prompts/list_changed")
    assert messages(live) == []


def test_a_level_above_every_record_sends_none(live: Server, folder: Path) -> None:
    assert live.result("logging/setLevel", {"level": "emergency"}) == {}
    (folder / "simple-retry.json").write_text("{", "utf-8")
    assert live.stderr_has("simple-retry.json")
    wait_for(live, lambda n: n["method"] == "notifications/prompts/list_changed")
    assert messages(live) == []


@pytest.mark.parametrize("level", ["verbose", "WARNING", None, 3])
def test_an_unknown_level_is_invalid_params_naming_the_levels(live: Server, level: Any) -> None:
    error = live.error("logging/setLevel", {"level": level})
    assert error["code"] == -32602
    assert "debug, info, notice, warning, error, critical, alert, emergency" in error["data"]["details"]


# -- completion ---------------------------------------------------------------------------------


def complete(server: Server, ref: dict[str, Any], name: str, value: str) -> dict[str, Any]:
    result = server.result("completion/complete", {"ref": ref, "argument": {"name": name, "value": value}})
    completion: dict[str, Any] = result["completion"]
    return completion


def test_workflow_ids_complete_a_resource_uri(live: Server) -> None:
    ref = {"type": "ref/resource", "uri": "workflow://{id}"}
    assert complete(live, ref, "id", "simple-b") == {"values": [BATCH], "total": 1, "hasMore": False}
    assert complete(live, ref, "id", "")["values"] == [BATCH, RETRY]
    assert complete(live, ref, "id", "RETRY")["values"] == [RETRY], "a match inside the id, any case"
    assert complete(live, ref, "id", "nothing-like-it")["values"] == []


def test_workflow_ids_complete_a_prompt_argument(live: Server) -> None:
    ref = {"type": "ref/prompt", "name": BATCH}
    assert complete(live, ref, "workflowId", "simple-r")["values"] == [RETRY]
    assert complete(live, ref, "notes", "simple")["values"] == [], "only arguments that take an id"


def test_completion_is_bounded_with_total_and_has_more(tmp_path: Path) -> None:
    template = json.loads((LOOPS / "simple-batch.json").read_text("utf-8"))
    for i in range(105):
        (tmp_path / f"w{i:03}.json").write_text(json.dumps({**template, "id": f"w{i:03}"}), "utf-8")
    with Server("--no-bundled", "--workflows", str(tmp_path)) as server:
        server.initialize()
        ref = {"type": "ref/resource", "uri": "workflow://{id}"}
        completion = complete(server, ref, "id", "w")
        assert len(completion["values"]) == 100 and completion["values"][0] == "w000"
        assert completion["total"] == 105 and completion["hasMore"] is True
        assert complete(server, ref, "id", "w10") == {
            "values": ["w100", "w101", "w102", "w103", "w104"],
            "total": 5,
            "hasMore": False,
        }


@pytest.mark.parametrize(
    ("params", "detail"),
    [
        (
            {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}},
            "unknown prompt",
        ),
        (
            {"ref": {"type": "ref/resource", "uri": "file:///x"}, "argument": {"name": "id", "value": ""}},
            "template",
        ),
        ({"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "id", "value": ""}}, "ref.type"),
        ({"ref": {"type": "ref/prompt", "name": BATCH}}, "argument"),
        ({"argument": {"name": "id", "value": ""}}, "ref"),
        ({"ref": {"type": "ref/prompt", "name": BATCH}, "argument": {"name": "id", "value": 7}}, "value"),
    ],
)
def test_a_bad_completion_request_is_invalid_params(
    live: Server, params: dict[str, Any], detail: str
) -> None:
    error = live.error("completion/complete", params)
    assert error["code"] == -32602 and detail in error["data"]["details"]


# -- subscriptions ------------------------------------------------------------------------------


def test_a_subscribed_workflow_that_changes_is_announced(live: Server, folder: Path) -> None:
    assert live.result("resources/subscribe", {"uri": f"workflow://{BATCH}"}) == {}
    before = live.call("workflow_get", {"id": BATCH})  # the answer the server keeps for reuse
    assert json.loads(before["content"][0]["text"]) == before["structuredContent"]
    edit(folder / "simple-retry.json", description="changed, but nobody subscribed")
    wait_for(live, lambda n: n["method"] == "notifications/resources/list_changed")
    edit(folder / "simple-batch.json", description="a new description")
    note = wait_for(live, lambda n: n["method"] == "notifications/resources/updated")
    assert note == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": f"workflow://{BATCH}"},
    }
    updated = [n for n in live.notifications if n["method"] == "notifications/resources/updated"]
    assert updated == [note], "the unsubscribed workflow's change is not announced"
    [content] = live.result("resources/read", {"uri": f"workflow://{BATCH}"})["contents"]
    assert json.loads(content["text"])["description"] == "a new description"
    after = live.call("workflow_get", {"id": BATCH})  # not the answer kept from before
    assert after["structuredContent"]["description"] == "a new description"
    assert json.loads(after["content"][0]["text"]) == after["structuredContent"]


def test_after_unsubscribe_changes_are_not_announced(live: Server, folder: Path) -> None:
    uri = f"workflow://{BATCH}"
    assert live.result("resources/subscribe", {"uri": uri}) == {}
    assert live.result("resources/unsubscribe", {"uri": uri}) == {}
    assert live.result("resources/unsubscribe", {"uri": uri}) == {}, "twice is no error"
    edit(folder / "simple-batch.json", description="changed")
    wait_for(live, lambda n: n["method"] == "notifications/resources/list_changed")
    live.result("ping")
    assert not [n for n in live.notifications if n["method"] == "notifications/resources/updated"]


def test_a_subscribed_workflow_that_is_deleted_is_announced(live: Server, folder: Path) -> None:
    assert live.result("resources/subscribe", {"uri": f"workflow://{RETRY}"}) == {}
    (folder / "simple-retry.json").unlink()
    note = wait_for(live, lambda n: n["method"] == "notifications/resources/updated")
    assert note["params"] == {"uri": f"workflow://{RETRY}"}


@pytest.mark.parametrize("uri", ["workflow://no-such-workflow", "test://watched-resource"])
def test_subscribing_to_an_unknown_resource_is_resource_not_found(live: Server, uri: str) -> None:
    error = live.error("resources/subscribe", {"uri": uri})
    assert error == {"code": -32002, "message": f"Resource not found: `{uri}`", "data": {"uri": uri}}


def test_subscribe_without_a_uri_is_invalid_params(live: Server) -> None:
    assert live.error("resources/subscribe", {})["code"] == -32602
    assert live.error("resources/unsubscribe", {"uri": 5})["code"] == -32602


# -- the official SDK client --------------------------------------------------------------------


async def _sdk_session(folder: Path, home: Path) -> dict[str, Any]:
    record: dict[str, Any] = {"logs": [], "updated": []}

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        record["logs"].append(params)

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            record["updated"].append(str(message.params.uri))

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "start", "--no-bundled", "--workflows", str(folder)],
        env={"HOME": str(home), "PYTHONPATH": str(ROOT / "src")},
        cwd=home,
    )
    with (home / "stderr.log").open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, logging_callback=on_log, message_handler=on_message) as session,
        ):
            with anyio.fail_after(60):
                record["initialize"] = await session.initialize()
                record["set_level"] = await session.set_logging_level("warning")
                record["completion"] = await session.complete(
                    types.ResourceTemplateReference(uri="workflow://{id}"),
                    {"name": "id", "value": "simple-r"},
                )
                record["subscribe"] = await session.subscribe_resource(f"workflow://{BATCH}")
                try:
                    await session.subscribe_resource("workflow://no-such-workflow")
                except MCPError as exc:
                    record["unknown"] = exc
                edit(folder / "simple-batch.json", description="changed")
                (folder / "simple-retry.json").write_text("{", "utf-8")
                while not (record["updated"] and record["logs"]):
                    await session.send_ping()
                    await anyio.sleep(0.05)
                record["unsubscribe"] = await session.unsubscribe_resource(f"workflow://{BATCH}")
    return record


# The SDK warns that the 2026-07-28 revision drops both: the handshake era still has them.
@pytest.mark.filterwarnings("ignore:.*2026-07-28")
def test_the_sdk_client_uses_logging_completion_and_subscriptions(
    folder: Path, tmp_path_factory: Any
) -> None:
    record = anyio.run(_sdk_session, folder, tmp_path_factory.mktemp("home"))
    capabilities: types.ServerCapabilities = record["initialize"].capabilities
    assert capabilities.logging is not None and capabilities.completions is not None
    assert capabilities.resources is not None and capabilities.resources.subscribe is True
    assert isinstance(record["set_level"], types.EmptyResult)
    assert record["completion"].completion.values == [RETRY]
    assert record["completion"].completion.total == 1
    assert isinstance(record["subscribe"], types.EmptyResult)
    assert record["unknown"].code == -32002
    assert record["updated"][0] == f"workflow://{BATCH}"
    log: types.LoggingMessageNotificationParams = record["logs"][0]
    assert log.level == "warning" and log.logger == "handrail.catalog"
    assert isinstance(record["unsubscribe"], types.EmptyResult)


# -- the stateless HTTP transport ---------------------------------------------------------------


def test_over_http_completion_works_and_subscriptions_are_not_offered(folder: Path) -> None:
    with HttpServer("--no-bundled", "--workflows", str(folder)) as http:
        init = {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        capabilities = http.rpc("initialize", init)["result"]["capabilities"]
        assert capabilities["resources"]["subscribe"] is False
        assert capabilities["logging"] == {} and capabilities["completions"] == {}
        # accepted, but there is no stream to send records on: they stay in the server's log
        assert http.rpc("logging/setLevel", {"level": "debug"})["result"] == {}
        ref = {"type": "ref/prompt", "name": BATCH}
        completion = http.rpc(
            "completion/complete", {"ref": ref, "argument": {"name": "workflowId", "value": "s"}}
        )
        assert completion["result"]["completion"]["values"] == [BATCH, RETRY]
        for method in ("resources/subscribe", "resources/unsubscribe"):
            refused = http.rpc(method, {"uri": f"workflow://{BATCH}"})["error"]
            assert refused["code"] == -32601 and refused["data"]["method"] == method
            assert "stdio" in refused["data"]["details"]
        modern = http.modern(
            "completion/complete", {"ref": ref, "argument": {"name": "workflowId", "value": "simple-b"}}
        )
        assert modern.json()["result"]["completion"]["values"] == [BATCH]
