// Keyboard shortcuts for the training, qualification and adjudication forms (and the training
// feedback page): the rating keys of the annotation page without its drafts, timing and queue.
// A static file (the CSP forbids inline script); everything also works without it.
(function () {
  "use strict";
  function typing(t) {
    return t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT" ||
      (t.tagName === "INPUT" && t.type !== "radio" && t.type !== "checkbox"));
  }
  function composing(e) { return e.isComposing || e.keyCode === 229; }

  // Training feedback: Enter or n goes on to the next example.
  var next = document.getElementById("training-next");
  var form = document.querySelector("form.rating[data-shortcuts]");
  if (!form) {
    if (next) {
      document.addEventListener("keydown", function (e) {
        if (e.ctrlKey || e.metaKey || e.altKey || composing(e) || typing(e.target)) { return; }
        var t = e.target;
        if (t && (t.tagName === "A" || t.tagName === "BUTTON") && e.key === "Enter") { return; }
        if (e.key === "Enter" || e.key === "n") { e.preventDefault(); window.location.href = next.href; }
      });
    }
    return;
  }

  var axes = Array.prototype.slice.call(form.querySelectorAll("fieldset.axis"));
  var hasConf = !!form.querySelector('input[name^="conf_"]');
  var submit = form.querySelector("button.primary[type=submit]");
  var note = form.querySelector("textarea");
  var active = 0;
  var mode = "score";

  function checkedValue(fs, kind) {
    var r = fs.querySelector('input[name^="' + kind + '_"]:checked');
    return r ? r.value : null;
  }
  function complete(fs) { return !!checkedValue(fs, "score") && (!hasConf || !!checkedValue(fs, "conf")); }
  function render() {
    axes.forEach(function (fs, i) {
      fs.classList.toggle("active", i === active);
      fs.classList.toggle("mode-score", i === active && mode === "score");
      fs.classList.toggle("mode-conf", i === active && mode === "conf");
      fs.classList.toggle("complete", complete(fs));
    });
  }
  function focusAxis(i, newMode) {
    active = Math.max(0, Math.min(axes.length - 1, i));
    mode = newMode || "score";
    render();
    axes[active].scrollIntoView({ block: "nearest" });
  }
  function choose(kind, digit) {
    var r = axes[active].querySelectorAll('input[name^="' + kind + '_"]')[digit - 1];
    if (!r) { return; }
    r.checked = true;
    r.dispatchEvent(new Event("change", { bubbles: true }));
  }
  function firstIncomplete() {
    for (var i = 0; i < axes.length; i++) { if (!complete(axes[i])) { return i; } }
    return -1;
  }
  function nextAxis() {
    if (active + 1 < axes.length) { focusAxis(active + 1, "score"); } else { mode = "score"; render(); }
  }
  function save() {
    var missing = firstIncomplete();
    if (missing >= 0) {
      if (document.activeElement === note) { note.blur(); }
      focusAxis(missing, checkedValue(axes[missing], "score") ? "conf" : "score");
      axes[missing].classList.add("shake");
      setTimeout(function () { axes[missing].classList.remove("shake"); }, 400);
      return;
    }
    if (note && note.required && !note.value.trim()) { note.focus(); return; }
    if (typeof form.requestSubmit === "function") { form.requestSubmit(submit); } else { submit.click(); }
  }
  axes.forEach(function (fs, i) {
    fs.addEventListener("change", function (e) {
      active = i;
      mode = hasConf && e.target.name.indexOf("score_") === 0 ? "conf" : "score";
      render();
    });
  });

  // The adjudication note: the comment's counter, limit and message (never cut, never sent over).
  var noteCount = document.getElementById("note-count");
  var noteError = document.getElementById("note-error");
  var maxNote = note && note.dataset.max ? Number(note.dataset.max) : 0;
  function noteLength() { return Array.from(note.value.trim()).length; }  // code points, as the server
  function showNoteCount() {
    var n = noteLength();
    noteCount.textContent = n.toLocaleString("en") + " / " + maxNote.toLocaleString("en");
    noteCount.classList.toggle("over", n > maxNote);
    note.setAttribute("aria-invalid", n > maxNote ? "true" : "false");
  }
  function noteTooLong() {
    if (!maxNote || !noteCount) { return false; }
    var n = noteLength();
    if (n <= maxNote) { return false; }
    noteError.textContent = "Note too long: " + n.toLocaleString("en") + " characters, the limit is " +
      maxNote.toLocaleString("en") + ". Shorten it first; nothing was sent and your rating is still here.";
    noteError.hidden = false;
    note.focus();
    return true;
  }
  if (maxNote && noteCount) { note.addEventListener("input", showNoteCount); showNoteCount(); }
  form.addEventListener("submit", function (e) { if (noteTooLong()) { e.preventDefault(); } });

  document.addEventListener("keydown", function (e) {
    if (composing(e)) { return; }
    var t = e.target;
    if (note && t === note) {
      // The note may take several lines: Enter is a newline, Ctrl+Enter saves, Esc leaves.
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); }
      else if (e.key === "Escape") { e.preventDefault(); note.blur(); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || typing(t)) { return; }
    if (t && (t.tagName === "A" || t.tagName === "BUTTON" || t.tagName === "SUMMARY") &&
        (e.key === "Enter" || e.key === " ")) { return; }
    var digit = null;
    if (/^Digit[1-5]$/.test(e.code)) { digit = Number(e.code.slice(5)); }
    else if (/^Numpad[1-5]$/.test(e.code)) { digit = Number(e.code.slice(6)); }
    else if (/^[1-5]$/.test(e.key)) { digit = Number(e.key); }
    if (digit !== null) {
      e.preventDefault();
      if (e.shiftKey && hasConf) { choose("conf", digit); nextAxis(); }
      else if (mode === "score") {
        choose("score", digit);
        if (hasConf) { mode = "conf"; render(); } else { nextAxis(); }
      } else { choose("conf", digit); nextAxis(); }
      return;
    }
    var key = e.key;
    if (key === "Enter") { e.preventDefault(); save(); return; }
    if (key === "ArrowDown" || key === "j") { e.preventDefault(); focusAxis(active + 1); return; }
    if (key === "ArrowUp" || key === "k") { e.preventDefault(); focusAxis(active - 1); return; }
    if (key === "c" && note) { e.preventDefault(); note.focus(); return; }
    if (key === "h") {
      e.preventDefault();
      var toggle = document.getElementById("anchors-toggle");
      if (toggle) { toggle.checked = !toggle.checked; }
      return;
    }
    for (var i = 0; i < axes.length; i++) {
      if (axes[i].dataset.key === key) { e.preventDefault(); focusAxis(i); return; }
    }
  });

  var start = firstIncomplete();
  focusAxis(start >= 0 ? start : 0, start >= 0 && hasConf && checkedValue(axes[start], "score") ? "conf" : "score");
  window.scrollTo(0, 0);
})();
