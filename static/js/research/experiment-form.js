// The experiment form: a system row's empty sampling fields show its model card's defaults as
// placeholders (an empty field keeps the card's default). The server renders them for the
// models chosen when the page was sent; this keeps them right when a row's model changes.
(function () {
  "use strict";

  document.querySelectorAll("select[data-sampling-defaults]").forEach((select) => {
    select.addEventListener("change", () => {
      const option = select.selectedOptions[0];
      select.closest("tr").querySelectorAll("input[data-sampling]").forEach((input) => {
        input.placeholder = (option && option.dataset[input.dataset.sampling]) || "";
      });
    });
  });
})();
