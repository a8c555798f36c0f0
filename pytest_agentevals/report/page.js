"use strict";
// The run console's little script: tooltips, a cursor across a run's three charts with a readout,
// the all-steps text, and markers that open their step. Text from the trace only ever goes through
// textContent; the data is read with JSON.parse from the page's application/json block.
(function () {
  var data = JSON.parse(document.getElementById("agentevals-data").textContent);
  var geom = data.geom;
  var tip = document.getElementById("tip");

  function fmt(n, digits) {
    return Number(n).toLocaleString("en-US", { maximumFractionDigits: digits || 0 });
  }
  function usd(n) {
    return "$" + Number(n).toFixed(n >= 10 ? 2 : 4);
  }
  function duration(s) {
    if (s < 60) return s.toFixed(1) + " s";
    var m = Math.round(s / 60);
    return m < 60 ? m + " m" : Math.floor(m / 60) + " h " + String(m % 60).padStart(2, "0") + " m";
  }
  // The index of the last entry of a sorted array at or below v (-1 when none).
  function below(arr, v) {
    var lo = 0, hi = arr.length - 1, found = -1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (arr[mid] <= v) { found = mid; lo = mid + 1; } else { hi = mid - 1; }
    }
    return found;
  }

  // Tooltips: a marker's <title>, or any element's data-tip (budget lines, the compaction mark).
  function tipOf(target) {
    if (!target.closest) return null;
    return target.closest(".marker") || target.closest("[data-tip]");
  }
  document.addEventListener("mouseover", function (ev) {
    var el = tipOf(ev.target);
    if (!el) return;
    var title = el.querySelector("title");
    tip.textContent = el.getAttribute("data-tip") || (title ? title.textContent : "");
    tip.hidden = false;
  });
  document.addEventListener("mousemove", function (ev) {
    if (tip.hidden) return;
    var x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = Math.max(4, x) + "px";
    tip.style.top = ev.clientY + 16 + "px";
  });
  document.addEventListener("mouseout", function (ev) {
    var el = tipOf(ev.target);
    if (el && !(ev.relatedTarget && el.contains(ev.relatedTarget))) tip.hidden = true;
  });

  function readout(run, step) {
    var c = run.series.calls, p = run.series.progress, parts = ["step " + fmt(step)];
    var i = below(c.s0, step);
    if (i >= 0) {
      parts.push(duration(c.t[i]));
      var n = c.n[i] > 1 ? " (mean of " + c.n[i] + " calls, steps " + fmt(c.s0[i]) + "–" + fmt(c.s1[i]) + ")" : "";
      var ctx = c.unit === "pressure" ? fmt(c.ct[i]) + " tokens, " + (Math.max(c.ca[i], c.cb[i]) * 100).toFixed(1) + "% of the window" : fmt(c.ct[i]) + " tokens";
      parts.push("context " + ctx);
      parts.push("per call: input " + fmt(c["in"][i]) + " · cache write " + fmt(c.cw[i]) + " · cache read " + fmt(c.cr[i]) + " · output " + fmt(c.out[i]) + n);
      parts.push("cost so far " + usd(c.cost[i]));
    }
    var j = below(p.s, step);
    parts.splice(1, 0, "verified " + (j >= 0 ? (p.p[j] * 100).toFixed(1) : "0") + "%");
    return parts.join(" · ");
  }

  function unpack(packed) {
    var raw = atob(packed), bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text().then(JSON.parse);
  }

  // Each element is bound once: the live console puts new parts into a section it keeps, and binds
  // the section again. A handler reads its run (and the run's charts) when it runs.
  var bound = new WeakSet();
  function once(el) {
    if (bound.has(el)) return false;
    bound.add(el);
    return true;
  }
  function sectionOf(el) { return el.closest("section.run"); }
  function runOf(section) { return data.runs[Number(section.getAttribute("data-run"))]; }
  function move(ev) {
    var section = sectionOf(ev.currentTarget), run = runOf(section);
    var box = ev.currentTarget.getBoundingClientRect();
    var vx = (ev.clientX - box.left) * geom.width / box.width;
    var step = Math.round(Math.max(0, Math.min(1, (vx - geom.left) / geom.plot)) * run.x);
    var px = geom.left + geom.plot * step / run.x;
    Array.prototype.forEach.call(section.querySelectorAll("svg.chart"), function (chart) {
      var line = chart.querySelector(".cursor");
      line.setAttribute("x1", px); line.setAttribute("x2", px); line.setAttribute("visibility", "visible");
    });
    section.querySelector(".readout").textContent = readout(run, step);
  }
  function leave(ev) {
    Array.prototype.forEach.call(sectionOf(ev.currentTarget).querySelectorAll("svg.chart"), function (chart) {
      chart.querySelector(".cursor").setAttribute("visibility", "hidden");
    });
  }
  // Every step as one line of text, packed (deflate, base64) and unpacked when asked for.
  function toggle(ev) {
    var all = ev.currentTarget, section = sectionOf(all), run = runOf(section);
    var pre = all.querySelector("pre");
    if (!all.open || pre.textContent) return;
    var index = section.getAttribute("data-run");
    var got = run.lines_z ? unpack(run.lines_z) : fetch("lines?run=" + index, { cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.json();
    });
    got.then(function (lines) {
      pre.textContent = lines.join("\n");
    }, function () {
      pre.textContent = run.lines_z
        ? "This browser cannot unpack the list of steps (it lacks DecompressionStream); the trace holds every step."
        : "The console did not send the list of steps (stopped?); the trace holds every step.";
    });
  }
  // A marker opens its step's record in the transcript, or the all-steps text when it has none.
  function click(ev) {
    var el = ev.target.closest ? ev.target.closest(".marker") : null;
    if (!el) return;
    var section = ev.currentTarget;
    var target = section.querySelector('details.step[data-step="' + el.getAttribute("data-step") + '"]') || section.querySelector("details.all-steps");
    if (target) { target.open = true; target.scrollIntoView({ block: "start" }); }
  }
  function bind(section) {
    Array.prototype.forEach.call(section.querySelectorAll("svg.chart"), function (chart) {
      if (!once(chart)) return;
      chart.addEventListener("mousemove", move);
      chart.addEventListener("mouseleave", leave);
    });
    var all = section.querySelector("details.all-steps");
    if (all && once(all)) all.addEventListener("toggle", toggle);
    if (once(section)) section.addEventListener("click", click);
  }
  Array.prototype.forEach.call(document.querySelectorAll("section.run"), bind);

  // The live console (agentevals report --watch): ask the server that sent the page what the traces
  // added, and put each changed run's section in place of the old one (so the page holds one copy of
  // each run, however long it is watched), keeping open what the reader opened.
  var live = data.live;
  if (!live) return;
  var version = live.version, busy = false;
  function replace(old, html) {
    var box = document.createElement("div");
    box.innerHTML = html;
    var fresh = box.firstElementChild;
    if (!fresh) return null;
    Array.prototype.forEach.call(old.querySelectorAll("details[open][id]"), function (d) {
      var again = fresh.querySelector('details[id="' + d.id + '"]');
      if (again) again.open = true;
    });
    var all = old.querySelector("details.all-steps[open]"), again = fresh.querySelector("details.all-steps");
    old.replaceWith(fresh);
    if (all && again) again.open = true;
    return fresh;
  }
  // A run's section as the page holds it from the updates: its state, and each part's nodes by id.
  var held = {};
  function nodesOf(html) {
    var box = document.createElement("div");
    box.innerHTML = html;
    return Array.prototype.slice.call(box.childNodes);
  }
  // The parts in order, [id, html]: a part without html is one the page holds (in `had`).
  function partsOf(list, had, now) {
    var nodes = [];
    for (var i = 0; i < list.length; i++) {
      var got = list[i][1] == null ? had[list[i][0]] : nodesOf(list[i][1]);
      if (!got) return null;
      now[list[i][0]] = got;
      nodes.push.apply(nodes, got);
    }
    return nodes;
  }
  // The container's children become `nodes`; a node already there, in its place, is not touched.
  function reconcile(container, nodes) {
    var keep = new Set(nodes);
    Array.prototype.slice.call(container.childNodes).forEach(function (n) {
      if (!keep.has(n)) container.removeChild(n);
    });
    var at = container.firstChild;
    nodes.forEach(function (n) {
      if (n === at) at = at.nextSibling; else container.insertBefore(n, at);
    });
  }
  // Put the parts that changed into a run's section, keeping open what the reader opened.
  function patch(section, changed) {
    var had = held[changed.index] ? held[changed.index].parts : {}, now = {};
    var outer = partsOf(changed.outer, had, now), inner = partsOf(changed.transcript, had, now);
    var box = section.querySelector(":scope > section.transcript");
    if (!outer || !inner || !box) return false;
    var opened = {};
    Array.prototype.forEach.call(section.querySelectorAll("details[open][id]"), function (d) { opened[d.id] = true; });
    var all = section.querySelector("details.all-steps[open]");
    reconcile(box, inner);
    reconcile(section, outer.concat([box]));
    Array.prototype.forEach.call(section.querySelectorAll("details[id]:not([open])"), function (d) {
      if (opened[d.id]) d.open = true;
    });
    var again = section.querySelector("details.all-steps");
    if (all && again && !again.open) again.open = true;
    held[changed.index] = { state: changed.state, parts: now };
    return true;
  }
  function apply(update) {
    if (update.reload) { location.reload(); return; }
    update.runs.forEach(function (changed) {
      var old = document.querySelector('section.run[data-run="' + changed.index + '"]');
      if (!old) { location.reload(); return; }
      data.runs[changed.index] = changed.data;
      if (changed.outer) {
        if (!patch(old, changed)) { location.reload(); return; }
        bind(old);
        return;
      }
      var fresh = replace(old, changed.html);
      if (fresh) bind(fresh);
    });
    var overview = document.getElementById("overview");
    if (update.overview && overview) replace(overview, update.overview);
    if (update.title) { document.title = update.title; document.querySelector("h1").textContent = update.title; }
    version = update.version;
    document.body.setAttribute("data-version", String(version));
  }
  function poll() {
    if (busy) return;
    busy = true;
    var have = data.runs.map(function (_, index) { return held[index] ? held[index].state : -1; });
    fetch("update?v=" + version + "&have=" + have.join(","), { cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.json();
    }).then(function (update) {
      document.body.removeAttribute("data-offline");
      apply(update);
    }, function () {
      document.body.setAttribute("data-offline", "the console stopped answering");
    }).then(function () { busy = false; });
  }
  document.body.setAttribute("data-version", String(version));
  setInterval(poll, live.poll_ms || 1000);
})();
