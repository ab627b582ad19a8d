// Live session page: htmx's websocket extension (hx-ext="ws" ws-connect on #live) connects,
// reconnects with backoff and swaps the HTML frames the server sends (hx-swap-oob; see
// sessions_app/live/render.py). This file adds what the extension cannot know:
// - the resume position: each connection asks for the events after the last one seen (#live-state's
//   data-last-id, which every frame updates) and the turns shown running: no gaps on reconnect;
// - a turn or event the page already shows is not added twice (live and lazy events overlap);
// - a turn's status on its <article> (its head is swapped), calls in flight when it ended shown
//   as never answered;
// - the indicator's Connecting / Reconnecting / refused states; a session gone followed;
//   todo-list changes as the agentops:todos-changed event (static/todos.js); composer notes.
// Without JavaScript the page is a plain, complete page (reload to update).
(function () {
  "use strict";
  var bar = document.getElementById("live");
  if (!bar || !window.htmx || !window.WebSocket) return;
  var connections = 0;

  function setIndicator(state, text) {
    var indicator = document.getElementById("live-indicator");
    indicator.dataset.state = state;
    indicator.textContent = text;
  }

  function liveState() {
    return document.getElementById("live-state").dataset;
  }

  htmx.createWebSocket = function (url) {
    var running = Array.prototype.map.call(
      document.querySelectorAll("article.turn[data-status=running]"),
      function (article) { return article.dataset.turnId; }
    );
    var query = "?after=" + (parseInt(liveState().lastId, 10) || 0);
    if (running.length) query += "&turns=" + encodeURIComponent(running.join(","));
    setIndicator(connections ? "reconnecting" : "connecting", connections ? "Reconnecting…" : "Connecting…");
    connections += 1;
    var socket = new WebSocket(url + query);
    socket.binaryType = htmx.config.wsBinaryType;
    return socket;
  };

  // A session live here may be gone (a trace moved into its conversation's session, whose
  // page redirects; or deleted): its socket is refused at the handshake, so ask the page.
  var opened = false, asked = 0;
  bar.addEventListener("htmx:wsOpen", function () { opened = true; });
  function followIfGone() {
    if (!opened || Date.now() - asked < 5000) return;
    asked = Date.now();
    fetch(location.href, { credentials: "same-origin" }).then(function (r) {
      if (r.redirected || r.status === 404) location.assign(r.url);
    }, function () {});
  }

  bar.addEventListener("htmx:wsClose", function (e) {
    var code = e.detail.event.code;
    if (code === 1006 || code === 4404) followIfGone();
    if (code === 4403 || code === 4404) {
      setIndicator("refused", "Not live: access refused (reload the page)");
      return;
    }
    // 4429: this page fell too far behind; it resumes from its last event id.
    setIndicator("reconnecting", code === 4429 ? "Catching up…" : "Reconnecting…");
    // The extension retries abnormal closes itself; a server that closed cleanly (a
    // restart) is retried here.
    if ([1006, 1011, 1012, 1013].indexOf(code) < 0) {
      setTimeout(e.detail.socketWrapper.reconnect, 500 + Math.random() * 1000);
    }
  });

  // A message may hold several frames (a server that fell behind joins them), each
  // beginning with its #live-state: a frame's state is handled once its elements are in
  // the page, i.e. when the next frame's state is swapped in, or when the message ends.
  var framesInMessage = 0;
  bar.addEventListener("htmx:wsBeforeMessage", function () { framesInMessage = 0; });

  // An insert (event into a turn, new turn into the timeline) of what is already shown.
  document.body.addEventListener("htmx:oobBeforeSwap", function (e) {
    if (e.detail.target.id === "live-state") {
      if (framesInMessage > 0) frameDone(liveState());
      framesInMessage += 1;
    }
    var first = e.detail.fragment.firstElementChild;
    if (first && first.id && first.id !== e.detail.target.id && document.getElementById(first.id)) {
      e.detail.shouldSwap = false;
    }
  });

  function turnChanged(turnId) {
    var head = document.getElementById("turn-head-" + turnId);
    var article = head && head.closest("article.turn");
    if (!article) return;
    var status = head.dataset.status;
    article.dataset.status = status;
    article.className = article.className.replace(/\bstatus-\S+/, "status-" + status);
    if (status === "running") return;
    article.querySelectorAll(".tool-call.is-inflight").forEach(function (call) {
      call.classList.replace("is-inflight", "is-unanswered");
      var badge = call.querySelector(".tool-head .badge.status-running");
      if (badge) { badge.className = "badge status-unanswered"; badge.textContent = "no result"; }
    });
  }

  function frameDone(state) {
    if (state.kind === "turn") turnChanged(state.turnId);
    if (state.kind === "todos") {
      document.dispatchEvent(new CustomEvent("agentops:todos-changed", {
        detail: { session_id: state.sessionId, version: parseInt(state.version, 10) }
      }));
    }
  }
  bar.addEventListener("htmx:wsAfterMessage", function () { frameDone(liveState()); });

  // Lazily loaded events may overlap live ones: keep the first, in the swap's own task.
  document.addEventListener("htmx:afterSwap", function () {
    var seen = {};
    document.querySelectorAll(".turn .event[id^=event-]").forEach(function (el) {
      if (seen[el.id]) el.remove();
      else seen[el.id] = true;
    });
  });

  // Composer: a refused post (4xx) still shows its note; a sent message clears the box.
  document.body.addEventListener("htmx:beforeSwap", function (e) {
    if (e.detail.xhr.status < 500 && e.detail.elt.closest("#composer")) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  document.body.addEventListener("htmx:afterRequest", function (e) {
    if (e.detail.elt.id === "run-form" && e.detail.successful) e.detail.elt.reset();
  });
})();
