// The rater's page: each answer is sent as soon as it is given and shown as saved only when
// the server has stored it. Answers wait in a queue while the connection is down and are
// sent again with the same action id, so a resend is recorded once.
(function () {
  "use strict";
  const form = document.getElementById("questions");
  if (!form) return;
  const story = form.dataset.story;
  const endpoint = form.dataset.action;
  const required = new Set(form.dataset.required.split(" ").filter(Boolean));
  const badge = document.getElementById("saving");
  const errorBox = document.getElementById("error");
  const answeredCount = document.getElementById("answered");
  const fill = document.getElementById("progress-fill");
  const RATIONALE_MIN_WORDS = 5;
  const queue = [];
  const saved = new Map(); // item id → the last value + rationale the server stored
  let sending = false;
  let retryDelay = 1000;

  function newId() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return String(Date.now()) + "-" + Math.random().toString(16).slice(2);
  }

  function setBadge(text, state) {
    badge.textContent = text;
    badge.className = "connection " + state;
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  }

  function fieldset(item) {
    return form.querySelector('fieldset[data-item="' + CSS.escape(item) + '"]');
  }

  function note(item, text) {
    const box = fieldset(item);
    if (box) box.querySelector(".saved").textContent = text;
  }

  function current(box) {
    const item = box.dataset.item;
    let value = null;
    if (box.dataset.kind === "text") {
      value = box.querySelector('textarea[name="item-' + item + '"]').value.trim() || null;
    } else {
      const checked = box.querySelector("input[type=radio]:checked");
      value = checked ? checked.value : null;
    }
    const why = box.querySelector('textarea[name="why-' + item + '"]');
    return { item: item, value: value, rationale: why ? why.value.trim() : null };
  }

  function words(text) {
    return text ? text.split(/\s+/).filter(Boolean).length : 0;
  }

  function updateProgress() {
    let answered = 0;
    form.querySelectorAll("fieldset.question").forEach(function (box) {
      if (saved.has(box.dataset.item)) answered += 1;
    });
    answeredCount.textContent = String(answered);
    const total = form.querySelectorAll("fieldset.question").length;
    fill.style.width = (total ? (100 * answered) / total : 0) + "%";
  }

  function send() {
    if (sending || queue.length === 0) return;
    sending = true;
    const action = queue[0];
    setBadge("Saving…", "");
    fetch(endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CYOA-Action": "1" },
      credentials: "same-origin",
      body: JSON.stringify({ action_id: action.id, type: action.type, payload: action.payload }),
    })
      .then(function (response) {
        return response.json().then(function (body) {
          return { status: response.status, body: body };
        });
      })
      .then(function (reply) {
        sending = false;
        retryDelay = 1000;
        queue.shift();
        action.done(reply.body);
        if (queue.length === 0) setBadge("All answers saved", "ok");
        send();
      })
      .catch(function () {
        // Offline or the server is restarting: keep the action and try again.
        sending = false;
        setBadge("Offline — your answers are kept and will be saved", "lost");
        setTimeout(send, retryDelay);
        retryDelay = Math.min(retryDelay * 2, 15000);
      });
  }

  function enqueue(type, payload, done) {
    queue.push({ id: newId(), type: type, payload: payload, done: done });
    send();
  }

  function answer(box) {
    const now = current(box);
    if (now.value === null) return;
    if (box.dataset.rationale && words(now.rationale) < RATIONALE_MIN_WORDS) {
      note(now.item, "Add your reason (at least a sentence) to save this answer.");
      return;
    }
    const key = now.value + "\u0000" + (now.rationale || "");
    if (saved.get(now.item) === key) return;
    note(now.item, "Saving…");
    const payload = { story: story, item: now.item, value: now.value };
    if (box.dataset.rationale) payload.rationale = now.rationale;
    enqueue("answer_given", payload, function (body) {
      if (body.ok) {
        saved.set(now.item, key);
        note(now.item, "Saved");
        box.classList.remove("missing");
        showError("");
      } else {
        note(now.item, body.error || "Not saved.");
        showError(body.error || "This answer was not saved. Please try again.");
      }
      updateProgress();
    });
  }

  form.querySelectorAll("fieldset.question").forEach(function (box) {
    const now = current(box);
    if (now.value !== null) {
      saved.set(now.item, now.value + "\u0000" + (now.rationale || ""));
      note(now.item, "Saved");
    }
    box.addEventListener("change", function () {
      answer(box);
    });
  });
  updateProgress();

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const missing = [];
    form.querySelectorAll("fieldset.question").forEach(function (box) {
      const open = required.has(box.dataset.item) && !saved.has(box.dataset.item);
      box.classList.toggle("missing", open);
      if (open) missing.push(box);
    });
    if (missing.length) {
      showError("Please answer every question first (" + missing.length + " left).");
      missing[0].scrollIntoView({ behavior: "smooth", block: "center" });
      return;
    }
    const button = document.getElementById("finish");
    button.disabled = true;
    enqueue("story_finished", { story: story }, function (body) {
      if (body.ok && body.next) {
        window.location.assign(body.next);
      } else {
        button.disabled = false;
        showError(body.error || "Please try again.");
      }
    });
  });

  window.addEventListener("online", send);
})();
