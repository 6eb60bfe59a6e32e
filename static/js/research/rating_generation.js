// The progress of stories being generated for a rating experiment: asks the server every
// second ("Generated 3/8 stories."), then shows the new experiment's link, or why it stopped
// (an error, a cancel, a restart of the server).
(function () {
  "use strict";

  const box = document.getElementById("generation");
  if (!box) return;
  const bar = document.getElementById("generation-bar");
  const message = document.getElementById("generation-message");
  const POLL_MS = 1000;
  const ENDED_UNSTORED = ["failed", "cancelled", "interrupted"];

  function show(job) {
    bar.max = job.total;
    bar.value = job.done;
    message.textContent = job.message;
    document.getElementById("generation-running").hidden = job.state !== "running";
    document.getElementById("generation-created").hidden = job.state !== "created";
    document.getElementById("generation-failed").hidden = !ENDED_UNSTORED.includes(job.state);
    document.getElementById("generation-error").textContent = job.error;
    if (job.state === "created") {
      document.getElementById("generation-link").href = job.url;
      window.location.assign(job.url);
    }
    return job.state === "running";
  }

  function poll() {
    fetch(box.dataset.url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then((response) => {
        if (!response.ok) throw new Error(response.statusText);
        return response.json();
      })
      .then((job) => { if (show(job)) window.setTimeout(poll, POLL_MS); })
      .catch(() => {
        message.textContent = "Lost contact with the server; reload the page to see the progress.";
      });
  }

  window.setTimeout(poll, POLL_MS);
})();
