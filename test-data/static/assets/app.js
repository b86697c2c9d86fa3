// Fixture for ferrophp static-file tests: served as-is, or as app.js.gz when accepted.
"use strict";

function greet(name) {
  return "Hello, " + name + "!";
}

document.addEventListener("DOMContentLoaded", function () {
  var el = document.getElementById("greeting");
  if (el) {
    el.textContent = greet("ferrophp");
  }
});
