// @ts-check
/**
 * The live view of one adk-notebook run. It draws nothing itself: the kernel renders every part
 * of the run as HTML (notebook/render.py, the renderer of the saved transcript too) and this
 * module puts it in place (Python side: run_view.py; the ops: view_ops.py).
 *
 * Model state: `view` = {html, seq, running}: the run as drawn when it started (when it ends,
 * the kernel replaces this view by the transcript and closes the model). From the kernel:
 *   {type: "delta", seq, ops}               what changed since delta seq-1
 *   {type: "snapshot", nonce, seq, html, tails}   the answer to this view's {type: "sync", nonce, seq}
 * Ops, each addressed to the element whose data-adk attribute names it:
 *   ["insert", html]                  a new item at the end of the body
 *   ["replace", target, html]         that element drawn again
 *   ["stream", target, kept, cut, suffix, split]
 *                                     a streaming answer: keep its first `kept` blocks and draw
 *                                     again what follows: the last tail's first `cut` characters,
 *                                     then `suffix`; the new tail starts at `split`
 *   ["text", target, text, reset]     text appended (or, with reset, set)
 * To the kernel: {type: "sync", ...}, and a click on an element with data-adk-action sends
 * {type: <action>, ...data-adk-args}: the Stop button's "stop", and the controls that act on a run.
 *
 * A view rendered mid-run (a second view, a page reload) starts from the trait, asks for a
 * snapshot and applies the deltas that follow it; deltas after a gap wait for the snapshot.
 *
 * Safety: the HTML is the kernel's, escaped there; as a second guard it is parsed in an inert
 * <template> and stripped of scripts, frames, event-handler attributes and links to schemes
 * other than http(s), mailto and data: images and PDFs, before it joins the page.
 */

const DROP = "script,iframe,frame,object,embed,link,meta,base,form,style";
const URL_OK = /^(https?:|mailto:|data:(image\/(png|jpeg|gif|webp|svg\+xml)|application\/pdf)[;,]|#)/i;

/** @param {string} html @returns {DocumentFragment} the HTML, inert and stripped */
function fragment(html) {
  const t = document.createElement("template");
  t.innerHTML = html;
  for (const bad of t.content.querySelectorAll(DROP)) bad.remove();
  for (const node of t.content.querySelectorAll("*")) {
    for (const { name, value } of [...node.attributes]) {
      const link = name === "href" || name === "src" || name === "xlink:href" || name === "action";
      if (name.startsWith("on") || (link && !URL_OK.test(value.trim()))) node.removeAttribute(name);
    }
  }
  return t.content;
}

/** @param {Element} root @param {string} name */
const find = (root, name) => root.querySelector(`[data-adk="${CSS.escape(name)}"]`);

/** @param {Element} root @param {Map<string, string>} tails @param {any[]} op */
function apply(root, tails, op) {
  const [kind, target] = op;
  if (kind === "insert") return find(root, "body")?.append(fragment(target));
  const el = find(root, target);
  if (!el) return;
  if (kind === "replace") {
    el.replaceWith(fragment(op[2]));
  } else if (kind === "stream") {
    const [, , kept, cut, suffix, split] = op;
    let node = kept ? el.children[kept - 1]?.nextSibling : el.firstChild;
    if (kept && node && node.nodeType === Node.TEXT_NODE) node = node.nextSibling; // the newline after a block
    while (node) {
      const next = node.nextSibling;
      node.remove();
      node = next;
    }
    const drawn = (tails.get(target) ?? "").slice(0, cut) + suffix;
    tails.set(target, drawn.slice(split));
    el.append(fragment(drawn));
  } else if (kind === "text") {
    if (op[3]) el.textContent = op[2];
    else el.append(op[2]);
  }
}

/** @param {Element} root tick the running run's clock: the only thing drawn here */
function tick(root) {
  for (const el of root.querySelectorAll("[data-adk-since]")) {
    const s = Math.max(0, Math.floor(Date.now() / 1000 - Number(el.getAttribute("data-adk-since"))));
    el.textContent = s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
  }
}

export default {
  /** @param {{model: any, el: HTMLElement}} ctx */
  render({ model, el }) {
    const root = document.createElement("div");
    root.className = "adk-live"; // the live view; the same .adk-run inside as the transcript that replaces it
    el.replaceChildren(root);
    let seq = 0; // the last delta this view shows
    /** @type {string | null} */
    let nonce = null; // the snapshot this view asked for
    /** @type {any[]} */
    let held = []; // deltas after a gap, waiting for the snapshot
    /** @type {Map<string, string>} */
    let tails = new Map(); // the open tail of each streaming answer, as last drawn

    /** @param {string} html @param {number} at @param {Record<string, string>} [open] the streaming tails */
    const draw = (html, at, open = {}) => {
      root.replaceChildren(fragment(html));
      tails = new Map(Object.entries(open));
      seq = at;
      tick(root);
    };
    const sync = () => {
      nonce = Math.random().toString(36).slice(2);
      model.send({ type: "sync", nonce, seq });
    };
    const drain = () => {
      held.sort((a, b) => a.seq - b.seq);
      while (held.length && held[0].seq <= seq + 1) {
        const msg = held.shift();
        if (msg.seq === seq + 1) {
          for (const op of msg.ops) apply(root, tails, op);
          seq = msg.seq;
        }
      }
    };
    /** @param {any} msg */
    const onCustom = (msg) => {
      if (msg?.type === "delta" && msg.seq > seq) {
        held.push(msg);
        drain();
        if (held.length && nonce === null) sync();
      } else if (msg?.type === "snapshot" && msg.nonce === nonce) {
        nonce = null;
        if (typeof msg.html === "string" && msg.seq > seq) draw(msg.html, msg.seq, msg.tails);
        drain();
      }
    };
    /** @param {MouseEvent} event */
    const onClick = (event) => {
      const button = /** @type {HTMLElement | null} */ (event.target)?.closest?.("[data-adk-action]");
      if (!button || !root.contains(button)) return;
      button.setAttribute("disabled", "");
      model.send({ ...JSON.parse(button.getAttribute("data-adk-args") || "{}"), type: button.getAttribute("data-adk-action") });
    };
    model.on("msg:custom", onCustom);
    root.addEventListener("click", onClick);
    const view = model.get("view");
    draw(view.html, view.seq);
    if (view.running) sync(); // deltas may have been sent before this view existed
    const clock = setInterval(() => tick(root), 1000);
    return () => {
      clearInterval(clock);
      model.off("msg:custom", onCustom);
      root.removeEventListener("click", onClick);
      // Removed while its output stays on the page: the model closed (the run ended, the kernel
      // restarted) in a page that did not run the cell (reloaded mid-run, a second window), where
      // no transcript replaces the view and JupyterLab hides the widget's output box. Keep the
      // run as last drawn (its end, from the final delta), without controls, beside that box.
      if (el.isConnected) {
        for (const control of root.querySelectorAll("[data-adk-action]")) control.remove();
        root.style.flex = "1 1 auto";
        (el.closest(".jp-OutputArea-output") ?? el).after(root);
      }
    };
  },
};
