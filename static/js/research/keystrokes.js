// The keystroke-grain replay: plays a session's record back row by row (play / pause, speed
// 1×, 2×, 5×, 20×), on a timeline whose marks (pauses over 2 s, pastes, switches) come from
// cyoa/cowriting/process/timeline.py; the range input scrubs (arrow keys step one row). Each
// row's operation is applied to its box as the server's reconstruction does: at a position
// in code points, `deleted` removed and `inserted` put in; an edit box starts as its
// suggestion. Without this script the page shows the summary and the list of marks.
(function () {
  "use strict";

  const data = document.getElementById("ks-data");
  const player = document.getElementById("ks-player");
  if (!data || !player) return;
  const { rows, suggestions } = JSON.parse(data.textContent);
  const $ = (id) => document.getElementById(id);
  const play = $("ks-play");
  const speed = $("ks-speed");
  const scrub = $("ks-scrub");
  // Waits longer than this (at 1×) are shortened: the timeline marks the pause.
  const LONGEST_WAIT_MS = 3000;
  // A row's columns (COLUMNS in cyoa/cowriting/process/store.py), `at_ms` since the first row.
  const [SEQ, ROUND, AT, KIND, BOX, SLOT, POSITION, DELETED, INSERTED, SOURCE] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

  // After row k (k from 1): each box's text, shared between frames where it did not change.
  const frames = [{ round: rows.length ? rows[0][ROUND] : 1, texts: {} }];
  for (const row of rows) {
    const last = frames[frames.length - 1];
    const texts = row[ROUND] === last.round ? { ...last.texts } : {};
    if (row[KIND] === "text") {
      const name = row[BOX] === "line" ? "line" : `edit-${row[SLOT]}`;
      const before = texts[name] !== undefined ? texts[name]
        : row[BOX] === "line" ? "" : suggestions[`${row[ROUND]}:${row[SLOT]}`] || "";
      const chars = Array.from(before);
      const removed = Array.from(row[DELETED] || "").length;
      chars.splice(row[POSITION], removed, ...Array.from(row[INSERTED] || ""));
      texts[name] = chars.join("");
    }
    frames.push({ round: row[ROUND], texts });
  }

  function describe(row) {
    const where = row[BOX] === "line" ? "the line" : `suggestion ${row[SLOT]}`;
    if (row[KIND] === "view") return `suggestion ${row[SLOT]}: ${row[SOURCE]}`;
    if (row[KIND] === "page") return `the page: ${row[SOURCE]}`;
    const parts = [];
    if (row[DELETED]) parts.push(`removed “${row[DELETED]}”`);
    if (row[INSERTED]) parts.push(`put in “${row[INSERTED]}”`);
    return `${row[SOURCE]} in ${where}: ${parts.join(", ")}`;
  }

  let at = 0;
  let timer = null;

  function show(k) {
    at = Math.max(0, Math.min(rows.length, k));
    scrub.value = String(at);
    const frame = frames[at];
    $("ks-round").textContent = `Round ${frame.round}`;
    $("ks-line").textContent = frame.texts.line || "";
    for (const slot of [1, 2]) {
      const text = frame.texts[`edit-${slot}`];
      $(`ks-edit-${slot}`).textContent = text !== undefined ? text : "(not opened)";
    }
    const row = at ? rows[at - 1] : null;
    const seconds = row ? (row[AT] / 1000).toFixed(1) : "0.0";
    $("ks-position").textContent = `Row ${at} of ${rows.length} · ${seconds} s`;
    $("ks-row").textContent = row ? `#${row[SEQ]}: ${describe(row)}` : "Before the first row.";
  }

  function stop() {
    clearTimeout(timer);
    timer = null;
    play.textContent = "Play";
    play.setAttribute("aria-pressed", "false");
  }

  function step() {
    if (at >= rows.length) { stop(); return; }
    show(at + 1);
    if (at >= rows.length) { stop(); return; }
    const wait = Math.min(rows[at][AT] - rows[at - 1][AT], LONGEST_WAIT_MS);
    timer = setTimeout(step, Math.max(0, wait) / Number(speed.value));
  }

  play.addEventListener("click", () => {
    if (timer) { stop(); return; }
    if (at >= rows.length) show(0);
    play.textContent = "Pause";
    play.setAttribute("aria-pressed", "true");
    step();
  });
  scrub.addEventListener("input", () => { stop(); show(Number(scrub.value)); });
  for (const button of document.querySelectorAll("#ks-marks button[data-row]")) {
    button.addEventListener("click", () => { stop(); show(Number(button.dataset.row)); scrub.focus(); });
  }
  for (const mark of document.querySelectorAll(".ks-mark[data-left]")) {
    mark.style.left = `${mark.dataset.left}%`;
  }
  player.hidden = false;
  show(0);
})();
