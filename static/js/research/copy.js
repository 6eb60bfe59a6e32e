// The Copy buttons beside participant links: the link goes to the clipboard; where the
// browser refuses (no permission, or a page served over plain http), it stays selected for
// the researcher to copy with the keyboard.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const box = document.getElementById(button.dataset.copy);
  const said = document.querySelector(`[data-copied="${CSS.escape(button.dataset.copy)}"]`);
  box.focus();
  box.select();
  try {
    await navigator.clipboard.writeText(box.value);
    said.textContent = "Copied.";
  } catch {
    said.textContent = "Selected: press Ctrl+C (⌘C on a Mac) to copy.";
  }
});
