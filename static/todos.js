// Live refresh of the todo panel (#todos).
// The live-session code dispatches `agentops:todos-changed` on document with
// detail {session_id, version} when a "todos.changed" message arrives; the panel is then
// re-fetched with htmx from its data-refresh-url. A person's open edit form is never
// swapped away: the panel is marked stale instead and refreshed once the form closes.
(function () {
  "use strict";
  if (window.agentopsTodos) return; // the panel include may load this file twice
  window.agentopsTodos = true;

  function editing(panel) {
    return Array.prototype.some.call(panel.querySelectorAll("details[open]"), function (d) {
      return d.contains(document.activeElement);
    });
  }

  function refresh(panel) {
    if (!window.htmx) return;
    panel.removeAttribute("data-stale");
    window.htmx.ajax("GET", panel.dataset.refreshUrl, { target: "#todos", swap: "outerHTML" });
  }

  document.addEventListener("agentops:todos-changed", function (event) {
    var panel = document.getElementById("todos");
    if (!panel) return;
    var detail = event.detail || {};
    if (detail.session_id && detail.session_id !== panel.dataset.sessionId) return;
    var shown = parseInt(panel.dataset.version || "0", 10);
    if (typeof detail.version === "number" && detail.version <= shown) return;
    if (editing(panel)) {
      panel.setAttribute("data-stale", "true");
      return;
    }
    refresh(panel);
  });

  // A stale panel refreshes as soon as the person leaves the form.
  document.addEventListener("focusout", function () {
    setTimeout(function () {
      var panel = document.getElementById("todos");
      if (panel && panel.dataset.stale && !editing(panel)) refresh(panel);
    }, 0);
  });
})();
