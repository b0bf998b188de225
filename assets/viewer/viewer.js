// orchestra viewer: enhancements only; every page works without this file.
"use strict";
(function () {
  // "/" focuses the search box, unless the user is typing somewhere.
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    var typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable);
    if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
      var q = document.getElementById("q");
      if (q) { e.preventDefault(); q.focus(); q.select(); }
    }
  });

  // Copy buttons: the clipboard API, else a hidden textarea and execCommand.
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button.copy");
    if (!button) return;
    var text = button.getAttribute("data-copy");
    var done = function () {
      button.textContent = "Copied";
      button.setAttribute("data-copied", text);
      setTimeout(function () { button.textContent = "Copy"; }, 1500);
    };
    var fallback = function () {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      try { document.execCommand("copy"); } catch (err) { /* nothing more to try */ }
      document.body.removeChild(area);
      done();
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else {
      fallback();
    }
  });

  // Search results: Up and Down move through the hits, Enter opens one.
  var selected = -1;
  document.addEventListener("keydown", function (e) {
    var hits = document.querySelectorAll("ol.hits > li.hit");
    if (!hits.length || (e.key !== "ArrowDown" && e.key !== "ArrowUp" && e.key !== "Enter")) return;
    if (e.key === "Enter") {
      if (selected < 0 || document.activeElement && document.activeElement.tagName === "INPUT") return;
      e.preventDefault();
      hits[selected].querySelector("a").click();
      return;
    }
    e.preventDefault();
    if (document.activeElement && document.activeElement.tagName === "INPUT") document.activeElement.blur();
    if (selected >= 0 && hits[selected]) hits[selected].classList.remove("selected");
    selected = e.key === "ArrowDown" ? Math.min(selected + 1, hits.length - 1) : Math.max(selected - 1, 0);
    hits[selected].classList.add("selected");
    hits[selected].scrollIntoView({ block: "nearest" });
  });

  // Live updates: the server's change stream says what each import changed;
  // when it concerns this page, the page's main part is fetched again and
  // swapped in place, keeping the scroll position.
  var body = document.body;
  var watch = body.getAttribute("data-watch") || "";
  if (!watch || !window.EventSource) return;
  var concerns = function (change) {
    if (change.all || watch === "*") return true;
    return change.keys.some(function (k) {
      var key = k.slice(1);
      if (watch.indexOf("doc:") === 0) return key === watch.slice(4);
      if (watch.indexOf("under:") === 0) return key.indexOf(watch.slice(6)) === 0;
      return false;
    });
  };
  var refreshing = false, again = false;
  var refresh = function () {
    if (refreshing) { again = true; return; }
    refreshing = true;
    fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (text) {
        var fresh = new DOMParser().parseFromString(text, "text/html");
        var main = document.getElementById("main");
        var next = fresh.getElementById("main");
        if (main && next) {
          var x = window.scrollX, y = window.scrollY;
          main.innerHTML = next.innerHTML;
          document.title = fresh.title;
          body.setAttribute("data-seq", fresh.body.getAttribute("data-seq") || body.getAttribute("data-seq"));
          window.scrollTo(x, y);
          body.setAttribute("data-refreshed", String(Number(body.getAttribute("data-refreshed") || 0) + 1));
        }
      })
      .catch(function () { /* the next change tries again */ })
      .then(function () {
        refreshing = false;
        if (again) { again = false; refresh(); }
      });
  };
  // The page's feed sequence: the stream resumes after it, and the browser
  // after the last event's id when it reconnects. A caller that may read
  // only part of the project is told no sequence (data-seq=""; the server
  // ignores "after" for it and its events have no id): its stream cannot
  // resume, so whenever it (re)connects, the page refreshes what it shows,
  // lest an import it missed leave it stale.
  var seq = body.getAttribute("data-seq") || "";
  var source = new EventSource(seq ? "/events?after=" + encodeURIComponent(seq) : "/events");
  if (!seq) source.addEventListener("open", function () { refresh(); });
  // A page left for another closes its stream at once: a browser opens six
  // connections to a server at most, and pages kept for the back button
  // would otherwise hold theirs. Back on such a page, show it fresh.
  window.addEventListener("pagehide", function () { source.close(); });
  window.addEventListener("pageshow", function (e) { if (e.persisted) location.reload(); });
  // Exposed for scripts and tests: the stream's state and the last sequence seen.
  window.orchestraLive = source;
  source.addEventListener("change", function (e) {
    var change;
    try { change = JSON.parse(e.data); } catch (err) { return; }
    body.setAttribute("data-seen", e.lastEventId || "");
    if (concerns(change)) refresh();
  });
})();
