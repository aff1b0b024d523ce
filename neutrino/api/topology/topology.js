// The topology page: reads the Networking API as the viewer (same origin, the
// viewer's token or headers) and draws it as SVG, Horizon-style: networks are
// vertical bars, each device (router, instance, DHCP server, loose port) a row
// whose line meets the bars of the networks it has ports on; floating IPs sit
// on the ports they map to. Polls, and redraws only when the data changed.
"use strict";

(() => {
  const API = "../v2.0/";
  const POLL_MS = 2500;
  const COLLECTIONS = ["networks", "subnets", "ports", "routers", "floatingips"];
  // served only with their service plugins: a 404 is "none here"
  const OPTIONAL = new Set(["routers", "floatingips"]);
  const TOKEN_KEY = "neutrino.token";
  const HEADERS_KEY = "neutrino.headers"; // extra request headers, a JSON object
  const SVG = "http://www.w3.org/2000/svg";
  const STATUSES = ["ACTIVE", "DOWN", "BUILD", "ERROR"];
  const KINDS = {
    router: {badge: "RTR", label: "Router", order: 0},
    instance: {badge: "VM", label: "Instance", order: 1},
    device: {badge: "DEV", label: "Device", order: 2},
    dhcp: {badge: "DHCP", label: "DHCP server", order: 3},
    unattached: {badge: "PORT", label: "Port without device", order: 4},
  };
  // geometry, in SVG user units
  const G = {left: 16, boxW: 184, boxH: 30, netX: 236, colW: 136, top: 12,
             rowH: 46, band: 28, subnetLine: 14, maxSubnets: 4};

  const $ = (id) => document.getElementById(id);
  const svg = $("topology");
  let lastSignature = null;
  let current = null; // the model drawn
  let selected = null; // "kind:id" of the node whose details are shown
  let timer = null;
  let revision = 0;
  let busy = false;

  // --- reading the API ---------------------------------------------------------

  class HttpError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function requestHeaders() {
    const headers = {Accept: "application/json"};
    try {
      const extra = JSON.parse(sessionStorage.getItem(HEADERS_KEY) || "{}");
      if (extra && typeof extra === "object") Object.assign(headers, extra);
    } catch (error) {
      console.warn(`${HEADERS_KEY} is not a JSON object`, error);
    }
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers["X-Auth-Token"] = token;
    return headers;
  }

  async function list(collection) {
    const items = [];
    let url = API + collection;
    while (url) {
      const resp = await fetch(url, {headers: requestHeaders(), cache: "no-store",
                                     credentials: "omit"});
      if (resp.status === 404 && OPTIONAL.has(collection)) return items;
      if (!resp.ok) {
        let message = `${resp.status} ${resp.statusText}`;
        try {
          message = (await resp.json()).NeutronError.message || message;
        } catch (error) { /* not a NeutronError body */ }
        throw new HttpError(resp.status, `/v2.0/${collection}: ${message}`);
      }
      const body = await resp.json();
      items.push(...body[collection]);
      const next = (body[`${collection}_links`] || []).find((link) => link.rel === "next");
      url = next ? next.href : null;
    }
    return items;
  }

  // --- the model: what to draw, from the lists ----------------------------------

  const short = (id) => (id || "").slice(0, 8);
  const nameOf = (item) => item.name || short(item.id);

  function deviceOf(port) {
    const owner = port.device_owner || "";
    if (owner.startsWith("network:router") || owner === "network:ha_router_replicated_interface") {
      return port.device_id ? ["router", port.device_id] : ["unattached", port.id];
    }
    if (owner.startsWith("compute:") && port.device_id) return ["instance", port.device_id];
    if (owner === "network:dhcp") return ["dhcp", port.device_id || port.id];
    if (port.device_id) return ["device", port.device_id];
    return ["unattached", port.id];
  }

  function buildModel(data) {
    const networks = new Map(data.networks.map((n) => [n.id, n]));
    const subnets = new Map();
    for (const subnet of data.subnets) {
      if (!subnets.has(subnet.network_id)) subnets.set(subnet.network_id, []);
      subnets.get(subnet.network_id).push(subnet);
    }
    for (const own of subnets.values()) {
      own.sort((a, b) => a.ip_version - b.ip_version || a.cidr.localeCompare(b.cidr));
    }
    const devices = new Map();
    const device = (kind, id, project) => {
      const key = `${kind}:${id}`;
      if (!devices.has(key)) {
        devices.set(key, {kind, id, project: project || "", resource: null, ports: [],
                          gateways: []});
      }
      return devices.get(key);
    };
    for (const router of data.routers) device("router", router.id, router.project_id).resource = router;
    const fipsOf = new Map();
    const loose = [];
    for (const fip of data.floatingips) {
      if (fip.port_id) {
        if (!fipsOf.has(fip.port_id)) fipsOf.set(fip.port_id, []);
        fipsOf.get(fip.port_id).push(fip);
      } else {
        loose.push(fip);
      }
    }
    for (const port of data.ports) {
      if (port.device_owner === "network:floatingip") continue; // drawn as its floating IP
      const [kind, id] = deviceOf(port);
      const net = networks.get(port.network_id);
      const dev = device(kind, id, port.project_id || (net && net.project_id));
      if (kind === "unattached") dev.resource = port;
      if (kind === "dhcp" && net) dev.name = `DHCP ${nameOf(net)}`;
      dev.ports.push(port);
    }
    for (const dev of devices.values()) {
      const gw = dev.resource && dev.resource.external_gateway_info;
      if (dev.kind === "router" && gw && gw.network_id &&
          !dev.ports.some((p) => p.network_id === gw.network_id)) {
        dev.gateways.push(gw.network_id); // its gateway port is not ours to see
      }
      // an instance's name is Nova's: its id is what we know (a UUID's first 8 say enough)
      dev.name = dev.name || (dev.resource ? nameOf(dev.resource)
        : dev.id.length === 36 ? short(dev.id) : dev.id);
      dev.status = dev.resource ? dev.resource.status : summaryStatus(dev.ports);
    }
    const columns = [...networks.values()].sort((a, b) =>
      (b["router:external"] ? 1 : 0) - (a["router:external"] ? 1 : 0) ||
      (a.project_id || "").localeCompare(b.project_id || "") ||
      nameOf(a).localeCompare(nameOf(b)) || a.id.localeCompare(b.id));
    const rows = [...devices.values()].sort((a, b) =>
      a.project.localeCompare(b.project) || KINDS[a.kind].order - KINDS[b.kind].order ||
      a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
    const projects = [...new Set([...columns.map((n) => n.project_id || ""),
                                  ...rows.map((d) => d.project)])].sort();
    return {data, networks, subnets, columns, rows, fipsOf, loose, projects,
            counts: {networks: data.networks.length, routers: data.routers.length,
                     ports: data.ports.length, floatingips: data.floatingips.length}};
  }

  function summaryStatus(ports) {
    if (!ports.length) return "";
    for (const status of ["ERROR", "BUILD", "DOWN"]) {
      if (ports.some((p) => p.status === status)) return status;
    }
    return ports.every((p) => p.status === "ACTIVE") ? "ACTIVE" : ports[0].status;
  }

  // --- drawing -------------------------------------------------------------------

  function el(name, attrs, parent, text) {
    const node = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== undefined && value !== null) node.setAttribute(key, value);
    }
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  const fit = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
  const statusClass = (status) => `st-${STATUSES.includes(status) ? status : "OTHER"}`;

  // distinct colours for the projects in view, in their sorted order; a hue
  // from the id beyond those
  const PALETTE = ["#1971c2", "#e8590c", "#2b8a3e", "#c2255c", "#6741d9", "#0c8599",
                   "#a61e4d", "#5c940d", "#d9480f", "#364fc7"];
  let projectIndex = new Map();

  function projectColour(project) {
    const index = projectIndex.get(project);
    if (index !== undefined && index < PALETTE.length) return PALETTE[index];
    let hash = 7;
    for (const ch of project) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
    return `hsl(${hash % 360}, 55%, 45%)`;
  }

  // a selectable node: <g data-kind data-id> with a <title> for hover and a label for readers
  function node(parent, kind, id, title, extra) {
    const g = el("g", {"data-kind": kind, "data-id": id, tabindex: "0", role: "button",
                       "aria-label": title.split("\n")[0], class: `node ${kind}`, ...extra}, parent);
    el("title", {}, g, title);
    if (selected === `${kind}:${id}`) g.classList.add("selected");
    return g;
  }

  function portTitle(port) {
    const ips = (port.fixed_ips || []).map((ip) => ip.ip_address).join(", ");
    return `Port ${port.name || port.id}\n${port.status} · ${port.mac_address}` +
      (ips ? `\n${ips}` : "") + (port.device_owner ? `\n${port.device_owner}` : "");
  }

  function draw(model) {
    const multi = model.projects.length > 1;
    projectIndex = new Map(model.projects.map((project, i) => [project, i]));
    const colX = new Map(model.columns.map((n, i) => [n.id, G.netX + i * G.colW + G.colW / 2]));
    const maxSubnets = Math.min(G.maxSubnets + 1, Math.max(0, ...model.columns.map(
      (n) => (model.subnets.get(n.id) || []).length)));
    const headH = 46 + maxSubnets * G.subnetLine;
    const width = Math.max(G.netX + model.columns.length * G.colW + 72, 480); // room for a pill
    const frag = document.createDocumentFragment();
    const bars = el("g", {class: "bars"}, frag);
    const edges = el("g", {class: "edges"}, frag);
    const nodes = el("g", {class: "nodes"}, frag);

    // rows first, so the bars know how long to be
    let y = G.top + headH + 16;
    let project = null;
    const rowY = [];
    for (const dev of model.rows) {
      if (multi && dev.project !== project) {
        project = dev.project;
        y += 4;
        el("rect", {x: G.left, y, width: width - G.left - 8, height: G.band - 6, rx: 4,
                    class: "band", fill: projectColour(project)}, bars);
        el("text", {x: G.left + 8, y: y + 16, class: "band-label"}, bars,
           `project ${project || "(none)"}`);
        y += G.band;
      }
      rowY.push(y + G.rowH / 2);
      y += G.rowH;
    }
    const looseRows = new Map(); // network id -> floating IPs without a port, one per row
    for (const fip of model.loose) {
      if (!looseRows.has(fip.floating_network_id)) looseRows.set(fip.floating_network_id, []);
      looseRows.get(fip.floating_network_id).push(fip);
    }
    const looseTop = y + (model.loose.length ? G.band : 0);
    if (model.loose.length) {
      el("text", {x: G.left, y: y + 18, class: "band-label plain"}, bars,
         "Floating IPs without a port");
    }
    const height = looseTop + Math.max(0, ...[...looseRows.values()].map((l) => l.length)) *
      (G.rowH - 16) + 24;

    // networks: a header with their subnets, and a bar down the page
    for (const net of model.columns) {
      const cx = colX.get(net.id);
      const external = Boolean(net["router:external"]);
      const tags = [external ? "external" : "", net.shared ? "shared" : ""].filter(Boolean);
      const title = `Network ${nameOf(net)}\n${net.status} · ${net.id}` +
        (tags.length ? `\n${tags.join(", ")}` : "") +
        (multi ? `\nproject ${net.project_id || "(none)"}` : "");
      const g = node(bars, "network", net.id, title, {
        "data-status": net.status, "data-external": String(external),
        "data-project": net.project_id || "", class: `node network${external ? " external" : ""}`});
      const x0 = cx - G.colW / 2 + 6;
      el("rect", {x: cx - 4, y: G.top + headH, width: 8, height: height - G.top - headH - 8,
                  rx: 4, class: "bar"}, g);
      el("rect", {x: x0, y: G.top, width: G.colW - 12, height: headH, rx: 6, class: "head"}, g);
      if (multi) {
        el("rect", {x: x0, y: G.top, width: G.colW - 12, height: 5, rx: 2,
                    fill: projectColour(net.project_id || "")}, g);
      }
      el("circle", {cx: x0 + 12, cy: G.top + 20, r: 5, class: `dot ${statusClass(net.status)}`}, g);
      el("text", {x: x0 + 22, y: G.top + 24, class: "name"}, g, fit(nameOf(net), 14));
      el("text", {x: x0 + 10, y: G.top + 38, class: "tags"}, g, tags.join(" · "));
      const own = model.subnets.get(net.id) || [];
      own.slice(0, G.maxSubnets).forEach((subnet, i) => {
        const s = node(g, "subnet", subnet.id,
                       `Subnet ${nameOf(subnet)}\n${subnet.cidr}` +
                       (subnet.gateway_ip ? `\ngateway ${subnet.gateway_ip}` : ""),
                       {"data-network": net.id});
        el("text", {x: x0 + 10, y: G.top + 54 + i * G.subnetLine, class: "cidr"}, s,
           fit(subnet.cidr, 19));
      });
      if (own.length > G.maxSubnets) {
        el("text", {x: x0 + 10, y: G.top + 54 + G.maxSubnets * G.subnetLine, class: "cidr"}, g,
           `+${own.length - G.maxSubnets} more`);
      }
    }

    // devices: a box on the left, a line to each network it has a port on
    model.rows.forEach((dev, i) => {
      const cy = rowY[i];
      const x1 = G.left + G.boxW;
      const perNetwork = new Map();
      const offset = (networkId) => {
        const k = perNetwork.get(networkId) || 0;
        perNetwork.set(networkId, k + 1);
        return [0, -9, 9, -13, 13][k % 5];
      };
      for (const port of dev.ports) {
        const cx = colX.get(port.network_id);
        if (cx === undefined) continue; // on a network the viewer cannot see
        const py = cy + offset(port.network_id);
        const gateway = port.device_owner === "network:router_gateway";
        el("line", {x1, y1: py, x2: cx, y2: py, class: `edge${gateway ? " gateway" : ""}`,
                    "data-from": dev.id, "data-to": port.network_id, "data-port": port.id}, edges);
        const p = node(nodes, "port", port.id, portTitle(port), {
          "data-status": port.status, "data-device": dev.id, "data-network": port.network_id});
        el("circle", {cx, cy: py, r: 6, class: `dot ${statusClass(port.status)}`}, p);
        const ip = (port.fixed_ips || [])[0];
        if (ip) el("text", {x: cx - 9, y: py + 14, class: "ip"}, p, ip.ip_address);
        (model.fipsOf.get(port.id) || []).forEach((fip, k) => {
          const fx = cx + 12 + k * 100;
          el("line", {x1: fx + 4, y1: py - 8, x2: cx + 4, y2: py - 4, class: "edge fip",
                      "data-from": fip.id, "data-to": port.id}, edges);
          floating(nodes, fip, fx, py - 24);
        });
      }
      for (const networkId of dev.gateways) {
        const cx = colX.get(networkId);
        if (cx === undefined) continue;
        const py = cy + offset(networkId);
        el("line", {x1, y1: py, x2: cx, y2: py, class: "edge gateway", "data-from": dev.id,
                    "data-to": networkId, "data-port": ""}, edges);
        const g = el("g", {"data-kind": "gateway", "data-id": dev.id, class: "gateway"}, nodes);
        el("title", {}, g, `Gateway of ${dev.name}`);
        el("circle", {cx, cy: py, r: 6, class: `dot ${statusClass(dev.status)}`}, g);
      }
      const kind = KINDS[dev.kind];
      const title = `${kind.label} ${dev.name}\n${dev.status || "no ports"} · ${dev.id}` +
        (multi ? `\nproject ${dev.project || "(none)"}` : "");
      const g = node(nodes, dev.kind, dev.id, title,
                     {"data-status": dev.status, "data-project": dev.project});
      el("rect", {x: G.left, y: cy - G.boxH / 2, width: G.boxW, height: G.boxH, rx: 6,
                  class: "box"}, g);
      if (multi) {
        el("rect", {x: G.left, y: cy - G.boxH / 2, width: 5, height: G.boxH, rx: 2,
                    fill: projectColour(dev.project)}, g);
      }
      el("rect", {x: G.left + 10, y: cy - 9, width: 34, height: 18, rx: 4, class: "badge"}, g);
      el("text", {x: G.left + 27, y: cy + 4, class: "badge-text"}, g, kind.badge);
      el("text", {x: G.left + 52, y: cy + 5, class: "name"}, g, fit(dev.name, 16));
      el("circle", {cx: G.left + G.boxW - 13, cy, r: 5, class: `dot ${statusClass(dev.status)}`}, g);
    });

    // floating IPs without a port: on their network's bar, at the bottom
    for (const [networkId, fips] of looseRows) {
      const cx = colX.get(networkId);
      if (cx === undefined) continue;
      fips.forEach((fip, k) => floating(nodes, fip, cx - 46, looseTop + k * (G.rowH - 16)));
    }

    svg.replaceChildren(svg.firstElementChild, frag); // keeps the <title>
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.dataset.ready = "true";
    svg.dataset.revision = String(++revision);
    drawLegend(model);
  }

  function floating(parent, fip, x, y) {
    const address = fip.floating_ip_address || short(fip.id);
    const g = node(parent, "floatingip", fip.id,
                   `Floating IP ${address}\n${fip.status}` +
                   (fip.fixed_ip_address ? ` → ${fip.fixed_ip_address}` : " (no port)"),
                   {"data-status": fip.status, "data-port": fip.port_id || "",
                    "data-network": fip.floating_network_id});
    el("rect", {x, y, width: 92, height: 17, rx: 8.5, class: "pill"}, g);
    el("circle", {cx: x + 9, cy: y + 8.5, r: 3.5, class: `dot ${statusClass(fip.status)}`}, g);
    el("text", {x: x + 17, y: y + 12.5, class: "fip-text"}, g, fit(address, 15));
  }

  function drawLegend(model) {
    const legend = $("legend");
    const items = STATUSES.map((s) => [statusClass(s), s.toLowerCase()]);
    items.push(["st-OTHER", "other"], ["external", "external network"], ["pill", "floating IP"]);
    const entries = items.map(([cls, label]) => {
      const li = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = `swatch ${cls}`;
      li.append(swatch, label);
      return li;
    });
    if (model.projects.length > 1) {
      for (const project of model.projects) {
        const li = document.createElement("li");
        const swatch = document.createElementNS(SVG, "svg");
        swatch.setAttribute("class", "swatch");
        swatch.setAttribute("viewBox", "0 0 10 10");
        el("rect", {width: 10, height: 10, rx: 2, fill: projectColour(project)}, swatch);
        li.append(swatch, `project ${project || "(none)"}`);
        entries.push(li);
      }
    }
    legend.replaceChildren(...entries);
  }

  // --- details ---------------------------------------------------------------------

  function lookup(kind, id) {
    if (!current) return null;
    const {data} = current;
    const find = (items) => items.find((item) => item.id === id) || null;
    switch (kind) {
      case "network": return find(data.networks);
      case "subnet": return find(data.subnets);
      case "port": return find(data.ports);
      case "floatingip": return find(data.floatingips);
      case "router": return find(data.routers) || devicePorts(kind, id);
      default: return devicePorts(kind, id);
    }
  }

  function devicePorts(kind, id) {
    const dev = current.rows.find((d) => d.kind === kind && d.id === id);
    if (!dev) return null;
    if (dev.kind === "unattached") return dev.resource;
    return {device_id: dev.id, project_id: dev.project, status: dev.status,
            ports: dev.ports.map((p) => ({id: p.id, network_id: p.network_id,
                                          device_owner: p.device_owner,
                                          fixed_ips: p.fixed_ips, status: p.status}))};
  }

  function showDetails() {
    const panel = $("details");
    if (!selected) {
      panel.hidden = true;
      return;
    }
    const [kind, ...rest] = selected.split(":");
    const id = rest.join(":");
    const item = lookup(kind, id);
    const label = (KINDS[kind] && KINDS[kind].label) ||
      {network: "Network", subnet: "Subnet", port: "Port", floatingip: "Floating IP"}[kind] || kind;
    $("details-title").textContent = item ? `${label} ${item.name || item.floating_ip_address || id}`
      : `${label} ${id} (gone)`;
    const body = $("details-body");
    body.dataset.kind = kind;
    body.dataset.id = id;
    const rows = [];
    for (const [key, value] of Object.entries(item || {}).sort(([a], [b]) => a.localeCompare(b))) {
      const dt = document.createElement("dt");
      dt.textContent = key;
      const dd = document.createElement("dd");
      if (value !== null && typeof value === "object") {
        const pre = document.createElement("pre");
        pre.textContent = JSON.stringify(value, null, 2);
        dd.appendChild(pre);
      } else {
        dd.textContent = value === null ? "null" : String(value);
      }
      rows.push(dt, dd);
    }
    body.replaceChildren(...rows);
    panel.hidden = false;
  }

  function select(target) {
    const g = target && target.closest && target.closest("[tabindex][data-kind]");
    if (!g) return;
    for (const old of svg.querySelectorAll(".selected")) old.classList.remove("selected");
    g.classList.add("selected");
    selected = `${g.dataset.kind}:${g.dataset.id}`;
    showDetails();
  }

  svg.addEventListener("click", (event) => select(event.target));
  svg.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      select(event.target);
    }
  });
  $("details-close").addEventListener("click", () => {
    selected = null;
    for (const old of svg.querySelectorAll(".selected")) old.classList.remove("selected");
    showDetails();
  });

  // --- auth and polling -----------------------------------------------------------

  function status(text, error) {
    const line = $("status");
    line.textContent = text;
    line.classList.toggle("error", Boolean(error));
  }

  function askForToken(refused) {
    clearTimeout(timer);
    $("login").hidden = false;
    $("signout").hidden = !sessionStorage.getItem(TOKEN_KEY);
    status(refused ? "The token was refused (expired?): paste another one."
      : "The API asks for a token.", true);
    $("token").focus();
  }

  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    $("token").value = "";
    $("login").hidden = true;
    refresh();
  });
  $("signout").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    lastSignature = null;
    current = null;
    svg.replaceChildren(svg.firstElementChild);
    svg.dataset.ready = "false";
    $("signout").hidden = true;
    refresh();
  });

  async function refresh() {
    if (busy) return; // one poll at a time: its end schedules the next
    clearTimeout(timer);
    if (document.hidden) { // a tab in the background asks nothing
      timer = setTimeout(refresh, POLL_MS);
      return;
    }
    busy = true;
    try {
      const lists = await Promise.all(COLLECTIONS.map(list));
      const data = Object.fromEntries(COLLECTIONS.map((c, i) => [c, lists[i]]));
      const signature = JSON.stringify(data);
      if (signature !== lastSignature) {
        lastSignature = signature;
        current = buildModel(data);
        draw(current);
        if (selected) showDetails();
      }
      const c = current.counts;
      const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
      status(`${plural(c.networks, "network")} · ${plural(c.routers, "router")} · ` +
             `${plural(c.ports, "port")} · ${plural(c.floatingips, "floating IP")} · ` +
             `checked ${new Date().toLocaleTimeString()}`);
      $("login").hidden = true;
      $("signout").hidden = !sessionStorage.getItem(TOKEN_KEY);
    } catch (error) {
      if (error.status === 401) {
        askForToken(Boolean(sessionStorage.getItem(TOKEN_KEY)));
        return; // until a token is given
      }
      status(`Cannot read the API: ${error.message}`, true);
    } finally {
      busy = false;
    }
    timer = setTimeout(refresh, POLL_MS);
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) refresh();
  });
  refresh();
})();
