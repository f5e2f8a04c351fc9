// flamegraph.js: the interactive part of rbinspect's flame graph SVG, built
// into the binary (lib/out/flamegraph.c embeds it in every SVG it writes).
// Hover a frame: its name, time, samples and share in the bottom line.  Click a
// frame: zoom to it (click the faded frames below, or "Reset Zoom", to go
// back).  "Search" (or Ctrl-F, or ?s=REGEX in the URL): frames that match
// turn purple and the share of the time they cover shows bottom right.
"use strict";
var details, searchbtn, unzoombtn, matchedtxt, frames, svgwidth;
var currentSearch = null;
var FONT_SIZE = 12, FONT_WIDTH = 0.59, XPAD = 10;

function init() {
	details = document.getElementById("details").firstChild;
	searchbtn = document.getElementById("search");
	unzoombtn = document.getElementById("unzoom");
	matchedtxt = document.getElementById("matched");
	frames = document.getElementById("frames");
	svgwidth = parseFloat(document.documentElement.getAttribute("width"));
	var g = frames.children;
	for (var i = 0; i < g.length; i++) {
		var r = g[i].getElementsByTagName("rect")[0];
		r.setAttribute("data-x", r.getAttribute("x"));
		r.setAttribute("data-w", r.getAttribute("width"));
		r.setAttribute("data-fill", r.getAttribute("fill"));
	}
	var s = query("s");
	if (s) search(s);
}

function query(name) {
	var m = new RegExp("[?&]" + name + "=([^&#]*)").exec(window.location.search || "");
	if (!m) return null;
	try {
		return decodeURIComponent(m[1].replace(/\+/g, " "));
	} catch (e) {
		return m[1];
	}
}

function frameOf(node) {
	while (node && node.parentNode) {
		if (node.parentNode.id === "frames") return node;
		node = node.parentNode;
	}
	return null;
}

function titleOf(g) {
	return g.getElementsByTagName("title")[0].textContent;
}

// The frame's own name, without "(T ms, N samples, P%)".
function nameOf(g) {
	var t = titleOf(g);
	var m = /^([\s\S]*) \([\d.]+ ms, \d+ samples?, [\d.]+%\)$/.exec(t);
	return m ? m[1] : t;
}

function fitText(g) {
	var r = g.getElementsByTagName("rect")[0];
	var t = g.getElementsByTagName("text")[0];
	var w = parseFloat(r.getAttribute("width")) - 3;
	var name = nameOf(g);
	var fit = Math.floor(w / (FONT_SIZE * FONT_WIDTH));
	t.setAttribute("x", (parseFloat(r.getAttribute("x")) + 3).toFixed(2));
	if (fit < 3) {
		t.textContent = "";
	} else if (name.length > fit) {
		t.textContent = name.substring(0, fit - 2) + "..";
	} else {
		t.textContent = name;
	}
}

function zoom(target) {
	var tr = target.getElementsByTagName("rect")[0];
	var xmin = parseFloat(tr.getAttribute("data-x"));
	var width = parseFloat(tr.getAttribute("data-w"));
	var xmax = xmin + width;
	var ymin = parseFloat(tr.getAttribute("y"));
	var ratio = (svgwidth - 2 * XPAD) / width;
	// x and width are written with 2 decimals, each rounded on its own: a
	// last child's end can lie 0.01 past its caller's.  With a tighter
	// margin a zoom into it hid its callers.  Frames under 0.1 wide are
	// not drawn, so no other frame comes within the margin.
	var fudge = 0.02;
	var g = frames.children;

	unzoombtn.classList.remove("hide");
	for (var i = 0; i < g.length; i++) {
		var e = g[i], r = e.getElementsByTagName("rect")[0];
		var x = parseFloat(r.getAttribute("data-x"));
		var w = parseFloat(r.getAttribute("data-w"));
		var y = parseFloat(r.getAttribute("y"));

		e.classList.remove("parent");
		e.classList.remove("hide");
		if (y > ymin) {
			// Below: the callers.  Full width if on the way, else hidden.
			if (x <= xmin + fudge && xmax - fudge <= x + w) {
				e.classList.add("parent");
				r.setAttribute("x", XPAD);
				r.setAttribute("width", (svgwidth - 2 * XPAD).toFixed(2));
			} else {
				e.classList.add("hide");
			}
		} else if (x < xmin - fudge || x + fudge >= xmax) {
			e.classList.add("hide");
		} else {
			r.setAttribute("x", (XPAD + (x - xmin) * ratio).toFixed(2));
			r.setAttribute("width", (w * ratio).toFixed(2));
		}
		fitText(e);
	}
	if (currentSearch !== null) search(currentSearch);
}

function unzoom() {
	var g = frames.children;

	unzoombtn.classList.add("hide");
	for (var i = 0; i < g.length; i++) {
		var r = g[i].getElementsByTagName("rect")[0];

		g[i].classList.remove("parent");
		g[i].classList.remove("hide");
		r.setAttribute("x", r.getAttribute("data-x"));
		r.setAttribute("width", r.getAttribute("data-w"));
		fitText(g[i]);
	}
	if (currentSearch !== null) search(currentSearch);
}

function resetSearch() {
	var g = frames.children;

	for (var i = 0; i < g.length; i++) {
		var r = g[i].getElementsByTagName("rect")[0];
		r.setAttribute("fill", r.getAttribute("data-fill"));
	}
	currentSearch = null;
	searchbtn.textContent = "Search";
	searchbtn.classList.remove("active");
	matchedtxt.classList.add("hide");
	matchedtxt.textContent = " ";
}

function searchPrompt() {
	if (currentSearch !== null) {
		resetSearch();
		return;
	}
	var term = window.prompt("Search for (a regular expression):", "");
	if (term) search(term);
}

// Highlight frames matching TERM; the share of the visible width they
// cover (nested matches counted once) is the share of the time.
function search(term) {
	var re;
	try {
		re = new RegExp(term);
	} catch (e) {
		re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
	}
	resetSearch();
	currentSearch = term;
	var g = frames.children, matches = {}, maxwidth = 0;
	for (var i = 0; i < g.length; i++) {
		var e = g[i], r = e.getElementsByTagName("rect")[0];
		if (e.classList.contains("hide")) continue;
		var x = parseFloat(r.getAttribute("x")), w = parseFloat(r.getAttribute("width"));
		if (w > maxwidth) maxwidth = w;
		if (re.test(nameOf(e))) {
			r.setAttribute("fill", "rgb(230,0,230)");
			if (!(x in matches) || w > matches[x]) matches[x] = w;
		}
	}
	searchbtn.textContent = "Reset Search";
	searchbtn.classList.add("active");
	/* The union of the matches' spans: a match nested in another adds
	   nothing, and neither do siblings whose ends overlap by the
	   drawing's rounding to 2 decimals (taking a span as nested because it
	   starts inside the one before left out whole subtrees). */
	var xs = Object.keys(matches).map(parseFloat).sort(function (a, b) { return a - b; });
	var count = 0, end = -1;
	for (var k = 0; k < xs.length; k++) {
		var mx = xs[k], me = mx + matches[xs[k]];
		if (me > end) {
			count += me - Math.max(mx, end);
			end = me;
		}
	}
	var pct = maxwidth > 0 ? 100 * count / maxwidth : 0;
	matchedtxt.classList.remove("hide");
	matchedtxt.textContent = "Matched: " + pct.toFixed(1) + "%";
}

window.addEventListener("click", function (ev) {
	var g = frameOf(ev.target);
	if (g) {
		if (g.classList.contains("parent")) unzoom();
		zoom(g);
	} else if (ev.target.id === "unzoom") {
		unzoom();
	} else if (ev.target.id === "search") {
		searchPrompt();
	}
}, false);

window.addEventListener("mouseover", function (ev) {
	var g = frameOf(ev.target);
	if (g) details.nodeValue = titleOf(g);
}, false);

window.addEventListener("mouseout", function (ev) {
	if (frameOf(ev.target)) details.nodeValue = " ";
}, false);

window.addEventListener("keydown", function (ev) {
	if (ev.keyCode === 114 || (ev.ctrlKey && ev.keyCode === 70)) {
		ev.preventDefault();
		searchPrompt();
	} else if (ev.keyCode === 27) {
		resetSearch();
	}
}, false);

window.addEventListener("load", init, false);
