// ask-user's service worker (served by the host at /sw.js, scope /).
//
// The page's content-hashed files (Trunk's name-0123456789abcdef.ext) never
// change under their name: they are cached when the worker installs (read off
// the index) and served from the cache first, so an installed app opens at
// once. Navigations always go to the host (its index, its token landing);
// when the host cannot be reached the worker answers with a short page that
// says so. Everything else (the API, event streams, /mcp) is not touched.

const CACHE = "ask-user-page-v1";
const HASHED = /^\/[^?#]*-[0-9a-f]{12,16}(?:_bg)?\.[a-z0-9]+$/;

self.addEventListener("install", (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      try {
        const index = await fetch("/", { cache: "no-store", credentials: "omit" });
        const html = await index.text();
        const files = new Set();
        // Quoted or not: Trunk's release build minifies the index.
        for (const m of html.matchAll(/(?:href|src)=["']?(\/[^"'\s>]+)/g)) {
          if (HASHED.test(m[1])) files.add(m[1]);
        }
        await cache.addAll([...files]);
      } catch (_) {
        // Offline at install: the files are cached as the page loads them.
      }
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name !== CACHE) await caches.delete(name);
      }
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.mode === "navigate") {
    event.respondWith(fetch(request).catch(() => unreachable()));
  } else if (HASHED.test(url.pathname) && !url.pathname.startsWith("/api/")) {
    event.respondWith(cached(request));
  }
});

// A push from the host (issue 22; host/src/push): `ask` shows a
// notification for a batch, `close` closes it once it was resolved anywhere
// (same tag). A tap opens the app on that question.
self.addEventListener("push", (event) => {
  let message;
  try {
    message = event.data ? event.data.json() : null;
  } catch (_) {
    message = null;
  }
  if (!message || typeof message.tag !== "string") return;
  if (message.kind === "close") {
    event.waitUntil(
      self.registration
        .getNotifications({ tag: message.tag })
        .then((shown) => shown.forEach((n) => n.close())),
    );
    return;
  }
  const more = message.count > 1 ? ` (+${message.count - 1})` : "";
  // Buttons where the platform has them (Notification.maxActions > 0:
  // Chromium, Android; not iOS): the one question's options when they all fit
  // (never one pre-chosen; a recommended one keeps its badge word, which is
  // part of its label), else one "Open".
  const choices = Array.isArray(message.choices) ? message.choices : [];
  const room = self.Notification?.maxActions ?? 0;
  const answerable = choices.length > 0 && choices.length <= room;
  const actions =
    room === 0
      ? []
      : answerable
        ? choices.map((label, i) => ({ action: `answer:${i}`, title: label }))
        : [{ action: "open", title: "Open" }];
  event.waitUntil(
    self.registration.showNotification(`${message.who} asks`, {
      body: `${message.text}${more}`,
      tag: message.tag,
      renotify: true,
      requireInteraction: true,
      icon: "/app/icon-192.png",
      actions,
      data: {
        url: message.url,
        session: message.session,
        question: message.question,
        item: message.item,
        choices: answerable ? choices : [],
      },
    }),
  );
});

// An option's button answers with this device's credential (its cookie goes
// with a same-origin request); if that fails, the app opens on the question.
async function answerFromNotification(data, index) {
  const label = data.choices[index];
  const path = `/api/sessions/${encodeURIComponent(data.session)}/questions/${encodeURIComponent(data.question)}/answer`;
  try {
    const response = await fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ answers: [{ id: data.item, selected: [label] }] }),
    });
    return response.ok;
  } catch (_) {
    return false;
  }
}

// A tap (or "Open") opens the app on the question: an open window of the app
// is navigated there and focused, else a new one opens there. An option's
// button answers instead; if that fails, the app opens on the question.
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const data = event.notification.data || {};
  const target = new URL(data.url || "/", self.location.origin);
  if (target.origin !== self.location.origin) return;
  const answer = /^answer:(\d+)$/.exec(event.action || "");
  event.waitUntil(
    (async () => {
      if (answer && data.item && data.choices?.[Number(answer[1])] !== undefined) {
        if (await answerFromNotification(data, Number(answer[1]))) return;
      }
      return openOn(target.href);
    })(),
  );
});

// Navigates a window this worker controls to `href` and focuses it (a window
// it does not control cannot be navigated by it), else opens one there.
async function openOn(href) {
  const windows = await self.clients.matchAll({ type: "window" });
  for (const client of windows) {
    let navigated;
    try {
      navigated = await client.navigate(href);
    } catch (_) {
      continue;
    }
    try {
      await (navigated || client).focus();
    } catch (_) {
      // Focus needs the click's user activation; the window shows the question anyway.
    }
    return;
  }
  return self.clients.openWindow(href);
}

async function cached(request) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(request);
  if (hit) return hit;
  const response = await fetch(request);
  if (response.ok) await cache.put(request, response.clone());
  return response;
}

// The notice's own style, allowed by its hash (the policy allows nothing else).
const NOTICE_STYLE = `body{margin:0;padding:24px 16px;font:16px/1.5 system-ui,sans-serif;background:#eef0f3;color:#1b1f24}
main{max-width:560px;margin:0 auto}h1{font-size:20px;margin:0 0 8px}a{color:#1d4fbf}
@media (prefers-color-scheme:dark){body{background:#131519;color:#e8eaed}a{color:#8fb3ff}}`;

async function unreachable() {
  const host = self.location.host;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(NOTICE_STYLE));
  const hash = btoa(String.fromCharCode(...new Uint8Array(digest)));
  const html = `<!doctype html><html lang="en"><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>ask-user: host unreachable</title>
<style>${NOTICE_STYLE}</style>
<main><h1>ask-user cannot reach its host</h1>
<p data-auq="unreachable">Nothing answers at ${host}: the host may have stopped, or this device is offline.
Questions wait on the host until it is back.</p>
<p><a href="">Try again</a></p></main></html>`;
  return new Response(html, {
    status: 503,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": `default-src 'none'; style-src 'sha256-${hash}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      "cache-control": "no-store",
    },
  });
}
