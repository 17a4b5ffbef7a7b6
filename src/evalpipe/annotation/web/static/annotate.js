// Keyboard-first annotation and idle-aware timing. Loaded as a static file (the CSP forbids
// inline script). Everything also works without JavaScript: plain radios and submit buttons.
(function () {
  "use strict";
  var form = document.getElementById("rating-form");
  if (!form) { return; }

  var axes = Array.prototype.slice.call(form.querySelectorAll("fieldset.axis"));
  var active = 0;          // index of the highlighted axis
  var mode = "score";      // "score": digits set the score; "conf": digits set the confidence
  var IDLE_MS = 60000;     // no input for a minute = away from the keyboard: stop the clock
  var TICK_MS = 250;

  // ---- time per item: visible page and recent input only ------------------------------------
  var activeMs = 0;
  var lastInput = Date.now();
  var lastTick = Date.now();
  var msField = document.getElementById("active_ms");
  function tick() {
    var now = Date.now();
    var step = now - lastTick;
    lastTick = now;
    // A long gap (laptop asleep, throttled tab) is not counted beyond one tick.
    if (step > 5 * TICK_MS) { step = TICK_MS; }
    if (document.visibilityState === "visible" && now - lastInput < IDLE_MS) {
      activeMs += step;
    }
    msField.value = String(Math.round(activeMs));
  }
  setInterval(tick, TICK_MS);
  ["keydown", "mousedown", "mousemove", "wheel", "touchstart", "scroll"].forEach(function (ev) {
    window.addEventListener(ev, function () { lastInput = Date.now(); }, { passive: true });
  });
  document.addEventListener("visibilitychange", function () {
    lastTick = Date.now();
    if (document.visibilityState === "visible") { lastInput = Date.now(); }
  });
  form.addEventListener("submit", function () { tick(); submitting = true; });

  // ---- drafts: half-entered ratings survive moving away --------------------------------------
  // (form.action would be the submit buttons named "action", hence getAttribute.)
  var submitting = false;
  var dirty = false;
  form.addEventListener("change", function (e) { if (e.target.id !== "anchors-toggle") { dirty = true; } });
  form.addEventListener("input", function () { dirty = true; });
  function draftData() {
    tick();
    var data = new FormData(form);
    data.set("action", "draft");
    return data;
  }
  function leave(url) {
    if (!url) { return; }
    if (!dirty) { window.location.href = url; return; }
    dirty = false;
    var done = function () { window.location.href = url; };
    fetch(form.getAttribute("action"), { method: "POST", body: draftData(), credentials: "same-origin", keepalive: true })
      .then(done, done);
  }
  // Links that leave the item (prev/next, the queue squares) save the draft first.
  Array.prototype.forEach.call(document.querySelectorAll("#prev-link, #next-link, nav.queue a"), function (a) {
    a.addEventListener("click", function (e) {
      if (!dirty || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) { return; }
      e.preventDefault();
      leave(a.href);
    });
  });
  // Closing the tab or following any other link: a best-effort beacon.
  window.addEventListener("pagehide", function () {
    if (dirty && !submitting && navigator.sendBeacon) {
      dirty = false;
      navigator.sendBeacon(form.getAttribute("action"), draftData());
    }
  });

  // ---- highlighting -------------------------------------------------------------------------
  function radios(fieldset, kind) {
    return fieldset.querySelectorAll('input[name^="' + kind + '_"]');
  }
  function checkedValue(fieldset, kind) {
    var r = fieldset.querySelector('input[name^="' + kind + '_"]:checked');
    return r ? r.value : null;
  }
  function render() {
    axes.forEach(function (fs, i) {
      fs.classList.toggle("active", i === active);
      fs.classList.toggle("mode-score", i === active && mode === "score");
      fs.classList.toggle("mode-conf", i === active && mode === "conf");
      fs.classList.toggle("complete", !!checkedValue(fs, "score") && !!checkedValue(fs, "conf"));
    });
  }
  function focusAxis(i, newMode) {
    active = Math.max(0, Math.min(axes.length - 1, i));
    mode = newMode || "score";
    render();
    axes[active].scrollIntoView({ block: "nearest", behavior: "smooth" });
  }
  function firstIncomplete() {
    for (var i = 0; i < axes.length; i++) {
      if (!checkedValue(axes[i], "score") || !checkedValue(axes[i], "conf")) { return i; }
    }
    return -1;
  }
  function choose(kind, digit) {
    var list = radios(axes[active], kind);
    var r = list[digit - 1];
    if (!r) { return; }
    r.checked = true;
    r.dispatchEvent(new Event("change", { bubbles: true }));
  }

  // Clicking an option highlights its axis too, so mouse and keyboard mix freely.
  axes.forEach(function (fs, i) {
    fs.addEventListener("change", function (e) {
      active = i;
      mode = e.target.name.indexOf("score_") === 0 ? "conf" : "score";
      if (mode === "score" && i + 1 < axes.length && e.isTrusted) { active = i + 1; }
      render();
    });
  });

  function go(url) { leave(url); }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) { return; }
    var t = e.target;
    if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text"))) { return; }
    // Enter (or Space) on a focused link or button does what it says, not "save".
    if (t && (t.tagName === "A" || t.tagName === "BUTTON" || t.tagName === "SUMMARY") &&
        (e.key === "Enter" || e.key === " ")) { return; }
    var digit = null;
    if (/^Digit[1-5]$/.test(e.code)) { digit = Number(e.code.slice(5)); }
    else if (/^Numpad[1-5]$/.test(e.code)) { digit = Number(e.code.slice(6)); }
    else if (/^[1-5]$/.test(e.key)) { digit = Number(e.key); }
    if (digit !== null) {
      e.preventDefault();
      if (e.shiftKey) {
        choose("conf", digit);
        if (active + 1 < axes.length) { focusAxis(active + 1, "score"); } else { mode = "score"; render(); }
      } else if (mode === "score") {
        choose("score", digit);
        mode = "conf";
        render();
      } else {
        choose("conf", digit);
        if (active + 1 < axes.length) { focusAxis(active + 1, "score"); } else { mode = "score"; render(); }
      }
      return;
    }
    var key = e.key;
    if (key === "Enter") {
      e.preventDefault();
      var missing = firstIncomplete();
      if (missing >= 0) {
        focusAxis(missing, checkedValue(axes[missing], "score") ? "conf" : "score");
        axes[missing].classList.add("shake");
        setTimeout(function () { axes[missing].classList.remove("shake"); }, 400);
        return;
      }
      document.getElementById("save-button").click();
      return;
    }
    if (key === "ArrowDown" || key === "j") { e.preventDefault(); focusAxis(active + 1); return; }
    if (key === "ArrowUp" || key === "k") { e.preventDefault(); focusAxis(active - 1); return; }
    if (key === "ArrowLeft" || key === "p") { e.preventDefault(); go(form.dataset.prev); return; }
    if (key === "ArrowRight" || key === "n") { e.preventDefault(); go(form.dataset.next); return; }
    if (key === "s") { e.preventDefault(); document.getElementById("skip-button").click(); return; }
    if (key === "g") { e.preventDefault(); window.open(form.dataset.guidelines, "_blank", "noopener"); return; }
    if (key === "h") {
      e.preventDefault();
      var toggle = document.getElementById("anchors-toggle");
      if (toggle) { toggle.checked = !toggle.checked; }
      return;
    }
    if (key === "?") { e.preventDefault(); var d = document.getElementById("keys"); d.open = !d.open; return; }
    for (var i = 0; i < axes.length; i++) {
      if (axes[i].dataset.key === key) { e.preventDefault(); focusAxis(i); return; }
    }
  });

  var start = firstIncomplete();
  focusAxis(start >= 0 ? start : 0, start >= 0 && checkedValue(axes[start], "score") ? "conf" : "score");
  window.scrollTo(0, 0);
})();
