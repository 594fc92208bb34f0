/* meshnav console: live updates, no framework.
 *
 * The pages work without this file. With it, the page listens to /console/events (server-sent
 * events: "the mesh changed"), fetches its own URL again with X-Meshnav-Fragment: 1, and swaps
 * the new content of <main> in place — keeping scroll position, focus and open <details>, and
 * never replacing a form the viewer is typing in. A small status line says live or offline.
 */
(() => {
  "use strict";

  const main = document.getElementById("main");
  const live = document.getElementById("live");
  const stream = main && main.dataset.live;
  if (!main || !live || !stream || !("EventSource" in window) || !("fetch" in window)) {
    return;
  }

  let source = null;
  let timer = 0;
  let fetching = false;
  let again = false;
  let last = null;
  let deferred = null;
  let backoff = 1000;

  const say = (state, text) => {
    live.hidden = false;
    live.dataset.state = state;
    if (live.textContent !== text) {
      live.textContent = text;
    }
  };

  const editing = () => {
    const active = document.activeElement;
    return Boolean(active && main.contains(active) && active.matches("input, select, textarea"));
  };

  // How to find "the same" element after a swap: its id, else its link target.
  const keyOf = (element) => {
    if (!element || element === main || !main.contains(element)) {
      return null;
    }
    if (element.id) {
      return { attribute: "id", value: element.id };
    }
    const href = element.getAttribute("href");
    return href ? { attribute: "href", value: href } : null;
  };

  const find = (key) =>
    Array.from(main.querySelectorAll(`[${key.attribute}]`)).find(
      (element) => element.getAttribute(key.attribute) === key.value,
    );

  // Open <details> are named by the nearest section with an id and their place within it.
  const detailsKey = (details) => {
    const owner = details.parentElement.closest("[id]");
    const siblings = Array.from((owner || main).querySelectorAll("details"));
    return `${owner ? owner.id : ""}:${siblings.indexOf(details)}`;
  };

  const swap = (html) => {
    if (html === last) {
      return;
    }
    if (editing()) {
      deferred = html;
      return;
    }
    last = html;
    const hadFocus = main.contains(document.activeElement);
    const focus = keyOf(document.activeElement);
    const open = new Set(Array.from(main.querySelectorAll("details[open]"), detailsKey));
    const x = window.scrollX;
    const y = window.scrollY;

    const parsed = new DOMParser().parseFromString(`<main>${html}</main>`, "text/html");
    main.replaceChildren(...parsed.body.firstElementChild.childNodes);

    main.querySelectorAll("details").forEach((details) => {
      if (open.has(detailsKey(details))) {
        details.open = true;
      }
    });
    if (hadFocus) {
      const target = focus && find(focus);
      (target || main).focus({ preventScroll: true });
    }
    window.scrollTo(x, y);
  };

  const refresh = async () => {
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    try {
      const response = await fetch(window.location.href, {
        headers: { "X-Meshnav-Fragment": "1" },
        credentials: "same-origin",
        cache: "no-store",
      });
      if (response.status === 401) {
        window.location.reload(); // signed out: the page becomes the sign-in form
        return;
      }
      const type = response.headers.get("content-type") || "";
      if (!type.startsWith("text/html")) {
        throw new Error("not a console fragment");
      }
      swap(await response.text());
    } catch (error) {
      say("offline", "Offline — showing the last view");
    } finally {
      fetching = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  };

  const soon = () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(refresh, 80);
  };

  const connect = () => {
    source = new EventSource(stream);
    source.addEventListener("open", () => {
      backoff = 1000;
      say("live", "Live");
      soon(); // catch up with anything that changed while we were not listening
    });
    // audit events alone change only the pages that show them (data-activity)
    source.addEventListener("change", (event) => {
      let kinds = [];
      try {
        kinds = JSON.parse(event.data).kinds || [];
      } catch (error) {
        kinds = [];
      }
      if (main.dataset.activity !== undefined || kinds.some((kind) => kind !== "activity")) {
        soon();
      }
    });
    source.addEventListener("signed-out", () => {
      source.close();
      window.location.reload();
    });
    source.addEventListener("error", () => {
      say("offline", "Offline — reconnecting");
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        window.setTimeout(connect, backoff);
        backoff = Math.min(backoff * 2, 30000);
        refresh(); // a 401 here takes the viewer to the sign-in form
      }
    });
  };

  main.addEventListener("focusout", () => {
    window.setTimeout(() => {
      if (deferred !== null && !editing()) {
        const html = deferred;
        deferred = null;
        swap(html);
      }
    }, 0);
  });
  window.addEventListener("pagehide", () => {
    if (source) {
      source.close();
    }
  });
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) {
      connect();
    }
  });

  say("offline", "Connecting…");
  connect();
})();

/* "3 s ago": a moment the page shows (<time data-ago datetime=…>, the moment itself on hover)
 * kept current between live updates, in the words the navigator writes (console/tables.py). */
(() => {
  "use strict";

  const ago = (seconds) => {
    const whole = Math.max(0, Math.floor(seconds));
    for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
      if (whole >= size) {
        return `${Math.floor(whole / size)} ${unit} ago`;
      }
    }
    return `${whole} s ago`;
  };

  const tick = () => {
    for (const element of document.querySelectorAll("time[data-ago]")) {
      const at = Date.parse(element.getAttribute("datetime"));
      if (!Number.isNaN(at)) {
        const text = ago((Date.now() - at) / 1000);
        if (element.textContent !== text) {
          element.textContent = text;
        }
      }
    }
  };

  window.setInterval(tick, 1000);
})();
