// A page that moves on by itself (the completion page back to the platform, the reconnecting
// page reloading) does so from here rather than a <meta http-equiv="refresh">, so that the
// participant can stop it (WCAG 2.2.1, Timing Adjustable): the sentence saying when, and its
// Stay button, are shown only where this script runs; without it the page stays and its
// link or reload is there to use.
(function () {
  "use strict";
  const box = document.getElementById("countdown");
  if (!box) return;
  const seconds = Number(box.dataset.seconds);
  const go = box.dataset.go;
  const timer = setTimeout(() => {
    if (go) window.location.assign(go);
    else window.location.reload();
  }, seconds * 1000);
  const stay = document.getElementById("stay");
  box.hidden = false;
  stay.hidden = false;
  stay.addEventListener("click", () => {
    clearTimeout(timer);
    box.textContent = box.dataset.stayed;
  });
})();
