// karpy dashboard: refresh the page's live part every 10 s without a full reload (not on a page
// with a [data-no-refresh] element: the what-if form, whose answer is computed once per ask).
// No inline script anywhere (the Content-Security-Policy forbids it); nothing here writes.
(function () {
  "use strict";
  var PERIOD_MS = 10000;

  function refresh() {
    if (document.hidden || document.querySelector("[data-no-refresh]")) { return; }
    fetch(window.location.href, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (resp) { return resp.ok ? resp.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live");
        var live = document.getElementById("live");
        var focused = document.activeElement;
        if (fresh && live && !(focused && live.contains(focused) && (focused.tagName === "INPUT" || focused.tagName === "TEXTAREA"))) {
          live.replaceWith(document.adoptNode(fresh));
        }
      })
      .catch(function () { /* the next tick tries again */ });
  }

  window.setInterval(refresh, PERIOD_MS);
})();
