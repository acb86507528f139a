extension FleetPages {
    /// The presence page's script: a floor plan per site and floor (SVG in metres: rooms, gateways, each tag with
    /// its error circle), redrawn at each event; values are inserted as text or SVG numbers only.
    static let presenceScript = #"""
        "use strict";
        Fleet.presence = () => {
          const { el, link, cell, num, ago, when, fill, live, setTitle } = Fleet.helpers;
          const SVG = "http://www.w3.org/2000/svg";
          setTitle("presence");
          function svg(tag, attrs, text) {
            const e = document.createElementNS(SVG, tag);
            for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
            if (text !== undefined) e.textContent = String(text);
            return e;
          }
          function plan(site, floor) {
            const rooms = site.rooms.filter(r => r.floor === floor);
            const xs = rooms.flatMap(r => r.polygon.map(p => p[0])), ys = rooms.flatMap(r => r.polygon.map(p => p[1]));
            const x0 = Math.min(...xs) - 1, x1 = Math.max(...xs) + 1, y0 = Math.min(...ys) - 1, y1 = Math.max(...ys) + 1;
            // y grows upwards on a plan, downwards in SVG: flip it.
            const fy = y => y1 + y0 - y;
            const root = svg("svg", { viewBox: `${x0} ${y0} ${x1 - x0} ${y1 - y0}`, role: "img",
                                      "aria-label": `floor plan of ${site.prefix}, ${floor}` });
            for (const r of rooms) {
              root.appendChild(svg("polygon", { class: "room", points: r.polygon.map(p => `${p[0]},${fy(p[1])}`).join(" "),
                                                "data-room": r.id }));
              const cx = r.polygon.reduce((a, p) => a + p[0], 0) / r.polygon.length;
              const cy = r.polygon.reduce((a, p) => a + p[1], 0) / r.polygon.length;
              root.appendChild(svg("text", { class: "room-label", x: cx, y: fy(cy), "text-anchor": "middle" }, r.name));
            }
            const roomFloor = Object.fromEntries(site.rooms.map(r => [r.id, r.floor]));
            for (const g of site.gateways) {
              if (g.x === null || g.x === undefined || roomFloor[g.room] !== floor) continue;
              root.appendChild(svg("rect", { class: "gateway", x: g.x - .2, y: fy(g.y) - .2, width: .4, height: .4,
                                             "data-gateway": g.id }));
              root.appendChild(svg("text", { class: "gateway-label", x: g.x + .3, y: fy(g.y) - .3 }, g.id));
            }
            for (const t of site.tags) {
              if (t.x === null || t.x === undefined || t.floor !== floor || t.room === "not_home") continue;
              const err = Math.max(Number(t.errorM) || 0, .15);
              root.appendChild(svg("circle", { class: "error", cx: t.x, cy: fy(t.y), r: err }));
              const dot = svg("circle", { class: "tag", cx: t.x, cy: fy(t.y), r: .15, "data-tag": t.beacon });
              dot.appendChild(svg("title", {}, `${t.name || t.beacon}: ${t.room}, ± ${num(t.errorM, 1)} m`));
              root.appendChild(dot);
              root.appendChild(svg("text", { class: "tag-label", x: t.x + .2, y: fy(t.y) + .5 }, t.name || t.beacon.slice(-12)));
            }
            const fig = el("figure", undefined, "floorplan");
            fig.appendChild(el("figcaption", `${site.prefix}/ — ${floor}` +
              (site.source === "retained" ? " (pushed description)" : " (configured description)")));
            fig.appendChild(root);
            return fig;
          }
          live("/events/presence", v => {
            const notes = [];
            if (v.withoutSite.length) notes.push("no site description yet for " + v.withoutSite.join(", ") +
              " (configure fleet.site, or push one retained on <prefix>/fleet/site)");
            for (const s of v.sites) {
              if (s.refused) notes.push(`${s.prefix}: pushed description refused: ${s.refused}`);
              if (s.unplacedGateways.length) notes.push(`${s.prefix}: gateways not in the description (ignored): ` +
                s.unplacedGateways.join(", "));
            }
            document.getElementById("presence-note").textContent = notes.join(" · ");
            document.getElementById("floorplans").replaceChildren(...v.sites.flatMap(s => s.floors.map(f => plan(s, f))));
            const tags = v.sites.flatMap(s => s.tags.map(t => ({ ...t, prefix: s.prefix })));
            document.getElementById("tag-count").textContent = String(tags.length);
            fill("#tags", tags.map(t => {
              const tr = el("tr");
              tr.dataset.tag = t.beacon;
              cell(tr, link("/beacon/" + encodeURIComponent(t.beacon), t.beacon));
              cell(tr, t.name || "–");
              cell(tr, t.room, t.room === "not_home" ? "status-offline" : "");
              cell(tr, ago(v.now, t.since), "num");
              cell(tr, num(t.confidence, 2), "num");
              cell(tr, t.method.replaceAll("_", " "));
              cell(tr, t.x === null || t.x === undefined ? "–" : `${num(t.x, 1)}, ${num(t.y, 1)} ± ${num(t.errorM, 1)} m`);
              cell(tr, t.gateways.join(", "));
              return tr;
            }));
          });
        };
        """#
}
