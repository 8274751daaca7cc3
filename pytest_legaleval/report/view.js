// The item view, shared by the report of one run and the page of two runs side by side.
// The page's script is this file followed by the page's own (report.js or compare.js), in
// one function scope. Every text goes through textContent: nothing from a run is ever
// parsed as markup; the records' texts are copied from their escaped, hidden elements.
"use strict";

function el(tag, text, cls) {
  var node = document.createElement(tag);
  if (text !== undefined && text !== null) { node.textContent = String(text); }
  if (cls) { node.className = cls; }
  return node;
}
function fmtScore(value) { return value === null || value === undefined ? "–" : value.toFixed(2); }
function clip(text, length) { return text.length > length ? text.slice(0, length - 1) + "…" : text; }
function readData(id) {
  var source = document.getElementById(id);
  return source ? JSON.parse(source.textContent) : null;
}

// Row fields (see report/items.py): record, dataset, model, category, score, reason,
// latency, warnings, line, record element; data.details[i] belongs to data.rows[i].
var R = 0, DS = 1, M = 2, CAT = 3, SCORE = 4, REASON = 5, LAT = 6, WARN = 7, LINE = 8,
  Q = 9, IDX = 10;
var MARK = { passed: "✓", failed: "✗", error: "error", invalid: "invalid", skipped: "skip" };

function makeRun(data) {
  var run = { data: data, rows: data.rows };
  var cats = data.categories;
  var questionCache = {}, searchCache = [], missing = {};
  (data.transcripts.missing || []).forEach(function (i) { missing[i] = true; });
  function recordOf(row) { return data.records[row[R]]; }
  // The epoch whose line the item shows (0 for a run of one epoch).
  function shownEpoch(row) {
    var found = (run.detail(row).ep || []).filter(function (e) { return e[3] === row[LINE]; });
    return found.length ? found[0][0] : 0;
  }
  data.rows.forEach(function (row, i) { row[IDX] = i; });

  run.category = function (row) { return cats[row[CAT]]; };
  run.label = function (cat) { return data.labels[cat] || cat; };
  run.recordOf = recordOf;
  run.detail = function (row) { return data.details[row[IDX]] || {}; };
  run.isFailure = function (row) {
    var cat = run.category(row);
    return cat === "failed" || cat === "error" || cat === "invalid";
  };
  function where(row) {
    if (row[LINE] > 0) { return data.files.predictions + " line " + row[LINE]; }
    if (row[LINE] < 0) { return data.files.failures + " line " + (-row[LINE]); }
    return data.files.validation;
  }
  run.where = where;
  // The record's hidden element (escaped texts), or null when the run lacks the record.
  run.question = function (row) {
    return document.getElementById(data.prefix + "q" + row[Q]);
  };
  run.questionText = function (row) {
    var q = row[Q];
    if (questionCache[q] === undefined) {
      var node = run.question(row);
      var prompt = node ? node.querySelector(".q-prompt") : null;
      questionCache[q] = prompt ? prompt.textContent : "";
    }
    return questionCache[q];
  };
  // What the search box reads: the question's texts (prompt, context, turns, choices,
  // references) and the answer's preview.
  run.searchText = function (i) {
    if (searchCache[i] === undefined) {
      var row = data.rows[i], node = run.question(row);
      searchCache[i] = ((node ? node.textContent : "") + " \u0000 " +
        (run.detail(row).r || "")).toLowerCase();
    }
    return searchCache[i];
  };

  // The criteria of a detail (see _criteria_json in report/texts.py) as
  // [[title, weight or null, met, reason], ...]; reason: [[judge, text], ...], null when the
  // judge gave none, or a number: the length of a reason the page had no room for.
  run.criteriaOf = function (detail) {
    var c = detail.c, entries = [], i;
    if (c.length === 3 && typeof c[2] === "string") {
      for (i = 0; i < c[1]; i += 1) { entries.push([c[0] + i, c[2].charAt(i) === "1" ? 1 : 0]); }
    } else { entries = c; }
    return entries.map(function (entry, k) {
      var def = data.criteria[entry[0]];
      var reason = detail.cr ? detail.cr[k] : null;
      if (typeof reason === "string") { reason = [["", reason]]; }
      else if (reason && typeof reason === "object") {
        reason = reason.map(function (pair) { return [data.judges[pair[0]], pair[1]]; });
      }
      return [def[0], typeof def[1] === "number" ? def[1] : null, entry[1],
        reason === undefined ? null : reason];
    });
  };
  run.summaryOf = function (row) {
    var detail = run.detail(row);
    if (detail.c) {
      var met = 0, total = 0;
      run.criteriaOf(detail).forEach(function (c) {
        var weight = c[1] === null ? 1 : c[1];
        if (weight > 0) { total += 1; if (c[2] === 1 || c[2] === true) { met += 1; } }
      });
      return "criteria met: " + met + " of " + total;
    }
    return clip(detail.e || "", 160);
  };

  function cutNote(full, file) {
    return el("p", "preview of " + full + " characters; the full text is in " + file, "cut");
  }
  function textBlock(box, tag, text, full, file, cls) {
    box.appendChild(el(tag, text, cls));
    if (full) { box.appendChild(cutNote(full, file)); }
  }
  // One text of the record's element, copied as text, with its cut note.
  function copied(node, tag, cls) {
    var out = el(tag, node.textContent, cls);
    var full = node.getAttribute("data-n");
    var wrap = el("div");
    wrap.appendChild(out);
    if (full) { wrap.appendChild(cutNote(full, data.files.inputs)); }
    return wrap;
  }

  function choicesOf(node, chosen) {
    var list = el("ol", null, "choices");
    Array.prototype.forEach.call(node.querySelectorAll(".q-choices > li"), function (li) {
      var id = li.getAttribute("data-id");
      var isGold = li.hasAttribute("data-gold");
      var isChosen = chosen.indexOf(id) >= 0;
      var item = el("li", null, "choice" + (isGold ? " gold" : "") + (isChosen ? " chosen" : ""));
      item.setAttribute("data-choice", id);
      item.appendChild(el("b", id + ". "));
      item.appendChild(document.createTextNode(li.textContent));
      if (isGold || isChosen) {
        item.appendChild(el("span", isGold && isChosen ? " ✓ correct, chosen" :
          isGold ? " ✓ correct" : " ✗ chosen", "mark"));
      }
      var full = li.getAttribute("data-n");
      if (full) { item.appendChild(el("span", " (preview of " + full + " characters)", "cut")); }
      list.appendChild(item);
    });
    return list;
  }

  function rubricOf(node) {
    var ids = (node.getAttribute("data-rubric") || "").split(" ");
    var table = el("table", null, "criteria-table record-rubric");
    var head = table.createTHead().insertRow();
    ["criterion", "weight"].forEach(function (h) { head.appendChild(el("th", h)); });
    var body = table.createTBody();
    ids.forEach(function (id) {
      var def = data.criteria[Number(id)];
      if (!def) { return; }
      var tr = body.insertRow();
      tr.appendChild(el("td", def[0], "criterion"));
      tr.appendChild(el("td", def[1] === null ? "–" : String(def[1]), "num"));
    });
    return table;
  }

  // The question as the record has it: prompt, context, turns, choices (gold and chosen
  // marked; ``withChosen`` false marks the gold only), reference answers, criteria,
  // attachments.
  run.questionView = function (row, withRubric, withChosen) {
    var detail = run.detail(row), node = run.question(row);
    var box = el("div", null, "question");
    if (!node) {
      box.appendChild(el("p", "The question is not shown: " + (data.notes.questions ||
        "the record is not in " + data.files.inputs) + ".", "cut missing-question"));
      if (detail.ch) {
        box.appendChild(el("p", "chosen: " + detail.ch.join(", ") + (detail.co ?
          " · correct: " + detail.co.join(", ") : ""), "choices-note"));
      }
      return box;
    }
    box.appendChild(el("h4", "question"));
    box.appendChild(copied(node.querySelector(".q-prompt"), "div", "prompt"));
    var context = node.querySelector(".q-context");
    if (context) { box.appendChild(el("h5", "context")); box.appendChild(copied(context, "div", "context")); }
    var turns = node.querySelectorAll(".q-messages > li");
    if (turns.length) {
      box.appendChild(el("h5", "conversation before the question"));
      Array.prototype.forEach.call(turns, function (li) {
        var turn = copied(li, "div", "turn");
        turn.insertBefore(el("b", li.getAttribute("data-role") + ": "), turn.firstChild);
        box.appendChild(turn);
      });
    }
    if (node.querySelector(".q-choices")) {
      box.appendChild(el("h5", "choices"));
      box.appendChild(choicesOf(node, withChosen === false ? [] : detail.ch || []));
      if (withChosen !== false && detail.ch && !detail.ch.length) {
        box.appendChild(el("p", "no choice found in the answer", "cut"));
      }
    }
    [[".q-references > li", "reference answers"], [".q-criteria > li", "required criteria"],
      [".q-attachments > li", "attachments"]].forEach(function (part) {
      var found = node.querySelectorAll(part[0]);
      if (!found.length) { return; }
      box.appendChild(el("h5", part[1]));
      var list = el("ul", null, "record-list");
      Array.prototype.forEach.call(found, function (li) { list.appendChild(copied(li, "li")); });
      box.appendChild(list);
    });
    if (withRubric && node.hasAttribute("data-rubric")) {
      box.appendChild(el("h5", "rubric"));
      box.appendChild(rubricOf(node));
    }
    return box;
  };

  function reasonCell(reason, row) {
    var cell = el("td", null, "reasons");
    if (reason === null) {
      cell.appendChild(el("p", "no reason recorded: the judge gave none", "cut no-reason"));
    } else if (typeof reason === "number") {
      cell.appendChild(el("p", "a reason of " + reason + " characters, not shown for room; " +
        "it is in " + where(row), "cut"));
    } else {
      reason.forEach(function (pair) {
        var p = el("p");
        if (pair[0] && reason.length > 1) { p.appendChild(el("b", pair[0] + ": ")); }
        p.appendChild(document.createTextNode(pair[1]));
        cell.appendChild(p);
      });
    }
    return cell;
  }

  run.criteriaTable = function (detail, row) {
    var wrap = el("div", null, "criteria");
    var criteria = run.criteriaOf(detail);
    var met = 0, positive = 0, weightMet = 0, weightAll = 0, penalties = 0;
    criteria.forEach(function (c) {
      var weight = c[1] === null ? 1 : c[1];
      var yes = c[2] === true || c[2] === 1;
      if (weight > 0) {
        positive += 1; weightAll += weight;
        if (yes) { met += 1; weightMet += weight; }
      } else if (yes) { penalties += 1; }
    });
    wrap.appendChild(el("p", "rubric: " + met + " of " + positive + " criteria met (weight " +
      weightMet + " of " + weightAll + ")" + (penalties ? ", " + penalties + " penalt" +
      (penalties === 1 ? "y" : "ies") + " applied" : ""), "rubric-head"));
    var tbl = el("table", null, "criteria-table");
    var head = tbl.createTHead().insertRow();
    ["criterion", "weight", "met", "judge's reason"].forEach(function (h) {
      head.appendChild(el("th", h));
    });
    var tb = tbl.createTBody();
    criteria.forEach(function (c) {
      var tr = tb.insertRow();
      var weight = c[1], metValue = c[2];
      var yes = metValue === true || metValue === 1;
      var shownMet;
      if (metValue === true || metValue === false || metValue === 1 || metValue === 0) {
        shownMet = yes ? "✓ met" : "✗ not met";
      } else if (typeof metValue === "number") {
        shownMet = Math.round(metValue * 100) + "% of judges";
      } else if (metValue && typeof metValue === "object") {
        shownMet = "rating " + metValue.rating + (typeof metValue.score === "number" ?
          " (" + metValue.score.toFixed(2) + ")" : "");
      } else { shownMet = "–"; }
      if (weight !== null && weight < 0 && yes) { tr.className = "penalty"; }
      else if (weight !== null && weight > 0 && !yes && typeof metValue !== "object") {
        tr.className = "unmet";
      }
      tr.appendChild(el("td", c[0], "criterion"));
      tr.appendChild(el("td", weight === null ? "–" : String(weight), "num"));
      tr.appendChild(el("td", shownMet, "met"));
      tr.appendChild(reasonCell(c[3], row));
    });
    wrap.appendChild(tbl);
    return wrap;
  };

  function messagesOf(box, messages, file) {
    messages.forEach(function (m) {
      var turn = el("div", null, "turn");
      turn.appendChild(el("b", m[0] + ":"));
      turn.appendChild(el("pre", m[1]));
      if (m[2]) { turn.appendChild(cutNote(m[2], file)); }
      box.appendChild(turn);
    });
  }

  // The exchange: what was sent, what came back, the judge's prompts and replies.
  run.transcriptView = function (row) {
    var detail = run.detail(row), x = detail.x;
    var box = el("details", null, "transcript");
    if (!x) {
      var said;
      if (!data.transcripts.present || data.notes.transcripts) {
        said = "No transcript: " + (data.notes.transcripts || "not recorded") + ".";
      } else if (missing[row[IDX]]) {
        said = "No transcript: no line of " + data.files.transcripts + " belongs to this item.";
      } else {
        said = "The transcript is in " + data.files.transcripts + " (the line with record_id " +
          recordOf(row) + ", model " + data.models[row[M]] + ", epoch " + shownEpoch(row) +
          "); this page had no room for its preview.";
      }
      box.appendChild(el("summary", "transcript"));
      box.appendChild(el("p", said, "cut"));
      return box;
    }
    var file = data.files.transcripts + " line " + x.l;
    var calls = x.j ? x.j.length : 0;
    box.appendChild(el("summary", "transcript: " + (x.m ? x.m.length : 0) + " messages sent" +
      (calls ? ", " + calls + " judge call" + (calls === 1 ? "" : "s") : "") + " (" + file + ")"));
    if (x.t) { box.appendChild(el("p", "the runner cut some of this exchange to its size bound", "cut")); }
    if (x.m) { box.appendChild(el("h5", "sent to the model")); messagesOf(box, x.m, file); }
    if (x.p) { box.appendChild(el("p", "parameters: " + x.p, "params")); }
    box.appendChild(el("h5", "reply"));
    if (x.a === true) { box.appendChild(el("p", "the response shown above", "cut")); }
    else if (x.a === undefined) { box.appendChild(el("p", "none", "cut")); }
    else { textBlock(box, "pre", x.a, x.an, file); }
    (x.j || []).forEach(function (call) {
      box.appendChild(el("h5", "judge " + call[0] + (call[1] ? " · criterion: " + call[1] : "")));
      messagesOf(box, call[2], file);
      if (call[3] === null) { box.appendChild(el("p", "no reply", "cut")); }
      else {
        box.appendChild(el("b", "reply:"));
        textBlock(box, "pre", call[3], call[4], file);
      }
    });
    return box;
  };

  run.epochsView = function (detail) {
    var box = el("p", null, "epochs");
    box.appendChild(el("b", "epochs: "));
    detail.ep.forEach(function (e, k) {
      var cat = cats[e[1]];
      var span = el("span", (k ? " · " : "") + e[0] + " " + MARK[cat] +
        (e[2] !== null && (cat === "passed" || cat === "failed") ? " " + fmtScore(e[2]) : ""),
        "c-" + cat);
      span.title = cat + ", " + data.files.predictions + " line " + e[3];
      span.setAttribute("data-epoch", String(e[0]));
      box.appendChild(span);
    });
    box.appendChild(el("span", " — one verdict by the run's epoch reducer: " + data.reducer,
      "cut"));
    return box;
  };

  run.answerView = function (row) {
    var detail = run.detail(row), box = el("div", null, "answer");
    if (detail.r !== undefined || detail.rn) {
      box.appendChild(el("h4", "response"));
      if (detail.r) { box.appendChild(el("pre", detail.r)); }
      box.appendChild(el("p", (detail.rn ? "preview of " + detail.rn + " characters; " : "") +
        "the full text is in " + where(row), "cut"));
    } else { box.appendChild(el("p", "no response · source: " + where(row), "source")); }
    return box;
  };

  // The whole item view; options.question false leaves the question out (two runs show it
  // once for both).
  run.detailOf = function (row, options) {
    var detail = run.detail(row);
    var box = el("div", null, "detail");
    var head = run.category(row) + " — " + data.reasons[row[REASON]];
    if (row[SCORE] !== null) { head += " · score " + fmtScore(row[SCORE]); }
    var threshold = "t" in detail ? detail.t : data.threshold;
    if (typeof threshold === "number") { head += " · threshold " + threshold.toFixed(2); }
    box.appendChild(el("p", head, "detail-head"));
    if (detail.ep) { box.appendChild(run.epochsView(detail)); }
    if (detail.w) {
      var ul = el("ul", null, "warnings");
      detail.w.forEach(function (w) { ul.appendChild(el("li", "⚠ " + w)); });
      box.appendChild(ul);
    }
    if (!options || options.question !== false) {
      box.appendChild(run.questionView(row, !detail.c));
    } else if (detail.ch) {
      box.appendChild(el("p", "chosen: " + (detail.ch.join(", ") || "none found"), "choices-note"));
    }
    if (detail.c) { box.appendChild(run.criteriaTable(detail, row)); }
    if (detail.e !== undefined || detail.en) {
      box.appendChild(el("h4", "grader's explanation"));
      if (detail.e) { box.appendChild(el("div", detail.e, "explanation")); }
      if (detail.en) { box.appendChild(cutNote(detail.en, where(row))); }
    }
    box.appendChild(run.answerView(row));
    box.appendChild(run.transcriptView(row));
    return box;
  };
  return run;
}

// j/k (or ↓/↑) go to the next or previous item of ``wanted``; Escape closes it; "/" goes
// to the search box. Not while typing in a field, nor with a modifier key.
function bindKeys(next, close, search) {
  document.addEventListener("keydown", function (event) {
    var tag = event.target && event.target.tagName;
    if (event.altKey || event.ctrlKey || event.metaKey || tag === "INPUT" || tag === "SELECT" ||
      tag === "TEXTAREA") { return; }
    var key = event.key;
    if (key === "j" || key === "ArrowDown") { next(1); }
    else if (key === "k" || key === "ArrowUp") { next(-1); }
    else if (key === "Escape") { close(); }
    else if (key === "/" && search) { search.focus(); }
    else { return; }
    event.preventDefault();
  });
}

function hashParam(name) {
  var found = new RegExp("[#&]" + name + "=([^&]*)").exec(window.location.hash);
  return found ? decodeURIComponent(found[1]) : null;
}
