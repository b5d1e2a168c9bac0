// @ts-check
/**
 * The live view of one adk-notebook run (the Python side is run_view.py).
 *
 * Model state: `state`, the whole run (see transcript.py `Transcript.state()`). The kernel sets it
 * when the run starts and once more when it ends; a saved notebook keeps the final one.
 * `markdown`, a reference to the kernel's markdown library model (markdown_library.py).
 * Custom messages from the kernel (never saved):
 *   {type: "delta", seq, ops}                what changed since delta seq-1 (ops: transcript.py)
 *   {type: "snapshot", nonce, seq, state}    the answer to this view's {type: "sync", ...}
 * Custom messages to the kernel: {type: "stop"} and {type: "sync", nonce, seq}.
 *
 * A view rendered mid-run (a second view of the model, a page reload) starts from the trait,
 * asks for a snapshot, and applies the deltas that follow it; deltas that arrive after a gap
 * wait for the snapshot.
 *
 * Safety: text from the run reaches the DOM through textContent / Text nodes, or, for a finished
 * model turn, as markdown-it's HTML (raw HTML escaped, links only to MARKDOWN's link_schemes: the
 * string render.py saves), parsed by DOMParser in an inert document and moved in. Other
 * attributes are set only from checked values: image data URLs of an allowed type, http(s)
 * links, and blob URLs this view made itself. No innerHTML anywhere. What arrives (the state, each delta)
 * goes through `clean` first, as render.py's clean_text: no control characters, no lone
 * surrogates, no U+FEFF, so the live view shows the same characters as the saved transcript.
 */

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"]);
const LOG_LIMIT = 8192; // characters of a progress log kept on screen (as transcript.py)
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;
// As render.py _UNSAFE_CHARS: C0/C1 controls but tab, newline and CR; DEL; lone surrogates.
// And as clean_text, U+FEFF becomes U+2060 (JS trims U+FEFF as a space, Python does not).
const UNSAFE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]|[\uD800-\uDFFF]/gu;

/**
 * @param {any} value JSON data as the kernel sent it
 * @returns {any} the same with every string cleaned (media base64, made by the kernel, left as is)
 */
function clean(value) {
  if (typeof value === "string") return value.replace(UNSAFE, "\uFFFD").replace(/\uFEFF/g, "\u2060");
  if (Array.isArray(value)) return value.map(clean);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === "data" ? v : clean(v)]));
  }
  return value;
}

/**
 * @typedef {{k: string, [key: string]: any}} Item
 * @typedef {{input: number, output: number, total: number, thoughts?: number}} UsageJson
 * @typedef {{v: number, seq?: number, agent: string, prompt: string | null, session_id: string | null,
 *   model?: string | null, notice?: string | null,
 *   status: string, error: string | null, started_at: number, elapsed: number | null,
 *   usage: UsageJson | null, items: Item[], trace?: Span}} RunState
 * @typedef {{data: Item, node: HTMLElement, text?: Text, log?: HTMLElement, logNote?: HTMLElement}} Rec
 */

/**
 * @param {string} tag
 * @param {string | null} [className]
 * @param {string | null} [text]
 * @returns {HTMLElement}
 */
function h(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = String(text);
  return node;
}

/** @param {string} text @returns {string} text without leading and trailing ASCII spaces (Python's strip(_SPACE)) */
const trimSpace = (text) => text.replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, "");

/** @param {unknown} url @returns {string | null} an URL that may become a link, else null */
function safeUrl(url) {
  if (typeof url !== "string") return null;
  const u = trimSpace(url);
  const head = u.slice(0, 40).toLowerCase();
  if (head.startsWith("http://") || head.startsWith("https://")) return u;
  if (head.startsWith("data:")) {
    const mime = head.slice(5).split(";")[0].split(",")[0];
    if (mime === "application/pdf" || IMAGE_TYPES.has(mime)) return u;
  }
  return null;
}

/** @param {number | null | undefined} s @returns {string} as render.py _duration (toFixed and Math.round: a tie rounds up) */
function fmtDuration(s) {
  if (s == null) return "";
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** @param {number | null | undefined} n @returns {string} as render.py _size */
function fmtSize(n) {
  if (n == null) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return n >= 10240 ? `${Math.round(n / 1024)} KB` : `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1048576).toFixed(1)} MB`;
}

/** @param {unknown} n @returns {string} n with thousands separators, as Python's f"{n:,}" (whatever the browser's locale) */
const fmtCount = (n) => Number(n).toLocaleString("en-US");

/** @param {number | null | undefined} tokens @returns {string} the marker of an answer the token limit cut (render.py cut_note) */
function cutNote(tokens) {
  const at = tokens ? `at ${fmtCount(tokens)} tokens` : "at the token limit";
  return `✂ cut ${at}: the answer reached max_output_tokens`;
}

/** @param {string} text the last LOG_LIMIT characters, from a line start when there is one */
function logTail(text) {
  if (text.length <= LOG_LIMIT) return text;
  const tail = text.slice(-LOG_LIMIT);
  const cut = tail.indexOf("\n");
  return cut >= 0 && cut < tail.length - 1 ? tail.slice(cut + 1) : tail;
}

// -- markdown: markdown-it from the kernel's library model, set up as render.py's MARKDOWN -------
// The library reaches the page once per kernel, not in every run's module: the model's
// `markdown` trait names a hidden model (markdown_library.py) holding markdown-it as an ES
// module and render.py's MARKDOWN settings. It is imported once per page, by whichever view
// asks first; until then, or if it cannot load, a finished turn shows as plain text.
const LIBRARIES = "__adk_notebook_markdown__"; // on globalThis: digest -> Promise of markdown-it

/** @param {string} source an ES module @returns {Promise<any>} its default export */
async function importModule(source) {
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  try {
    return (await import(/* webpackIgnore: true */ url)).default;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * @param {any} md a markdown-it
 * @param {number[][]} punctuation render.py's punctuation_ranges: what markdown-it-py takes for
 *   punctuation (markdown-it's own table is of another Unicode version)
 * @returns {any} its inline State, judging the characters either side of a run of `*`, `_` or `~`
 *   as markdown-it-py does: whole code points (markdown-it 14.1 reads UTF-16 code units there, so
 *   an emoji or an astral punctuation mark counted as a letter, markdown-it#1071, and `a**😀**`
 *   was bold live and not saved) against the kernel's punctuation.
 */
function codePointState(md, punctuation) {
  const { isWhiteSpace } = md.utils;
  /** @param {string} ch @returns {boolean} */
  const punct = (ch) => {
    const code = /** @type {number} */ (ch.codePointAt(0));
    let [lo, hi] = [0, punctuation.length - 1];
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (code < punctuation[mid][0]) hi = mid - 1;
      else if (code > punctuation[mid][1]) lo = mid + 1;
      else return true;
    }
    return false;
  };
  /** @param {string} ch @returns {boolean} */
  const space = (ch) => isWhiteSpace(ch.codePointAt(0));
  return class extends md.inline.State {
    /** @param {number} start @param {boolean} canSplitWord @returns {{can_open: boolean, can_close: boolean, length: number}} */
    scanDelims(start, canSplitWord) {
      const src = this.src;
      let end = start;
      while (end < this.posMax && src.charCodeAt(end) === src.charCodeAt(start)) end += 1;
      // the start and the end of the text count as whitespace; no lone surrogates here (clean)
      const last = start > 0 ? [...src.slice(Math.max(0, start - 2), start)].pop() ?? " " : " ";
      const next = end < this.posMax ? String.fromCodePoint(src.codePointAt(end) ?? 0x20) : " ";
      const left = !space(next) && (!punct(next) || space(last) || punct(last));
      const right = !space(last) && (!punct(last) || space(next) || punct(next));
      return {
        can_open: left && (canSplitWord || !right || punct(last)),
        can_close: right && (canSplitWord || !left || punct(next)),
        length: end - start,
      };
    }
  };
}

/**
 * @param {any} md a markdown-it
 * @returns {(url: string) => string} its normalizeLink, but keeping an IPv6 host's brackets as
 *   markdown-it-py 4 does (`http://[::1]/`): markdown-it 14.1 percent-encodes them, a broken link
 */
function bracketedHosts(md) {
  const { mdurl } = md.utils.lib;
  const upstream = md.normalizeLink;
  return (url) => {
    const parsed = mdurl.parse(url, true);
    if (!parsed.hostname || !parsed.hostname.includes(":")) return upstream(url);
    // the host punycoded and encoded as upstream does it, cut out of its "//%5B...%5D"
    const recode = !parsed.protocol || ["http:", "https:", "mailto:"].includes(parsed.protocol);
    const host = recode ? upstream(`//[${parsed.hostname}]`).slice(5, -3) : mdurl.encode(parsed.hostname);
    for (const part of ["protocol", "auth", "pathname", "search", "hash"]) {
      if (parsed[part]) parsed[part] = mdurl.encode(parsed[part]);
    }
    parsed.hostname = host; // format() adds the brackets
    return mdurl.format(parsed);
  };
}

/** @param {string} src @returns {Record<number, number>} where the last run of each length of backticks starts */
function lastRuns(src) {
  /** @type {Record<number, number>} */
  const runs = {};
  for (const run of src.matchAll(/`+/g)) runs[run[0].length] = /** @type {number} */ (run.index);
  return runs;
}

/**
 * markdown-it-py 4's backticks rule: its cache of the runs is made from the whole text
 * (markdown-it 14.1 fills it as it scans, so a look-ahead inside a link label left it wrong and
 * `` [`x` ` `` lost its code span), a closer must end within the range parsed, and only one space
 * is taken off each side of a span that is not all spaces.
 * @param {any} state markdown-it's inline state
 * @param {boolean} silent
 * @returns {boolean}
 */
function backticks(state, silent) {
  const src = state.src;
  const start = state.pos;
  if (src.charCodeAt(start) !== 0x60) return false;
  const max = state.posMax;
  let pos = start + 1;
  while (pos < max && src.charCodeAt(pos) === 0x60) pos += 1;
  const marker = src.slice(start, pos);
  if (!state.backticksScanned) {
    state.backticks = lastRuns(src);
    state.backticksScanned = true;
  }
  if ((state.backticks[marker.length] ?? -1) >= pos) {
    let end = pos;
    let at;
    while ((at = src.indexOf("`", end)) !== -1 && at < max) {
      end = at + 1;
      while (end < src.length && src.charCodeAt(end) === 0x60) end += 1;
      if (end > max) break;
      if (end - at === marker.length) {
        if (!silent) {
          const token = state.push("code_inline", "code", 0);
          token.markup = marker;
          const content = src.slice(pos, at).replace(/\n/g, " ");
          const padded = content.startsWith(" ") && content.endsWith(" ") && /[^ ]/.test(content);
          token.content = padded ? content.slice(1, -1) : content;
        }
        state.pos = end;
        return true;
      }
    }
  }
  if (!silent) state.pending += marker;
  state.pos = pos;
  return true;
}

/**
 * @param {any} markdownit markdown-it
 * @param {any} settings render.py's MARKDOWN
 * @returns {(text: string) => string} text to the HTML render.py's markdown_to_html gives for it
 */
function markdownRenderer(markdownit, settings) {
  const md = markdownit(settings.preset, settings.options).disable(settings.disable);
  md.inline.State = codePointState(md, settings.punctuation);
  md.normalizeLink = bracketedHosts(md);
  md.inline.ruler.at("backticks", backticks);
  md.validateLink = (/** @type {string} */ url) =>
    settings.link_schemes.some((/** @type {string} */ scheme) => url.toLowerCase().startsWith(scheme));
  md.renderer.rules.link_open = (tokens, idx, options, _env, self) => {
    for (const [name, value] of Object.entries(settings.link_attrs)) tokens[idx].attrSet(name, value);
    return self.renderToken(tokens, idx, options);
  };
  return (text) => md.render(clean(String(text)));
}

/**
 * The library model, once the page's widget manager has it. A page that restores a kernel's
 * widgets (a reload) makes their models in no set order, and `get_model` refuses an id it has
 * not registered yet: ask again for a while before giving up on markdown.
 * @param {any} manager the widget manager
 * @param {string} id the library model's id
 * @returns {Promise<any>} its model
 */
async function libraryModel(manager, id) {
  for (let waited = 0, wait = 50; ; waited += wait, wait = Math.min(wait * 2, 1000)) {
    try {
      return await manager.get_model(id);
    } catch (error) {
      if (waited >= 30000) throw error;
    }
    await new Promise((resolve) => /** @type {any} */ (setTimeout(resolve, wait))?.unref?.()); // a Node test need not wait
  }
}

/**
 * @param {any} model the run's model
 * @returns {Promise<(text: string) => string>} the renderer of its library model
 */
async function loadMarkdown(model) {
  const ref = model.get("markdown");
  if (typeof ref !== "string" || !ref.startsWith("IPY_MODEL_")) throw new Error("the run names no markdown library");
  const library = await libraryModel(model.widget_manager, ref.slice("IPY_MODEL_".length));
  /** @type {Map<string, Promise<any>>} */
  const loaded = (/** @type {any} */ (globalThis)[LIBRARIES] ??= new Map());
  const digest = library.get("digest");
  if (!loaded.has(digest)) loaded.set(digest, importModule(library.get("source")));
  return markdownRenderer(await loaded.get(digest), library.get("settings"));
}

/** @param {string} html markup from markdownRenderer @returns {DocumentFragment} it parsed in an inert document (nothing runs or loads) */
function parseHtml(html) {
  const parsed = new DOMParser().parseFromString(html, "text/html");
  const out = document.createDocumentFragment();
  out.append(...parsed.body.childNodes);
  return out;
}

// -- the timeline: the run's spans as a waterfall (waterfall.py draws the same rows) -------------
const SPAN_ICONS = { run: "▶", agent: "🤖", model: "💬", tool: "🔧" };

/**
 * @typedef {{name: string, kind: string, start: number, duration: number | null, agent?: string,
 *   model?: string, tool?: string, input_tokens?: number, output_tokens?: number, cost?: number,
 *   error_type?: string, error_message?: string, children: Span[]}} Span as core/trace.py Span.to_dict()
 * @typedef {{depth: number, kind: string, name: string, left: string, width: string, meta: string,
 *   error: string | null}} SpanRow
 */

/** @type {{[kind: string]: "agent" | "model" | "tool"}} */
const SPAN_LABELS = { run: "agent", agent: "agent", model: "model", tool: "tool" };

/** @param {Span} span @returns {string} the agent, the model or the tool, else its name (waterfall.py _label) */
function spanLabel(span) {
  const key = SPAN_LABELS[span.kind];
  return String((key ? span[key] : null) || span.name || "");
}

/** @param {Span} span @returns {string} latency, tokens and cost, as waterfall.py _meta */
function fmtSpanMeta(span) {
  const bits = [span.duration == null ? "running…" : fmtDuration(span.duration)];
  if (span.input_tokens != null || span.output_tokens != null) {
    bits.push(`${fmtCount(span.input_tokens || 0)} in · ${fmtCount(span.output_tokens || 0)} out`);
  }
  if (span.cost != null) bits.push(`$${Number(span.cost).toFixed(4)}`);
  return bits.join(" · ");
}

/**
 * @param {Span} trace the run's span tree
 * @returns {SpanRow[]} parents before children, bars as percentages of the run's time (waterfall.py waterfall_rows)
 */
function timelineRows(trace) {
  /** @type {[number, Span][]} */
  const spans = [];
  /** @param {Span} span @param {number} depth */
  const walk = (span, depth) => {
    spans.push([depth, span]);
    for (const child of span.children || []) walk(child, depth + 1);
  };
  walk(trace, 0);
  const t0 = trace.start;
  const end = Math.max(...spans.map(([, s]) => s.start + (s.duration || 0.0)));
  const total = end > t0 ? end - t0 : 1.0;
  return spans.map(([depth, span]) => {
    const length = span.duration == null ? end - span.start : span.duration;
    const error = span.error_message || span.error_type;
    return {
      depth,
      kind: String(span.kind || ""),
      name: spanLabel(span),
      left: Math.max(0.0, ((span.start - t0) / total) * 100).toFixed(2),
      width: Math.max(0.0, (length / total) * 100).toFixed(2),
      meta: fmtSpanMeta(span),
      error: error ? String(error) : null,
    };
  });
}

/** @param {Span} trace @param {number[]} path child indices from the root @returns {Span | undefined} */
function spanAt(trace, path) {
  /** @type {Span | undefined} */
  let span = trace;
  for (const index of path) span = span && span.children ? span.children[index] : undefined;
  return span;
}

/** @param {SpanRow[]} rows @returns {HTMLElement[]} the waterfall's cells, three a row (and an error line) */
function timelineCells(rows) {
  const cells = [];
  for (const row of rows) {
    const label = h("div", "adk-rv-tl-name", `${SPAN_ICONS[/** @type {keyof SPAN_ICONS} */ (row.kind)] || "•"} ${row.name}`);
    label.setAttribute("style", `padding-left:${row.depth * 14}px`);
    const track = h("div", "adk-rv-tl-track");
    const bar = h("div", `adk-rv-tl-bar adk-rv-tl-${row.kind}${row.error ? " adk-rv-tl-error" : ""}`);
    bar.setAttribute("style", `left:${row.left}%;width:${row.width}%`);
    track.append(bar);
    cells.push(label, track, h("div", "adk-rv-tl-meta", row.meta));
    if (row.error) {
      const error = h("div", "adk-rv-tl-err", `⚠ ${row.error}`);
      error.setAttribute("style", `padding-left:${row.depth * 14 + 18}px`);
      cells.push(error);
    }
  }
  return cells;
}

// -- multi-agent: lanes and AgentTool internals (as render.py lane_label, _inner_html) ------------
/** @param {Item} d a lane item @returns {string} its header: the agent, and its parallel branch */
function laneLabel(d) {
  return `▸ ${d.author || "agent"}${d.branch ? ` · ${d.branch}` : ""}`;
}

/** @param {string[][]} inner [author, text] rows @returns {HTMLElement} what the agent behind an AgentTool did */
function innerNode(inner) {
  const box = h("div", "adk-rv-inner");
  for (const [author, text] of inner) {
    const row = h("div", "adk-rv-inner-row");
    row.append(h("span", "adk-rv-muted adk-rv-inner-author", `${author}:`), " ", h("span", "adk-rv-inner-text", text));
    box.append(row);
  }
  return box;
}

const SVG_NS = "http://www.w3.org/2000/svg";
/** @type {Record<string, string>} as render.py EDGE_DASHES: solid is a sub-agent or a tool */
const EDGE_DASHES = { transfer: "5,4", agent_tool: "1,3" };

/** @param {string} tag @param {Record<string, string | number>} attrs @returns {Element} */
function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/**
 * The agent graph's layout (graph.py `layout`) as SVG built with DOM calls, as render.py graph_svg
 * draws it; labels go in as text nodes.
 * @param {any} lay @returns {{root: Element, boxes: Map<string, Element[][]>}} boxes: agent -> its [g, rect] pairs
 */
function drawGraph(lay) {
  const w = Number(lay.node_w), hh = Number(lay.node_h);
  const root = svg("svg", { class: "adk-graph", width: lay.width, height: lay.height,
                            viewBox: `0 0 ${Number(lay.width)} ${Number(lay.height)}`, role: "img" });
  const defs = svg("defs", {});
  const marker = svg("marker", { id: "adk-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6,
                                 markerHeight: 6, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#888" }));
  defs.append(marker);
  root.append(defs);
  for (const e of lay.edges || []) {
    const attrs = { class: `adk-edge adk-edge-${e.kind}`, d: String(e.d), fill: "none", stroke: "#888",
                    "marker-end": "url(#adk-arrow)" };
    if (EDGE_DASHES[e.kind]) attrs["stroke-dasharray"] = EDGE_DASHES[e.kind];
    root.append(svg("path", attrs));
  }
  /** @type {Map<string, Element[][]>} */
  const boxes = new Map();
  for (const n of lay.nodes || []) {
    const x = Number(n.x), y = Number(n.y);
    const g = svg("g", n.agent ? { class: "adk-node", "data-agent": n.agent } : { class: "adk-node" });
    const title = svg("title", {});
    title.append(`${n.label} (${n.kind})`);
    const rect = svg("rect", { x, y, width: w, height: hh, rx: n.agent ? 6 : 2,
                               fill: (lay.colors || {})[n.kind] || "#eee", stroke: "#999", "stroke-width": 1 });
    const name = svg("text", { x: x + w / 2, y: y + 16, "text-anchor": "middle", fill: "#222", "font-weight": 600 });
    name.append(String(n.short));
    const kind = svg("text", { x: x + w / 2, y: y + 30, "text-anchor": "middle", fill: "#666", "font-size": 10 });
    kind.append(String(n.kind));
    g.append(title, rect, name, kind);
    root.append(g);
    if (n.agent) boxes.set(n.agent, [...(boxes.get(n.agent) || []), [g, rect]]);
  }
  return { root, boxes };
}

/** @param {RunState} st @returns {string | null} the agent running now (render.py active_agent) */
function activeAgent(st) {
  if (st.status !== "running") return null;
  for (let i = st.items.length - 1; i >= 0; i -= 1) {
    const item = st.items[i];
    if (item.k === "lane") return item.author;
    if (item.k === "tool" && item.status === "running" && item.inner && item.inner.length) return item.inner.at(-1)[0];
  }
  return st.agent;
}

// -- the view -----------------------------------------------------------------------------------
class RunDom {
  /**
   * @param {HTMLElement} root
   * @param {() => void} onStop
   */
  constructor(root, onStop) {
    this.root = root;
    /** @type {string[]} blob URLs to revoke */
    this.urls = [];
    /** @type {Rec[]} */
    this.recs = [];
    /** @type {RunState | null} */
    this.state = null;
    /** @type {((text: string) => string) | null} markdown-it, once loaded */
    this.markdown = null;
    root.classList.add("adk-rv");
    this.head = h("div", "adk-rv-head");
    this.agent = h("span", "adk-rv-agent");
    this.model = h("code", "adk-rv-model"); // who answers: the concrete model, never "auto"
    this.badge = h("span", "adk-rv-badge");
    this.meta = h("span", "adk-rv-meta");
    this.stop = /** @type {HTMLButtonElement} */ (h("button", "adk-rv-stop", "■ Stop"));
    this.stop.type = "button";
    this.stop.title = "Cancel this run";
    this.stop.addEventListener("click", () => {
      this.stop.disabled = true;
      this.stop.textContent = "Stopping…";
      onStop();
    });
    this.head.append(this.agent, this.model, this.badge, this.meta, this.stop);
    this.notice = h("div", "adk-rv-notice adk-rv-muted adk-rv-small");
    this.prompt = h("div", "adk-rv-prompt");
    this.body = h("div", "adk-rv-body");
    this.makeTimeline();
    this.error = h("div", "adk-rv-error");
    this.graphBox = h("div", "adk-rv-graph"); // a multi-agent run's agent tree, its running agent marked
    /** @type {Map<string, Element[][]>} */
    this.graphBoxes = new Map();
    root.replaceChildren(this.head, this.notice, this.prompt, this.graphBox, this.tabs, this.body, this.timeline, this.error);
    this.clock = setInterval(() => this.status === "running" && this.renderHead(), 1000); // the elapsed time
  }

  get status() {
    return this.state ? this.state.status : "running";
  }

  /** @param {RunState} state draw the whole run */
  reset(state) {
    state = clean(state);
    this.revoke();
    this.state = { ...state, items: [] };
    this.recs = [];
    this.body.replaceChildren();
    for (const item of state.items || []) this.addItem({ ...item });
    this.drawGraph();
    this.renderHead();
    this.renderTimeline();
  }

  drawGraph() {
    const lay = this.state && this.state.graph;
    this.graphBox.hidden = !lay;
    this.graphBoxes = new Map();
    if (!lay) return this.graphBox.replaceChildren();
    const { root, boxes } = drawGraph(lay);
    this.graphBoxes = boxes;
    this.graphBox.replaceChildren(root);
  }

  /** mark the box of the agent running now, unmark the others */
  markGraph() {
    if (!this.state || !this.graphBoxes.size) return;
    const active = activeAgent(this.state);
    for (const [agent, pairs] of this.graphBoxes) {
      const on = agent === active;
      for (const [g, rect] of pairs) {
        g.setAttribute("class", on ? "adk-node adk-active" : "adk-node");
        rect.setAttribute("stroke", on ? "#1976d2" : "#999");
        rect.setAttribute("stroke-width", on ? "3" : "1");
      }
    }
  }

  /** @param {any[]} ops apply one delta */
  apply(ops) {
    if (!this.state || !Array.isArray(ops)) return;
    for (const op of clean(ops)) {
      const rec = typeof op[1] === "number" ? this.recs[op[1]] : undefined;
      switch (op[0]) {
        case "i":
          this.addItem(op[1]);
          break;
        case "t":
          if (rec && rec.text) {
            rec.data.text += op[2];
            rec.text.appendData(op[2]);
          }
          break;
        case "e":
          if (rec) {
            if (typeof op[2] === "string") rec.data.text = op[2];
            rec.data.done = true;
            this.drawText(rec);
          }
          break;
        case "u":
          if (rec) {
            Object.assign(rec.data, op[2]);
            this.drawItem(rec);
          }
          break;
        case "l":
          if (rec) this.appendLog(rec, String(op[2]), Number(op[3]) || 0);
          break;
        case "s":
          Object.assign(this.state, op[1]);
          break;
        case "span":
        case "span_u":
          this.applySpan(op);
          break;
        default:
          break;
      }
    }
    this.renderHead();
    this.renderTimeline();
  }

  renderHead() {
    const st = this.state;
    if (!st) return;
    this.agent.textContent = st.agent || "agent";
    this.model.textContent = st.model || "";
    this.model.hidden = !st.model;
    this.notice.textContent = st.notice ? `ℹ ${st.notice}` : "";
    this.notice.hidden = !st.notice;
    this.badge.textContent = st.status === "running" ? "running…" : st.status;
    this.badge.className = `adk-rv-badge adk-rv-${st.status}`;
    const bits = [];
    if (st.status === "running" && st.started_at) {
      const s = Date.now() / 1000 - st.started_at;
      if (s >= 0) bits.push(fmtDuration(Math.floor(s)));
    } else if (st.elapsed != null) {
      bits.push(fmtDuration(st.elapsed));
    }
    const u = st.usage;
    const thinking = u && u.thoughts ? ` (${fmtCount(u.thoughts)} thinking)` : "";
    if (u) bits.push(`tokens: ${fmtCount(u.input)} in · ${fmtCount(u.output)} out${thinking} · ${fmtCount(u.total)} total`);
    this.meta.textContent = bits.join(" · ");
    const running = st.status === "running";
    this.stop.hidden = !running;
    if (running && !this.stop.disabled) this.stop.textContent = "■ Stop";
    this.prompt.textContent = st.prompt || "";
    this.prompt.hidden = !st.prompt;
    this.error.textContent = st.error ? `⚠ ${st.error}` : "";
    this.error.hidden = !st.error;
    this.markGraph();
  }

  /** @param {Item} item */
  addItem(item) {
    if (!this.state) return;
    this.state.items.push(item);
    /** @type {Rec} */
    const rec = { data: item, node: h("div", `adk-rv-item adk-rv-${item.k}`) };
    this.recs.push(rec);
    this.drawItem(rec);
    this.body.appendChild(rec.node);
  }

  /** @param {Rec} rec */
  drawItem(rec) {
    const d = rec.data;
    const node = rec.node;
    switch (d.k) {
      case "text":
        this.drawText(rec);
        break;
      case "user":
        node.replaceChildren(h("span", "adk-rv-muted", "you: "), document.createTextNode(d.text));
        break;
      case "tool":
        this.drawTool(rec);
        break;
      case "media":
        node.replaceChildren(...(d.media || []).map((/** @type {Item} */ m) => this.media(m)));
        break;
      case "state": {
        node.replaceChildren(h("span", "adk-rv-muted", "state: "));
        const parts = [];
        for (const [k, v] of d.delta || []) parts.push([h("code", null, k), " = ", h("code", null, v)]);
        for (const [k, v] of d.artifacts || []) parts.push(["artifact ", h("code", null, k), ` v${v}`]);
        if (d.transfer) parts.push([`→ transfer to ${d.transfer}`]);
        parts.forEach((p, n) => node.append(...(n ? [" · "] : []), ...p));
        break;
      }
      case "error":
        node.textContent = `⚠ ${d.message}`;
        break;
      case "cut":
        node.textContent = cutNote(d.tokens);
        break;
      case "thoughts":
      case "code":
      case "grounding":
        this.drawNative(rec);
        break;
      case "lane":
        node.textContent = laneLabel(d);
        break;
      default:
        node.textContent = "";
    }
  }

  /** @param {Rec} rec thoughts (collapsed; they stream into a Text node), code the provider ran, a search's sources */
  drawNative(rec) {
    const d = rec.data;
    const node = rec.node;
    if (d.k === "thoughts") {
      const open = /** @type {HTMLDetailsElement | null} */ (node.querySelector("details"))?.open;
      const details = /** @type {HTMLDetailsElement} */ (h("details", "adk-rv-thoughts"));
      details.open = Boolean(open); // collapsed unless the reader opened it
      rec.text = document.createTextNode(String(d.text || ""));
      const body = h("div", "adk-rv-muted adk-rv-small adk-rv-thought-text");
      body.append(rec.text);
      details.append(h("summary", "adk-rv-muted adk-rv-small", d.done ? "💭 thoughts" : "💭 thinking…"), body);
      node.replaceChildren(details);
      return;
    }
    if (d.k === "code") {
      node.replaceChildren(h("div", "adk-rv-muted adk-rv-small", `▶ code the model ran${d.language ? ` (${d.language})` : ""}`));
      if (d.code) node.append(h("pre", "adk-rv-pre", d.code));
      if (d.outcome) node.append(h("div", "adk-rv-muted adk-rv-small", d.outcome), h("pre", "adk-rv-pre", d.output || ""));
      return;
    }
    node.replaceChildren();
    if ((d.queries || []).length) node.append(h("div", "adk-rv-muted adk-rv-small", `🔎 searched: ${d.queries.join(" · ")}`));
    const sources = d.sources || [];
    if (sources.length) {
      const list = h("ol", "adk-rv-sources");
      for (const source of sources) {
        const li = h("li");
        const href = safeUrl(source.href);
        const label = source.title || source.uri || "";
        if (href) {
          const a = /** @type {HTMLAnchorElement} */ (h("a", null, label));
          a.href = href;
          a.target = "_blank";
          a.rel = "noopener noreferrer";
          li.append(a);
        } else {
          li.append(label);
        }
        list.append(li);
      }
      node.append(list);
    }
    if ((d.citations || []).length) {
      const details = h("details", "adk-rv-citations");
      const list = h("ul");
      for (const c of d.citations) {
        list.append(h("li", null, `“${c.text}” ${(c.sources || []).map((/** @type {number} */ n) => `[${n + 1}]`).join("")}`));
      }
      details.append(h("summary", "adk-rv-muted adk-rv-small", "citations"), list);
      node.append(details);
    }
  }

  makeTimeline() {
    this.tabs = h("div", "adk-rv-tabs");
    /** @type {HTMLButtonElement[]} */
    this.tabButtons = ["Transcript", "Timeline"].map((name) => {
      const button = /** @type {HTMLButtonElement} */ (h("button", "adk-rv-tab", name));
      button.type = "button";
      button.addEventListener("click", () => this.showTab(name));
      return button;
    });
    this.tabs.append(...this.tabButtons);
    this.timeline = h("div", "adk-rv-timeline");
    this.tab = "Transcript";
    this.showTab(this.tab);
  }

  /** @param {string} name "Transcript" or "Timeline" */
  showTab(name) {
    this.tab = name;
    this.body.hidden = name !== "Transcript";
    this.timeline.hidden = name !== "Timeline";
    for (const button of this.tabButtons) button.classList.toggle("adk-rv-tab-on", button.textContent === name);
  }

  /** @param {any[]} op ["span", path, span] a span added under the one at path; ["span_u", path, fields] */
  applySpan(op) {
    const trace = this.state && this.state.trace;
    const span = trace && Array.isArray(op[1]) ? spanAt(trace, op[1]) : undefined;
    if (!span) return;
    if (op[0] === "span") (span.children ||= []).push(op[2]);
    else Object.assign(span, op[2]);
  }

  /** the Timeline tab: the waterfall of the spans so far; the tabs show once there is a span */
  renderTimeline() {
    const trace = this.state && this.state.trace;
    this.tabs.hidden = !trace;
    this.timeline.replaceChildren(...(trace ? timelineCells(timelineRows(trace)) : []));
  }

  /** @param {(text: string) => string} markdown draw finished turns with it, those shown already too */
  useMarkdown(markdown) {
    this.markdown = markdown;
    for (const rec of this.recs) if (rec.data.k === "text" && rec.data.done) this.drawText(rec);
  }

  /** @param {Rec} rec plain text while streaming, markdown once the turn has ended (and markdown-it is there) */
  drawText(rec) {
    if (rec.data.done) {
      rec.text = undefined;
      rec.node.classList.remove("adk-rv-streaming");
      rec.node.classList.toggle("adk-rv-plain", !this.markdown);
      rec.node.replaceChildren(this.markdown ? parseHtml(this.markdown(String(rec.data.text))) : String(rec.data.text));
    } else {
      rec.text = document.createTextNode(String(rec.data.text));
      rec.node.classList.add("adk-rv-streaming");
      rec.node.replaceChildren(rec.text);
    }
  }

  /** @param {Rec} rec */
  drawTool(rec) {
    const d = rec.data;
    const head = h("div", "adk-rv-tool-head");
    const meta = [];
    if (d.duration != null) meta.push(fmtDuration(d.duration));
    if (d.attempts) meta.push(d.attempts === 1 ? "attempt 1" : `${d.attempts} attempts`);
    if (d.long_running) meta.push("long-running");
    head.append(h("span", "adk-rv-tool-name", `🔧 ${d.name}`), h("span", `adk-rv-badge adk-rv-${d.status}`, d.status));
    if (meta.length) head.append(h("span", "adk-rv-meta", meta.join(" · ")));
    const children = [head];
    if (d.args && d.args !== "{}") children.push(h("pre", "adk-rv-pre adk-rv-args", d.args));
    if (d.error) children.push(h("div", "adk-rv-error", `⚠ ${d.error}`));
    rec.logNote = h("div", "adk-rv-muted adk-rv-small");
    rec.log = h("pre", "adk-rv-pre adk-rv-log");
    children.push(rec.logNote, rec.log);
    this.showLog(rec);
    if (d.result != null) {
      const details = h("details", "adk-rv-result");
      details.append(h("summary", "adk-rv-muted adk-rv-small", "result"), h("pre", "adk-rv-pre", d.result));
      children.push(details);
    }
    if (d.traceback) {
      const details = h("details", "adk-rv-traceback");
      details.append(h("summary", "adk-rv-muted adk-rv-small", "traceback"), h("pre", "adk-rv-pre", d.traceback));
      children.push(details);
    }
    for (const m of d.media || []) children.push(this.media(m));
    if (d.inner && d.inner.length) children.push(innerNode(d.inner));
    rec.node.replaceChildren(...children);
  }

  /** @param {Rec} rec @param {string} text @param {number} cut characters the kernel cut before text */
  appendLog(rec, text, cut) {
    const d = rec.data;
    const full = (d.log || "") + text;
    d.log = logTail(full);
    d.log_dropped = (d.log_dropped || 0) + cut + full.length - d.log.length;
    this.showLog(rec);
  }

  /** @param {Rec} rec */
  showLog(rec) {
    const d = rec.data;
    if (!rec.log || !rec.logNote) return;
    rec.log.textContent = d.log || "";
    rec.log.hidden = !d.log;
    rec.log.scrollTop = rec.log.scrollHeight;
    rec.logNote.textContent = d.log_dropped ? `… ${fmtCount(d.log_dropped)} earlier characters not shown` : "";
    rec.logNote.hidden = !d.log_dropped;
  }

  /** @param {Item} m @returns {HTMLElement} an image, a PDF link (+ viewer) or a file note */
  media(m) {
    const size = fmtSize(m.size);
    if (m.k === "image" && IMAGE_TYPES.has(m.mime) && typeof m.data === "string" && BASE64.test(m.data)) {
      const img = /** @type {HTMLImageElement} */ (h("img", "adk-rv-img"));
      img.alt = `${m.mime} image`;
      img.src = `data:${m.mime};base64,${m.data}`;
      return img;
    }
    const box = h("div", "adk-rv-file");
    if (m.k === "pdf") {
      let href = safeUrl(m.href);
      let blob = false;
      if (!href && typeof m.data === "string" && BASE64.test(m.data)) {
        href = this.blobUrl(m.data, "application/pdf");
        blob = true;
      }
      const name = m.name || "document.pdf";
      box.append("📄 ");
      if (href) {
        const a = /** @type {HTMLAnchorElement} */ (h("a", null, name));
        a.href = href;
        a.target = "_blank";
        a.rel = "noopener noreferrer";
        if (blob) a.download = name;
        box.append(a);
      } else {
        box.append(name);
      }
      const note = href ? "" : m.uri ? ", not a link" : ", not embedded";
      const where = !href && m.uri && m.uri !== name ? ` ${m.uri}` : "";
      box.append(h("span", "adk-rv-muted", ` (PDF${size ? `, ${size}` : ""}${note})${where}`));
      if (blob && href) {
        const details = h("details", "adk-rv-pdf");
        const viewerUrl = href;
        details.append(h("summary", "adk-rv-muted adk-rv-small", "preview"));
        details.addEventListener("toggle", () => {
          if (/** @type {HTMLDetailsElement} */ (details).open && !details.querySelector("iframe")) {
            const frame = /** @type {HTMLIFrameElement} */ (h("iframe", "adk-rv-pdf-frame"));
            frame.title = name;
            frame.src = viewerUrl;
            details.append(frame);
          }
        });
        box.append(details);
      }
      return box;
    }
    const href = safeUrl(m.href);
    const desc = `${m.mime || "file"}${size ? `, ${size}` : ""}`;
    box.append("📎 ");
    if (href) {
      const a = /** @type {HTMLAnchorElement} */ (h("a", null, m.name || href));
      a.href = href;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      box.append(a, h("span", "adk-rv-muted", ` (${desc})`));
    } else {
      box.append(m.uri || m.name || "", h("span", "adk-rv-muted", ` (${desc}, not shown)`));
    }
    return box;
  }

  /** @param {string} data base64 @param {string} mime */
  blobUrl(data, mime) {
    const raw = atob(data.replace(/\s/g, ""));
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i += 1) bytes[i] = raw.charCodeAt(i);
    const url = URL.createObjectURL(new Blob([bytes], { type: mime }));
    this.urls.push(url);
    return url;
  }

  revoke() {
    for (const url of this.urls) URL.revokeObjectURL(url);
    this.urls = [];
  }

  dispose() {
    clearInterval(this.clock);
    this.revoke();
  }
}

export default {
  /** @param {{model: any, el: HTMLElement}} ctx */
  render({ model, el }) {
    const dom = new RunDom(el, () => model.send({ type: "stop" }));
    let seq = 0; // the last delta this view shows
    /** @type {string | null} */
    let nonce = null; // a snapshot this view asked for
    /** @type {any[]} */
    let held = []; // deltas after a gap, waiting for the snapshot

    /** @param {RunState} state @param {number} [at] */
    const load = (state, at) => {
      dom.reset(state);
      seq = at ?? state.seq ?? 0;
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
          dom.apply(msg.ops);
          seq = msg.seq;
        }
      }
    };
    /** @param {any} msg */
    const onCustom = (msg) => {
      if (!msg || typeof msg !== "object") return;
      if (msg.type === "delta") {
        if (msg.seq <= seq) return;
        if (msg.seq === seq + 1) {
          dom.apply(msg.ops);
          seq = msg.seq;
          drain();
        } else {
          held.push(msg);
          if (nonce === null) sync();
        }
      } else if (msg.type === "snapshot" && msg.nonce === nonce) {
        nonce = null;
        if (msg.state && msg.seq > seq) load(msg.state, msg.seq);
        drain();
      }
    };
    const onState = () => {
      nonce = null;
      held = [];
      load(model.get("state"));
    };
    model.on("msg:custom", onCustom);
    model.on("change:state", onState);
    load(model.get("state"));
    if (dom.status === "running") sync(); // deltas may have been sent before this view existed
    let open = true;
    loadMarkdown(model).then(
      (markdown) => open && dom.useMarkdown(markdown),
      (error) => console.warn("adk_notebook: markdown-it did not load, finished turns stay plain text:", error),
    );
    return () => {
      open = false;
      model.off("msg:custom", onCustom);
      model.off("change:state", onState);
      dom.dispose();
    };
  },
};
