// The participant pages' strings in the page's language, from the same catalogues as the
// server's (cyoa/translations/, see cyoa/web/language.py): the page embeds the translations
// its scripts need in <script type="application/json" id="strings">, keyed by the English
// text; a string missing there is shown in English. Placeholders are written {name}.
// Plural messages are keyed by their English singular and hold one form per CLDR plural
// category, chosen with Intl.PluralRules. Numbers keep Western digits (-u-nu-latn), as the
// server's Babel does for every language here, Arabic included.
window.cyoaI18n = (function () {
  "use strict";

  const element = document.getElementById("strings");
  const table = element ? JSON.parse(element.textContent) : {};
  const lang = table._lang || document.documentElement.lang || "en";
  const numbers = new Intl.NumberFormat(`${lang}-u-nu-latn`);
  const plurals = new Intl.PluralRules(lang);

  function formatNumber(n) {
    return numbers.format(n);
  }

  function fill(text, values) {
    return text.replace(/\{(\w+)\}/g, (whole, name) => {
      if (!values || !(name in values)) return whole;
      const value = values[name];
      return typeof value === "number" ? formatNumber(value) : String(value);
    });
  }

  function gettext(message, values) {
    const found = table[message];
    return fill(typeof found === "string" ? found : message, values);
  }

  function ngettext(singular, plural, n, values) {
    const all = { n, ...values };
    const found = table[singular];
    if (found && found.forms) {
      const form = found.forms[plurals.select(n)] || found.forms.other;
      if (form) return fill(form, all);
    }
    return fill(n === 1 ? singular : plural, all);
  }

  return { lang, gettext, ngettext, formatNumber };
})();
