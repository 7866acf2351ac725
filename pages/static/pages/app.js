// The pages work without this file. With it: the browser's time zone is remembered in the
// `tz` cookie (the page then shows times in it; a zone chosen on the page replaces it), a
// button shows the times in the browser's zone, and the edit link has a copy button. (The
// language menu waits for its button: moving through it with the keyboard changes nothing.)
(function () {
  "use strict";
  var own = window.Intl && Intl.DateTimeFormat().resolvedOptions().timeZone;
  var form = document.querySelector("form.tz");
  var input = form && form.querySelector("input[name=tz]");
  var remembered = /(?:^|;\s*)tz=/.test(document.cookie);
  if (own && !remembered) {
    document.cookie = "tz=" + encodeURIComponent(own) + "; path=/; max-age=31536000; samesite=lax";
    var kept = /(?:^|;\s*)tz=/.test(document.cookie);  // cookies may be off: no reload then
    if (kept && input && own !== input.value && !/[?&]tz=/.test(location.search)) {
      location.reload();
      return;
    }
  }
  if (input && own && own !== input.value) {
    var button = document.createElement("button");
    button.type = "submit";
    button.className = "small";
    button.textContent = input.getAttribute("data-own").replace("{zone}", own);
    button.addEventListener("click", function () { input.value = own; });
    form.appendChild(button);
  }
  if (input) {
    input.addEventListener("focus", function () { input.select(); });
  }

  var link = document.getElementById("edit-link");
  if (link) {
    link.addEventListener("focus", function () { link.select(); });
    var copy = document.createElement("button");
    copy.type = "button";
    copy.className = "small";
    copy.textContent = link.getAttribute("data-copy");
    var status = document.createElement("span");
    status.setAttribute("role", "status");
    status.className = "copied";
    copy.addEventListener("click", function () {
      var done = function () { status.textContent = link.getAttribute("data-copied"); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(link.value).then(done, function () { link.select(); });
      } else {
        link.select();
        if (document.execCommand("copy")) { done(); }
      }
    });
    link.parentNode.appendChild(copy);
    link.parentNode.appendChild(status);
  }
})();
