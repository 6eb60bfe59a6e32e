// The rating form: the built-in AISS quality check goes with the AISS only (the server
// refuses it with any other instrument), so choosing another instrument unticks and disables
// it, and choosing the AISS again restores what was chosen for it.
(function () {
  "use strict";

  const check = document.getElementById("aiss_check");
  const radios = Array.from(document.querySelectorAll('input[name="instrument"]'));
  if (!check || !radios.length) return;
  let tickedForAiss = check.checked;

  function follow() {
    const aiss = radios.some((radio) => radio.checked && radio.value === "aiss-v1");
    if (aiss) {
      check.disabled = false;
      check.checked = tickedForAiss;
    } else {
      if (!check.disabled) tickedForAiss = check.checked;
      check.checked = false;
      check.disabled = true;
    }
  }

  radios.forEach((radio) => radio.addEventListener("change", follow));
  follow();
})();
