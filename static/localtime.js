// Shows <time datetime="..." data-local="datetime|time"> in the reader's time zone and
// locale: the server renders UTC and keeps it in the tooltip (title); "time" shows the time
// of day only. Runs on load, after htmx swaps and after live (websocket) frames.
// External file: the CSP allows no inline script.
(function () {
  "use strict";
  var DATE = { year: "numeric", month: "2-digit", day: "2-digit" };
  var TIME = { hour: "2-digit", minute: "2-digit", second: "2-digit" };
  function localise(root) {
    if (!root || !root.querySelectorAll) root = document;
    root.querySelectorAll("time[data-local][datetime]:not([data-localised])").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when.getTime())) return;
      var onlyTime = el.getAttribute("data-local") === "time";
      var options = onlyTime ? TIME : Object.assign({ timeZoneName: "short" }, DATE, TIME);
      el.textContent = onlyTime
        ? when.toLocaleTimeString(undefined, options)
        : when.toLocaleString(undefined, options);
      el.setAttribute("data-localised", "");
    });
  }
  document.addEventListener("DOMContentLoaded", function () { localise(document); });
  document.addEventListener("htmx:afterSettle", function (e) { localise(e.target); });
  // Live frames are swapped out of band (htmx's ws extension): once a frame that holds
  // a time has been swapped in, localise the times not done yet.
  document.addEventListener("htmx:wsAfterMessage", function (e) {
    var message = e.detail && e.detail.message;
    if (typeof message !== "string" || message.indexOf("data-local") !== -1) localise(document);
  });
})();
