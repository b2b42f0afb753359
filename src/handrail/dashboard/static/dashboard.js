// The dashboard's only script (the Content-Security-Policy forbids inline script).
// Everything from the server is put in the page as text (textContent), never as HTML.
"use strict";

const POLL_MS = 1500;

function drawGraphs(root) {
  if (!window.mermaid) return;
  const nodes = Array.from(root.querySelectorAll("pre.mermaid:not([data-processed])"))
    .filter((el) => !el.closest("details:not([open])"));
  if (nodes.length) window.mermaid.run({ nodes: nodes });
}

function cell(text, code) {
  const td = document.createElement("td");
  const inner = document.createElement(code ? "code" : "span");
  inner.textContent = text;
  td.appendChild(inner);
  return td;
}

function stepCell(step) {
  const td = document.createElement("td");
  if (!step) {
    td.textContent = "–";
    return td;
  }
  td.append(step.title + " ");
  const code = document.createElement("code");
  code.textContent = step.id;
  td.appendChild(code);
  if (step.number) {
    const of = document.createElement("span");
    of.className = "of";
    of.textContent = "step " + step.number + " of " + step.of;
    td.append(" ");
    td.appendChild(of);
  }
  return td;
}

function timeCell(at, ago) {
  // the server says how long ago ("3 min ago"); the full time is on hover
  const td = document.createElement("td");
  const time = document.createElement("time");
  time.dateTime = at;
  time.title = at;
  time.textContent = ago;
  td.appendChild(time);
  return td;
}

function runRow(r) {
  const tr = document.createElement("tr");
  tr.className = "run" + (r.status === "awaiting_approval" ? " awaiting" : "")
    + (r.depth ? " below depth-" + Number(r.depth) : "") + (r.tampered ? " tampered" : "");
  tr.dataset.run = r.runId;
  if (r.parentId) tr.dataset.parent = r.parentId;
  const first = document.createElement("td");
  const link = document.createElement("a");
  link.href = "/runs/" + encodeURIComponent(r.runId);
  if (r.below) {
    // a branch or child, right under its run: what it is there, and its id
    const what = document.createElement("span");
    what.className = "below-what";
    what.textContent = "\u21b3 " + r.below;
    first.append(what, " ");
    const code = document.createElement("code");
    code.textContent = r.runId.slice(0, 12) + "\u2026";
    link.appendChild(code);
  } else {
    link.textContent = r.goal || r.runId;
  }
  first.appendChild(link);
  if (r.tampered) {
    // its row is not as handrail last wrote it: said as the page first drew it
    const mark = document.createElement("span");
    mark.className = "tampered-mark";
    mark.title = r.tampered.join("; ");
    mark.textContent = "tampered: " + r.tampered.join("; ");
    first.append(" ", mark);
  }
  tr.appendChild(first);
  const flow = cell(r.workflowId, true);
  flow.className = "wide";
  tr.appendChild(flow);
  const status = document.createElement("td");
  const badge = document.createElement("span");
  badge.className = "status status-" + r.status;
  badge.textContent = r.status.replace("_", " ");
  status.appendChild(badge);
  tr.appendChild(status);
  tr.appendChild(stepCell(r.currentStep));
  const who = cell(r.owner);
  who.className = "wide";
  tr.appendChild(who);
  const where = cell(r.workspace, true);
  where.className = "wide";
  tr.appendChild(where);
  tr.appendChild(timeCell(r.updatedAt, r.updatedAgo));
  return tr;
}

function watchRuns(table) {
  const query = new URLSearchParams();
  if (table.dataset.status) query.set("status", table.dataset.status);
  if (table.dataset.workflow) query.set("workflow", table.dataset.workflow);
  if (table.dataset.q) query.set("q", table.dataset.q);
  const live = document.getElementById("live");
  let last = "";
  async function poll() {
    try {
      const response = await fetch("/api/runs?" + query, { credentials: "same-origin" });
      if (!response.ok) throw new Error(String(response.status));
      const body = await response.text();
      if (body !== last) {
        last = body;
        const rows = JSON.parse(body).runs;
        table.tBodies[0].replaceChildren(...rows.map(runRow));
        document.getElementById("empty").hidden = rows.length > 0;
      }
      live.textContent = "live";
      live.className = "live";
    } catch (error) {
      live.textContent = "offline";
      live.className = "live off";
    }
    setTimeout(poll, POLL_MS);
  }
  setTimeout(poll, POLL_MS);
}

function watchRun(facts) {
  const url = "/api/runs/" + encodeURIComponent(facts.dataset.run);
  async function poll() {
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (response.ok) {
        const run = await response.json();
        const typing = document.activeElement && document.activeElement.tagName === "TEXTAREA"
          && document.activeElement.value;
        if (String(run.version) !== facts.dataset.version && !typing) {
          window.location.replace(window.location.pathname);
          return;
        }
      }
    } catch (error) { /* the server is away: try again */ }
    setTimeout(poll, POLL_MS);
  }
  setTimeout(poll, POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  if (window.mermaid) {
    window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral" });
    drawGraphs(document);
    document.querySelectorAll("details").forEach((d) =>
      d.addEventListener("toggle", () => { if (d.open) drawGraphs(d); }));
  }
  const table = document.getElementById("runs");
  if (table) watchRuns(table);
  const facts = document.getElementById("run");
  if (facts) watchRun(facts);
});
