// A test's probe (browser_test.go's TestBrowserLayout): it opens every
// section, measures the text the browser drew, and writes what lies
// outside its chart or over a legend's swatch into body's data-layout.
(function () {
  "use strict";
  var bad = [], texts = 0, keys = 0;
  document.querySelectorAll("details").forEach(function (d) {
    d.open = true;
  });
  document.querySelectorAll("svg[viewBox]").forEach(function (svg) {
    var w = svg.viewBox.baseVal.width;
    svg.querySelectorAll("text").forEach(function (t) {
      if (t.hasAttribute("transform") || !t.textContent) {
        return; // the rotated axis titles: their box is in their own frame
      }
      texts++;
      var b = t.getBBox();
      if (b.x < -0.5 || b.x + b.width > w + 0.5) {
        bad.push(svg.getAttribute("class") + " text " + JSON.stringify(t.textContent) + " spans " +
          b.x.toFixed(1) + ".." + (b.x + b.width).toFixed(1) + " of 0.." + w);
      }
    });
  });
  document.querySelectorAll("figcaption .key, .legend .key").forEach(function (k) {
    if (k.textContent.trim()) {
      keys++; // text inside a swatch is drawn over it
      bad.push("swatch ." + k.className.replace(" ", ".") + " holds its text " + JSON.stringify(k.textContent.trim()));
      return;
    }
    var next = k.nextSibling;
    if (!next || next.nodeType !== Node.TEXT_NODE || !next.textContent.trim()) {
      return; // the DOM test checks that a text follows
    }
    keys++;
    var r = document.createRange();
    r.selectNodeContents(next);
    var kr = k.getBoundingClientRect(), tr = r.getClientRects()[0];
    if (tr && kr.top < tr.bottom && tr.top < kr.bottom && kr.right > tr.left + 0.5) {
      bad.push("swatch ." + k.className.replace(" ", ".") + " ends at " + kr.right.toFixed(1) +
        " over its text " + JSON.stringify(next.textContent.trim()) + " from " + tr.left.toFixed(1));
    }
  });
  document.body.setAttribute("data-layout", JSON.stringify({texts: texts, keys: keys, bad: bad}));
})();
