// strata's own page script: expand or collapse every block, show only the path to the
// current leaf, jump to the leaf, and search the sidebar (`?q=word` in the address searches
// on load, so a search can be shared as a link).
(function () {
  function openTo(element) {
    var parent = element.parentElement;
    while (parent) { if (parent.tagName === "DETAILS") { parent.open = true; } parent = parent.parentElement; }
  }
  document.querySelectorAll("nav.controls button").forEach(function (button) {
    button.addEventListener("click", function () {
      var action = button.getAttribute("data-action");
      if (action === "expand" || action === "collapse") {
        document.querySelectorAll("details").forEach(function (d) { d.open = action === "expand"; });
      } else if (action === "path") {
        document.body.classList.toggle("path-only");
        button.classList.toggle("active");
      } else if (action === "leaf") {
        var leaf = document.querySelector(".entry.leaf:not(.child-entry)");
        if (leaf) { openTo(leaf); leaf.scrollIntoView({ block: "center" }); }
      }
    });
  });
  // A sidebar link opens the branches around its entry before the browser scrolls to it.
  document.querySelectorAll("ol.toc a").forEach(function (link) {
    link.addEventListener("click", function () {
      var target = document.getElementById(link.getAttribute("href").slice(1));
      if (target) { openTo(target); }
    });
  });
  var input = document.getElementById("search");
  var count = document.getElementById("search-count");
  var items = document.querySelectorAll("ol.toc li");
  function search() {
    var words = input.value.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 0; });
    var shown = 0;
    items.forEach(function (item) {
      var text = item.getAttribute("data-search") || "";
      var match = words.every(function (w) { return text.indexOf(w) >= 0; });
      item.hidden = !match;
      if (match) { shown += 1; }
    });
    count.textContent = words.length === 0 ? "" : shown + " of " + items.length + " entries match";
  }
  input.addEventListener("input", search);
  var query = new URLSearchParams(window.location.search).get("q");
  if (query) { input.value = query; search(); }
})();
