// Live session page: follows ws/sessions/<id>/ (sessions_app/consumers.py).
// - turn messages: update a turn's head in place (badge, reason, failure) or append a new
//   turn at the end of the timeline (latest page only);
// - partial messages: append the text delta to the turn's streaming box;
// - event messages: the server-rendered event (the page's own partial) replaces the
//   streaming box; a tool result re-renders its call in place ("pair");
// - reconnects with backoff, resuming after the last event id it saw (no gaps).
// Without JavaScript the page is a plain, complete page (reload to update).
(function () {
  "use strict";
  var bar = document.getElementById("live");
  if (!bar || !window.WebSocket) return;
  var indicator = bar.querySelector(".live-indicator");
  var lastId = parseInt(bar.dataset.after || "0", 10) || 0;
  var lastByTurn = {}; // turn id -> last complete event id rendered live
  var socket = null;
  var attempt = 0;
  var refused = false;

  function setState(state, text) {
    indicator.dataset.state = state;
    indicator.textContent = text;
    bar.dataset.state = state;
  }

  function timeline() {
    return document.getElementById("timeline");
  }

  function fragment(html) {
    var t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  function article(turnId) {
    return document.getElementById("turn-" + turnId);
  }

  function liveBox(art) {
    var box = art.querySelector(":scope > .live-events");
    if (!box) {
      box = document.createElement("div");
      box.className = "live-events";
      art.appendChild(box);
    }
    var none = art.querySelector(":scope > .no-events");
    if (none) none.remove();
    return box;
  }

  function runningTurnIds() {
    return Array.prototype.map.call(
      document.querySelectorAll("article.turn[data-status=running]"),
      function (a) { return a.dataset.turnId; }
    );
  }

  function updateStopButton() {
    var form = document.getElementById("stop-form");
    if (form) form.hidden = runningTurnIds().length === 0;
  }

  function onTurn(turn) {
    var art = article(turn.id);
    if (art) {
      var head = art.querySelector(":scope > .turn-head");
      var fresh = fragment(turn.head_html);
      if (head && fresh) head.replaceWith(fresh);
      art.className = art.className.replace(/\bstatus-\S+/, "status-" + turn.status);
      art.dataset.status = turn.status;
      if (turn.status !== "running") {
        var stream = art.querySelector(".streaming");
        if (stream) stream.remove();
        // Calls still waiting when the turn ended never got a result.
        art.querySelectorAll(".tool-call.is-inflight").forEach(function (call) {
          call.classList.remove("is-inflight");
          call.classList.add("is-unanswered");
          var badge = call.querySelector(".tool-head .badge.status-running");
          if (badge) { badge.className = "badge status-unanswered"; badge.textContent = "no result"; }
        });
      }
    } else {
      // A stop note is about an earlier turn.
      var noteEl = document.getElementById("composer-note");
      if (noteEl && /^Stop requested/.test(noteEl.textContent)) noteEl.textContent = "";
      // A turn begun after the page was rendered is one more in the header's count.
      if (!seenTurns[turn.id] && Date.parse(turn.started_at) > renderedAt) {
        seenTurns[turn.id] = true;
        bumpCount(document.getElementById("turn-count"), null);
      }
      var tl = timeline();
      if (tl && tl.dataset.latestPage === "true") {
        var empty = tl.querySelector(":scope > .empty");
        if (empty) empty.remove();
        tl.appendChild(fragment(turn.article_html));
      }
    }
    updateStopButton();
  }

  function streamBox(art, partial) {
    var box = liveBox(art);
    var stream = box.querySelector(".streaming");
    if (!stream) {
      stream = document.createElement("div");
      stream.className = "event role-" + (partial.role || "assistant") + " streaming";
      var meta = document.createElement("div");
      meta.className = "event-meta small";
      var role = document.createElement("span");
      role.className = "role";
      role.textContent = partial.role || "assistant";
      meta.appendChild(role);
      meta.appendChild(document.createTextNode(
        (partial.author ? " · " + partial.author : "") + " · streaming…"
      ));
      var text = document.createElement("div");
      text.className = "stream-text";
      stream.appendChild(meta);
      stream.appendChild(text);
      box.appendChild(stream);
    }
    return stream;
  }

  function onPartial(partial) {
    if ((partial.after_id || 0) < (lastByTurn[partial.turn_id] || 0)) return; // stale
    var art = article(partial.turn_id);
    if (!art) return;
    var stream = streamBox(art, partial);
    // Plain text: model output is never parsed as HTML on the client.
    stream.querySelector(".stream-text").textContent += partial.delta || "";
  }

  // Counters the server rendered (data-count) that live traffic moves on.
  var seenTurns = {};
  var renderedAt = Date.parse(bar.dataset.renderedAt || "") || Date.now();
  function bumpCount(el, noun) {
    if (!el) return;
    var n = (parseInt(el.dataset.count, 10) || 0) + 1;
    el.dataset.count = String(n);
    el.textContent = noun ? n + " " + noun + (n === 1 ? "" : "s") : String(n);
  }

  function onEvent(event) {
    var art = event.turn_id ? article(event.turn_id) : null;
    if (art && event.id > lastId) {
      bumpCount(art.querySelector(":scope > .turn-head .event-count"), "event");
    }
    lastId = Math.max(lastId, event.id);
    if (event.turn_id) lastByTurn[event.turn_id] = Math.max(lastByTurn[event.turn_id] || 0, event.id);
    if (art) {
      var stream = art.querySelector(".streaming");
      if (stream) stream.remove();
    }
    if (document.getElementById("event-" + event.id)) return; // already on the page
    if (event.pair) {
      var call = document.getElementById("event-" + event.pair.event_id);
      if (call) {
        call.replaceWith(fragment(event.pair.html));
        return;
      }
    }
    if (!art) return; // a turn not shown on this page of the timeline
    var box = liveBox(art);
    box.appendChild(fragment(event.html));
  }

  // Events lazily loaded by htmx may overlap those appended live: keep the first.
  document.addEventListener("htmx:afterSettle", function () {
    var seen = {};
    document.querySelectorAll(".turn .event[id^=event-]").forEach(function (el) {
      if (seen[el.id]) el.remove();
      else seen[el.id] = true;
    });
  });

  function onMessage(message) {
    switch (message.kind) {
      case "turn": onTurn(message.turn); break;
      case "partial": onPartial(message.partial); break;
      case "event": onEvent(message.event); break;
      case "hello":
        lastId = Math.max(lastId, message.last_id || 0);
        attempt = 0;
        setState("live", "Live");
        break;
      case "cancel": note("Stop requested…"); break;
      case "todos":
        document.dispatchEvent(new CustomEvent("agentops:todos-changed", {
          detail: { session_id: message.session_id, version: message.version }
        }));
        break;
    }
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var query = "?after=" + lastId;
    var running = runningTurnIds();
    if (running.length) query += "&turns=" + encodeURIComponent(running.join(","));
    setState(attempt ? "reconnecting" : "connecting", attempt ? "Reconnecting…" : "Connecting…");
    socket = new WebSocket(scheme + location.host + bar.dataset.wsPath + query);
    socket.onmessage = function (e) {
      try { onMessage(JSON.parse(e.data)); } catch (err) { console.error(err); }
    };
    socket.onclose = function (e) {
      socket = null;
      if (e.code === 4403 || e.code === 4404) {
        refused = true;
        setState("refused", "Not live: access refused (reload the page)");
        return;
      }
      attempt += 1;
      // Backoff: 0.5 s, 1 s, 2 s ... at most 15 s, with jitter.
      var delay = Math.min(15000, 500 * Math.pow(2, attempt - 1)) * (0.75 + Math.random() / 2);
      setState("reconnecting", "Reconnecting…");
      setTimeout(function () { if (!refused) connect(); }, delay);
    };
  }

  // Composer and stop button: post in the background so the page keeps its connection.
  function note(text) {
    var el = document.getElementById("composer-note");
    if (el) el.textContent = text;
  }

  function postForm(form, onDone) {
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var button = form.querySelector("button[type=submit]");
      if (button) button.disabled = true;
      fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        headers: { Accept: "application/json" },
        credentials: "same-origin"
      }).then(function (r) {
        return r.json().catch(function () { return { error: "HTTP " + r.status }; });
      }).then(function (data) {
        onDone(data);
      }).catch(function () {
        note("Could not reach the server.");
      }).finally(function () {
        if (button) button.disabled = false;
      });
    });
  }

  var runForm = document.getElementById("run-form");
  if (runForm) {
    postForm(runForm, function (data) {
      if (data.error) { note(data.error); return; }
      runForm.querySelector("textarea").value = "";
      note("Turn started.");
    });
  }
  var stopForm = document.getElementById("stop-form");
  if (stopForm) postForm(stopForm, function (data) {
    if (data.error) { note(data.error); return; }
    note(data.abandoned && data.abandoned.length
      ? "No process was running it: recorded as abandoned."
      : "Stop requested.");
  });
  updateStopButton();
  connect();
})();
