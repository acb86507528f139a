extension FleetPages {
    /// The pages' one script. Every value from the service is inserted with `textContent` or as an SVG number,
    /// so a beacon name such as `<script>` heard over the air shows as text.
    static let script = #"""
        "use strict";
        const Fleet = (() => {
          const COLORS = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#ad1457", "#4e342e"];
          // The plots' window: `?hours=` on the page (1 by default; the service clamps it to its retention). Past
          // the first hour the history has one point a minute (the mean; its least and greatest are in the API).
          const HOURS = Math.max(1, Number(new URLSearchParams(location.search).get("hours")) || 1);
          const WINDOW_S = HOURS * 3600;
          function windowChoice() {
            for (const e of document.querySelectorAll(".window")) {
              e.replaceChildren(el("span", HOURS === 1 ? "last hour" : `last ${HOURS} h`), " (");
              [1, 6, 24, 168].forEach((h, i) => {
                if (i) e.appendChild(document.createTextNode(" · "));
                const a = link("?hours=" + h, h < 168 ? h + " h" : "7 d"); a.className = "window-choice";
                e.appendChild(a);
              });
              e.appendChild(document.createTextNode(")"));
            }
          }

          function el(tag, text, cls) {
            const e = document.createElement(tag);
            if (text !== undefined && text !== null) e.textContent = String(text);
            if (cls) e.className = cls;
            return e;
          }
          function link(href, text) { const a = el("a", text); a.href = href; return a; }
          function cell(row, content, cls) {
            const td = el("td", content instanceof Node ? undefined : content, cls);
            if (content instanceof Node) td.appendChild(content);
            row.appendChild(td);
            return td;
          }
          function num(v, digits) { return (v === null || v === undefined) ? "–" : Number(v).toFixed(digits); }
          function ago(now, t) {
            if (t === null || t === undefined) return "–";
            const s = Math.max(0, now - t);
            if (s < 90) return Math.round(s) + " s";
            if (s < 5400) return Math.round(s / 60) + " min";
            return Math.round(s / 3600) + " h";
          }
          function distance(b) {
            if (b.distanceM === null || b.distanceM === undefined) return "–";
            return `${num(b.distanceM, 2)} ± ${num(b.accuracyM, 2)} m`;
          }
          function offlineSince(g) {
            return "offline since " + (g.since ? when(g.since) : "before the service started");
          }
          function when(t) {
            if (!t) return "–";
            const d = new Date(t * 1000);
            return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
          }
          function fill(tbodyParent, rows) {
            const tbody = document.querySelector(tbodyParent + " tbody");
            tbody.replaceChildren(...rows);
          }
          function idFromPath() { return decodeURIComponent(location.pathname.split("/").pop()); }
          function setTitle(text) { document.getElementById("page-title").textContent = text; }

          function showBroker(b) {
            const e = document.getElementById("broker");
            e.textContent = "broker " +
              (b.connected ? "connected" : "disconnected" + (b.lastError ? ": " + b.lastError : "")) +
              (b.droppedMessages ? `, ${b.droppedMessages} messages lost (service behind)` : "") +
              (b.instance ? ` · ${b.instance}: ${b.role}` +
                (b.role !== "active" && b.activeInstance ? ` (active: ${b.activeInstance})` : "") +
                (b.lease && b.lease.fences ? `, fenced ${b.lease.fences}×` : "") : "");
            e.className = "pill " + (b.connected && !b.droppedMessages ? "ok" : "bad");
          }

          // One EventSource per page; the browser reconnects by itself when the service restarts.
          function live(path, onView) {
            const state = document.getElementById("live");
            const source = new EventSource(path);
            source.onopen = () => { state.textContent = "live"; state.className = "pill ok"; };
            source.onerror = () => { state.textContent = "reconnecting…"; state.className = "pill bad"; };
            source.onmessage = (m) => {
              let view;
              try { view = JSON.parse(m.data); } catch (e) { return; }
              if (view.broker) showBroker(view.broker);
              onView(view);
              document.body.dataset.updated = String(Date.now());
            };
          }

          // A line plot in SVG: series [{color, points: [[t, v], …]}]. The time axis spans the data, from two minutes
          // up to WINDOW_S, so a fresh page shows its first points spread out rather than piled at "now".
          function plot(container, series, now) {
            const W = 400, H = 170, L = 44, R = 6, T = 6, B = 18;
            const ns = "http://www.w3.org/2000/svg";
            const svg = document.createElementNS(ns, "svg");
            svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
            const valid = p => p[1] !== null && p[1] !== undefined && p[0] >= now - WINDOW_S;
            const all = series.flatMap(s => s.points.filter(valid));
            const oldest = Math.min(now - 120, ...all.map(p => p[0]));
            const span = Math.max(120, now - oldest), t0 = now - span;
            let lo = Math.min(...all.map(p => p[1])), hi = Math.max(...all.map(p => p[1]));
            if (!isFinite(lo)) { lo = 0; hi = 1; }
            if (hi === lo) { hi += 1; lo -= 1; }
            const x = t => L + (t - t0) / span * (W - L - R);
            const y = v => T + (hi - v) / (hi - lo) * (H - T - B);
            const label = (txt, xx, yy) => {
              const t = document.createElementNS(ns, "text");
              t.setAttribute("x", String(xx)); t.setAttribute("y", String(yy)); t.setAttribute("font-size", "10");
              t.textContent = txt; svg.appendChild(t);
            };
            const digits = hi - lo < 10 ? 1 : 0;
            label(num(hi, digits), 2, T + 9); label(num(lo, digits), 2, H - B);
            label(span > 3 * 3600 ? `−${Math.round(span / 3600)} h` : `−${Math.round(span / 60)} min`, L, H - 4);
            label("now", W - R - 20, H - 4);
            const frame = document.createElementNS(ns, "rect");
            frame.setAttribute("x", L); frame.setAttribute("y", T); frame.setAttribute("width", W - L - R);
            frame.setAttribute("height", H - T - B); frame.setAttribute("fill", "none");
            frame.setAttribute("stroke", "#ccc");
            svg.appendChild(frame);
            let drawn = 0;
            for (const s of series) {
              const pts = s.points.filter(valid);
              if (pts.length === 0) continue;
              const line = document.createElementNS(ns, "polyline");
              line.setAttribute("points", pts.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" "));
              line.setAttribute("fill", "none"); line.setAttribute("stroke", s.color);
              line.setAttribute("stroke-width", "1.5");
              svg.appendChild(line);
              for (const p of pts.slice(-120)) {
                const c = document.createElementNS(ns, "circle");
                c.setAttribute("cx", x(p[0]).toFixed(1)); c.setAttribute("cy", y(p[1]).toFixed(1));
                c.setAttribute("r", "2"); c.setAttribute("fill", s.color); c.setAttribute("class", "point");
                svg.appendChild(c);
              }
              drawn += pts.length;
            }
            svg.dataset.points = String(drawn);
            container.replaceChildren(svg);
          }

          function severityClass(problems) {
            const s = problems.length ? problems[0].severity : 0;
            return s >= 60 ? "sev-high" : s > 0 ? "sev-mid" : "sev-none";
          }

          function overview() {
            setTitle("overview");
            live("/events/overview", v => {
              const sites = v.sites || [v.prefix];
              document.getElementById("gw-count").textContent =
                `${v.gateways.length} under ${sites.map(s => s + "/").join(", ")}`;
              fill("#gateways", v.gateways.map(g => {
                const tr = el("tr"); tr.className = severityClass(g.problems); tr.dataset.gateway = g.id;
                cell(tr, link("/gateway/" + encodeURIComponent(g.id), g.id));
                if (sites.length > 1) tr.lastChild.append(" · " + g.site);  // a text node: never markup
                const st = g.status === "offline" ? offlineSince(g) : g.status;
                cell(tr, st, "status status-" + g.status);
                cell(tr, (g.adapter || "–") + (g.adapterReason ? " (" + g.adapterReason + ")" : ""), "adapter");
                cell(tr, g.scanning || "–");
                const trend = g.spoolTrendPerMin === null || g.spoolTrendPerMin === undefined ? ""
                  : g.spoolTrendPerMin > 1 ? " ↑" : g.spoolTrendPerMin < -1 ? " ↓" : " →";
                cell(tr, (g.spoolDepth ?? "–") + trend, "num spool");
                cell(tr, num(g.messagesPerS, 1), "num mps");
                cell(tr, g.dropped ?? "–", "num drops");
                cell(tr, g.gaps ? `${g.gaps} (${g.missing} lost)` : "0", "num gaps");
                cell(tr, g.version || "–", "version");
                cell(tr, g.configStatus ? g.configStatus + " " + (g.configHash || "").slice(7, 15) : "–");
                cell(tr, g.problems.map(p => p.text).join("; ") || "ok", "problems");
                return tr;
              }));
              document.getElementById("beacon-count").textContent = v.beaconCount > v.beacons.length
                ? `${v.beacons.length} strongest of ${v.beaconCount}` : `${v.beaconCount}`;
              fill("#beacons", v.beacons.map(b => {
                const tr = el("tr");
                cell(tr, link("/beacon/" + encodeURIComponent(b.id), b.id));
                cell(tr, b.name || ""); cell(tr, b.gateways, "num"); cell(tr, num(b.bestRSSI, 1), "num");
                cell(tr, b.nearest || "–");
                return tr;
              }));
              const c = v.counters;
              document.getElementById("counters").textContent =
                `${c.messages} messages; ${c.invalidPayloads} not matching schema/v1, ` +
                `${c.unknownTopics} unknown topics, ` +
                `${c.badGatewayIds ?? c.badGatewayIDs} odd gateway ids, ${c.cleared} retained topics cleared, ` +
                `${c.siteConflicts ?? 0} from a gateway id already used by another site; ` +
                `${v.broker.droppedMessages} messages lost by this service (it fell behind the broker)`;
              fill("#bad", v.recentBadInput.slice().reverse().map(b => {
                const tr = el("tr"); cell(tr, when(b.at)); cell(tr, b.topic); cell(tr, b.reason); return tr;
              }));
            });
          }

          function gateway() {
            windowChoice();
            const id = idFromPath();
            setTitle(id);
            document.getElementById("gw-title").textContent = id;
            const series = { mps: [], spool: [], reports: [], rss: [] };
            let lastHealthTs = null;
            let latestNow = Date.now() / 1000;
            const redraw = () => {
              plot(document.getElementById("plot-mps"), [{ color: COLORS[0], points: series.mps }], latestNow);
              plot(document.getElementById("plot-spool"), [{ color: COLORS[1], points: series.spool }], latestNow);
              plot(document.getElementById("plot-reports"), [{ color: COLORS[2], points: series.reports }], latestNow);
              plot(document.getElementById("plot-rss"), [{ color: COLORS[3], points: series.rss }], latestNow);
            };
            fetch("/api/history/gateway/" + encodeURIComponent(id) + "?hours=" + HOURS).then(r => r.json()).then(h => {
              for (const p of h) {
                series.mps.push([p.t, p.messagesPerS]); series.spool.push([p.t, p.spoolDepth]);
                series.reports.push([p.t, p.reportsPerS]); series.rss.push([p.t, p.rssBytes / 1e6]);
              }
              redraw();
            });
            live("/events/gateway/" + encodeURIComponent(id), v => {
              latestNow = v.now;
              const g = v.gateway;
              const problems = document.getElementById("problems");
              problems.replaceChildren(...v.problems.map(p => el("li", p.text)));
              if (!g) {
                document.getElementById("facts").replaceChildren(el("dt", "status"), el("dd", "not seen yet"));
                return;
              }
              const facts = [
                ["status", g.status === "offline"
                  ? offlineSince(g) + (g.statusReason ? " (" + g.statusReason + ")" : "")
                  : g.status + (g.since ? " since " + when(g.since) : "")],
                ["version", g.version || "–"], ["run", g.run || "–"],
                ["adapter", g.adapter ? `${g.adapter.state}${g.adapter.reason ? " (" + g.adapter.reason + ")" : ""}, ` +
                  `${g.adapter.device}, ${g.adapter.mode || ""}, scanning ${g.adapter.scanning || "–"}` : "–"],
                ["spool", g.health ? `${g.health.spoolDepth} readings, ${g.health.droppedSamples} dropped` : "–"],
                ["publishing", g.health ? `${num(g.health.messagesPerS, 1)} msg/s, ` +
                  `${g.health.acknowledged} acknowledged, ` +
                  (g.health.connected ? `connected to ${g.health.broker || "the broker"}` : "broker disconnected") +
                  (g.health.failovers ? `, ${g.health.failovers} failovers` : "") : "–"],
                ["seq", `last ${g.seq.lastSeq ?? "–"}, ${g.seq.gaps} gaps (${g.seq.missing} lost), ` +
                  `${g.seq.duplicates} duplicates`],
                ["config", g.config ? `${g.config.status} ${g.config.hash}` +
                  (g.config.errors.length ? ": " + g.config.errors.join("; ") : "") : "–"],
                ["invalid payloads", g.invalid],
              ];
              document.getElementById("facts")
                .replaceChildren(...facts.flatMap(([k, val]) => [el("dt", k), el("dd", val)]));
              if (g.health && g.health.ts !== lastHealthTs) {
                lastHealthTs = g.health.ts;
                const h = g.health, t = v.now;
                series.mps.push([t, h.messagesPerS]); series.spool.push([t, h.spoolDepth]);
                series.reports.push([t, h.reportsPerS]); series.rss.push([t, h.rssBytes / 1e6]);
              }
              redraw();
              const beacons = Object.entries(g.beacons).sort((a, b) => (b[1].rssi ?? -999) - (a[1].rssi ?? -999));
              document.getElementById("beacon-count").textContent = String(beacons.length);
              fill("#beacons", beacons.map(([bid, b]) => {
                const tr = el("tr");
                cell(tr, link("/beacon/" + encodeURIComponent(bid), bid)); cell(tr, b.name || "");
                cell(tr, num(b.rssi, 1), "num");
                cell(tr, distance(b), "num");
                cell(tr, b.proximity || "–"); cell(tr, b.samples, "num"); cell(tr, ago(v.now, b.receivedAt), "num");
                return tr;
              }));
              fill("#peripherals", Object.entries(g.peripherals).sort().map(([addr, p]) => {
                const tr = el("tr");
                cell(tr, addr); cell(tr, p.name || ""); cell(tr, p.state); cell(tr, p.reason || "");
                cell(tr, p.attempts ?? "–", "num"); cell(tr, p.rssi ?? "–", "num");
                return tr;
              }));
              fill("#regions", Object.entries(g.regions).sort().map(([rid, r]) => {
                const tr = el("tr");
                cell(tr, rid); cell(tr, r.state); cell(tr, when(r.since)); cell(tr, r.beacons.join(", "));
                return tr;
              }));
              fill("#sensors", Object.entries(g.sensors || {}).sort().map(([sid, s]) => {
                const tr = el("tr");
                cell(tr, link("/sensor/" + encodeURIComponent(sid), s.address));
                cell(tr, s.model); cell(tr, valuesText(s.values)); cell(tr, num(s.rssi, 0), "num");
                cell(tr, ago(v.now, s.receivedAt), "num");
                return tr;
              }));
            });
          }

          function valuesText(values) {
            return Object.entries(values).sort().map(([k, x]) => `${k} ${Number(x).toFixed(2).replace(/\.?0+$/, "")}`)
              .join(", ");
          }

          // One plot per quantity, one line per gateway that reports the sensor.
          function sensor() {
            windowChoice();
            const id = idFromPath();
            setTitle(id);
            const series = {}, lastSeen = {};  // quantity → gateway → [[t, v]]
            let latestNow = Date.now() / 1000;
            const colorOf = {};
            const color = gw => colorOf[gw] ?? (colorOf[gw] = COLORS[Object.keys(colorOf).length % COLORS.length]);
            const container = document.getElementById("sensor-plots");
            const figures = {};
            const redraw = () => {
              for (const q of Object.keys(series).sort()) {
                if (!figures[q]) {
                  const fig = el("figure"), cap = el("figcaption", q), div = el("div");
                  div.className = "plot"; div.dataset.quantity = q;
                  fig.append(cap, div); container.append(fig); figures[q] = div;
                }
                const gws = Object.keys(series[q]).sort();
                plot(figures[q], gws.map(g => ({ color: color(g), points: series[q][g] })), latestNow);
              }
              document.getElementById("legend").replaceChildren(...Object.keys(colorOf).sort().map(g => {
                const s = el("span", "● " + g); s.style.color = color(g); return s;
              }));
            };
            const add = (q, gw, t, v) => { ((series[q] = series[q] || {})[gw] = series[q][gw] || []).push([t, v]); };
            fetch("/api/history/sensor/" + encodeURIComponent(id) + "?hours=" + HOURS).then(r => r.json()).then(h => {
              for (const [q, byGateway] of Object.entries(h)) {
                for (const [gw, pts] of Object.entries(byGateway)) for (const p of pts) add(q, gw, p.t, p.value);
              }
              redraw();
            });
            live("/events/sensor/" + encodeURIComponent(id), v => {
              latestNow = v.now;
              if (v.heardBy.length) {
                document.getElementById("sensor-title").textContent = `${v.heardBy[0].reading.model} ${v.heardBy[0].reading.address}`;
              }
              for (const h of v.heardBy) {
                if (lastSeen[h.gateway] === h.reading.receivedAt) continue;
                lastSeen[h.gateway] = h.reading.receivedAt;
                for (const [q, x] of Object.entries(h.reading.values)) add(q, h.gateway, h.reading.receivedAt, x);
              }
              redraw();
              fill("#heard", v.heardBy.map(h => {
                const tr = el("tr"), s = h.reading;
                cell(tr, link("/gateway/" + encodeURIComponent(h.gateway), h.gateway));
                cell(tr, s.model); cell(tr, valuesText(s.values)); cell(tr, num(s.rssi, 0), "num");
                cell(tr, ago(v.now, s.receivedAt), "num");
                return tr;
              }));
            });
          }

          function beacon() {
            windowChoice();
            const id = idFromPath();
            setTitle(id);
            document.getElementById("beacon-title").textContent = id;
            const rssi = {}, dist = {}, lastSeen = {};
            let latestNow = Date.now() / 1000;
            const colorOf = {};
            const color = gw => colorOf[gw] ?? (colorOf[gw] = COLORS[Object.keys(colorOf).length % COLORS.length]);
            const redraw = () => {
              const gws = Object.keys(rssi).sort();
              plot(document.getElementById("plot-rssi"),
                   gws.map(g => ({ color: color(g), points: rssi[g] })), latestNow);
              plot(document.getElementById("plot-distance"),
                   gws.map(g => ({ color: color(g), points: dist[g] })), latestNow);
              document.getElementById("legend").replaceChildren(...gws.map(g => {
                const s = el("span", "● " + g); s.style.color = color(g); return s;
              }));
            };
            fetch("/api/history/beacon/" + encodeURIComponent(id) + "?hours=" + HOURS).then(r => r.json()).then(h => {
              for (const [gw, pts] of Object.entries(h)) {
                rssi[gw] = (rssi[gw] || []).concat(pts.map(p => [p.t, p.rssi]));
                dist[gw] = (dist[gw] || []).concat(pts.map(p => [p.t, p.distanceM]));
              }
              redraw();
            });
            live("/events/beacon/" + encodeURIComponent(id), v => {
              latestNow = v.now;
              for (const h of v.heardBy) {
                if (lastSeen[h.gateway] === h.reading.receivedAt) continue;
                lastSeen[h.gateway] = h.reading.receivedAt;
                (rssi[h.gateway] = rssi[h.gateway] || []).push([h.reading.receivedAt, h.reading.rssi]);
                (dist[h.gateway] = dist[h.gateway] || []).push([h.reading.receivedAt, h.reading.distanceM]);
              }
              redraw();
              fill("#heard", v.heardBy.map(h => {
                const tr = el("tr"), b = h.reading;
                cell(tr, link("/gateway/" + encodeURIComponent(h.gateway), h.gateway));
                cell(tr, num(b.rssi, 1), "num");
                cell(tr, distance(b), "num");
                cell(tr, b.proximity || "–"); cell(tr, b.samples, "num"); cell(tr, ago(v.now, b.receivedAt), "num");
                return tr;
              }));
            });
          }

          // For page scripts of their own (presence.js).
          const helpers = { el, link, cell, num, ago, when, fill, live, setTitle };
          return { overview, gateway, beacon, sensor, plot, helpers };
        })();
        """#
}
