// Runs static/js/record.js (the path given) in Node with just enough of a browser for it
// (tests/cowriting/test_record_js.py): tabs of one story share one localStorage, which tells
// the other tabs of each write (the `storage` event), as a browser does. The scenario comes on stdin as a
// function body given `tab(options)` and `storage`; what it returns is printed as JSON.
"use strict";
const fs = require("fs");
const vm = require("vm");

const source = fs.readFileSync(process.argv[2], "utf8"); // static/js/record.js
const tabs = [];
const items = new Map();
const storage = {
  get length() { return items.size; },
  key: (i) => Array.from(items.keys())[i] ?? null,
  getItem: (name) => (items.has(name) ? items.get(name) : null),
  setItem(name, value, from) {
    items.set(name, String(value));
    for (const t of tabs) if (t !== from) t.fire("storage", { key: name, newValue: String(value) });
  },
  removeItem: (name) => items.delete(name),
};

function listeners() {
  const on = {};
  return {
    addEventListener: (type, fn) => { (on[type] = on[type] || []).push(fn); },
    fire: (type, event = {}) => { for (const fn of on[type] || []) fn(event); },
  };
}

// One page: `record` is its recorder, `box` a text box it watches, `handed` the batches
// handed to its outbox, `close()` the page going away.
// `start`: what the box shows when the page opens; `begins`: the text its record starts from.
function tab({ on = true, round = 1, start = "", begins = "", limit = 64 * 1024, hidden = false } = {}) {
  const win = listeners();
  const doc = { ...listeners(), hidden };
  const t = { fire: win.fire, handed: [] };
  const mine = { ...storage, setItem: (n, v) => storage.setItem(n, v, t) };
  Object.defineProperty(mine, "length", { get: () => storage.length });
  win.localStorage = mine;
  const context = {
    window: win, document: doc, console, JSON, Math, Date, Array, Number, Object, String,
    TextEncoder, WeakMap, Boolean,
    setTimeout: () => 0, clearTimeout: () => {},
    IntersectionObserver: class { observe() {} unobserve() {} },
    MutationObserver: class { observe() {} },
  };
  vm.runInNewContext(source, context);
  t.record = win.CyoaRecord.create({
    key: "story", on, round: () => round,
    handOver: (rows) => t.handed.push(rows),
    fits: (rows) => new TextEncoder().encode(JSON.stringify({ type: "record", payload: { operations: rows } })).length <= limit,
  });
  t.box = { value: start, ...listeners() };
  t.record.watch(t.box, () => ({ box: "line", slot: null, start: begins }));
  t.type = (after, inputType = "insertText") => {
    t.box.fire("beforeinput", { inputType });
    t.box.value = after;
    t.box.fire("input", { inputType });
  };
  t.close = () => { // in the order a browser unloads a page
    win.fire("pagehide");
    doc.hidden = true;
    doc.fire("visibilitychange");
    tabs.splice(tabs.indexOf(t), 1);
  };
  tabs.push(t);
  return t;
}

const scenario = fs.readFileSync(0, "utf8");
const result = new Function("tab", "storage", scenario)(tab, storage);
process.stdout.write(JSON.stringify(result));
