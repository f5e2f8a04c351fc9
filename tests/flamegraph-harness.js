// flamegraph-harness.js: drives a flame graph SVG of ours the way a person does, in a real
// browser, and leaves what it saw in the document for tests/flamegraph-check.py.
//
// profile.sh inserts this script at the end of the SVG and loads the copy with
// `chromium --headless --dump-dom FILE?zoom=REGEX&up=REGEX&find=REGEX`.  After the flame graph's
// own script has set itself up (both run on "load", ours second), it hovers the frame drawn
// furthest right whose name matches `zoom`, clicks it (zoom), searches `find` through the Search button (the
// prompt answered by us), clicks the widest greyed ancestor matching `up` (zoom out to it),
// clicks "Reset Zoom", then the search button again (reset the search).  After each step it
// records every frame's geometry, classes, fill and text; the JSON goes into
// a desc element, id rbi-harness.  Only the page's own UI is used: synthetic mouse events on the
// elements a person would click, so the page's listeners do the work.
"use strict";
(function () {
	function param(name) {
		var m = new RegExp("[?&]" + name + "=([^&#]*)").exec(window.location.search || "");
		return m ? decodeURIComponent(m[1].replace(/\+/g, " ")) : null;
	}

	function rectOf(g) {
		return g.getElementsByTagName("rect")[0];
	}

	function frameName(g) {
		var t = g.getElementsByTagName("title")[0].textContent;
		var m = /^([\s\S]*) \([\d.]+ ms, \d+ samples?, [\d.]+%\)$/.exec(t);
		return m ? m[1] : t;
	}

	// The frame matching RE drawn furthest right: the last child of its caller, whose end
	// is the caller's end (x and width are rounded on their own: the ends can differ by
	// 0.01, which once made the zoom hide the callers).
	function rightmost(re) {
		var g = document.getElementById("frames").children, best = null, bx = -1;
		for (var i = 0; i < g.length; i++) {
			var x = parseFloat(rectOf(g[i]).getAttribute("x"));
			if (re.test(frameName(g[i])) && x > bx) {
				best = g[i];
				bx = x;
			}
		}
		return best;
	}

	function widest(re, filter) {
		var g = document.getElementById("frames").children, best = null, bw = -1;
		for (var i = 0; i < g.length; i++) {
			var w = parseFloat(rectOf(g[i]).getAttribute("width"));
			if (re.test(frameName(g[i])) && (!filter || filter(g[i])) && w > bw) {
				best = g[i];
				bw = w;
			}
		}
		return best;
	}

	function fire(el, type) {
		el.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true, view: window }));
	}

	function textOf(id) {
		var e = document.getElementById(id);
		return { text: e.textContent, cls: e.getAttribute("class") || "" };
	}

	function snapshot(step, target) {
		var g = document.getElementById("frames").children, frames = [];
		for (var i = 0; i < g.length; i++) {
			var r = rectOf(g[i]);
			frames.push({
				title: g[i].getElementsByTagName("title")[0].textContent,
				cls: g[i].getAttribute("class") || "",
				display: window.getComputedStyle(g[i]).display,
				opacity: window.getComputedStyle(g[i]).opacity,
				x: parseFloat(r.getAttribute("x")), w: parseFloat(r.getAttribute("width")),
				y: parseFloat(r.getAttribute("y")),
				x0: parseFloat(r.getAttribute("data-x")),
				w0: parseFloat(r.getAttribute("data-w")),
				fill: r.getAttribute("fill"), fill0: r.getAttribute("data-fill"),
				text: g[i].getElementsByTagName("text")[0].textContent,
			});
		}
		return {
			step: step, target: target ? Array.prototype.indexOf.call(g, target) : -1,
			details: textOf("details"), matched: textOf("matched"),
			unzoom: textOf("unzoom"), search: textOf("search"), frames: frames,
		};
	}

	window.addEventListener("load", function () {
		var out = { width: parseFloat(document.documentElement.getAttribute("width")), steps: [] };
		try {
			var zoomRe = new RegExp(param("zoom")), upRe = new RegExp(param("up"));
			var term = param("find");
			var target = rightmost(zoomRe), up;

			if (!target) throw new Error("no frame matching " + zoomRe);

			out.steps.push(snapshot("loaded", null));
			fire(rectOf(target), "mouseover");
			out.steps.push(snapshot("hover", target));
			fire(rectOf(target), "mouseout");
			fire(rectOf(target), "click");
			out.steps.push(snapshot("zoom", target));
			window.prompt = function () { return term; };
			fire(document.getElementById("search"), "click");
			out.steps.push(snapshot("search", target));
			up = widest(upRe, function (g) { return /\bparent\b/.test(g.getAttribute("class")); });
			if (!up) throw new Error("no greyed caller matching " + upRe + " after the zoom");
			fire(rectOf(up), "click");
			out.steps.push(snapshot("zoom-out", up));
			fire(document.getElementById("unzoom"), "click");
			out.steps.push(snapshot("reset-zoom", null));
			fire(document.getElementById("search"), "click");
			out.steps.push(snapshot("reset-search", null));
		} catch (e) {
			out.error = String(e && e.stack || e);
		}
		var desc = document.createElementNS("http://www.w3.org/2000/svg", "desc");
		desc.setAttribute("id", "rbi-harness");
		desc.textContent = JSON.stringify(out);
		document.documentElement.appendChild(desc);
	}, false);
})();
