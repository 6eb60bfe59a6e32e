// The rating experiment's dashboard, live: every few seconds it asks for progress.json and
// redraws the progress figures, what the stored analysis counted and what is being computed,
// the agreement and quality-control tables and, when a newer analysis landed, the charts and
// the results tables. Raters' answers never reach this script; what
// it shows is set with textContent, never parsed as HTML.
(function () {
  "use strict";

  const root = document.getElementById("rating-dashboard");
  if (!root) return;
  const POLL_MS = Number(root.dataset.pollMs) || 5000;
  const status = document.getElementById("live-status");

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function row(cells, className) {
    const tr = el("tr", null, className);
    cells.forEach((cell) => tr.appendChild(cell instanceof Node ? cell : el("td", cell)));
    return tr;
  }

  function emptyRow(text, columns) {
    const cell = el("td", text, "muted");
    cell.colSpan = columns;
    return row([cell]);
  }

  function fill(id, rows, empty, columns) {
    const body = document.getElementById(id);
    if (!body) return;
    body.replaceChildren(...(rows.length ? rows : [emptyRow(empty, columns)]));
  }

  function showProgress(progress) {
    root.querySelectorAll("[data-progress]").forEach((node) => {
      const value = progress[node.dataset.progress];
      node.querySelector("dd").textContent = value === null || value === undefined ? "–" : String(value);
    });
  }

  function showAnalysis(analysis) {
    const node = document.getElementById("analysis-status");
    node.textContent = analysis.text;
    node.dataset.state = analysis.state;
  }

  function showAgreement(agreement, empty) {
    document.getElementById("agreement-headline").textContent = agreement.headline;
    const rows = agreement.rows.map((r) => row([r.item, r.label, r.level, r.all, r.kept, r.stories, r.agree]));
    fill("agreement-body", rows, empty, 7);
    document.getElementById("agreement-note").textContent = agreement.note;
    const warnings = document.getElementById("agreement-warnings");
    warnings.replaceChildren(...(agreement.warnings || []).map((warning) => el("li", "‡ " + warning)));
    warnings.hidden = !warnings.children.length;
  }

  function showQuality(rules, quality) {
    fill("rules-body", rules.map((r) => row([r.description, r.raters, r.only_this_rule])), "", 3);
    const rows = quality.map((r) => {
      // Ids may be imported: each isolated, so a direction control in one stays in it.
      const link = el("a", r.rater);
      link.dir = "auto";
      link.href = r.url;
      const first = el("td");
      first.appendChild(link);
      const platform = el("td");
      platform.appendChild(el("bdi", r.platform_id));
      return row(
        [
          first, platform, r.failed_checks, r.seconds, r.words_per_minute,
          r.straight_lined, r.severity, r.rules,
        ],
        r.excluded ? "flagged" : ""
      );
    });
    fill("quality-body", rows, "No rater has answered yet.", 8);
  }

  function showTables(tables, empty) {
    const holder = document.getElementById("results-tables");
    const open = new Set(
      Array.from(holder.querySelectorAll("details[open]")).map((d) => d.dataset.table)
    );
    const nodes = tables.map((table) => {
      const key = table.raters + ":" + table.name;
      const details = el("details");
      details.dataset.table = key;
      details.open = open.has(key);
      const summary = el("summary", table.name.replaceAll("_", " ") + " ");
      summary.appendChild(el("span", `(${table.raters} raters)`, "muted"));
      details.appendChild(summary);
      if (table.note) details.appendChild(el("p", table.note, "muted small"));
      const scroll = el("div", null, "scroll");
      const node = el("table");
      node.appendChild(row([el("th"), ...table.columns.map((c) => el("th", c))]));
      table.rows.forEach((cells) => node.appendChild(row([el("th", cells[0]), ...cells.slice(1)])));
      scroll.appendChild(node);
      details.appendChild(scroll);
      return details;
    });
    if (!nodes.length) nodes.push(el("p", empty, "muted"));
    if (!open.size && nodes[0].tagName === "DETAILS") nodes[0].open = true;
    holder.replaceChildren(...nodes);
  }

  function showCharts(version) {
    root.querySelectorAll("img.chart").forEach((img) => {
      img.src = img.dataset.src + "?v=" + encodeURIComponent(version);
    });
  }

  async function refresh() {
    if (document.hidden) {
      setTimeout(refresh, POLL_MS);
      return;
    }
    try {
      const response = await fetch(root.dataset.progressUrl, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      const type = response.headers.get("Content-Type") || "";
      if (!response.ok || !type.includes("json")) throw new Error("please log in again and reload");
      const data = await response.json();
      showProgress(data.progress);
      showAnalysis(data.analysis);
      showAgreement(data.agreement, data.empty);
      showQuality(data.rules, data.quality);
      document.getElementById("quality-note").textContent = data.quality_note || "";
      if (data.version !== root.dataset.version) {
        root.dataset.version = data.version;
        showTables(data.tables, data.empty);
        showCharts(data.version);
      }
      // UTC, as every time on the researcher's pages (the analysis' "as of" included).
      status.textContent = "live: updated " + new Date().toISOString().slice(11, 19) + " UTC";
    } catch (error) {
      status.textContent = "Could not refresh: " + error.message + ".";
    }
    setTimeout(refresh, POLL_MS);
  }

  setTimeout(refresh, POLL_MS);
})();
