// legaleval review: the blind labelling page. Every text is set with textContent (never
// as markup): an answer or a question is data, and may be hostile. The page knows only what
// the API gives it: the item's question, answer and rubric, never the judge's verdict.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("token")) {  // a rater's link: keep the token for this tab, drop it from the URL
    sessionStorage.setItem("legaleval-review-token", hash.get("token"));
    history.replaceState(null, "", location.pathname + location.search);
  }
  const token = sessionStorage.getItem("legaleval-review-token");
  const state = { item: null, current: null, readonly: false, passed: null, grade: null,
    criteria: {}, cursor: 0, started: 0, submitted: [], busy: false };

  async function api(path, options) {
    const headers = { "Accept": "application/json" };
    if (token) headers["Authorization"] = "Bearer " + token;
    if (options && options.body) headers["Content-Type"] = "application/json";
    const response = await fetch("api/review/" + path, Object.assign({ headers }, options || {}));
    let body = null;
    if (response.status !== 204) {
      try { body = await response.json(); } catch (e) { body = null; }
    }
    return { status: response.status, body };
  }

  function say(text) { $("message").textContent = text || ""; }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function block(parent, cls, title, text) {
    const div = document.createElement("div");
    div.className = cls;
    if (title) {
      const head = document.createElement("div");
      head.className = "role";
      head.textContent = title;
      div.appendChild(head);
    }
    const pre = document.createElement("pre");
    pre.textContent = text;
    div.appendChild(pre);
    parent.appendChild(div);
  }

  function showProgress(p) {
    if (!p) return;
    state.submitted = p.submitted || [];
    const median = p.seconds_median == null ? "" : " · median " + Math.round(p.seconds_median) + " s per item";
    $("progress").textContent = p.done + " / " + p.total + " labelled" + median;
  }

  function renderCriteria(item, given) {
    const list = $("criteria");
    clear(list);
    const all = item.rubric.map((c) => ({ id: c.id, title: c.title, desc: c.description,
      weight: c.weight })).concat(item.required_criteria.map((c) => ({ id: c.id, title: c.text })));
    all.forEach((c, index) => {
      const li = document.createElement("li");
      li.dataset.id = c.id;
      const mark = document.createElement("span");
      mark.className = "mark";
      li.appendChild(mark);
      const title = document.createElement("span");
      title.textContent = c.title + (c.weight != null ? " (weight " + c.weight + ")" : "");
      li.appendChild(title);
      if (c.desc) {
        const desc = document.createElement("div");
        desc.className = "desc";
        desc.textContent = c.desc;
        li.appendChild(desc);
      }
      li.addEventListener("click", () => { state.cursor = index; cycle(c.id); });
      list.appendChild(li);
    });
    if (given) state.criteria = Object.assign({}, given);
    paint();
  }

  function cycle(id) {
    if (state.readonly) return;
    const now = state.criteria[id];
    if (now === undefined) state.criteria[id] = true;
    else if (now === true) state.criteria[id] = false;
    else delete state.criteria[id];
    paint();
  }

  function paint() {
    $("pass").setAttribute("aria-pressed", String(state.passed === true));
    $("fail").setAttribute("aria-pressed", String(state.passed === false));
    $("grade-value").textContent = state.grade == null ? "none" : String(state.grade);
    Array.from($("criteria").children).forEach((li, index) => {
      const met = state.criteria[li.dataset.id];
      li.querySelector(".mark").textContent = met === true ? "met" : met === false ? "not met" : "—";
      li.classList.toggle("cursor", index === state.cursor);
    });
    document.body.classList.toggle("readonly", state.readonly);
    $("forward").hidden = !state.readonly;
  }

  function setBusy(busy) {
    state.busy = busy;
    document.body.classList.toggle("busy", busy);
  }

  function render(item, submitted) {
    state.item = item;
    document.body.dataset.item = item.id;
    state.readonly = Boolean(submitted);
    state.passed = submitted ? submitted.passed : null;
    state.grade = submitted ? submitted.grade : null;
    state.criteria = {};
    state.cursor = 0;
    state.started = performance.now();
    $("done").hidden = true;
    document.querySelector("main").hidden = false;
    clear($("messages"));
    item.messages.forEach((m) => block($("messages"), "turn", m.role, m.content));
    clear($("context"));
    if (item.context) block($("context"), "context", "Context", item.context);
    $("prompt").textContent = item.prompt;
    clear($("attachments"));
    item.attachments.forEach((a) => block($("attachments"), "attachment",
      "Attachment: " + a.title + (a.note ? " (" + a.note + ")" : ""), a.text));
    $("response").textContent = item.response;
    clear($("references"));
    item.references.forEach((r) => block($("references"), "reference", "Reference answer", r));
    $("grade").hidden = !item.grade_allowed;
    $("note").value = submitted && submitted.note ? submitted.note : "";
    $("note").readOnly = state.readonly;
    renderCriteria(item, submitted ? submitted.criteria : null);
    say(state.readonly ? "Submitted: read only." : "");
    window.scrollTo(0, 0);
  }

  async function loadNext() {
    const answer = await api("next");
    if (answer.status === 204) {
      delete document.body.dataset.item;
      document.querySelector("main").hidden = true;
      $("done").hidden = false;
      const progress = await api("progress");
      showProgress(progress.body);
      state.item = null;
      state.current = null;
      return;
    }
    if (answer.status !== 200) { say(errorText(answer)); return; }
    state.current = answer.body.item.id;
    showProgress(answer.body.progress);
    render(answer.body.item, null);
  }

  function errorText(answer) {
    const error = answer.body && answer.body.error;
    return "Error " + answer.status + (error ? ": " + error.message : "");
  }

  async function submit() {
    if (state.readonly || !state.item || state.busy) return;
    if (state.passed === null && state.grade === null) {
      say(state.item.grade_allowed ? "Choose pass (P), fail (F) or a grade (0–4) first."
        : "Choose pass (P) or fail (F) first.");
      return;
    }
    const body = { item: state.item.id,
      seconds: Math.round((performance.now() - state.started) / 100) / 10 };
    if (state.passed !== null) body.passed = state.passed;
    if (state.grade !== null) body.grade = state.grade;
    if (Object.keys(state.criteria).length) body.criteria = state.criteria;
    if ($("note").value.trim()) body.note = $("note").value.trim();
    setBusy(true);
    try {
      const answer = await api("labels", { method: "POST", body: JSON.stringify(body) });
      if (answer.status !== 201) { say(errorText(answer)); return; }
      showProgress(answer.body.progress);
      say("");
      await loadNext();
    } catch (error) {
      say("Not saved: " + error + " (press Enter to try again)");
    } finally { setBusy(false); }
  }

  async function back() {
    const list = state.submitted;
    if (!list.length) { say("Nothing submitted yet."); return; }
    const at = state.readonly ? list.indexOf(state.item.id) : list.length;
    if (at <= 0) { say("This is your first item."); return; }
    const answer = await api("items/" + encodeURIComponent(list[at - 1]));
    if (answer.status !== 200) { say(errorText(answer)); return; }
    render(answer.body.item, answer.body.submitted);
  }

  function tick() {
    if (state.item && !state.readonly) {
      $("timer").textContent = Math.round((performance.now() - state.started) / 1000) + " s on this item";
    } else { $("timer").textContent = ""; }
  }

  document.addEventListener("keydown", (event) => {
    if (event.target === $("note")) {
      if (event.key === "Escape") $("note").blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (state.busy) { event.preventDefault(); return; }  // a submission is on its way
    const key = event.key.toLowerCase();
    const count = $("criteria").children.length;
    let handled = true;
    if (key === "p" && !state.readonly) state.passed = true;
    else if (key === "f" && !state.readonly) state.passed = false;
    else if (/^[0-4]$/.test(key) && state.item && state.item.grade_allowed && !state.readonly) {
      state.grade = Number(key) / 4;
    } else if (key === "j" && count) state.cursor = Math.min(count - 1, state.cursor + 1);
    else if (key === "k" && count) state.cursor = Math.max(0, state.cursor - 1);
    else if ((key === "m" || key === "u") && count && !state.readonly) {
      const id = $("criteria").children[state.cursor].dataset.id;
      state.criteria[id] = key === "m";
    } else if (key === "enter") submit();
    else if (key === "b") back();
    else if (key === "n" && state.readonly) loadNext();
    else if (key === "/") $("note").focus();
    else handled = false;
    if (handled) { event.preventDefault(); paint(); }
  });
  $("pass").addEventListener("click", () => { if (!state.readonly) { state.passed = true; paint(); } });
  $("fail").addEventListener("click", () => { if (!state.readonly) { state.passed = false; paint(); } });
  $("submit").addEventListener("click", submit);
  $("back").addEventListener("click", back);
  $("forward").addEventListener("click", loadNext);
  setInterval(tick, 1000);
  loadNext();
})();
