// agentsum web page: summarize an article and show how the agents' attention produced each word.
// Plain JavaScript, no dependencies, no build step. Talks to POST /v1/summarize with "attention": true.
"use strict";

(function () {
  // Agents, their lines and token positions are counted from 0 on the page, as in the API's JSON
  // (docs/provenance.md), so that "agent 3, line 7" names the same sentence in both.
  // Okabe-Ito palette: distinguishable with the common colour-vision deficiencies.
  const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#7f6a1a", "#555555"];
  const MAX_FILE_BYTES = 1000000;
  // English spacing: the rules of agentsum.data.readable.detokenize, which writes the summary's text, so
  // that the summary's word spans read as that text (compared by lower case, as there).
  const NO_SPACE_BEFORE = new Set([".", ",", "!", "?", ";", ":", ")", "]", "}", "%", "...", "n't", "'s", "'re", "'ve",
    "'ll", "'d", "'m"]);
  const NO_SPACE_AFTER = new Set(["(", "[", "{", "$", "#", "@"]);
  // ... except a currency sign before a word: "$1.10", "$(0.03)", but "$ per share" (as readable.py)
  const CURRENCY = new Set(["$"]);
  const AMOUNT_START = /^[\d.(]/;
  // Inside a placeholder such as SAMSum's <file_gif> or <file:photo>, which the tokenizer splits into
  // "<" "file_gif" ">": at most this many tokens between the brackets, none of them a space or bracket.
  const PLACEHOLDER_TOKENS = 3;
  // A source longer than this many tokens (a call, a meeting) shows each agent's first lines with the
  // rest folded; a click that leads into a folded part opens that agent's section.
  const FOLD_TOKENS = 800;
  const FOLD_LINES = 2;
  const PLACEHOLDER_PART = /^[\p{L}\p{N}_:.\-]+$/u;
  // What the text box asks for, by the kind of text the model was trained on (/v1/example's kind).
  const PLACEHOLDER = {
    news: "Paste a news article here, or upload a .txt file below…",
    dialogue: "Paste a chat here, one message per line as Name: text, or upload a .txt file below…",
    call: "Paste an earnings call transcript here, or upload a .txt file below…",
  };
  const LABEL = { news: "Paste an article", dialogue: "Paste a chat", call: "Paste a call transcript" };
  // The on/off search settings: a box and the request field (and /v1/model search_defaults key) it sets.
  const SWITCHES = [["#numbers", "numbers_from_source"], ["#figure-grammar", "figure_grammar"],
    ["#source-periods", "source_periods"], ["#numbers-in-context", "numbers_in_context"],
    ["#attribution-rerank", "attribution_rerank"], ["#role-names", "role_names"]];

  const $ = (sel) => document.querySelector(sel);
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  // An agent's colour: the palette's for the first 8; after them (a call has up to 21 agents), each
  // further colour is the candidate farthest in CIELAB from every colour already given, so no two
  // agents share one (the first 21 stay at least as far apart as the palette's closest pair, dE 26).
  // Past the palette they are not chosen for colour-vision deficiencies: the legend's names tell
  // agents apart there.
  const colours = PALETTE.slice();
  const colour = (a) => {
    while (colours.length <= a) colours.push(farthestColour(colours));
    return colours[a];
  };
  const pct = (x) => `${Math.round(x * 100)}%`;

  // Candidates for agents past the palette: hues every 15 degrees at four lightnesses, saturation 70%,
  // neither so dark nor so light that a word's underline or a bar's label is lost.
  const CANDIDATES = [0.3, 0.42, 0.54, 0.66].flatMap((l) => Array.from({ length: 24 }, (_, k) => hslHex(k * 15, 0.7, l)));

  function hslHex(hue, sat, light) {
    const c = (1 - Math.abs(2 * light - 1)) * sat;
    const x = c * (1 - Math.abs(((hue / 60) % 2) - 1));
    const m = light - c / 2;
    const [r, g, b] = hue < 60 ? [c, x, 0] : hue < 120 ? [x, c, 0] : hue < 180 ? [0, c, x]
      : hue < 240 ? [0, x, c] : hue < 300 ? [x, 0, c] : [c, 0, x];
    return "#" + [r, g, b].map((v) => Math.round((v + m) * 255).toString(16).padStart(2, "0")).join("");
  }

  // CIELAB (D65) of a #rrggbb colour: distances there follow how different colours look.
  function lab(hex) {
    const n = parseInt(hex.slice(1), 16);
    const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => {
      const c = v / 255;
      return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    const f = (t) => (t > 0.008856 ? Math.cbrt(t) : 7.787 * t + 16 / 116);
    const x = f((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047);
    const y = f(0.2126 * r + 0.7152 * g + 0.0722 * b);
    const z = f((0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883);
    return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
  }

  function farthestColour(given) {
    const taken = given.map(lab);
    let best = null;
    let bestDistance = -1;
    CANDIDATES.forEach((hex) => {
      const p = lab(hex);
      const nearest = Math.min(...taken.map((q) => Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2])));
      if (nearest > bestDistance) { best = hex; bestDistance = nearest; }
    });
    return best;
  }

  function rgba(hex, alpha) {
    const n = parseInt(hex.slice(1), 16);
    return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha.toFixed(3)})`;
  }

  function textColourOn(hex) {
    const n = parseInt(hex.slice(1), 16);
    const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.3 ? "#111" : "#fff";
  }

  const ASCII_ALNUM = /^[A-Za-z0-9]$/;

  // For every token, whether a space goes before it. Chinese: none, except between two ASCII words
  // (as agentsum.chinese.join_tokens). English: agentsum.data.readable.detokenize's rules (no space
  // before punctuation or a clitic, none after an opening bracket, straight double quotes alternate
  // between opening and closing); with ``placeholders``, also none inside <file_gif>-like tokens.
  function spacesBefore(tokens, placeholders) {
    if (state.language === "zh") {
      return tokens.map((tok, i) => i > 0 && ASCII_ALNUM.test(tokens[i - 1].slice(-1)) && ASCII_ALNUM.test(tok[0]));
    }
    let quoteOpen = false;
    let glueNext = false;
    const spaces = tokens.map((tok, i) => {
      const low = tok.toLowerCase();
      if (tok === '"') {
        const opening = !quoteOpen;
        quoteOpen = !quoteOpen;
        glueNext = opening;
        return opening && i > 0;
      }
      if (glueNext === "currency" && !AMOUNT_START.test(tok)) glueNext = false;
      const space = i > 0 && !glueNext && !NO_SPACE_BEFORE.has(low);
      glueNext = CURRENCY.has(low) ? "currency" : NO_SPACE_AFTER.has(low);
      return space;
    });
    if (placeholders) {
      tokens.forEach((tok, i) => {
        if (tok !== "<") return;
        for (let j = i + 1; j <= Math.min(i + 1 + PLACEHOLDER_TOKENS, tokens.length - 1); j++) {
          if (tokens[j] === ">" && j > i + 1) {
            for (let k = i + 1; k <= j; k++) spaces[k] = false;
            return;
          }
          if (!PLACEHOLDER_PART.test(tokens[j])) return;
        }
      });
    }
    return spaces;
  }

  // Append tokens as spans with the spacing of ordinary text; a span written against the one before
  // it (a clitic, punctuation) is marked ``joined``, the one before it ``joins-next``, so that the pair
  // is drawn as one word. With ``lineStarts`` (token indices), each of those tokens begins a new line.
  // ``placeholders``: show <file_gif> and the like as written (in the source and in summaries, as
  // agentsum.data.readable.detokenize writes them).
  function appendTokens(parent, tokens, makeSpan, lineStarts, placeholders) {
    const breaks = new Set(lineStarts || []);
    const spaces = spacesBefore(tokens, placeholders);
    let previous = null;
    tokens.forEach((tok, i) => {
      const span = makeSpan(tok, i);
      if (i > 0 && breaks.has(i)) {
        parent.appendChild(el("br"));
      } else if (spaces[i]) {
        parent.appendChild(document.createTextNode(" "));
      } else if (previous) {
        previous.classList.add("joins-next");
        span.classList.add("joined");
      }
      parent.appendChild(span);
      previous = span;
    });
  }

  // request: counts summary requests and changes of text, so that only the answer for the text on
  // screen is shown; latestCall: the latest summary request's number (the button waits for it)
  // bands: per agent, its section and folded part (see renderSource)
  const state = { result: null, sourceSpans: [], activeTok: null, defaults: null, language: "en", dialogue: false,
    request: 0, latestCall: 0, provenance: false, bands: [], example: null };

  // ---- model information ------------------------------------------------------------------
  async function loadModel() {
    const info = $("#model-info");
    try {
      // the model and the example of its kind of text together, so that both are there once the
      // header names the model
      const [r, e] = await Promise.all([fetch("/v1/model"), fetch("/v1/example")]);
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const m = await r.json();
      state.example = e.ok ? await e.json() : null;
      state.defaults = m.search_defaults;
      state.language = m.language || "en";
      state.dialogue = Boolean(m.dialogue);
      state.provenance = Boolean(m.provenance);  // the model can say where its words came from
      const kind = state.example ? state.example.kind : state.dialogue ? "dialogue" : "news";
      $("#article").placeholder = PLACEHOLDER[kind] || PLACEHOLDER.news;
      $('label[for="article"]').textContent = LABEL[kind] || LABEL.news;
      $("#summary").lang = $("#source").lang = state.language === "zh" ? "zh" : "en";
      // The score the checkpoint was selected by during training, named by the server for what it is
      // (greedy ROUGE-L on a validation sample, or validation NLL): not a test score.
      const selection = m.selection && m.selection.label ? m.selection : null;
      info.textContent = `${m.model_type.toUpperCase()} · ${m.agents} agent${m.agents === 1 ? "" : "s"} · ` +
        `vocabulary ${m.vocab_size.toLocaleString()} · step ${m.step ?? "?"}` +
        (selection ? ` · ${selection.label}` : "");
      info.title = `${m.checkpoint}: ${m.parameters.toLocaleString()} parameters.` +
        (selection ? ` ${selection.description}` : "");
      $("#beam").placeholder = m.search_defaults.beam_size;
      $("#min-length").placeholder = m.search_defaults.min_length;
      $("#max-length").placeholder = m.search_defaults.max_length;
      const d = m.search_defaults;
      $("#ngram").placeholder = d.no_repeat_ngram_size ?? (d.block_trigrams ? 3 : 0);
      $("#penalty").placeholder = d.repetition_penalty;
      $("#lm-weight").placeholder = d.lm_weight;
      // a model without a summary language model cannot rescore: the box says so instead
      $("#lm-weight").disabled = !m.summary_lm;
      $("#lm-weight").title = m.summary_lm ? "" : "This model has no summary language model (agentsum fit-lm writes one).";
      SWITCHES.forEach(([id, key]) => { $(id).checked = Boolean(d[key]); });
    } catch (e) {
      info.textContent = "Model information unavailable";
    }
  }

  // ---- input ------------------------------------------------------------------------------
  function updateCount() {
    const text = $("#article").value;
    const words = text.trim() ? text.trim().split(/\s+/).length : 0;
    $("#count").textContent = text ? `${words.toLocaleString()} words · ${text.length.toLocaleString()} characters` : "";
  }

  function showError(message) {
    const box = $("#error");
    box.textContent = message;
    box.hidden = false;
  }

  function clearError() {
    $("#error").hidden = true;
    $("#error").textContent = "";
  }

  // The server's warnings about the text (e.g. a text far longer than the model reads, with the
  // shipped model that suits it better); shown beside a summary, cleared with it.
  function showWarnings(warnings) {
    const box = $("#warning");
    box.textContent = (warnings || []).join(" ");
    box.hidden = !box.textContent;
  }

  function readFile(file) {
    clearError();
    if (!file) return;
    if (file.size > MAX_FILE_BYTES) {
      showError(`${file.name} is ${(file.size / 1e6).toFixed(1)} MB; the server accepts up to 1 MB of text.`);
      return;
    }
    const reader = new FileReader();
    reader.onload = () => {
      $("#article").value = String(reader.result);
      updateCount();
      clearResults();  // the summary on screen belongs to the text just replaced
      $("#status").textContent = `Loaded ${file.name}.`;
    };
    reader.onerror = () => showError(`Could not read ${file.name}.`);
    reader.readAsText(file);
  }

  function numberOption(body, id, key) {
    const v = $(id).value.trim();
    if (v !== "") body[key] = Number(v);
  }

  // A box starts as the model decodes (its search_defaults) and is sent only when changed from that,
  // as a number field is only when filled in: a box left alone leaves the setting to the model.
  function switchOption(body, id, key) {
    const modelDefault = Boolean(state.defaults && state.defaults[key]);
    if ($(id).checked !== modelDefault) body[key] = $(id).checked;
  }

  // Take the results of another text off the screen; a response still on its way for it is dropped.
  function clearResults() {
    state.request += 1;
    state.result = null;
    state.activeTok = null;
    state.sourceSpans = [];
    $("#results").hidden = true;
    state.bands = [];
    ["#summary", "#source", "#legend", "#attn-detail", "#number-legend"].forEach((sel) => $(sel).replaceChildren());
    $("#number-legend").hidden = true;
    $("#status").textContent = "";
    showWarnings([]);
  }

  async function summarize(event) {
    if (event) event.preventDefault();
    clearError();
    const text = $("#article").value;
    if (!text.trim()) {
      showError("Paste an article or upload a .txt file first.");
      $("#article").focus();
      return;
    }
    const body = { text, attention: true };
    if (state.provenance) body.provenance = true;
    numberOption(body, "#beam", "beam_size");
    numberOption(body, "#min-length", "min_length");
    numberOption(body, "#max-length", "max_length");
    numberOption(body, "#ngram", "no_repeat_ngram_size");
    numberOption(body, "#penalty", "repetition_penalty");
    if (!$("#lm-weight").disabled) numberOption(body, "#lm-weight", "lm_weight");
    SWITCHES.forEach(([id, key]) => switchOption(body, id, key));
    const button = $("#summarize");
    button.disabled = true;
    button.textContent = "Summarizing…";
    $("#status").textContent = "";
    const request = ++state.request;  // a later request or a new text supersedes this one
    state.latestCall = request;
    try {
      const r = await fetch("/v1/summarize", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      let data = null;
      try { data = await r.json(); } catch (e) { /* not JSON */ }
      if (request !== state.request) return;
      if (!r.ok) {
        showError((data && data.error) || `The server answered ${r.status} ${r.statusText}.`);
        return;
      }
      render(data.summaries[0]);
      showWarnings(data.summaries[0].warnings);
      $("#status").textContent = `Done in ${Math.round(data.elapsed_ms)} ms.`;
    } catch (e) {
      if (request === state.request) showError(`Could not reach the server (${e.message}).`);
    } finally {
      if (request === state.latestCall) {  // no later request is on its way
        button.disabled = false;
        button.textContent = "Summarize";
      }
    }
  }

  // ---- rendering --------------------------------------------------------------------------
  function render(result) {
    state.result = result;
    state.activeTok = null;
    const attn = result.attention;
    renderSource(attn);
    renderSummary(result, attn);
    $("#attn-detail").textContent = "Hover or focus a summary word to see where it came from.";
    const results = $("#results");
    results.hidden = false;
  }

  function renderSource(attn) {
    const legend = $("#legend");
    const source = $("#source");
    legend.replaceChildren();
    source.replaceChildren();
    state.sourceSpans = [];
    state.bands = [];
    // The words as written in the text (source_words); source_tokens are the model's lower-cased ones.
    const agents = attn.source_words || attn.source_tokens;
    const long = agents.reduce((n, tokens) => n + tokens.length, 0) > FOLD_TOKENS;
    agents.forEach((tokens, a) => {
      const item = el("li");
      item.style.setProperty("--agent-color", colour(a));
      item.append(el("span", "dot"), document.createTextNode(`Agent ${a}`));
      legend.appendChild(item);

      const band = el("section", "agent-band");
      band.dataset.agent = String(a);
      band.style.setProperty("--agent-color", colour(a));
      band.setAttribute("aria-label", `Agent ${a} source text`);
      const head = el("h3", null, `Agent ${a} `);
      head.appendChild(el("span", "muted", `· ${tokens.length} tokens`));
      band.appendChild(head);
      const p = el("p");
      const spans = [];
      if (tokens.length === 0) {
        p.appendChild(el("span", "no-text", "No text: the article was too short to reach this agent."));
      }
      const lines = (attn.source_lines || [])[a] || [0];
      // a long source: the first FOLD_LINES lines shown, the rest folded behind a button
      const cut = long && lines.length > FOLD_LINES ? lines[FOLD_LINES] : tokens.length;
      const makeSpan = (offset) => (tok, i) => {
        const s = el("span", "src-tok", tok);
        s.dataset.agent = String(a);
        s.dataset.index = String(offset + i);
        spans.push(s);
        return s;
      };
      const starts = (from, to) => (state.dialogue ? lines.filter((i) => i >= from && i < to).map((i) => i - from) : null);
      appendTokens(p, tokens.slice(0, cut), makeSpan(0), starts(0, cut), true);  // a dialogue: one utterance per line
      band.appendChild(p);
      const entry = { band, rest: null, toggle: null, cut };
      if (cut < tokens.length) {
        const rest = el("p", "rest");
        rest.hidden = true;
        appendTokens(rest, tokens.slice(cut), makeSpan(cut), starts(cut, tokens.length), true);
        const folded = lines.filter((i) => i >= cut).length;
        const toggle = el("button", "fold-toggle", `Show ${folded} more line${folded === 1 ? "" : "s"}`);
        toggle.type = "button";
        toggle.setAttribute("aria-expanded", "false");
        toggle.addEventListener("click", () => (rest.hidden ? openBand(a) : foldBand(a)));
        band.classList.add("folded");
        band.append(rest, toggle);
        Object.assign(entry, { rest, toggle, folded });
      }
      source.appendChild(band);
      state.sourceSpans.push(spans);
      state.bands.push(entry);
    });
  }

  function openBand(a) {
    const entry = state.bands[a];
    if (!entry || !entry.rest || !entry.rest.hidden) return;
    entry.rest.hidden = false;
    entry.band.classList.remove("folded");
    entry.toggle.textContent = "Fold";
    entry.toggle.setAttribute("aria-expanded", "true");
  }

  function foldBand(a) {
    const entry = state.bands[a];
    if (!entry || !entry.rest) return;
    entry.rest.hidden = true;
    entry.band.classList.add("folded");
    entry.toggle.textContent = `Show ${entry.folded} more line${entry.folded === 1 ? "" : "s"}`;
    entry.toggle.setAttribute("aria-expanded", "false");
  }

  function renderSummary(result, attn) {
    const box = $("#summary");
    box.replaceChildren();
    if (result.tokens.length === 0) {
      box.appendChild(el("p", "empty", "The model produced an empty summary."));
      showNumberLegend(false);
      return;
    }
    const spans = attn.sentences.length ? attn.sentences : [{ start: 0, end: result.tokens.length, agent: [] }];
    const origin = result.provenance;  // null when the model cannot say where its words came from
    let numbers = 0;
    spans.forEach((sent, k) => {
      const block = el("div", "sentence");
      block.dataset.k = String(k);
      if (origin) block.title = "Click to see the source sentences it rests on";
      const p = el("p", "sentence-text");
      const shown = result.words || result.tokens;  // cased from the article, aligned with tokens
      appendTokens(p, shown.slice(sent.start, sent.end), (tok, i) => {
        const j = sent.start + i;
        const s = el("span", "tok", tok);
        s.tabIndex = 0;
        s.dataset.pos = String(j);
        const g = attn.per_token[j].agent;
        const top = g.indexOf(Math.max(...g));
        s.style.setProperty("--tok-color", rgba(colour(top), 0.75));
        s.setAttribute("aria-label", `${tok}: mostly agent ${top}`);
        const number = origin && origin.words[j] ? origin.words[j].number : null;
        if (number) {  // a number: stated for its metric, stated for something else, or not in the source
          const claim = claimOf(number);
          s.classList.add("num", NUMBER_CLASS[claim]);
          s.dataset.claim = claim;
          s.title = `${capital(claimText(number))}: ${CLAIM_ACTION[claim]}`;
          s.setAttribute("aria-label", `${tok}: ${claimText(number)}`);
          numbers += 1;
        }
        return s;
      }, null, true);
      block.appendChild(p);
      block.appendChild(agentBar(sent.agent));
      box.appendChild(block);
    });
    showNumberLegend(numbers > 0);
  }

  // The legend line of the three number marks, under the summary when it has numbers.
  function showNumberLegend(shown) {
    const legend = $("#number-legend");
    legend.replaceChildren();
    legend.hidden = !shown;
    if (!shown) return;
    const where = sourceName();
    const key = (claim, text) => {
      const item = el("span", "num-legend-item");
      item.append(el("span", `num-key ${NUMBER_CLASS[claim]}`, NUMBER_GLYPH[claim]), document.createTextNode(` ${text}`));
      return item;
    };
    legend.append(el("span", "muted", "Numbers: "),
      key("in_context", `in ${where}, stated for the metric and period the summary gives it (or in ${where}, where it names none)`),
      key("elsewhere", `in ${where}, but stated for something else`),
      key("absent", `not in ${where}`),
      el("span", "muted", " · click one to see the sentence"));
  }

  function agentBar(weights) {
    const wrap = el("div", "agent-share");
    const bar = el("div", "agent-bar");
    const total = weights.reduce((x, y) => x + y, 0) || 1;
    const parts = weights.map((w, a) => `agent ${a} ${pct(w / total)}`);
    bar.setAttribute("role", "img");
    bar.setAttribute("aria-label", `The sentence's attention: ${parts.join(", ")}`);
    weights.forEach((w, a) => {
      const share = w / total;
      const seg = el("span", "agent-seg");
      seg.dataset.agent = String(a);
      seg.style.setProperty("width", `${(share * 100).toFixed(2)}%`);
      seg.style.setProperty("background-color", colour(a));
      seg.style.setProperty("color", textColourOn(colour(a)));
      seg.title = `Agent ${a}: ${pct(share)}`;
      if (share >= 0.12) seg.textContent = pct(share);
      bar.appendChild(seg);
    });
    wrap.appendChild(bar);
    return wrap;
  }

  // ---- attention highlighting -------------------------------------------------------------
  function clearHighlight() {
    document.querySelectorAll("#source .src-tok.highlight").forEach((s) => {
      s.classList.remove("highlight", "top");
      s.style.removeProperty("--hl");
    });
    if (state.activeTok) state.activeTok.classList.remove("active");
    state.activeTok = null;
  }

  function highlight(tokSpan) {
    if (!state.result || !state.result.attention) return;
    const j = Number(tokSpan.dataset.pos);
    const step = state.result.attention.per_token[j];
    if (!step) return;
    clearHighlight();
    state.activeTok = tokSpan;
    tokSpan.classList.add("active");
    const maxW = Math.max(...step.source.map((e) => e.weight), 1e-9);
    let first = null;
    step.source.forEach((e, rank) => {
      const span = (state.sourceSpans[e.agent] || [])[e.index];
      if (!span) return;
      span.classList.add("highlight");
      if (rank === 0) { span.classList.add("top"); first = span; }
      span.style.setProperty("--hl", rgba(colour(e.agent), 0.2 + 0.6 * (e.weight / maxW)));
    });
    if (first) scrollIntoSource(first);
    describe((state.result.words || state.result.tokens)[j], step);
  }

  function scrollIntoSource(span) {
    const box = $("#source");
    const top = span.offsetTop - box.offsetTop;
    if (top < box.scrollTop || top > box.scrollTop + box.clientHeight - 30) {
      box.scrollTop = Math.max(0, top - box.clientHeight / 3);
    }
  }

  // ---- provenance: a sentence's source sentences, a number's occurrences ----------------------
  function clearMarks() {
    document.querySelectorAll("#source .src-tok.sent-hl, #source .src-tok.num-hl, #source .src-tok.claim-hl")
      .forEach((s) => s.classList.remove("sent-hl", "num-hl", "claim-hl"));
    document.querySelectorAll("#summary .sentence.selected").forEach((b) => b.classList.remove("selected"));
  }

  // Mark source tokens (agent, index) with ``cls``, opening folded sections; scroll to the first.
  function mark(positions, cls) {
    let first = null;
    positions.forEach(([a, i]) => {
      const span = (state.sourceSpans[a] || []).find((s) => Number(s.dataset.index) === i);
      if (!span) return;
      if (state.bands[a] && i >= state.bands[a].cut) openBand(a);
      span.classList.add(cls);
      if (!first) first = span;
    });
    if (first) scrollIntoSource(first);
    return first;
  }

  function showSentence(k) {
    const origin = state.result && state.result.provenance;
    if (!origin || !origin.sentences[k]) return;
    clearMarks();
    $(`#summary .sentence[data-k="${k}"]`).classList.add("selected");
    const sources = origin.sentences[k].source_sentences;
    const positions = [];
    sources.forEach((s) => { for (let i = s.start; i < s.end; i++) positions.push([s.agent, i]); });
    mark(positions, "sent-hl");
    const detail = $("#attn-detail");
    detail.replaceChildren(el("strong", null, "This sentence"), document.createTextNode(sources.length
      ? ` rests on ${sources.map((s) => `agent ${s.agent}, line ${s.line} (${pct(s.share)})`).join("; ")}.`
      : " rests on no source sentence in particular."));
  }

  // The agent and index of a position among the agents' tokens in order.
  function locate(position) {
    let rest = position;
    for (let a = 0; a < state.sourceSpans.length; a++) {
      const n = ((state.result.attention.source_tokens || [])[a] || []).length;
      if (rest < n) return [a, rest];
      rest -= n;
    }
    return null;
  }

  // A number's mark (agentsum.data.number_links): "in_context" (stated for the summary's metric,
  // or, with no metric, just in the source), "elsewhere" (in the source, stated for something else)
  // or "absent". A record without a claim (from a server before claims) is read from `supported`.
  const NUMBER_CLASS = { in_context: "num-ok", elsewhere: "num-elsewhere", absent: "num-missing" };
  const NUMBER_GLYPH = { in_context: "✓", elsewhere: "≠", absent: "?" };
  const CLAIM_ACTION = { in_context: "click to see the sentence that states it",
    elsewhere: "click to see the sentence it was copied from", absent: "check it before you use it" };
  const capital = (text) => text.charAt(0).toUpperCase() + text.slice(1);
  const claimOf = (number) => (number.claim in NUMBER_CLASS ? number.claim : number.supported ? "in_context" : "absent");
  // what the page calls the source: "the call" for a calls model (/v1/example's kind), else "the text"
  const sourceName = () => (state.example && state.example.kind === "call" ? "the call" : "the text");

  function claimText(number) {
    const where = sourceName();
    const metric = number.metric;
    switch (claimOf(number)) {
      case "in_context":
        return metric ? `in ${where}, stated for ${metric}` : `in ${where} (the summary names no metric for it)`;
      case "elsewhere":
        return metric ? `in ${where}, but stated for something else, not for ${metric}`
          : `in ${where}, but stated for something else`;
      default:
        return `not in ${where}`;
    }
  }

  // The source sentence holding the flat position ``position``: {agent, line, start, end} (indices
  // within the agent), from the attention payload's sentence starts.
  function sentenceAt(position) {
    const at = locate(position);
    if (!at) return null;
    const [a, i] = at;
    const attn = state.result.attention;
    const starts = (attn.source_lines || [])[a] || [0];
    let line = 0;
    while (line + 1 < starts.length && starts[line + 1] <= i) line += 1;
    const end = line + 1 < starts.length ? starts[line + 1] : (attn.source_tokens[a] || []).length;
    return { agent: a, line, start: starts[line], end };
  }

  function sentenceText(sentence) {
    const attn = state.result.attention;
    const tokens = (attn.source_words || attn.source_tokens)[sentence.agent].slice(sentence.start, sentence.end);
    const spaces = spacesBefore(tokens, true);
    return tokens.map((tok, i) => (spaces[i] ? " " : "") + tok).join("");
  }

  // The source position a number is linked to: for "in_context" the first place a sentence states it
  // for its metric; for "elsewhere" the place it was copied from (or, generated, the first place the
  // source states it); for "absent" none.
  function numberTarget(j, number) {
    const claim = claimOf(number);
    if (claim === "in_context") {
      const context = number.context_occurrences && number.context_occurrences.length ? number.context_occurrences
        : number.occurrences;
      return context.length ? context[0] : null;
    }
    if (claim === "elsewhere") {
      const word = state.result.provenance.words[j];
      return word.copied ? word.source : number.occurrences.length ? number.occurrences[0] : null;
    }
    return null;
  }

  function showNumber(j) {
    const origin = state.result && state.result.provenance;
    const number = origin && origin.words[j] && origin.words[j].number;
    if (!number) return;
    clearMarks();
    const word = (state.result.words || state.result.tokens)[j];
    const claim = claimOf(number);
    const detail = $("#attn-detail");
    detail.replaceChildren(el("strong", null, `“${word}”`));
    const target = numberTarget(j, number);
    const sentence = target === null ? null : sentenceAt(target);
    if (!sentence) {
      detail.append(document.createTextNode(` is ${claimText(number)}: check it before you use it.`));
      return;
    }
    const positions = [];
    for (let i = sentence.start; i < sentence.end; i++) positions.push([sentence.agent, i]);
    mark(positions, "claim-hl");
    mark([locate(target)], "num-hl");
    const how = claim === "in_context" ? "stated in" : "copied from";
    detail.append(document.createTextNode(` is ${claimText(number)}; ${how} agent ${sentence.agent}, line ` +
      `${sentence.line} (marked):`), el("q", `claim-source claim-${claim}`, sentenceText(sentence)));
  }

  function describe(word, step) {
    const detail = $("#attn-detail");
    detail.replaceChildren();
    const head = el("div");
    head.append(el("strong", null, `“${word}”`),
      document.createTextNode(` · agents: ${step.agent.map((g, a) => `${a}: ${pct(g)}`).join(", ")}`));
    detail.appendChild(head);
    const chips = el("div", "chips");
    step.source.forEach((e) => {
      const chip = el("span", "chip");
      chip.style.setProperty("--agent-color", colour(e.agent));
      const written = ((state.result.attention.source_words || [])[e.agent] || [])[e.index] || e.word;
      chip.append(el("span", "dot"), document.createTextNode(`${written} · ${(e.weight * 100).toFixed(1)}%`));
      chip.title = `agent ${e.agent}, token ${e.index}`;
      chips.appendChild(chip);
    });
    detail.appendChild(chips);
  }

  // ---- wiring -----------------------------------------------------------------------------
  document.addEventListener("DOMContentLoaded", () => {
    $("#form").addEventListener("submit", summarize);
    $("#article").addEventListener("input", updateCount);
    $("#file").addEventListener("change", (e) => readFile(e.target.files[0]));
    $("#example").addEventListener("click", () => {
      if (!state.example) {
        showError("No example is available: the server did not send one.");
        return;
      }
      $("#article").value = state.example.text;  // of the kind the model was trained on (/v1/example)
      updateCount();
      clearResults();
      summarize();  // the example's own summary, never the previous text's beside it
    });
    const summary = $("#summary");
    summary.addEventListener("mouseover", (e) => {
      const tok = e.target.closest(".tok");
      if (tok && tok !== state.activeTok) highlight(tok);
    });
    summary.addEventListener("focusin", (e) => {
      const tok = e.target.closest(".tok");
      if (tok) highlight(tok);
    });
    summary.addEventListener("mouseleave", () => {
      if (!summary.contains(document.activeElement)) clearHighlight();
    });
    summary.addEventListener("focusout", (e) => {
      if (!summary.contains(e.relatedTarget)) clearHighlight();
    });
    // a click on a number shows where the text states it; on a sentence, the source sentences it rests on
    const choose = (target) => {
      const num = target.closest(".tok.num");
      if (num) { showNumber(Number(num.dataset.pos)); return; }
      const block = target.closest(".sentence");
      if (block) showSentence(Number(block.dataset.k));
    };
    summary.addEventListener("click", (e) => choose(e.target));
    summary.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && e.target.closest(".tok")) choose(e.target);
    });
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape") { clearHighlight(); clearMarks(); }
    });
    updateCount();
    loadModel();
  });
})();
