// The writing page. The server owns the rules and the state; this script draws the state it
// is sent, mirrors the length rules for a friendly UI, and sends the writer's actions. An
// action counts as saved only when the server acknowledges it (after its database commit).
// Text typed but not yet sent is kept in localStorage so a reload or crash loses nothing.
// Actions wait in an outbox until the connection has joined the story, so a click made while
// the server is down is sent once it is back; one answered "retry" (the server reconnecting to
// its database, say) is sent again, with its action id, until it is acknowledged; nothing too
// large for one message is sent. The outbox is kept in localStorage too (each action under its
// own key, written before the page shows it as queued, removed when the server answers it), so
// a reload, offline or not, sends what was queued again, oldest first, before anything new:
// the server records an action id once. A choice, a switch and a draft are shown at once (the
// writer can go on editing offline); what only the server can answer (the suggestions, the
// next round, the completion code) holds the page until it is acknowledged.
(function () {
  "use strict";

  const { gettext, formatNumber } = window.cyoaI18n;
  const app = document.getElementById("app");
  const experiment = app.dataset.experiment;
  const doneUrl = app.dataset.doneUrl;
  const $ = (id) => document.getElementById(id);
  const ACK_TIMEOUT_MS = 15000;
  const DRAFT_SAVE_DELAY_MS = 600;
  const BUSY_RETRY_MS = 1500;
  // No writer's action comes near this (a turn is a few hundred characters). A larger one
  // is refused here rather than risk the transport's limit (MAX_MESSAGE_BYTES in
  // cyoa/web/realtime.py), past which the server drops the connection instead of answering.
  const MAX_ACTION_BYTES = 64 * 1024;
  // The server's limit on one open survey answer (OPEN_ANSWER_MAX_CHARS in cyoa/cowriting/spec.py).
  const OPEN_ANSWER_MAX_CHARS = 2000;
  const OFFLINE_MESSAGE = gettext("The connection is lost. What you did is kept and will be sent as soon as the connection is back; please keep this page open.");
  const DRAFT_TOO_LONG = gettext("Too long to save: your text is kept in this browser until you shorten it.");
  // Every box takes at most this many characters (the server's limit on a draft), well over
  // any turn or survey answer, so an over-long text is still shown to be shortened; a longer
  // paste is cut by the browser before it is laid out, which for one unbroken line of
  // 100,000 characters would hold the page up for seconds.
  const boxMax = app.dataset.boxMax;
  const CUT_MESSAGE = gettext("What you pasted was cut: a box here takes at most {n} characters.", { n: Number(boxMax) });

  let confirmed = null; // the state as the server last sent it
  let view = null; // what the page shows: `confirmed` with this round's queued choices and drafts
  let shownRound = null;
  const drafts = {}; // slot -> text being edited, for the current round
  let draftTimer = null;

  // --- helpers -------------------------------------------------------------------------

  function actionId() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function textLength(text) {
    // Same count as the server: Unicode code points after NFC and trimming.
    return Array.from(text.normalize("NFC").trim()).length;
  }

  function lengthProblem(text) {
    const n = textLength(text);
    if (n < view.limits.min) return gettext("Too short — at least {n} characters.", { n: view.limits.min });
    if (n > view.limits.max) return gettext("Too long — at most {n} characters.", { n: view.limits.max });
    return "";
  }

  function storageKey(kind) {
    return `cyoa:${experiment}:round${view.round}:${kind}`;
  }

  function remember(kind, text) {
    try { localStorage.setItem(storageKey(kind), text); } catch (e) { /* storage full/off */ }
  }

  function recall(kind) {
    try { return localStorage.getItem(storageKey(kind)); } catch (e) { return null; }
  }

  // A notice about the connection is cleared when the story is joined again or the action
  // goes through; one about the writer's action (a refusal, say) stays until the writer acts
  // again, and comes back when a connection notice shown over it is cleared.
  let noticeAboutConnection = false;
  let covered = null; // the writer's notice a connection notice is shown over

  function notice(message, kind, aboutConnection = false) {
    const el = $("notice");
    const showsConnection = Boolean(message) && aboutConnection;
    if (showsConnection && !noticeAboutConnection && !el.hidden) {
      covered = { message: el.textContent, kind: el.dataset.kind };
    } else if (!showsConnection) {
      covered = null;
    }
    el.textContent = message || "";
    el.className = "notice" + (kind ? " " + kind : "");
    el.dataset.kind = kind || "";
    el.hidden = !message;
    noticeAboutConnection = showsConnection;
  }

  function clearConnectionNotice() {
    if (!noticeAboutConnection) return;
    const back = covered;
    notice(back ? back.message : "", back ? back.kind : undefined);
  }

  function fitsInOneMessage(data) {
    return new TextEncoder().encode(JSON.stringify(data)).length <= MAX_ACTION_BYTES;
  }

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // --- the outbox, kept in the browser --------------------------------------------------

  // One key per queued action, named so that sorting the keys gives the order the actions
  // were made in; the tabs of one story never overwrite each other's (and the server stores
  // an action id once, whichever tab sends it). Per writer's session (data-outbox), so a second
  // participant in this browser never sends the first one's actions.
  const OUTBOX_PREFIX = `cyoa:outbox:${app.dataset.outbox}:`;
  const MOVED_ON = gettext("Your story had gone on in another tab or window, so this page now shows it as it is saved. Nothing saved was lost.");
  const storage = (() => {
    try {
      localStorage.setItem("cyoa:probe", "1");
      localStorage.removeItem("cyoa:probe");
      return localStorage;
    } catch (e) {
      return null; // private mode or storage switched off: the outbox lives in this page only
    }
  })();
  let keptCount = 0;
  let keptAt = 0; // never earlier than the last key's time, even if the clock is set back

  function keep(item) {
    if (!storage) return;
    if (!item.key) {
      keptCount += 1;
      keptAt = Math.max(keptAt, Date.now());
      item.key = OUTBOX_PREFIX + String(keptAt).padStart(15, "0") + "-"
        + String(keptCount).padStart(6, "0") + "-" + item.data.action_id;
    }
    const kept = { data: item.data, message: item.message, made: item.made };
    try { storage.setItem(item.key, JSON.stringify(kept)); } catch (e) { /* full: this page only */ }
  }

  function forget(item) {
    if (!storage || !item.key) return;
    try { storage.removeItem(item.key); } catch (e) { /* ignore */ }
  }

  function queued(data, message, made, key) {
    const item = { data, message, made, key, sent: Boolean(key) };
    item.promise = new Promise((resolve) => { item.resolve = resolve; });
    return item;
  }

  // What an earlier visit of this page queued and the server has not answered, oldest first.
  // Each is taken as sent once already, so its payload never changes again.
  function keptItems() {
    if (!storage) return [];
    const keys = [];
    for (let i = 0; i < storage.length; i += 1) {
      const key = storage.key(i);
      if (key && key.startsWith(OUTBOX_PREFIX)) keys.push(key);
    }
    const items = [];
    for (const key of keys.sort()) {
      let kept = null;
      try { kept = JSON.parse(storage.getItem(key)); } catch (e) { /* not ours */ }
      const data = kept && kept.data;
      if (data && typeof data.type === "string" && typeof data.action_id === "string"
        && data.payload && typeof data.payload === "object") {
        items.push(queued(data, kept.message, kept.made || null, key));
      }
    }
    return items;
  }

  // The server's state with this round's queued choices and drafts shown on it, as the rules
  // apply them (a choice opens its suggestion's draft, at first the suggestion itself), so the
  // writer can edit while offline; everything else is shown only once the server has it.
  function projected(state) {
    if (state.phase !== "choosing") return state;
    const mine = outbox.filter((item) => item.data.payload.round === state.round
      && (item.data.type === "suggestion_chosen" || item.data.type === "draft_saved"));
    if (!mine.length) return state;
    const current = { ...state.current, drafts: { ...state.current.drafts } };
    for (const { data } of mine) {
      const slot = data.payload.slot;
      const shown = current.suggestions.find((s) => s.slot === slot && s.status === "done");
      if (!shown) continue;
      if (data.type === "suggestion_chosen") {
        current.chosen_slot = slot;
        if (current.drafts[String(slot)] === undefined) current.drafts[String(slot)] = shown.text;
      } else {
        current.drafts[String(slot)] = data.payload.text;
      }
    }
    return { ...state, current };
  }

  // --- talking to the server -----------------------------------------------------------

  // The server answers in the page's language (cyoa/web/language.py).
  const socket = io({ transports: ["websocket", "polling"], query: { lang: window.cyoaI18n.lang } });
  // The server attaches a connection to the story only on `join` (and forgets it when it
  // restarts), so actions are sent on a joined connection only, oldest first, one at a time.
  let joined = false;
  let connection = 0; // counts connections, so a late join reply for an old one is ignored
  // {data, message, made: {round, phase}, key, sent, promise, resolve}: not yet answered
  const outbox = keptItems();
  let sending = false;
  // A draft and the keystroke record are sent quietly; the writer waits for any other action.
  const RECORD = "record";
  const QUIET = new Set(["draft_saved", RECORD]);
  const writerWaits = () => outbox.some((item) => !QUIET.has(item.data.type));
  // The keystroke record (static/js/record.js), handed to this outbox in batches.
  const recorder = window.CyoaRecord.create({
    key: app.dataset.outbox,
    on: app.dataset.record === "on",
    round: () => view && view.round,
    handOver: (rows) => send(RECORD, { operations: rows }),
    fits: (rows) => fitsInOneMessage({ type: RECORD, payload: { operations: rows, round: view && view.round } }),
  });
  const RECORDED = new Set(["line_submitted", "draft_saved", "turn_submitted"]);
  // Actions whose outcome only the server knows: the page waits for their answer.
  const HOLDING = new Set(["line_submitted", "turn_submitted", "survey_submitted", "suggestions_retried"]);
  const busy = () => outbox.some((item) => HOLDING.has(item.data.type));

  // Queues an action made in the round on show (the server refuses it in any other round)
  // and keeps it in the browser before anything shows it as queued.
  function send(type, payload, message) {
    const through = RECORDED.has(type) ? recorder.through() : null; // its rows queued first
    if (through !== null) payload = { ...payload, record_seq: through };
    const data = { type, payload: { ...payload, round: view.round }, action_id: actionId() };
    const item = queued(data, message, { round: view.round, phase: view.phase }, null);
    keep(item);
    outbox.push(item);
    if (!joined && writerWaits()) notice(OFFLINE_MESSAGE, "warn", true);
    if (!QUIET.has(type)) covered = null; // the writer acts again: an older notice is done
    sendOutbox();
    return item.promise;
  }

  // Whether the story had gone on (in another tab) from where the page was when it queued
  // the action, so the server's refusal means the stored story wins, not a mistake to fix.
  const behind = (item, state) => Boolean(item.made)
    && (state.round !== item.made.round || state.phase !== item.made.phase);

  function answered(item, reply) {
    const { type, payload } = item.data;
    if (type === RECORD) return; // a refused batch is not the writer's to mend
    if (reply.ok && type === "draft_saved") {
      confirmed = reply.state; // drawn as it is: the writer may be typing in the box
      view = projected(confirmed);
      return;
    }
    if (reply.ok && type === "turn_submitted") forgetRoundOf(payload.round);
    if (reply.state) render(reply.state);
    if (reply.ok) {
      if (item.message) notice(""); // its "Saving…" said, even after a reload
      return;
    }
    if (reply.state && behind(item, reply.state)) notice(MOVED_ON, "warn");
    else notice(reply.error, "error");
  }

  function emitAction(data) {
    return new Promise((resolve) => {
      const [event, body] = data.type === RECORD ? [RECORD, data.payload] : ["action", data];
      socket.timeout(ACK_TIMEOUT_MS).emit(event, body, (err, reply) => resolve(err ? null : reply));
    });
  }

  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function sendOutbox() {
    if (sending) return;
    sending = true;
    let announced = null;
    while (joined && outbox.length) {
      const item = outbox[0];
      if (item.message && item !== announced) notice(item.message);
      announced = item;
      item.sent = true;
      const reply = await emitAction(item.data); // a resend keeps the action_id: recorded once
      if (reply === null) {
        // No reply: the connection dropped (sent again after the next join) or timed out.
        if (joined) notice(gettext("Still saving… please keep this page open."), "warn", true);
        continue;
      }
      if (reply.retry) {
        // Nothing was stored (the server is saving too fast, or reconnecting to its
        // database): the same action goes again, and the outbox keeps the ones behind it.
        notice(reply.error, "warn", true);
        await pause(BUSY_RETRY_MS);
        continue;
      }
      const at = outbox.indexOf(item);
      if (at >= 0) outbox.splice(at, 1);
      forget(item);
      clearConnectionNotice();
      answered(item, reply);
      item.resolve(reply);
    }
    sending = false;
  }

  // Sends an action the page waits for (HOLDING): its buttons wait for the answer.
  function act(type, payload, message) {
    if (!fitsInOneMessage({ type, payload })) {
      const error = gettext("This is too long to send. Please shorten your text and try again.");
      notice(error, "error");
      return Promise.resolve({ ok: false, error });
    }
    const reply = send(type, payload, message);
    render(confirmed);
    return reply;
  }

  function connectionBadge(text, ok) {
    $("connection").textContent = text;
    $("connection").className = "connection " + (ok ? "ok" : "lost");
  }

  function join(ofConnection) {
    socket.timeout(ACK_TIMEOUT_MS).emit("join", { experiment }, (err, reply) => {
      if (ofConnection !== connection || !socket.connected) return; // the next connect joins
      if (err) { join(ofConnection); return; }
      if (reply.retry) {
        // The server cannot reach its database yet: join again, keeping the outbox.
        connectionBadge(gettext("Reconnecting… your text is kept"), false);
        notice(reply.error, "warn", true);
        setTimeout(() => join(ofConnection), BUSY_RETRY_MS);
        return;
      }
      if (!reply.ok) {
        // The story cannot be joined: answer what was waiting rather than leave it waiting.
        connectionBadge(gettext("Not connected"), false);
        for (const item of outbox.splice(0)) item.resolve({ ok: false, error: reply.error });
        notice(reply.error, "error", true);
        return;
      }
      joined = true;
      connectionBadge(gettext("Connected"), true);
      clearConnectionNotice();
      render(reply.state);
      recorder.setting(reply.record); // its rows kept over a reload go first
      sendOutbox();
    });
  }

  socket.on("connect", () => {
    connection += 1;
    join(connection);
  });

  socket.on("disconnect", () => {
    joined = false;
    connectionBadge(gettext("Reconnecting… your text is kept"), false);
    if (writerWaits()) notice(OFFLINE_MESSAGE, "warn", true);
  });

  socket.on("state", (state) => render(state));

  socket.on("suggestion_progress", (data) => {
    if (!view || view.phase !== "suggesting" || data.round !== view.round) return;
    const card = document.getElementById(`suggestion-${data.slot}`);
    const body = card && card.querySelector(".text");
    if (body) body.textContent = data.text;
  });

  // --- drawing the state ---------------------------------------------------------------

  function render(server) {
    const before = {
      phase: view && view.phase,
      slot: view && view.phase === "choosing" ? view.current.chosen_slot : null,
      focused: document.activeElement && document.activeElement.id,
    };
    confirmed = server;
    view = projected(server);
    const state = view;
    if (state.phase === "done") {
      forgetRoundOf(state.round);
      window.location.assign(doneUrl);
      return;
    }
    if (shownRound !== state.round) {
      shownRound = state.round;
      for (const key of Object.keys(drafts)) delete drafts[key];
      $("line").value = recall("line") || "";
    }
    renderProgress();
    renderStory();
    $("writing").hidden = state.phase !== "writing";
    $("suggesting").hidden = !(state.phase === "suggesting" || state.phase === "choosing");
    $("editing").hidden = !(state.phase === "choosing" && state.current.chosen_slot);
    $("survey").hidden = state.phase !== "survey";
    if (state.phase === "writing") updateCounter("line");
    if (state.phase === "suggesting" || state.phase === "choosing") renderSuggestions();
    if (state.phase === "choosing" && state.current.chosen_slot) renderEditor();
    if (state.phase === "survey") renderSurvey();
    placeFocus(before);
  }

  // Where the keyboard goes when the page changes under it (WCAG 2.4.3): to what the writer
  // does next, never left on <body>. After Add my sentence, to the suggestions' heading (read
  // out as it changes); when they are ready, to it again if focus was waiting there; after
  // Choose or Switch, to the edit box; after Add to story, to the next line's box or the
  // survey. A control redrawn under the keyboard gets it back.
  const FOCUS_AFTER = { writing: "line", suggesting: "suggest-heading", choosing: "suggest-heading", survey: "survey-heading" };

  function placeFocus(before) {
    if (!before.phase) return; // the page's first draw: focus stays where the browser put it
    const slot = view.phase === "choosing" ? view.current.chosen_slot : null;
    const lost = document.activeElement === document.body || !document.activeElement;
    const waiting = lost || document.activeElement.closest("#suggesting");
    let target = null;
    if (slot && slot !== before.slot) target = "edit";
    else if (view.phase !== before.phase) {
      const arrived = before.phase === "suggesting" && view.phase === "choosing";
      if (!arrived || waiting) target = FOCUS_AFTER[view.phase];
    } else if (lost && before.focused) {
      target = $(before.focused) && !$(before.focused).disabled ? before.focused : FOCUS_AFTER[view.phase];
    }
    const node = target && $(target);
    if (node && !node.closest("[hidden]")) node.focus();
  }

  function renderProgress() {
    const done = view.phase === "survey";
    $("round-label").textContent = done
      ? gettext("Story finished — one last step")
      : gettext("Round {round} of {rounds}", { round: view.round, rounds: view.rounds });
    const fraction = done ? 1 : (view.round - 1) / view.rounds;
    $("round-bar").style.width = `${Math.round(fraction * 100)}%`;
  }

  function renderStory() {
    const story = $("story");
    story.replaceChildren();
    const turns = view.story.slice();
    if (!turns.length) story.appendChild(el("p", { class: "muted" }, gettext("Your story will appear here.")));
    for (const turn of turns) {
      // Who wrote a line is said in words too, not by its colour alone (WCAG 1.4.1).
      const line = el("p", { class: `turn ${turn.author}`, dir: "auto" });
      const who = turn.author === "writer" ? gettext("You wrote:") : gettext("From a suggestion:");
      line.appendChild(el("span", { class: "visually-hidden" }, who + " "));
      line.appendChild(document.createTextNode(turn.text));
      story.appendChild(line);
    }
    story.scrollTop = story.scrollHeight; // where it scrolls in its own area: the newest line
  }

  function renderSuggestions() {
    const current = view.current;
    const settled = current.suggestions.every((s) => s.status !== "pending");
    $("suggest-heading").textContent = settled
      ? gettext("Choose the suggestion you like best")
      : gettext("The computer is writing two suggestions…");
    $("models-warming").hidden = view.models_ready || settled;
    announce(current.suggestions, settled);
    const allFailed = current.suggestions.every((s) => s.status === "failed");
    $("retry-box").hidden = !(view.phase === "suggesting" && allFailed);
    const box = $("suggestions");
    box.replaceChildren();
    for (const s of current.suggestions) {
      const card = el("article", { class: `card suggestion ${s.status}`, id: `suggestion-${s.slot}` });
      card.appendChild(el("h3", {}, gettext("Suggestion {n}", { n: s.slot })));
      if (s.status === "failed") {
        card.appendChild(el("p", { class: "text error" }, gettext("This suggestion could not be written.")));
      } else {
        card.appendChild(el("p", { class: "text", dir: "auto" }, s.text));
      }
      if (s.status === "pending") card.appendChild(el("p", { class: "muted thinking" }, "writing…"));
      const chosen = current.chosen_slot === s.slot;
      const label = chosen ? gettext("Chosen") : current.chosen_slot ? gettext("Switch to this one") : gettext("Choose this one");
      const button = el("button", { class: chosen ? "chosen" : "primary", id: `choose-${s.slot}` }, label);
      button.disabled = chosen || s.status !== "done" || view.phase !== "choosing" || busy();
      button.addEventListener("click", () => choose(s.slot));
      card.appendChild(button);
      if (chosen) card.classList.add("is-chosen");
      box.appendChild(card);
    }
  }

  // Said politely once as the suggestions start and once when they are settled; the text
  // streaming into the cards is not a live region, so no token is read out.
  function announce(suggestions, settled) {
    const written = suggestions.filter((s) => s.status === "done").length;
    let message = gettext("Suggestions are being written…");
    if (settled) {
      message = written === 2 ? gettext("Two suggestions are ready.")
        : written === 1 ? gettext("One suggestion is ready; the other could not be written.")
          : gettext("The suggestions could not be written.");
    }
    if ($("suggest-status").textContent !== message) $("suggest-status").textContent = message;
  }

  function renderEditor() {
    const slot = view.current.chosen_slot;
    if (drafts[slot] === undefined) {
      const local = recall(`slot${slot}`);
      const server = view.current.drafts[String(slot)];
      drafts[slot] = local !== null ? local : server !== undefined ? server : "";
    }
    const box = $("edit");
    if (box.dataset.slot !== String(slot) || document.activeElement !== box) {
      box.value = drafts[slot];
      box.dataset.slot = String(slot);
    }
    updateCounter("edit");
  }

  function updateCounter(which) {
    const text = $(which).value;
    const n = textLength(text);
    $(`${which}-counter`).textContent = `${formatNumber(n)} / ${formatNumber(view.limits.max)}`;
    const problem = lengthProblem(text);
    $(`${which}-message`).textContent = n > 0 ? problem : "";
    $(`${which}-submit`).disabled = Boolean(problem) || busy();
  }

  function renderSurvey() {
    const holder = $("survey-items");
    if (holder.childElementCount) return; // keep the writer's unsent answers on re-render
    for (const item of view.survey) {
      if (item.kind === "likert") {
        const field = el("fieldset", { class: "likert", id: `q-${item.id}` });
        field.appendChild(el("legend", {}, gettext(item.text)));
        const scale = el("div", { class: "scale" });
        view.likert_labels.forEach((label, i) => {
          const wrap = el("label", {});
          const input = el("input", { type: "radio", name: item.id, value: String(i + 1) });
          wrap.appendChild(input);
          wrap.appendChild(el("span", {}, gettext(label)));
          scale.appendChild(wrap);
        });
        field.appendChild(scale);
        holder.appendChild(field);
      } else {
        const wrap = el("label", { class: "open", for: `q-${item.id}` }, gettext(item.text));
        holder.appendChild(wrap);
        holder.appendChild(el("textarea", { id: `q-${item.id}`, name: item.id, rows: "3", maxlength: boxMax, dir: "auto" }));
      }
    }
  }

  // --- the writer's actions ------------------------------------------------------------

  async function withBusy(fn) {
    if (busy()) return;
    try { return await fn(); } finally { if (confirmed) render(confirmed); }
  }

  // Said before the browser cuts the paste to the box's maxlength, which it does silently.
  document.addEventListener("paste", (event) => {
    const box = event.target;
    if (!(box instanceof HTMLTextAreaElement) || box.maxLength < 0) return;
    const pasted = event.clipboardData ? event.clipboardData.getData("text") : "";
    const room = box.maxLength - box.value.length + (box.selectionEnd - box.selectionStart);
    if (pasted.length > room) notice(CUT_MESSAGE, "warn");
  }, true);

  recorder.watch($("line"), () => ({ box: "line", slot: null, start: "" }));
  recorder.watch($("edit"), () => {
    const slot = view && view.current.chosen_slot;
    const shown = slot && view.current.suggestions.find((s) => s.slot === slot);
    return shown ? { box: "edit", slot, start: shown.text } : null;
  });
  recorder.cards($("suggestions"));

  $("line").addEventListener("input", () => { remember("line", $("line").value); updateCounter("line"); });
  $("edit").addEventListener("input", () => {
    const slot = view.current.chosen_slot;
    drafts[slot] = $("edit").value;
    remember(`slot${slot}`, drafts[slot]);
    updateCounter("edit");
    $("draft-status").textContent = "";
    clearTimeout(draftTimer);
    draftTimer = setTimeout(() => saveDraft(slot), DRAFT_SAVE_DELAY_MS);
  });

  async function saveDraft(slot) {
    clearTimeout(draftTimer);
    if (!view || view.phase !== "choosing" || drafts[slot] === undefined) return;
    if (outbox.some((item) => item.data.type === "turn_submitted")) return; // it carries the text
    const text = drafts[slot];
    if (view.current.drafts[String(slot)] === text) return;
    const payload = { slot, text };
    if (textLength(text) > view.limits.max || !fitsInOneMessage({ type: "draft_saved", payload })) {
      $("draft-status").textContent = DRAFT_TOO_LONG;
      return;
    }
    // While the connection is down, the newest text replaces a draft still waiting to go.
    const waiting = outbox.find((item) => !item.sent && item.data.type === "draft_saved"
      && item.data.payload.slot === slot);
    if (waiting) {
      waiting.data.payload.text = text;
      delete waiting.data.payload.record_seq; // its rows since go after it: not checked
      keep(waiting);
    }
    const reply = await (waiting ? waiting.promise : send("draft_saved", payload));
    if (reply.ok) {
      view.current.drafts[String(slot)] = reply.state.current.drafts[String(slot)];
      if (drafts[slot] === view.current.drafts[String(slot)]) {
        $("draft-status").textContent = gettext("Draft saved");
      }
    }
  }

  // A turn is sent without its surrounding blanks (the server strips them too), so blanks
  // pasted around a sentence cannot make the message too large.
  $("line-submit").addEventListener("click", () => withBusy(async () => {
    const text = $("line").value;
    if (lengthProblem(text)) { updateCounter("line"); return; }
    await act("line_submitted", { text: text.trim() }, gettext("Saving your sentence…"));
  }));

  // Shown at once, answered or not: the writer edits the chosen suggestion meanwhile.
  function choose(slot) {
    if (busy() || !view) return;
    const previous = view.current.chosen_slot;
    if (previous) saveDraft(previous); // queued ahead of the choice, so saved first
    send("suggestion_chosen", { slot });
    render(confirmed);
  }

  $("edit-submit").addEventListener("click", () => withBusy(async () => {
    const text = drafts[view.current.chosen_slot];
    if (lengthProblem(text)) { updateCounter("edit"); return; }
    clearTimeout(draftTimer); // the turn carries the text
    await act("turn_submitted", { text: text.trim() }, gettext("Adding to your story…"));
  }));

  function forgetRoundOf(round) {
    try {
      for (const kind of ["line", "slot1", "slot2"]) {
        localStorage.removeItem(`cyoa:${experiment}:round${round}:${kind}`);
      }
    } catch (e) { /* ignore */ }
  }

  $("retry").addEventListener("click", () => withBusy(() => act("suggestions_retried", {})));

  $("survey").addEventListener("submit", (event) => {
    event.preventDefault();
    withBusy(async () => {
      const answers = {};
      for (const item of view.survey) {
        if (item.kind === "likert") {
          const picked = document.querySelector(`input[name="${CSS.escape(item.id)}"]:checked`);
          if (picked) answers[item.id] = Number(picked.value);
        } else {
          const text = $(`q-${item.id}`).value;
          if (textLength(text) > OPEN_ANSWER_MAX_CHARS) {
            $("survey-message").textContent =
              gettext("Please keep each answer under {n} characters.", { n: OPEN_ANSWER_MAX_CHARS });
            $(`q-${item.id}`).focus();
            return;
          }
          answers[item.id] = text.trim();
        }
      }
      const reply = await act("survey_submitted", { answers }, gettext("Sending your answers…"));
      $("survey-message").textContent = reply.ok ? "" : reply.error;
    });
  });
})();
