// The pairing pages (issue 21): /pair on the device, /devices on the host's
// own page. Plain script, English and Simplified Chinese as the page has.
"use strict";
(function () {
  const zh = (navigator.language || "").toLowerCase().startsWith("zh");
  const T = zh ? {
    pairTitle: "配对此设备", name: "为此设备命名", claim: "请求配对",
    waiting: "正在等待主机页面上的批准……", paired: "已配对。正在打开问题……",
    gone: "此配对链接无效：已被使用、已过期（5 分钟）或不存在。请在主机上获取新的链接。",
    denied: "主机页面拒绝了此配对。", throttled: "尝试次数过多，请等待 {s} 秒后再试。",
    noCode: "此链接缺少配对码。请扫描主机上显示的二维码。", failed: "配对失败：{m}",
    devices: "设备", back: "返回问题", pair: "配对设备",
    hint: "在手机或电脑上打开此链接（5 分钟内有效，仅一次）：", qr: "配对链接的二维码",
    allowQ: "允许 {n}（{a}）回答问题吗？", allow: "允许", deny: "拒绝",
    allowed: "已允许 {n}。", refused: "已拒绝 {n}。", list: "已配对的设备", close: "关闭",
    none: "没有已配对的设备。", revoke: "撤销", revokeName: "撤销 {n}",
    pairedAt: "配对于 {t}，最近使用 {l}", lastAnswer: "，最近回答 {w}", neverAnswered: "，尚未回答", expired: "配对码已过期，请重新配对。"
  } : {
    pairTitle: "Pair this device", name: "Name this device", claim: "Ask to pair",
    waiting: "Waiting for approval on the host's page…", paired: "Paired. Opening the questions…",
    gone: "This pairing link is not valid: it was used, it expired (links last 5 minutes), or it never existed. Get a new one on the host.",
    denied: "The pairing was refused on the host's page.", throttled: "Too many tries: wait {s} s, then try again.",
    noCode: "This link has no pairing code. Scan the QR code the host shows.", failed: "Pairing failed: {m}",
    devices: "Devices", back: "Back to the questions", pair: "Pair a device",
    hint: "Open this link on the phone or computer (valid 5 minutes, once):", qr: "QR code of the pairing link",
    allowQ: "Allow {n} ({a}) to answer questions?", allow: "Allow", deny: "Refuse",
    allowed: "{n} is allowed.", refused: "{n} was refused.", list: "Paired devices", close: "Close",
    none: "No paired device.", revoke: "Revoke", revokeName: "Revoke {n}",
    pairedAt: "paired {t}, last seen {l}", lastAnswer: ", last answer {w}", neverAnswered: ", never answered", expired: "The pairing code expired; pair again."
  };
  const fill = (text, values) => text.replace(/\{(\w)\}/g, (_, k) => values[k] ?? "");
  const $ = (id) => document.getElementById(id);
  const setText = (id, text) => { const el = $(id); if (el) el.textContent = text; };
  const status = (text, error) => {
    const el = $("status");
    el.textContent = text;
    el.className = error ? "error" : "";
  };
  const post = (path, body) => fetch(path, {
    method: "POST", credentials: "same-origin",
    headers: { "content-type": "application/json" }, body: JSON.stringify(body || {})
  });
  const refusal = async (response) => {
    if (response.status === 410) return T.gone;
    if (response.status === 403) return T.denied;
    if (response.status === 429) return fill(T.throttled, { s: response.headers.get("retry-after") || "1" });
    let message = String(response.status);
    try { message = (await response.json()).error.message; } catch (_) { /* not JSON */ }
    return fill(T.failed, { m: message });
  };
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  document.documentElement.lang = zh ? "zh-CN" : "en";

  // A device name from the user agent: "Android phone", "iPhone", ...
  const guessName = () => {
    const ua = navigator.userAgent;
    const model = /Android [^;]*; ([^;)]+?)(?: Build|\))/.exec(ua);
    if (model && model[1] && model[1] !== "K") return model[1].trim();
    if (/iPhone/.test(ua)) return "iPhone";
    if (/iPad/.test(ua)) return "iPad";
    if (/Android/.test(ua)) return "Android";
    if (/Mac OS X/.test(ua)) return "Mac";
    if (/Windows/.test(ua)) return "Windows PC";
    return "Linux PC";
  };

  async function pairView() {
    document.title = T.pairTitle + " · ask-user";
    setText("title", T.pairTitle);
    setText("name-label", T.name);
    setText("claim-button", T.claim);
    const code = location.hash.slice(1);
    // The code leaves the address bar (and any later Referer) at once.
    history.replaceState(null, "", location.pathname);
    if (!/^[0-9a-f]{32}$/.test(code)) { status(T.noCode, true); return; }
    const form = $("claim");
    $("name").value = guessName();
    form.hidden = false;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const name = $("name").value.trim();
      if (!name) return;
      const claimed = await post("/api/pair/claim", { code, name });
      if (claimed.status !== 202) { status(await refusal(claimed), true); return; }
      form.hidden = true;
      status(T.waiting);
      for (;;) {
        await sleep(1000);
        const collected = await post("/api/pair/collect", { code });
        if (collected.status === 202) continue;
        if (!collected.ok) { status(await refusal(collected), true); return; }
        status(T.paired);
        location.replace("/");
        return;
      }
    });
  }

  async function listDevices() {
    const list = $("devices");
    const response = await fetch("/api/devices", { credentials: "same-origin" });
    if (!response.ok) { status(await refusal(response), true); return; }
    const { devices } = await response.json();
    list.replaceChildren();
    if (devices.length === 0) {
      const empty = document.createElement("li");
      empty.textContent = T.none;
      list.append(empty);
    }
    for (const device of devices) {
      const item = document.createElement("li");
      const when = (ms) => new Date(ms).toLocaleString();
      item.textContent = `${device.name} (${device.agent}), ` +
        fill(T.pairedAt, { t: when(device.paired_at_ms), l: when(device.last_seen_ms) }) +
        (device.last_answer_ms ? fill(T.lastAnswer, { w: when(device.last_answer_ms) }) : T.neverAnswered) + " ";
      const revoke = document.createElement("button");
      revoke.type = "button";
      revoke.textContent = T.revoke;
      revoke.setAttribute("aria-label", fill(T.revokeName, { n: device.name }));
      revoke.addEventListener("click", async () => {
        const done = await fetch("/api/devices/" + encodeURIComponent(device.id),
          { method: "DELETE", credentials: "same-origin" });
        if (!done.ok) status(await refusal(done), true);
        listDevices();
      });
      item.append(revoke);
      list.append(item);
    }
  }

  async function devicesView() {
    document.title = T.devices + " · ask-user";
    for (const [id, text] of [["title", T.devices], ["back", T.back], ["pair-button", T.pair],
      ["pairing-title", T.pair], ["pairing-hint", T.hint], ["allow", T.allow], ["deny", T.deny],
      ["list-title", T.list], ["close-pairing", T.close]]) setText(id, text);
    $("qr").alt = T.qr;
    listDevices();
    // "Pair a device" is a modal dialog: the QR code and the link, then the
    // approval question; closing it stops watching (the code just expires).
    const dialog = $("pairing");
    $("close-pairing").addEventListener("click", () => dialog.close());
    const openPairing = async () => {
      const opened = await post("/api/pairings");
      if (!opened.ok) { status(await refusal(opened), true); return; }
      const pairing = await opened.json();
      $("qr").src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(pairing.qr_svg);
      setText("link", pairing.url);
      $("approval").hidden = true;
      $("invite").hidden = false;
      status("");
      if (!dialog.open) dialog.showModal();
      dialog.dataset.pairing = pairing.id;
      const watching = () => dialog.open && dialog.dataset.pairing === pairing.id;
      while (watching()) {
        await sleep(1000);
        if (!watching()) return;
        const polled = await fetch("/api/pairings/" + pairing.id, { credentials: "same-origin" });
        if (polled.status === 410) { dialog.close(); status(T.expired, true); return; }
        if (!polled.ok) { dialog.close(); status(await refusal(polled), true); return; }
        const view = await polled.json();
        if (view.status !== "claimed") continue;
        setText("question", fill(T.allowQ, { n: view.name, a: view.agent }));
        // The link is used: the question takes its place.
        $("invite").hidden = true;
        $("approval").hidden = false;
        $("allow").focus();
        const decide = (verb, words) => async () => {
          const done = await post(`/api/pairings/${pairing.id}/${verb}`);
          dialog.close();
          if (!done.ok) { status(await refusal(done), true); return; }
          status(fill(words, { n: view.name }));
          setTimeout(listDevices, 2000);
        };
        $("allow").onclick = decide("approve", T.allowed);
        $("deny").onclick = decide("deny", T.refused);
        return;
      }
    };
    $("pair-button").addEventListener("click", openPairing);
    // The page's "Pair a device" links here with #pair: the dialog opens at once.
    if (location.hash === "#pair") {
      history.replaceState(null, "", location.pathname);
      openPairing();
    }
  }

  if (document.body.dataset.view === "pair") pairView(); else devicesView();
})();
