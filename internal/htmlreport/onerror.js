// Errors of the page's scripts are written into the page, where a reader
// sees them and a headless browser's DOM dump shows them to the tests.
window.onerror = function (msg, src, line, col) {
  var p = document.getElementById("js-errors");
  if (p) {
    p.textContent += msg + " (line " + line + ":" + col + ")\n";
  }
  return false;
};
