// The item table and the model matrix, built from the JSON in #report-data.
// Every text goes through textContent: nothing from a run is ever parsed as markup.
(function () {
  "use strict";
  var source = document.getElementById("report-data");
  if (!source) { return; }
  var data = JSON.parse(source.textContent);
  var PAGE = 100, MATRIX_PAGE = 50;
  // Row fields (see report/data.py): record, dataset, model, category, score, reason,
  // latency, warnings, line; data.details[i] belongs to data.rows[i].
  var R = 0, DS = 1, M = 2, CAT = 3, SCORE = 4, REASON = 5, LAT = 6, WARN = 7, LINE = 8,
    IDX = 9;
  var rows = data.rows;
  rows.forEach(function (row, i) { row[IDX] = i; });
  var cats = data.categories;
  var labels = data.labels;

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }
  function fmtScore(value) { return value === null ? "–" : value.toFixed(2); }
  function category(row) { return cats[row[CAT]]; }
  function label(cat) { return labels[cat] || cat; }
  function where(row) {
    if (row[LINE] > 0) { return data.files[0] + " line " + row[LINE]; }
    if (row[LINE] < 0) { return data.files[1] + " line " + (-row[LINE]); }
    return data.files[2];
  }
  function recordOf(row) { return data.records[row[R]]; }
  // The criteria of a detail (see _criteria_json in report/texts.py) as
  // [[title, weight or null, met, [[judge, reason], ...]], ...].
  function criteriaOf(detail) {
    var c = detail.c, out = [], i;
    var entries = [];
    if (c.length === 3 && typeof c[2] === "string") {
      for (i = 0; i < c[1]; i += 1) { entries.push([c[0] + i, c[2].charAt(i) === "1" ? 1 : 0]); }
    } else { entries = c; }
    entries.forEach(function (entry, k) {
      var def = data.criteria[entry[0]];
      var reason = detail.cr ? detail.cr[k] : null;
      var pairs = [];
      if (typeof reason === "string") { pairs = [["", reason]]; }
      else if (reason) {
        pairs = reason.map(function (pair) { return [data.judges[pair[0]], pair[1]]; });
      }
      out.push([def[0], typeof def[1] === "number" ? def[1] : null, entry[1], pairs]);
    });
    return out;
  }
  function summaryOf(row) {
    var detail = data.details[row[IDX]] || {};
    if (detail.c) {
      var met = 0, total = 0;
      criteriaOf(detail).forEach(function (c) {
        var weight = c[1] === null ? 1 : c[1];
        if (weight > 0) { total += 1; if (c[2] === 1 || c[2] === true) { met += 1; } }
      });
      return "criteria met: " + met + " of " + total;
    }
    var text = detail.e || "";
    return text.length > 160 ? text.slice(0, 159) + "…" : text;
  }

  // ---- item table ---------------------------------------------------------------------
  var table = document.getElementById("records");
  var body = table.tBodies[0];
  var text = document.getElementById("record-filter");
  var outcome = document.getElementById("outcome-filter");
  var model = document.getElementById("model-filter");
  var shown = document.getElementById("shown-count");
  var tally = document.getElementById("outcome-counts");
  var more = document.getElementById("records-more");
  var search = rows.map(function (row) {
    return (recordOf(row) + " " + data.datasets[row[DS]] + " " + data.models[row[M]] + " " +
      data.reasons[row[REASON]]).toLowerCase();
  });
  var order = rows.map(function (row, i) { return i; });
  order.sort(function (a, b) { return rows[a][CAT] - rows[b][CAT] || a - b; });
  var matching = order, rendered = 0;
  var keys = {
    record: function (row) { return recordOf(row); },
    dataset: function (row) { return data.datasets[row[DS]]; },
    model: function (row) { return data.models[row[M]]; },
    outcome: function (row) { return row[CAT]; },
    score: function (row) { return row[SCORE]; },
    reason: function (row) { return data.reasons[row[REASON]]; },
    latency: function (row) { return row[LAT]; },
    warnings: function (row) { return row[WARN]; },
    summary: function (row) { return summaryOf(row); }
  };

  function counts() {
    var by = {};
    cats.forEach(function (c) { by[c] = 0; });
    rows.forEach(function (row) { by[category(row)] += 1; });
    tally.textContent = cats.map(function (c) { return label(c) + ": " + by[c]; }).join(" · ");
  }

  function criteriaTable(detail, row) {
    var wrap = el("div", null, "criteria");
    var criteria = criteriaOf(detail);
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
      var weight = c[1];
      var metValue = c[2];
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
      var reasons = el("td", null, "reasons");
      var pairs = c[3];
      pairs.forEach(function (pair) {
        var p = el("p");
        if (pair[0] && pairs.length > 1) { p.appendChild(el("b", pair[0] + ": ")); }
        p.appendChild(document.createTextNode(pair[1]));
        reasons.appendChild(p);
      });
      if (!pairs.length && !detail.cr) { reasons.appendChild(el("p", "in " + where(row), "cut")); }
      tr.appendChild(reasons);
    });
    wrap.appendChild(tbl);
    return wrap;
  }

  function detailOf(row) {
    var detail = data.details[row[IDX]] || {};
    var box = el("div", null, "detail");
    var head = category(row) + " — " + data.reasons[row[REASON]];
    if (row[SCORE] !== null) { head += " · score " + fmtScore(row[SCORE]); }
    if (typeof detail.t === "number") { head += " · threshold " + detail.t.toFixed(2); }
    box.appendChild(el("p", head, "detail-head"));
    if (detail.w) {
      var ul = el("ul", null, "warnings");
      detail.w.forEach(function (w) { ul.appendChild(el("li", "⚠ " + w)); });
      box.appendChild(ul);
    }
    if (detail.c) { box.appendChild(criteriaTable(detail, row)); }
    if (detail.e !== undefined || detail.en) {
      box.appendChild(el("h4", "grader's explanation"));
      if (detail.e) { box.appendChild(el("div", detail.e, "explanation")); }
      if (detail.en) {
        box.appendChild(el("p", "preview of " + detail.en + " characters; the full text is in " +
          where(row), "cut"));
      }
    }
    if (detail.r !== undefined || detail.rn) {
      box.appendChild(el("h4", "response"));
      if (detail.r) { box.appendChild(el("pre", detail.r)); }
      box.appendChild(el("p", (detail.rn ? "preview of " + detail.rn + " characters; " : "") +
        "the full text is in " + where(row), "cut"));
    } else { box.appendChild(el("p", "source: " + where(row), "source")); }
    return box;
  }

  function toggle(tr, row) {
    var next = tr.nextSibling;
    if (next && next.className === "detail-row") {
      body.removeChild(next);
      tr.classList.remove("open");
      return;
    }
    var detailRow = el("tr", null, "detail-row");
    var cell = el("td");
    cell.colSpan = table.tHead.rows[0].cells.length;
    cell.appendChild(detailOf(row));
    detailRow.appendChild(cell);
    body.insertBefore(detailRow, next);
    tr.classList.add("open");
  }

  function rowElement(index) {
    var row = rows[index];
    var cat = category(row);
    var tr = el("tr", null, "rec " + cat);
    tr.setAttribute("data-outcome", cat);
    tr.setAttribute("data-index", String(index));
    tr.appendChild(el("td", recordOf(row), "id"));
    tr.appendChild(el("td", data.datasets[row[DS]]));
    tr.appendChild(el("td", data.models[row[M]]));
    tr.appendChild(el("td", cat, "outcome"));
    tr.appendChild(el("td", fmtScore(row[SCORE]), "num"));
    tr.appendChild(el("td", data.reasons[row[REASON]]));
    if (data.columns.latency) {
      tr.appendChild(el("td", row[LAT] === null ? "–" : row[LAT].toLocaleString("en"), "num"));
    }
    var warnings = (data.details[index] || {}).w || [];
    var warnCell = el("td", null, warnings.length ? "warn" : "");
    if (warnings.length) {
      var first = warnings[0].length > 60 ? warnings[0].slice(0, 59) + "…" : warnings[0];
      warnCell.textContent = "⚠ " + first + (warnings.length > 1 ? " (+" +
        (warnings.length - 1) + ")" : "");
      warnCell.title = warnings.join("\n");
    }
    if (data.columns.warnings) { tr.appendChild(warnCell); }
    tr.appendChild(el("td", summaryOf(row), "summary"));
    tr.addEventListener("click", function () { toggle(tr, row); });
    return tr;
  }

  function renderMore() {
    var end = Math.min(rendered + PAGE, matching.length);
    var fragment = document.createDocumentFragment();
    for (var i = rendered; i < end; i += 1) { fragment.appendChild(rowElement(matching[i])); }
    body.appendChild(fragment);
    rendered = end;
    more.hidden = rendered >= matching.length;
    more.textContent = "show " + Math.min(PAGE, matching.length - rendered) + " more (" +
      (matching.length - rendered) + " not shown)";
  }

  function apply() {
    var started = Date.now();
    var needle = text.value.trim().toLowerCase();
    var wanted = outcome.value;
    var wantedModel = model.value === "" ? -1 : Number(model.value);
    matching = order.filter(function (i) {
      var row = rows[i];
      return (!wanted || category(row) === wanted) &&
        (wantedModel < 0 || row[M] === wantedModel) &&
        (!needle || search[i].indexOf(needle) !== -1);
    });
    while (body.firstChild) { body.removeChild(body.firstChild); }
    rendered = 0;
    renderMore();
    shown.textContent = matching.length + " of " + rows.length + " items";
    shown.setAttribute("data-matching", String(matching.length));
    shown.setAttribute("data-ms", String(Date.now() - started));  // how long this filter took
  }

  function sortBy(th) {
    var key = th.getAttribute("data-key");
    var ascending = th.getAttribute("data-sort") !== "asc";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      cell.removeAttribute("data-sort");
    });
    th.setAttribute("data-sort", ascending ? "asc" : "desc");
    var get = keys[key];
    var values = rows.map(get);
    order.sort(function (a, b) {
      var x = values[a], y = values[b];
      if (x === y) { return rows[a][CAT] - rows[b][CAT] || a - b; }
      if (x === null) { return 1; }
      if (y === null) { return -1; }
      var cmp = typeof x === "number" && typeof y === "number" ? x - y :
        String(x).localeCompare(String(y));
      return ascending ? cmp : -cmp;
    });
    apply();
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    th.addEventListener("click", function () { sortBy(th); });
  });
  var timer = null;
  text.addEventListener("input", function () {
    if (timer !== null) { clearTimeout(timer); }
    timer = setTimeout(apply, 120);
  });
  outcome.addEventListener("change", apply);
  model.addEventListener("change", apply);
  more.addEventListener("click", renderMore);

  // ---- model matrix -------------------------------------------------------------------
  var matrix = document.getElementById("matrix");
  var matrixApply = null;
  if (matrix) {
    var mbody = matrix.tBodies[0];
    var mfilter = document.getElementById("matrix-filter");
    var mdisagree = document.getElementById("matrix-disagree");
    var mcount = document.getElementById("matrix-count");
    var mmore = document.getElementById("matrix-more");
    var records = [], byKey = {};
    rows.forEach(function (row, i) {
      var key = row[DS] + "\u0000" + row[R];
      var rec = byKey[key];
      if (!rec) {
        rec = byKey[key] = { id: recordOf(row), ds: row[DS], cells: [], first: i };
        records.push(rec);
      }
      rec.cells[row[M]] = i;
    });
    records.forEach(function (rec) {
      var pass = false, fail = false, bad = false;
      rec.cells.forEach(function (i) {
        var cat = category(rows[i]);
        pass = pass || cat === "passed";
        fail = fail || cat === "failed";
        bad = bad || cat === "error" || cat === "invalid" || cat === "failed";
      });
      rec.disagree = pass && fail;
      rec.rank = rec.disagree ? 0 : (bad ? 1 : 2);
    });
    records.sort(function (a, b) { return a.rank - b.rank || a.first - b.first; });
    var disagreeing = records.filter(function (rec) { return rec.disagree; }).length;
    var mmatching = records, mrendered = 0;

    var cellOf = function (i) {
      var td = el("td");
      if (i === undefined) { td.textContent = "·"; td.className = "cell none"; return td; }
      var row = rows[i], cat = category(row);
      var shownText = cat === "passed" ? "✓" : cat === "failed" ? "✗" :
        cat === "error" ? "error" : cat === "invalid" ? "invalid" : "skip";
      if (row[SCORE] !== null && (cat === "passed" || cat === "failed")) {
        shownText += " " + fmtScore(row[SCORE]);
      }
      td.textContent = shownText;
      td.className = "cell " + cat;
      td.setAttribute("data-outcome", cat);
      td.title = cat + ": " + data.reasons[row[REASON]] +
        (row[WARN] ? " · attachment warning" : "");
      if (row[WARN]) { td.appendChild(el("span", " ⚠", "warn")); }
      td.addEventListener("click", function () {
        text.value = recordOf(row);
        outcome.value = "";
        model.value = String(row[M]);
        apply();
        var first = body.rows[0];
        if (first) { toggle(first, row); }
        document.getElementById("items").scrollIntoView();
      });
      return td;
    };

    var mrenderMore = function () {
      var end = Math.min(mrendered + MATRIX_PAGE, mmatching.length);
      var fragment = document.createDocumentFragment();
      for (var k = mrendered; k < end; k += 1) {
        var rec = mmatching[k];
        var tr = el("tr", null, rec.disagree ? "rec disagree" : "rec");
        tr.setAttribute("data-record", rec.id);
        tr.appendChild(el("td", rec.id, "id"));
        tr.appendChild(el("td", data.datasets[rec.ds]));
        tr.appendChild(el("td", rec.disagree ? "≠" : "", "flag"));
        for (var m = 0; m < data.models.length; m += 1) { tr.appendChild(cellOf(rec.cells[m])); }
        fragment.appendChild(tr);
      }
      mbody.appendChild(fragment);
      mrendered = end;
      mmore.hidden = mrendered >= mmatching.length;
      mmore.textContent = "show " + Math.min(MATRIX_PAGE, mmatching.length - mrendered) +
        " more (" +
        (mmatching.length - mrendered) + " not shown)";
    };

    matrixApply = function () {
      var needle = mfilter.value.trim().toLowerCase();
      mmatching = records.filter(function (rec) {
        return (!mdisagree.checked || rec.disagree) && (!needle ||
          (rec.id + " " + data.datasets[rec.ds]).toLowerCase().indexOf(needle) !== -1);
      });
      while (mbody.firstChild) { mbody.removeChild(mbody.firstChild); }
      mrendered = 0;
      mrenderMore();
      mcount.textContent = mmatching.length + " of " + records.length + " records · " +
        disagreeing + " with disagreeing models";
      mcount.setAttribute("data-disagree", String(disagreeing));
    };
    var mtimer = null;
    mfilter.addEventListener("input", function () {
      if (mtimer !== null) { clearTimeout(mtimer); }
      mtimer = setTimeout(matrixApply, 120);
    });
    mdisagree.addEventListener("change", matrixApply);
    mmore.addEventListener("click", mrenderMore);
  }

  // A view can be preset through the address:
  // report.html#filter=wrong_answer&outcome=failed&model=1&open=first&disagree=1
  function param(name) {
    var found = new RegExp("[#&]" + name + "=([^&]*)").exec(window.location.hash);
    return found ? decodeURIComponent(found[1]) : null;
  }
  if (param("filter") !== null) { text.value = param("filter"); }
  if (param("outcome") !== null) { outcome.value = param("outcome"); }
  if (param("model") !== null) { model.value = param("model"); }
  if (matrix && param("disagree") === "1") {
    document.getElementById("matrix-disagree").checked = true;
  }
  counts();
  apply();
  if (matrixApply) { matrixApply(); }
  if (param("open") === "first" && body.rows[0]) {
    toggle(body.rows[0], rows[matching[0]]);
  }
}());
