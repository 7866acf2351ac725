// The invite page works without this file. With it: a button that shows the times in the
// viewer's own time zone (the page itself takes ?tz=), and a click selects the edit link.
(function () {
  "use strict";
  var form = document.querySelector("form.tz");
  var input = form && form.querySelector("input[name=tz]");
  var own = window.Intl && Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (input && own && own !== input.value) {
    var button = document.createElement("button");
    button.type = "submit";
    button.className = "small";
    button.textContent = "Use my time zone (" + own + ")";
    button.addEventListener("click", function () { input.value = own; });
    form.appendChild(button);
  }
  var link = document.getElementById("edit-link");
  if (link) {
    link.addEventListener("focus", function () { link.select(); });
  }
})();
