// Shows <time datetime="..." data-local> in the reader's time zone and locale; the server
// renders UTC and keeps it in the tooltip (title). External file: the CSP allows no inline script.
(function () {
  "use strict";
  function localise(root) {
    root.querySelectorAll("time[data-local][datetime]").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when.getTime())) return;
      el.textContent = when.toLocaleString(undefined, {
        year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short"
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () { localise(document); });
  document.addEventListener("htmx:afterSettle", function (e) { localise(e.target || document); });
})();
