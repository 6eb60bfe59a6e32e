// The experiment dashboard: joins the experiment's researcher room over Socket.IO and, told
// that something changed, fetches and redraws the progress figures and, when turns or surveys
// come in or a newer stored analysis landed, the results tables and charts. Everything a writer typed is set with textContent, never parsed as HTML.
(function () {
  "use strict";

  const root = document.getElementById("dashboard");
  if (!root) return;
  const experiment = root.dataset.experiment;
  const RESULTS_DELAY_MS = 3000;
  const PROGRESS_POLL_MS = 30000; // dropouts depend on time, not only on events
  const PROGRESS_DELAY_MS = 250;
  const WRITERS_DELAY_MS = 1000;
  let resultsTimer = null;
  let writersTimer = null;
  let progressTimer = null;

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function setConnection(text, kind) {
    const badge = document.getElementById("connection");
    badge.textContent = text;
    badge.className = "connection" + (kind ? " " + kind : "");
  }

  function showProgress(progress) {
    const display = progress.display || {};
    root.querySelectorAll("[data-progress]").forEach((node) => {
      const key = node.dataset.progress;
      const value = key in display ? display[key] : progress[key];
      if (value !== undefined) node.textContent = String(value);
      if (key === "status") node.className = "badge status-" + progress.status;
    });
    const list = document.getElementById("per-pair");
    const items = Object.entries(progress.per_pair || {}).map(([pair, n]) => el("li", pair + ": " + n));
    if (!items.length) items.push(el("li", "none yet", "muted"));
    list.replaceChildren(...items);
  }

  function table(spec) {
    const section = el("section", null, "result-table");
    section.dataset.key = spec.key;
    section.appendChild(el("h3", spec.title));
    const scroll = el("div", null, "scroll");
    const tableNode = el("table");
    const head = el("tr");
    spec.columns.forEach((c) => head.appendChild(el("th", c)));
    tableNode.appendChild(el("thead")).appendChild(head);
    const body = el("tbody");
    spec.rows.forEach((row) => {
      const tr = el("tr");
      row.forEach((cell) => tr.appendChild(el("td", cell)));
      body.appendChild(tr);
    });
    tableNode.appendChild(body);
    scroll.appendChild(tableNode);
    section.appendChild(scroll);
    spec.notes.forEach((note) => section.appendChild(el("p", note, "muted small")));
    return section;
  }

  // The results come from the stored analysis; while a newer one is computed (or waits for
  // its turn) the page asks again, and the push "analysis_stored" says when one landed.
  const ANALYSIS_RETRY_MS = 5000;

  function showResults(results) {
    const status = document.getElementById("analysis-status");
    status.textContent = results.analysis.text;
    status.dataset.state = results.analysis.state;
    if (results.analysis.state !== "current" && results.analysis.state !== "failed") {
      if (resultsTimer === null) resultsTimer = setTimeout(refreshResults, ANALYSIS_RETRY_MS);
    }
    if (results.version === root.dataset.version) return;
    const tables = results.tables.map(table);
    if (!tables.length) tables.push(el("p", "No submitted round yet.", "muted"));
    document.getElementById("results-tables").replaceChildren(...tables);
    document.getElementById("results-status").textContent = results.notes.join(" ");
    root.dataset.version = results.version;
    root.querySelectorAll("img.chart").forEach((img) => {
      img.src = img.dataset.src + "?v=" + encodeURIComponent(results.version);
    });
  }

  async function fetchJson(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok || !response.headers.get("Content-Type").includes("json")) {
      throw new Error("Please log in again.");
    }
    return response.json();
  }

  function refreshResults() {
    resultsTimer = null;
    fetchJson(root.dataset.resultsUrl).then(showResults).catch((error) => {
      document.getElementById("results-status").textContent = "Could not refresh: " + error.message;
    });
  }

  function scheduleResults() {
    if (resultsTimer === null) resultsTimer = setTimeout(refreshResults, RESULTS_DELAY_MS);
  }

  function showWriters(writers) {
    const rows = writers.map((w) => {
      const tr = el("tr");
      const link = el("a", w.participant);
      link.dir = "auto"; // isolated: a direction control in an imported id stays in it
      link.href = w.replay_url;
      tr.appendChild(el("td")).appendChild(link);
      tr.appendChild(el("td", w.pair));
      tr.appendChild(el("td", w.status));
      tr.appendChild(el("td", w.rounds));
      tr.appendChild(el("td", w.started_at, "small"));
      tr.appendChild(el("td", w.updated_at, "small"));
      tr.appendChild(el("td", w.time));
      return tr;
    });
    if (!rows.length) {
      const empty = el("td", "No writer yet.", "muted");
      empty.colSpan = 7;
      const tr = el("tr");
      tr.appendChild(empty);
      rows.push(tr);
    }
    document.getElementById("writers-body").replaceChildren(...rows);
  }

  function refreshWriters() {
    writersTimer = null;
    fetchJson(root.dataset.writersUrl).then(showWriters).catch(() => setConnection("logged out?", "lost"));
  }

  function scheduleWriters() {
    if (writersTimer === null) writersTimer = setTimeout(refreshWriters, WRITERS_DELAY_MS);
  }

  function refreshProgress() {
    progressTimer = null;
    fetchJson(root.dataset.progressUrl).then(showProgress).catch(() => setConnection("logged out?", "lost"));
    scheduleWriters();
  }

  // A burst of writers' actions becomes one fetch.
  function scheduleProgress() {
    if (progressTimer === null) progressTimer = setTimeout(refreshProgress, PROGRESS_DELAY_MS);
  }

  const socket = io({ transports: ["websocket", "polling"] });
  socket.on("connect", () => {
    socket.emit("research_join", { experiment: experiment }, (ack) => {
      if (ack && ack.ok) {
        setConnection("live", "ok");
        showProgress(ack.progress);
        scheduleWriters(); // catch up with anything missed while disconnected
        scheduleResults();
      } else {
        setConnection((ack && ack.error) || "not connected", "lost");
      }
    });
  });
  socket.on("disconnect", () => setConnection("reconnecting…", "lost"));
  socket.on("research_update", (update) => {
    if (update.experiment !== experiment) return;
    scheduleProgress(); // the push carries no data: read it over HTTP, where the login is checked
    if (update.results_changed) scheduleResults();
  });
  setInterval(refreshProgress, PROGRESS_POLL_MS);
})();
