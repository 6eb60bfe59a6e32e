// The rater's page. An answer is shown as saved only when the server has stored it. Answers
// are sent as they are given (a typed one ~600 ms after typing stops, once it is complete);
// until then what was typed is kept in localStorage, and so is the queue of actions not yet
// stored, so a reload or a lost connection loses nothing. A queued action keeps its action id
// through every resend and reload, so the server records it once. In preview mode (a
// researcher trying the study) nothing is sent to the server or kept in the browser.
// While the page is visible it tells the server about once a minute that the rater is still
// reading, so a slow reader keeps their places before their first answer.
(function () {
  "use strict";
  const form = document.getElementById("questions");
  if (!form) return;
  const { gettext, ngettext, formatNumber, lang } = window.cyoaI18n;
  const story = form.dataset.story; // an opaque alias: only ever compared and sent back
  const endpoint = form.dataset.action;
  const seenEndpoint = form.dataset.seen;
  const HEARTBEAT_MS = 60000;
  const preview = form.dataset.preview === "1";
  const prefix = "cyoa-rate:" + form.dataset.experiment + ":" + form.dataset.rater + ":";
  const badge = document.getElementById("saving");
  const errorBox = document.getElementById("error");
  const answeredCount = document.getElementById("answered");
  const fill = document.getElementById("progress-fill");
  const finishButton = document.getElementById("finish");
  const RATIONALE_MIN_WORDS = 5;
  const SAVE_DELAY_MS = 600;
  const FIRST_RETRY_MS = 1000;
  const MAX_RETRY_MS = 15000;
  // A server that fails the same action this often will not store it by being asked again:
  // the rater is told, the draft stays, and the actions after it go through.
  const MAX_FAILURES = 5;
  const NOT_SAVED = gettext(
    "An answer could not be saved: the server failed to store it {n} times. What you typed is kept in this browser: reload the page to try again, and if this keeps happening, contact the researcher.",
    { n: MAX_FAILURES });
  const boxes = Array.from(form.querySelectorAll("fieldset.question"));
  const saved = new Map(); // item id → key of the answer the server stored
  const timers = new Map(); // item id → the pending debounced save
  let queue = []; // {id, type, payload, tried, failures}: oldest first, not yet stored
  let sending = false;
  let link = "ok"; // "ok", "offline", "reconnecting" (503) or "retrying": how the last attempt went
  let retryDelay = FIRST_RETRY_MS;
  let retryTimer = null;
  let leaving = false;

  // --- the browser's storage (nothing in preview) ----------------------------------------

  function recall(key) {
    if (preview) return null;
    try {
      return JSON.parse(localStorage.getItem(prefix + key));
    } catch (e) {
      return null;
    }
  }

  function keep(key, value) {
    if (preview) return;
    try {
      if (value === null) localStorage.removeItem(prefix + key);
      else localStorage.setItem(prefix + key, JSON.stringify(value));
    } catch (e) {
      // Storage full or switched off: the page still works, a reload may lose the draft.
    }
  }

  const draftKey = (item) => "draft:" + story + ":" + item;
  const keepQueue = () => keep("queue", queue.length ? queue : null);

  // --- reading the answers ---------------------------------------------------------------

  function part(box, name) {
    return box.querySelector('textarea[data-part="' + name + '"]');
  }

  // The answer as typed (raw), so a draft restores exactly what was in the boxes.
  function typed(box) {
    let value = null;
    if (box.dataset.kind === "text") {
      value = part(box, "answer").value;
    } else {
      const checked = Array.from(box.querySelectorAll("input[type=radio]")).find((r) => r.checked);
      value = checked ? checked.value : null;
    }
    const why = part(box, "why");
    return { value: value, why: why ? why.value : null };
  }

  function answerOf(box) {
    const raw = typed(box);
    const value = raw.value === null ? null : raw.value.trim() || null;
    return { item: box.dataset.item, value: value, rationale: raw.why === null ? null : raw.why.trim() };
  }

  // One string per answer, to compare what is on the page with what the server stored.
  function keyOf(answer) {
    if (answer.value === null && !answer.rationale) return "";
    return (answer.value || "") + "\u0000" + (answer.rationale || "");
  }

  function words(text) {
    return text ? text.split(/\s+/).filter(Boolean).length : 0;
  }

  // Why the answer in this box cannot be saved yet ("" when it can).
  function problem(box, answer) {
    if (answer.value === null) return answer.rationale ? gettext("Choose an answer to save it.") : "";
    if (box.dataset.rationale && words(answer.rationale) < RATIONALE_MIN_WORDS) {
      return gettext("Add your reason (at least a sentence) to save this answer.");
    }
    return "";
  }

  function queuedAnswer(item) {
    for (let i = queue.length - 1; i >= 0; i -= 1) {
      const action = queue[i];
      if (action.type === "answer_given" && action.payload.story === story && action.payload.item === item) {
        return action;
      }
    }
    return null;
  }

  function unsaved() {
    return boxes.filter((box) => {
      const key = keyOf(answerOf(box));
      return key !== (saved.get(box.dataset.item) || "");
    });
  }

  // --- what the page says ----------------------------------------------------------------

  function note(box, text) {
    box.querySelector(".saved").textContent = text;
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  }

  function badgeText(open) {
    if (preview) return [gettext("Preview — nothing you answer is saved"), ""];
    if (open === 0 && queue.length === 0) {
      return saved.size ? [gettext("All answers saved"), "ok"] : [gettext("No answers yet"), "ok"];
    }
    const count = open === 0 ? gettext("Not saved yet")
      : ngettext("{n} answer not saved yet", "{n} answers not saved yet", open);
    if (link === "offline") {
      return [gettext("{count} — offline; kept in this browser until you are back", { count }), "lost"];
    }
    if (link === "reconnecting") {
      return [gettext("{count} — the study is reconnecting; kept in this browser until it is back", { count }), "lost"];
    }
    if (link === "retrying") return [gettext("{count} — trying again", { count }), "lost"];
    const waiting = unsaved().filter((box) => !queuedAnswer(box.dataset.item)).length;
    if (queue.length && waiting === 0) return [gettext("Saving…"), ""];
    return [count, "lost"];
  }

  function refresh() {
    const [text, state] = badgeText(unsaved().length);
    badge.textContent = text;
    badge.className = "connection " + state;
    const answered = boxes.filter((box) => saved.has(box.dataset.item)).length;
    answeredCount.textContent = formatNumber(answered);
    fill.style.width = (boxes.length ? (100 * answered) / boxes.length : 0) + "%";
  }

  // --- talking to the server -------------------------------------------------------------

  function newId() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return String(Date.now()) + "-" + Math.random().toString(16).slice(2);
  }

  function backoff() {
    const delay = retryDelay;
    retryDelay = Math.min(retryDelay * 2, MAX_RETRY_MS);
    return delay;
  }

  function retryAfter(response) {
    const seconds = Number(response.headers.get("Retry-After"));
    return seconds > 0 ? Math.min(seconds * 1000, 60000) : backoff();
  }

  // The reply as {body} when the server answered for good, or {wait, offline, reconnecting,
  // failed} when the action must be sent again: offline, busy (429 with retry) or reconnecting
  // to its database (503 with retry), both tried for as long as it takes, or failed (a 5xx or any reply that is not our JSON, such as a proxy's HTML error
  // page: tried MAX_FAILURES times). Such a reply never counts as saved.
  function post(action) {
    return fetch(endpoint, {
      method: "POST",
      // The server's sentences come in the page's language (cyoa/web/language.py).
      headers: {
        "Content-Type": "application/json", Accept: "application/json", "Accept-Language": lang, "X-CYOA-Action": "1",
      },
      credentials: "same-origin",
      body: JSON.stringify({ action_id: action.id, type: action.type, payload: action.payload }),
    }).then(
      (response) => response.json().then(
        (body) => {
          const ours = body !== null && typeof body === "object" && typeof body.ok === "boolean";
          if (ours && body.ok) return { body: body };
          if (ours && body.retry) {
            return { wait: retryAfter(response), reconnecting: response.status === 503 };
          }
          if (!ours || response.status >= 500) return { wait: retryAfter(response), failed: true };
          return { body: body };
        },
        () => ({ wait: retryAfter(response), failed: true })
      ),
      () => ({ wait: backoff(), offline: true })
    );
  }

  // In preview the page answers itself: every action is accepted, nothing leaves the browser.
  function previewReply(action) {
    const body = { ok: true };
    if (action.type === "story_finished") body.next = form.dataset.previewNext;
    return Promise.resolve({ body: body });
  }

  function send() {
    if (sending || queue.length === 0) return;
    clearTimeout(retryTimer);
    sending = true;
    const action = queue[0];
    action.tried = true; // sent at least once: its payload may no longer change
    keepQueue();
    refresh();
    (preview ? previewReply : post)(action).then((reply) => {
      sending = false;
      if (reply.failed) action.failures = (action.failures || 0) + 1;
      if (reply.failed && action.failures >= MAX_FAILURES) {
        giveUp(action);
        return;
      }
      if (reply.wait !== undefined) {
        link = reply.offline ? "offline" : reply.reconnecting ? "reconnecting" : "retrying";
        refresh();
        retryTimer = setTimeout(send, reply.wait);
        return;
      }
      link = "ok";
      retryDelay = FIRST_RETRY_MS;
      queue.shift();
      keepQueue();
      replies[action.type](action, reply.body);
      refresh();
      send();
    });
  }

  // Stops sending an action the server keeps failing: it leaves the queue (its answer's draft
  // stays, so a reload sends it again), the page says it was not saved, and the next goes.
  function giveUp(action) {
    queue.shift();
    keepQueue();
    link = "ok";
    retryDelay = FIRST_RETRY_MS;
    const box = boxes.find((b) => action.type === "answer_given" && b.dataset.item === action.payload.item);
    if (box && action.payload.story === story) note(box, gettext("Not saved"));
    if (action.type === "story_finished") finishButton.disabled = false;
    showError(NOT_SAVED);
    refresh();
    send();
  }

  function enqueue(type, payload) {
    queue.push({ id: newId(), type: type, payload: payload, tried: false });
    keepQueue();
    send();
  }

  function answerStored(action, body) {
    if (action.payload.story !== story) return; // an earlier story's answer, sent after a reload
    const box = boxes.find((b) => b.dataset.item === action.payload.item);
    if (!box) return;
    if (!body.ok) {
      note(box, body.error || gettext("Not saved."));
      showError(body.error || gettext("This answer was not saved. Please try again."));
      return;
    }
    const key = keyOf(action.payload);
    saved.set(box.dataset.item, key);
    if (keyOf(answerOf(box)) === key) {
      keep(draftKey(box.dataset.item), null);
      note(box, preview ? gettext("Fine (preview: not saved)") : gettext("Saved"));
      box.classList.remove("missing");
      if (!unsaved().length) showError("");
    }
  }

  function storyFinished(action, body) {
    if (body.ok && body.next) {
      boxes.forEach((box) => keep(draftKey(box.dataset.item), null));
      leaving = true;
      window.location.assign(body.next);
      return;
    }
    finishButton.disabled = false;
    showError(body.error || gettext("Please try again."));
  }

  const replies = { answer_given: answerStored, story_finished: storyFinished };

  // --- the rater's actions ---------------------------------------------------------------

  // Sends the answer in this box if it is complete and not stored or queued already.
  function save(box) {
    const item = box.dataset.item;
    clearTimeout(timers.get(item));
    timers.delete(item);
    const answer = answerOf(box);
    const key = keyOf(answer);
    const why = problem(box, answer);
    if (why || key === "") {
      note(box, why);
      refresh();
      return;
    }
    if (key === saved.get(item)) {
      note(box, preview ? gettext("Fine (preview: not saved)") : gettext("Saved"));
      refresh();
      return;
    }
    const waiting = queuedAnswer(item);
    if (waiting && keyOf(waiting.payload) === key) return;
    const payload = { story: story, item: item, value: answer.value };
    if (box.dataset.rationale) payload.rationale = answer.rationale;
    note(box, gettext("Saving…"));
    if (waiting && !waiting.tried) {
      waiting.payload = payload; // never sent: the newest answer simply replaces it
      keepQueue();
      refresh();
      return;
    }
    enqueue("answer_given", payload);
  }

  function edited(box, delay) {
    const item = box.dataset.item;
    const raw = typed(box);
    const open = keyOf(answerOf(box)) !== (saved.get(item) || "");
    keep(draftKey(item), open ? raw : null);
    clearTimeout(timers.get(item));
    timers.set(item, setTimeout(() => save(box), delay));
    if (open) note(box, problem(box, answerOf(box)) || gettext("Not saved yet"));
    refresh();
  }

  function restore(box, draft) {
    if (box.dataset.kind === "text") {
      part(box, "answer").value = draft.value || "";
    } else {
      box.querySelectorAll("input[type=radio]").forEach((radio) => {
        radio.checked = radio.value === draft.value;
      });
    }
    const why = part(box, "why");
    if (why && typeof draft.why === "string") why.value = draft.why;
  }

  // The question to fix is brought into view and given the keyboard's focus (WCAG 2.4.3),
  // without a glide for those who ask their system for less motion (2.3.3).
  function showQuestion(box, control) {
    const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    box.scrollIntoView({ behavior: still ? "auto" : "smooth", block: "center" });
    if (control) control.focus({ preventScroll: true });
  }

  function finish() {
    boxes.forEach(save); // answers typed a moment ago go first, then the finish
    // An edit that cannot be saved (a reason cut too short) must not be dropped silently
    // because an earlier version of the answer was saved: the rater fixes it first.
    const invalid = unsaved().filter((box) => problem(box, answerOf(box)));
    boxes.forEach((box) => box.classList.toggle("missing", invalid.includes(box)));
    if (invalid.length) {
      showError(problem(invalid[0], answerOf(invalid[0])));
      showQuestion(invalid[0], part(invalid[0], "why") || part(invalid[0], "answer"));
      return;
    }
    const missing = boxes.filter((box) => {
      const item = box.dataset.item;
      const open = box.dataset.required === "1" && !saved.has(item) && !queuedAnswer(item);
      box.classList.toggle("missing", open);
      return open;
    });
    if (missing.length) {
      showError(ngettext("Please answer every question first ({n} left).", "Please answer every question first ({n} left).", missing.length));
      showQuestion(missing[0], missing[0].querySelector("input, textarea"));
      return;
    }
    if (queue.some((action) => action.type === "story_finished")) return;
    finishButton.disabled = true;
    enqueue("story_finished", { story: story });
  }

  // Only while the rater can be reading: a hidden tab or a finished story sends nothing, and
  // a failed heartbeat is simply the next one's to make up.
  function heartbeat() {
    if (preview || leaving || document.visibilityState !== "visible") return;
    fetch(seenEndpoint, {
      method: "POST",
      headers: { Accept: "application/json", "Accept-Language": lang, "X-CYOA-Action": "1" },
      credentials: "same-origin",
    }).catch(() => {});
  }

  // --- starting ----------------------------------------------------------------------------

  queue = (recall("queue") || []).filter(
    (action) => action && typeof action.id === "string" && replies[action.type] && action.payload
  );
  boxes.forEach((box) => {
    const item = box.dataset.item;
    const shown = answerOf(box);
    if (shown.value !== null) {
      saved.set(item, keyOf(shown));
      note(box, gettext("Saved"));
    }
    const draft = recall(draftKey(item));
    if (draft && typeof draft === "object") {
      restore(box, draft);
      save(box);
    }
    box.addEventListener("change", (event) => {
      if (event.target.type === "radio") edited(box, 0);
    });
    box.addEventListener("input", (event) => {
      if (event.target.tagName === "TEXTAREA") edited(box, SAVE_DELAY_MS);
    });
  });
  refresh();
  send();

  finishButton.addEventListener("click", finish);
  // Enter on a radio button can still submit the form: answers go through the queue only.
  form.addEventListener("submit", (event) => event.preventDefault());
  setInterval(heartbeat, HEARTBEAT_MS);
  window.addEventListener("online", () => {
    retryDelay = FIRST_RETRY_MS;
    clearTimeout(retryTimer);
    send();
  });
  window.addEventListener("beforeunload", (event) => {
    if (leaving || preview || (unsaved().length === 0 && queue.length === 0)) return;
    event.preventDefault();
    event.returnValue = "";
  });
})();
