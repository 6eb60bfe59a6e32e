// The keystroke record of the writing page (docs/research.md, "The keystroke record"; the
// rows are text_operations' in docs/data-dictionary.md). Every change to the writer's line
// and to the edit box is one operation: where it starts (in code points, as the server
// counts), what it removed and what it put in, found by comparing the box's text before and
// after the change, so that an input method or autocorrect is recorded as what it did; its
// source comes from the input's inputType. Beside them: each suggestion shown or hidden (in
// the viewport or not), focused or hovered and left, the tab hidden or shown, the connection
// lost or back. Rows are numbered from 1 within the session; the count, each box's last
// recorded text (both shared by the story's tabs) and each tab's rows not yet handed over are
// kept in localStorage, so a reload or a second tab never reuses a number, loses nothing, and
// goes on from the last recorded text. The rows are
// handed to the page's outbox (the same as every action's: kept offline, sent again until
// stored) every ten seconds or 100 rows, and whenever the page sends a line, a draft or a
// turn, which carries the number of the last row (record_seq) for the server's check.
// Off (the study's record_keystrokes = false), nothing is recorded, kept or sent.
(function () {
  "use strict";

  // Each batch costs the server about what an action costs (bench/results/keystrokes.md),
  // and the rows wait safely in localStorage meanwhile: a few batches a round.
  const BATCH_MS = 10000;
  const BATCH_ROWS = 100;
  const SOURCES = {
    insertText: "typed",
    insertLineBreak: "typed",
    insertParagraph: "typed",
    deleteContentBackward: "typed",
    deleteContentForward: "typed",
    deleteWordBackward: "typed",
    deleteWordForward: "typed",
    deleteSoftLineBackward: "typed",
    deleteSoftLineForward: "typed",
    deleteHardLineBackward: "typed",
    deleteHardLineForward: "typed",
    insertFromPaste: "pasted",
    insertFromPasteAsQuotation: "pasted",
    insertFromDrop: "dropped",
    deleteByDrag: "dropped",
    deleteByCut: "cut",
    historyUndo: "undo",
    historyRedo: "redo",
  };
  // Half a suggestion in the viewport counts as seen.
  const SEEN_RATIO = 0.5;

  // The one operation that turns `before` into `after`: [position, deleted, inserted], the
  // longest common prefix and then suffix left alone, in code points (operation_between in
  // cyoa/cowriting/process/operations.py).
  function diff(before, after) {
    const a = Array.from(before);
    const b = Array.from(after);
    const limit = Math.min(a.length, b.length);
    let start = 0;
    while (start < limit && a[start] === b[start]) start += 1;
    let end = 0;
    while (end < limit - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end += 1;
    return [start, a.slice(start, a.length - end).join(""), b.slice(start, b.length - end).join("")];
  }

  // A page's pending rows are its own (two tabs of one story each keep theirs); a page not
  // heard of for this long (or that said it closed) left its rows for the next to send.
  const ORPHAN_MS = 60000;

  // `fits(rows)`: whether a batch goes in one message (the page's limit for an action).
  function create({ key, on, round, handOver, fits }) {
    const storageKey = `cyoa:record:${key}`;
    const pendingPrefix = `${storageKey}:pending:`;
    const pendingKey = pendingPrefix + Math.random().toString(36).slice(2) + Date.now().toString(36);
    let storage = null;
    try { storage = window.localStorage; } catch (e) { /* off: this page only */ }
    const read = (name) => {
      try { return (storage && JSON.parse(storage.getItem(name))) || null; } catch (e) { return null; }
    };
    const kept = read(storageKey);
    // seq: the last number given (shared by the story's tabs); texts: "round|box|slot" ->
    // the box's last recorded text; pending: this page's rows not yet handed to the outbox;
    // lastRound: for rows made before a render.
    const state = {
      seq: (kept && Number.isInteger(kept.seq)) ? kept.seq : 0,
      texts: (kept && kept.texts) || {},
      pending: (kept && Array.isArray(kept.pending)) ? kept.pending : [], // an older page's
      lastRound: (kept && kept.lastRound) || null,
    };
    adoptOrphans();
    let recording = Boolean(on);
    let loadRecorded = false; // this page load's starting visibility, recorded once
    let timer = null;
    const seen = {}; // "round:slot" -> "visible" | "hidden"
    const focused = {}; // slot -> {keyboard, pointer}
    const roundOf = new WeakMap(); // a suggestion's card -> the round it was drawn for

    let closed = false; // the page is going away: its pending rows are the next page's
    function save() {
      if (!storage) return;
      const { seq, texts, lastRound } = state;
      try {
        storage.setItem(storageKey, JSON.stringify({ seq, texts, lastRound }));
        storage.setItem(pendingKey, JSON.stringify({ at: Date.now(), closed, rows: state.pending }));
      } catch (e) { /* full */ }
    }

    // The pending rows of pages closed (or gone quiet) are this page's to send: a row sent
    // twice is stored once (its seq), so taking a live page's by mistake loses nothing.
    function adoptOrphans() {
      if (!storage) return;
      const names = [];
      for (let i = 0; i < storage.length; i += 1) {
        const name = storage.key(i);
        if (name && name.startsWith(pendingPrefix) && name !== pendingKey) names.push(name);
      }
      for (const name of names) {
        const other = read(name);
        if (other && !other.closed && Date.now() - other.at < ORPHAN_MS) continue;
        if (other && Array.isArray(other.rows)) state.pending.push(...other.rows);
        try { storage.removeItem(name); } catch (e) { /* ignore */ }
      }
      state.pending.sort((a, b) => a[0] - b[0]);
    }

    // Another tab of the story recorded: take its numbers and texts as the latest.
    window.addEventListener("storage", (event) => {
      if (event.key !== storageKey || !event.newValue) return;
      const other = read(storageKey);
      if (!other) return;
      if (Number.isInteger(other.seq)) state.seq = Math.max(state.seq, other.seq);
      if (other.texts) state.texts = other.texts;
    });
    // Going away (the tab's "hidden" row comes after pagehide, so every save from then on
    // says so), unless the browser brings the page back from its cache.
    window.addEventListener("pagehide", () => { closed = true; save(); });
    window.addEventListener("pageshow", () => { closed = false; save(); });

    function currentRound() {
      const r = round();
      if (r) {
        if (r !== state.lastRound) {
          state.lastRound = r;
          for (const k of Object.keys(state.texts)) {
            if (Number(k.split("|")[0]) < r) delete state.texts[k];
          }
        }
        return r;
      }
      return state.lastRound;
    }

    function add(roundNumber, kind, box, slot, position, deleted, inserted, source) {
      if (!recording || !roundNumber) return;
      if (kind === "text" && !fits([[0, roundNumber, Date.now(), kind, box, slot, position, deleted, inserted, source]])) {
        // A change too large for one message goes as several rows that each fit: the removal,
        // then the insertion, each cut in halves (in code points) as often as needed.
        const gone = Array.from(deleted);
        const put = Array.from(inserted);
        if (gone.length && put.length) {
          add(roundNumber, kind, box, slot, position, deleted, "", source);
          add(roundNumber, kind, box, slot, position, "", inserted, source);
          return;
        }
        const part = gone.length ? gone : put;
        if (part.length > 1) {
          const first = part.slice(0, part.length >> 1).join("");
          const rest = part.slice(part.length >> 1).join("");
          if (gone.length) {
            add(roundNumber, kind, box, slot, position, first, "", source);
            add(roundNumber, kind, box, slot, position, rest, "", source);
          } else {
            add(roundNumber, kind, box, slot, position, "", first, source);
            add(roundNumber, kind, box, slot, position + (part.length >> 1), "", rest, source);
          }
          return;
        }
      }
      const stored = read(storageKey); // another tab may have numbered rows since
      state.seq = Math.max(state.seq, (stored && Number.isInteger(stored.seq)) ? stored.seq : 0) + 1;
      state.pending.push([state.seq, roundNumber, Date.now(), kind, box, slot, position, deleted, inserted, source]);
      save();
      if (state.pending.length >= BATCH_ROWS) flush();
      else if (!timer) timer = setTimeout(flush, BATCH_MS);
    }

    // Hands the rows to the outbox; none while the page does not know its round yet.
    function flush() {
      clearTimeout(timer);
      timer = null;
      if (!recording || !state.pending.length || !round()) return;
      const rows = state.pending;
      state.pending = [];
      // In batches that each fit one message (kept in the outbox's storage as handed over).
      let batch = [];
      for (const row of rows) {
        if (batch.length && !fits([...batch, row])) {
          handOver(batch);
          batch = [];
        }
        batch.push(row);
      }
      if (batch.length) handOver(batch);
      save();
    }

    // Watches a box; `which()` says which text it shows now ({box, slot, start}: `start`
    // the text it starts from the first time, a suggestion's for an edit box) or null.
    // The box's text just before the writer's change (beforeinput) may differ from the last
    // recorded one: the page filled it (the server's saved draft, a kept line). That fill is
    // recorded first, as "other", so the record still replays from its start.
    function watch(element, which) {
      let shown = null;
      element.addEventListener("beforeinput", () => { shown = element.value; });
      element.addEventListener("input", (event) => {
        const text = which();
        const r = currentRound();
        const was = shown;
        shown = null;
        if (!text || !recording || !r) return;
        const name = `${r}|${text.box}|${text.slot === null ? "" : text.slot}`;
        const recorded = state.texts[name] !== undefined ? state.texts[name] : text.start;
        const before = was === null ? recorded : was;
        if (before !== recorded) {
          const [position, deleted, inserted] = diff(recorded, before);
          add(r, "text", text.box, text.slot, position, deleted, inserted, "other");
        }
        const after = element.value;
        state.texts[name] = after;
        if (before === after) return;
        const [position, deleted, inserted] = diff(before, after);
        add(r, "text", text.box, text.slot, position, deleted, inserted, SOURCES[event.inputType] || "other");
      });
    }

    function slotOf(card) {
      const match = card && /^suggestion-(\d)$/.exec(card.id);
      return match ? Number(match[1]) : null;
    }

    // A card hidden when the next round begins is its own round's suggestion.
    function viewed(r, slot, source) {
      if (!r || seen[`${r}:${slot}`] === source) return;
      seen[`${r}:${slot}`] = source;
      add(r, "view", null, slot, null, null, null, source);
    }

    const cardsSeen = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const slot = slotOf(entry.target);
        const source = entry.intersectionRatio >= SEEN_RATIO ? "visible" : "hidden";
        if (slot) viewed(roundOf.get(entry.target), slot, source);
      }
    }, { threshold: [0, SEEN_RATIO] });

    // Observes the suggestion cards in `container` as the page draws them anew: a card
    // redrawn is the same suggestion, so only a change of what is seen is recorded.
    function cards(container) {
      const follow = () => {
        for (const card of container.querySelectorAll(".suggestion")) {
          if (roundOf.has(card)) continue;
          roundOf.set(card, currentRound());
          cardsSeen.observe(card);
        }
      };
      new MutationObserver((changes) => {
        for (const change of changes) {
          for (const node of change.removedNodes) if (node.nodeType === 1) cardsSeen.unobserve(node);
        }
        follow();
      }).observe(container, { childList: true });
      follow();
      const attention = (how, event, now) => {
        const card = event.target.closest && event.target.closest(".suggestion");
        const slot = slotOf(card);
        if (!slot) return;
        if (how === "pointer" && event.relatedTarget && card.contains(event.relatedTarget)) return;
        const was = focused[slot] || { keyboard: false, pointer: false };
        const is = { ...was, [how]: now };
        focused[slot] = is;
        const before = was.keyboard || was.pointer;
        const after = is.keyboard || is.pointer;
        if (before !== after) add(currentRound(), "view", null, slot, null, null, null, after ? "focus" : "blur");
      };
      container.addEventListener("focusin", (e) => attention("keyboard", e, true));
      container.addEventListener("focusout", (e) => attention("keyboard", e, false));
      container.addEventListener("pointerover", (e) => attention("pointer", e, true));
      container.addEventListener("pointerout", (e) => attention("pointer", e, false));
    }

    const page = (source) => add(currentRound(), "page", null, null, null, null, null, source);
    document.addEventListener("visibilitychange", () => page(document.hidden ? "hidden" : "visible"));
    window.addEventListener("offline", () => page("offline"));
    window.addEventListener("online", () => page("online"));

    return {
      watch,
      cards,
      // The server's word at each join: on or off, and the number after its largest row.
      setting(record) {
        recording = Boolean(record && record.on);
        if (!recording) {
          state.pending = [];
          if (storage) {
            try { storage.removeItem(storageKey); storage.removeItem(pendingKey); } catch (e) { /* ignore */ }
          }
          return;
        }
        if (Number.isInteger(record.next_seq)) state.seq = Math.max(state.seq, record.next_seq - 1);
        // A reload records "hidden" as the old page unloads: the new one says how it starts.
        if (!loadRecorded) {
          loadRecorded = true;
          page(document.hidden ? "hidden" : "visible");
        }
        save();
        flush();
      },
      // The number of the last row, once every row is in the outbox; null when off.
      through() {
        if (!recording) return null;
        flush();
        return state.seq;
      },
    };
  }

  window.CyoaRecord = { create, diff };
})();
