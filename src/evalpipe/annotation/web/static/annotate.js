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
  // ---- the comment: a visible limit, refused before sending (never cut) -----------------------
  var comment = document.getElementById("comment");
  var count = document.getElementById("comment-count");
  var commentError = document.getElementById("comment-error");
  var maxComment = comment ? Number(comment.dataset.max) : 0;
  // Characters as the server counts them (code points: an emoji is one, not two UTF-16 units).
  function commentLength() { return comment ? Array.from(comment.value.trim()).length : 0; }
  function showCount() {
    if (!comment || !count) { return; }
    var n = commentLength();
    count.textContent = n.toLocaleString("en") + " / " + maxComment.toLocaleString("en");
    count.classList.toggle("over", n > maxComment);
    comment.setAttribute("aria-invalid", n > maxComment ? "true" : "false");
  }
  function commentTooLong() {
    var n = commentLength();
    if (!comment || n <= maxComment) { return false; }
    commentError.textContent = "Comment too long: " + n.toLocaleString("en") + " characters, the limit is " +
      maxComment.toLocaleString("en") + ". Shorten it first; nothing was sent and your ratings are still here.";
    commentError.hidden = false;
    comment.focus();
    return true;
  }
  if (comment) { comment.addEventListener("input", showCount); showCount(); }

  form.addEventListener("submit", function (e) {
    if (commentTooLong()) { e.preventDefault(); return; }
    var by = e.submitter;
    if (by && by.value === "save" && blockedUnseen()) { e.preventDefault(); return; }
    tick();
    var vp = document.getElementById("viewport");
    if (vp) { vp.value = window.innerWidth + "x" + window.innerHeight; }
    submitting = true;
  });

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
  // Autosave: a changed form is saved as a draft every data-autosave seconds.
  var autosaveS = parseInt(form.getAttribute("data-autosave") || "0", 10);
  if (autosaveS > 0) {
    setInterval(function () {
      if (!dirty || submitting) { return; }
      dirty = false;
      fetch(form.getAttribute("action"), { method: "POST", body: draftData(), credentials: "same-origin" })
        .catch(function () { dirty = true; });
    }, autosaveS * 1000);
  }
  // The visible timer: time since the page opened.
  var timer = document.getElementById("timer");
  var openedAt = Date.now();
  if (timer) {
    setInterval(function () {
      var s = Math.floor((Date.now() - openedAt) / 1000);
      timer.textContent = Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
    }, 1000);
  }
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

  // ---- long items: the dialogue scrolls by keyboard; the response must have been in view -----
  var dialogueCol = document.getElementById("dialogue");
  var responseBlock = document.getElementById("response-block");
  var unseenPill = document.getElementById("response-unseen");
  var unseenWarning = document.getElementById("unseen-warning");
  // An item rated before was seen then: only a first rating waits for the response.
  var responseSeen = form.dataset.rated === "1";
  function ownScroll() {
    // Wide layout: the dialogue column scrolls on its own. Phones: it scrolls with the page.
    var o = getComputedStyle(dialogueCol).overflowY;
    return (o === "auto" || o === "scroll") && dialogueCol.scrollHeight > dialogueCol.clientHeight + 1;
  }
  function checkSeen() {
    if (responseSeen || !responseBlock) { return; }
    var r = responseBlock.getBoundingClientRect();
    var top = Math.max(r.top, 0);
    var bottom = Math.min(r.bottom, window.innerHeight);
    if (ownScroll()) {
      var d = dialogueCol.getBoundingClientRect();
      top = Math.max(top, d.top);
      bottom = Math.min(bottom, d.bottom);
    }
    // Seen once its first lines (or all of a short response) have been on screen.
    if (bottom - top >= Math.min(100, r.height - 1)) {
      responseSeen = true;
      if (unseenPill) { unseenPill.hidden = true; }
    }
  }
  function showResponse() {
    responseBlock.scrollIntoView({ block: "start", behavior: "auto" });
    checkSeen();
    responseSeen = true;
    if (unseenPill) { unseenPill.hidden = true; }
  }
  if (dialogueCol && responseBlock) {
    dialogueCol.addEventListener("scroll", checkSeen, { passive: true });
    window.addEventListener("scroll", checkSeen, { passive: true });
    window.addEventListener("resize", checkSeen);
    if (unseenPill) { unseenPill.addEventListener("click", showResponse); }
  }
  // Saving before the response was ever in view brings it into view instead, once.
  function blockedUnseen() {
    if (responseSeen || !responseBlock) { return false; }
    showResponse();
    if (unseenWarning) { unseenWarning.hidden = false; }
    return true;
  }
  function scrollDialogue(key, shift) {
    var page = Math.max(40, dialogueCol.clientHeight - 48);
    if (key === "End") { dialogueCol.scrollTop = dialogueCol.scrollHeight; }
    else if (key === "Home") { dialogueCol.scrollTop = 0; }
    else if (key === "PageUp" || (key === " " && shift)) { dialogueCol.scrollTop -= page; }
    else { dialogueCol.scrollTop += page; }
    checkSeen();
  }

  // Enter saves, wherever it is pressed (axis missing: highlighted instead); never skips.
  function save() {
    var missing = firstIncomplete();
    if (missing >= 0) {
      if (document.activeElement === comment) { comment.blur(); }
      focusAxis(missing, checkedValue(axes[missing], "score") ? "conf" : "score");
      axes[missing].classList.add("shake");
      setTimeout(function () { axes[missing].classList.remove("shake"); }, 400);
      return;
    }
    if (blockedUnseen()) { return; }
    if (typeof form.requestSubmit === "function") {
      form.requestSubmit(document.getElementById("save-button"));
    } else {
      document.getElementById("save-button").click();
    }
  }

  document.addEventListener("keydown", function (e) {
    // keyCode 229: a key the input method is still composing (Japanese conversion).
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing || e.keyCode === 229) { return; }
    var t = e.target;
    if (t && t === comment) {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); save(); }
      else if (e.key === "Escape") { e.preventDefault(); comment.blur(); }
      return;
    }
    if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text"))) { return; }
    // PageDown / PageUp / Space / End / Home scroll the dialogue column (the page around it
    // does not scroll); on the focused column itself the browser does that already.
    if (dialogueCol && ["PageDown", "PageUp", "End", "Home", " "].indexOf(e.key) >= 0 &&
        t !== dialogueCol && ownScroll()) {
      var interactive = t && /^(A|BUTTON|SUMMARY|SELECT|INPUT)$/.test(t.tagName);
      if (!interactive || (e.key !== " " && t.tagName === "INPUT")) {
        e.preventDefault();
        scrollDialogue(e.key, e.shiftKey);
        return;
      }
    }
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
    if (key === "Enter") { e.preventDefault(); save(); return; }
    if (key === "c" && comment) { e.preventDefault(); comment.focus(); return; }
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
  if (dialogueCol && responseBlock) {
    checkSeen();
    if (!responseSeen && unseenPill) { unseenPill.hidden = false; }
  }
})();
