// The API reference's behaviour, on top of pages that read fully without
// it: the examples of an operation become tabs (one language shown, the
// choice remembered across operations and pages), every code block gets a
// copy button, and an anchor of the former one-page reference
// (/portal/reference#op-..., #schema-..., #webhook-...) leads to the page
// that now holds it.
(function () {
  "use strict";
  var storeKey = "apiref-lang";

  function stored() {
    try {
      return window.localStorage.getItem(storeKey);
    } catch (e) {
      return null;
    }
  }
  function store(lang) {
    try {
      window.localStorage.setItem(storeKey, lang);
    } catch (e) {
      /* private mode: the choice lasts for this page only */
    }
  }

  // ---- former anchors ----
  var index = document.getElementById("reference-index");
  if (index && window.location.hash.length > 1) {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var base = index.getAttribute("data-base");
    var target = null;
    var el = document.getElementById(id);
    if (el && el.tagName === "LI" && /^op-/.test(id)) {
      var a = el.querySelector("a");
      if (a) target = a.getAttribute("href");
    } else if (!el && /^schema-/.test(id)) {
      target = base + "/schemas#" + id;
    } else if (!el && /^webhook-/.test(id)) {
      target = base + "/webhook-events#" + id;
    }
    if (target) window.location.replace(target);
  }

  // ---- tabs ----
  var groups = Array.prototype.slice.call(document.querySelectorAll("[data-examples]"));
  var tabsets = [];

  function select(lang, remember) {
    tabsets.forEach(function (t) {
      t.show(lang);
    });
    if (remember) store(lang);
  }

  groups.forEach(function (group, g) {
    var panels = Array.prototype.slice.call(group.querySelectorAll(".example-panel"));
    if (panels.length < 2) return;
    var list = document.createElement("div");
    list.className = "tabs";
    list.setAttribute("role", "tablist");
    list.setAttribute("aria-label", "Example language");
    var buttons = [];
    panels.forEach(function (panel, i) {
      var lang = panel.getAttribute("data-lang");
      var label = panel.querySelector(".lang");
      var b = document.createElement("button");
      b.type = "button";
      b.className = "tab";
      b.setAttribute("role", "tab");
      b.id = "tab-" + g + "-" + lang;
      b.setAttribute("data-lang", lang);
      b.textContent = label ? label.textContent : lang;
      panel.id = "panel-" + g + "-" + lang;
      panel.setAttribute("role", "tabpanel");
      panel.setAttribute("aria-labelledby", b.id);
      b.setAttribute("aria-controls", panel.id);
      if (label) label.hidden = true;
      b.addEventListener("click", function () {
        select(lang, true);
      });
      b.addEventListener("keydown", function (e) {
        var d = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
        if (!d) return;
        var next = buttons[(i + d + buttons.length) % buttons.length];
        next.focus();
        select(next.getAttribute("data-lang"), true);
      });
      buttons.push(b);
      list.appendChild(b);
    });
    group.insertBefore(list, group.firstChild);
    group.classList.add("tabbed");
    tabsets.push({
      show: function (lang) {
        var found = panels.some(function (p) {
          return p.getAttribute("data-lang") === lang;
        });
        if (!found) lang = panels[0].getAttribute("data-lang");
        panels.forEach(function (p, i) {
          var on = p.getAttribute("data-lang") === lang;
          p.hidden = !on;
          buttons[i].setAttribute("aria-selected", on ? "true" : "false");
          buttons[i].tabIndex = on ? 0 : -1;
        });
      },
    });
  });
  select(stored() || "curl", false);

  // ---- copy buttons ----
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "copy-buffer";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try {
        ok = document.execCommand("copy");
      } catch (e) {
        ok = false;
      }
      document.body.removeChild(area);
      if (ok) resolve();
      else reject(new Error("copy refused"));
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll(".apiref pre"), function (pre) {
    var wrap = document.createElement("div");
    wrap.className = "code-block";
    pre.parentNode.insertBefore(wrap, pre);
    wrap.appendChild(pre);
    var b = document.createElement("button");
    b.type = "button";
    b.className = "copy";
    b.textContent = "Copy";
    var panel = wrap.closest(".example-panel");
    var what = panel ? panel.getAttribute("data-lang") : "code";
    b.setAttribute("aria-label", "Copy " + what + " example");
    var status = document.createElement("span");
    status.className = "copy-status";
    status.setAttribute("role", "status");
    var timer = null;
    b.addEventListener("click", function () {
      copyText(pre.innerText.replace(/\n$/, "")).then(
        function () {
          status.textContent = "Copied";
          b.classList.add("copied");
        },
        function () {
          status.textContent = "Press Ctrl+C to copy";
          var range = document.createRange();
          range.selectNodeContents(pre);
          var sel = window.getSelection();
          sel.removeAllRanges();
          sel.addRange(range);
        }
      );
      clearTimeout(timer);
      timer = setTimeout(function () {
        status.textContent = "";
        b.classList.remove("copied");
      }, 2000);
    });
    wrap.appendChild(b);
    wrap.appendChild(status);
  });
})();
