// The page's interactivity: tooltips with exact values, the read-out of
// the over-time charts, and folding of the task sections. It runs once, at
// the end of the page, and marks the body ready when it got through.
(function () {
  "use strict";
  var tip = document.getElementById("tip");

  function show(text, ev) {
    tip.textContent = text;
    tip.hidden = false;
    // Beside the pointer, kept inside the window.
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 4) {
      x = Math.max(4, ev.clientX - tip.offsetWidth - 14);
    }
    if (y + tip.offsetHeight > window.innerHeight - 4) {
      y = Math.max(4, ev.clientY - tip.offsetHeight - 14);
    }
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }

  function hide() {
    tip.hidden = true;
  }

  // The points of an over-time chart: [x, "t", count, "max", "p99"], by x.
  var parsed = new WeakMap();
  function points(svg) {
    var p = parsed.get(svg);
    if (!p) {
      p = JSON.parse(svg.getAttribute("data-pts") || "[]");
      parsed.set(svg, p);
    }
    return p;
  }

  // seriesTip shows the interval nearest the pointer and moves the cursor there.
  function seriesTip(svg, ev) {
    var pts = points(svg);
    var m = svg.getScreenCTM();
    if (!pts.length || !m) {
      return false;
    }
    var pt = svg.createSVGPoint();
    pt.x = ev.clientX;
    pt.y = ev.clientY;
    var x = pt.matrixTransform(m.inverse()).x;
    var lo = 0, hi = pts.length - 1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (pts[mid][0] < x) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo > 0 && x - pts[lo - 1][0] < pts[lo][0] - x) {
      lo--;
    }
    var p = pts[lo];
    var c = svg.querySelector(".cursor");
    if (c) {
      c.setAttribute("x1", p[0]);
      c.setAttribute("x2", p[0]);
      c.setAttribute("visibility", "visible");
    }
    show("at " + p[1] + ": max " + p[3] + " µs, p99 " + p[4] + " µs, " + p[2] + " sample(s)", ev);
    return true;
  }

  document.addEventListener("mousemove", function (ev) {
    var t = ev.target;
    if (!t || !t.closest) {
      hide();
      return;
    }
    var el = t.closest("[data-tip]");
    if (el) {
      show(el.getAttribute("data-tip"), ev);
      return;
    }
    var s = t.closest("svg.series");
    if (s && seriesTip(s, ev)) {
      return;
    }
    hide();
  });
  document.querySelectorAll("svg.series").forEach(function (svg) {
    svg.addEventListener("mouseleave", function () {
      var c = svg.querySelector(".cursor");
      if (c) {
        c.setAttribute("visibility", "hidden");
      }
      hide();
    });
  });

  // Folding: all at once, and a link into a folded task unfolds it.
  function foldAll(open) {
    document.querySelectorAll("details.task").forEach(function (d) {
      d.open = open;
    });
  }
  document.getElementById("unfold-all").addEventListener("click", function () {
    foldAll(true);
  });
  document.getElementById("fold-all").addEventListener("click", function () {
    foldAll(false);
  });
  function reveal(id) {
    for (var el = document.getElementById(id); el; el = el.parentElement) {
      if (el.tagName === "DETAILS") {
        el.open = true;
      }
    }
  }
  document.addEventListener("click", function (ev) {
    var a = ev.target && ev.target.closest ? ev.target.closest("a[href^='#']") : null;
    if (a) {
      reveal(decodeURIComponent(a.getAttribute("href").slice(1)));
    }
  });
  if (location.hash) {
    reveal(decodeURIComponent(location.hash.slice(1)));
  }

  document.body.dataset.ready = "1";
})();
