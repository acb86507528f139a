/// The dashboard's three pages: static shells that load `fleet.js`, which fetches the JSON views, keeps them live
/// over Server-Sent Events and draws the plots as SVG. Nothing from a payload is ever written as markup.
enum FleetPages {
    static func shell(_ title: String, _ body: String, _ start: String) -> String {
        #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\#(title)</title>
        <link rel="stylesheet" href="/static/fleet.css">
        <script src="/static/fleet.js"></script>
        </head>
        <body>
        <header><a href="/">BLEGateway fleet</a> <a href="/presence">presence</a> <span id="page-title"></span>
        <span id="broker" class="pill">connecting…</span> <span id="live" class="pill">…</span></header>
        <main>
        \#(body)
        </main>
        <script>\#(start)</script>
        </body>
        </html>
        """#
    }

    static let overview = shell(
        "BLEGateway fleet",
        #"""
        <section><h2>Gateways <small id="gw-count"></small></h2>
        <div class="scroll"><table id="gateways"><thead><tr>
        <th>Gateway</th><th>Status</th><th>Adapter</th><th>Scanning</th><th>Spool</th><th>Msg/s</th><th>Drops</th>
        <th>Gaps</th><th>Version</th><th>Config</th><th>Problems</th></tr></thead><tbody></tbody></table></div>
        </section>
        <section><h2>Beacons <small id="beacon-count"></small></h2>
        <div class="scroll"><table id="beacons"><thead><tr><th>Beacon</th><th>Name</th><th>Gateways</th>
        <th>Best RSSI</th><th>Nearest</th></tr></thead><tbody></tbody></table></div></section>
        <section><h2>Bad input</h2><p id="counters"></p>
        <div class="scroll"><table id="bad"><thead><tr><th>When</th><th>Topic</th><th>Reason</th></tr></thead>
        <tbody></tbody></table></div></section>
        """#, "Fleet.overview();")

    static let gateway = shell(
        "Gateway — BLEGateway fleet",
        #"""
        <section><h2 id="gw-title"></h2><ul id="problems" class="problems"></ul><dl id="facts"></dl></section>
        <section><h2>Health, <span class="window"></span></h2><div class="plots">
        <figure><figcaption>Messages/s</figcaption><div id="plot-mps" class="plot"></div></figure>
        <figure><figcaption>Spool depth</figcaption><div id="plot-spool" class="plot"></div></figure>
        <figure><figcaption>Reports/s</figcaption><div id="plot-reports" class="plot"></div></figure>
        <figure><figcaption>RSS (MB)</figcaption><div id="plot-rss" class="plot"></div></figure></div></section>
        <section><h2>Beacons heard <small id="beacon-count"></small></h2>
        <div class="scroll"><table id="beacons"><thead><tr><th>Beacon</th><th>Name</th><th>RSSI</th>
        <th>Distance</th><th>Proximity</th><th>Samples</th><th>Age</th></tr></thead><tbody></tbody></table></div>
        </section>
        <section><h2>Peripherals</h2><div class="scroll"><table id="peripherals"><thead><tr><th>Address</th>
        <th>Name</th><th>State</th><th>Reason</th><th>Attempts</th><th>RSSI</th></tr></thead><tbody></tbody></table>
        </div></section>
        <section><h2>Regions</h2><div class="scroll"><table id="regions"><thead><tr><th>Region</th><th>State</th>
        <th>Since</th><th>Beacons</th></tr></thead><tbody></tbody></table></div></section>
        <section><h2>Sensors</h2><div class="scroll"><table id="sensors"><thead><tr><th>Sensor</th><th>Model</th>
        <th>Values</th><th>RSSI</th><th>Age</th></tr></thead><tbody></tbody></table></div></section>
        """#, "Fleet.gateway();")

    static let sensor = shell(
        "Sensor — BLEGateway fleet",
        #"""
        <section><h2 id="sensor-title"></h2>
        <div class="scroll"><table id="heard"><thead><tr><th>Gateway</th><th>Model</th><th>Values</th><th>RSSI</th>
        <th>Age</th></tr></thead><tbody></tbody></table></div></section>
        <section><h2><span class="window"></span>, per gateway</h2><div id="sensor-plots" class="plots"></div>
        <p id="legend" class="legend"></p></section>
        """#, "Fleet.sensor();")

    static let beacon = shell(
        "Beacon — BLEGateway fleet",
        #"""
        <section><h2 id="beacon-title"></h2>
        <div class="scroll"><table id="heard"><thead><tr><th>Gateway</th><th>RSSI</th><th>Distance</th>
        <th>Proximity</th><th>Samples</th><th>Age</th></tr></thead><tbody></tbody></table></div></section>
        <section><h2><span class="window"></span>, per gateway</h2><div class="plots">
        <figure><figcaption>RSSI (dBm)</figcaption><div id="plot-rssi" class="plot"></div></figure>
        <figure><figcaption>Distance (m)</figcaption><div id="plot-distance" class="plot"></div></figure></div>
        <p id="legend" class="legend"></p></section>
        """#, "Fleet.beacon();")

    static let presence = shell(
        "Presence — BLEGateway fleet",
        #"""
        <section><h2>Where the tags are</h2><p id="presence-note"></p><div id="floorplans"></div></section>
        <section><h2>Tags <small id="tag-count"></small></h2>
        <div class="scroll"><table id="tags"><thead><tr><th>Tag</th><th>Name</th><th>Room</th><th>Since</th>
        <th>Confidence</th><th>Method</th><th>Position</th><th>Gateways</th></tr></thead><tbody></tbody></table></div>
        </section>
        <script src="/static/presence.js"></script>
        """#, "Fleet.presence();")

    static let style = #"""
        :root { --bad: #c62828; --warn: #ef6c00; --ok: #2e7d32; --muted: #666; }
        body { font: 15px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
        header { background: #263238; color: #fff; padding: .6em 1em; display: flex; gap: .8em; flex-wrap: wrap;
                 align-items: center; }
        header a { color: #fff; font-weight: bold; text-decoration: none; }
        main { padding: .5em 1em 2em; max-width: 1400px; }
        h2 { font-size: 1.15em; margin: 1em 0 .4em; } small { color: var(--muted); font-weight: normal; }
        .scroll { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; background: #fff; }
        th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #e0e0e0; white-space: nowrap; }
        th { background: #eceff1; font-weight: 600; }
        td.num { text-align: right; font-variant-numeric: tabular-nums; }
        tr.sev-high td:first-child { border-left: 5px solid var(--bad); }
        tr.sev-mid td:first-child { border-left: 5px solid var(--warn); }
        tr.sev-none td:first-child { border-left: 5px solid var(--ok); }
        .status-online { color: var(--ok); font-weight: 600; } .status-offline { color: var(--bad); font-weight: 600; }
        .pill { border-radius: 1em; padding: .1em .7em; font-size: .85em; background: #546e7a; }
        .pill.ok { background: var(--ok); } .pill.bad { background: var(--bad); }
        .problems li { color: var(--bad); } dl { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
        dt { color: var(--muted); } dd { margin: 0; }
        .plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 420px), 1fr)); gap: 1em; }
        figure { margin: 0; background: #fff; border: 1px solid #e0e0e0; padding: .4em; }
        figcaption { font-size: .9em; color: var(--muted); }
        .plot svg { width: 100%; height: auto; display: block; }
        .legend span { margin-right: 1em; white-space: nowrap; }
        .floorplan svg { width: 100%; max-width: 1000px; max-height: 75vh; height: auto; background: #fff;
                         border: 1px solid #e0e0e0; }
        .floorplan .room { fill: #eceff1; stroke: #90a4ae; stroke-width: .05; }
        .floorplan .room-label { font-size: .6px; fill: #546e7a; }
        .floorplan .gateway { fill: #263238; } .floorplan .gateway-label { font-size: .45px; fill: #263238; }
        .floorplan .error { fill: #1565c0; fill-opacity: .12; stroke: #1565c0; stroke-width: .04; }
        .floorplan .tag { fill: #1565c0; } .floorplan .tag-label { font-size: .35px; fill: #0d47a1; }
        @media (max-width: 600px) {
          body { font-size: 14px; } main { padding: .3em .4em; } th, td { padding: .25em .35em; }
        }
        """#
}
