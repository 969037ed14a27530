// Expand or collapse every block, show only the path to the current leaf, jump to the leaf.
(function () {
  var buttons = document.querySelectorAll("nav.controls button");
  buttons.forEach(function (button) {
    button.addEventListener("click", function () {
      var action = button.getAttribute("data-action");
      if (action === "expand" || action === "collapse") {
        document.querySelectorAll("details").forEach(function (d) { d.open = action === "expand"; });
      } else if (action === "path") {
        document.body.classList.toggle("path-only");
        button.classList.toggle("active");
      } else if (action === "leaf") {
        var leaf = document.querySelector(".entry.leaf");
        if (leaf) {
          var parent = leaf.parentElement;
          while (parent) { if (parent.tagName === "DETAILS") { parent.open = true; } parent = parent.parentElement; }
          leaf.scrollIntoView({ block: "center" });
        }
      }
    });
  });
})();
