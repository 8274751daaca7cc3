// The report of one run: the item table (filters, search, keyboard) and the model matrix,
// built from the JSON in #report-data with the item view of view.js.
(function () {
  var data = readData("report-data");
  if (!data) { return; }
  var run = makeRun(data);
  var rows = run.rows, cats = data.categories;
  var PAGE = 100, MATRIX_PAGE = 50;
  var category = run.category, recordOf = run.recordOf;

  // ---- item table ---------------------------------------------------------------------
  var table = document.getElementById("records");
  var body = table.tBodies[0];
  var text = document.getElementById("record-filter");
  var words = document.getElementById("text-search");
  var outcome = document.getElementById("outcome-filter");
  var model = document.getElementById("model-filter");
  var shown = document.getElementById("shown-count");
  var tally = document.getElementById("outcome-counts");
  var more = document.getElementById("records-more");
  var flakyBox = document.getElementById("flaky-filter");
  var flaky = {};
  (data.flaky || []).forEach(function (i) { flaky[i] = true; });
  var filterText = rows.map(function (row) {
    return (recordOf(row) + " " + data.datasets[row[DS]] + " " + data.models[row[M]] + " " +
      data.reasons[row[REASON]]).toLowerCase();
  });
  var order = rows.map(function (row, i) { return i; });
  order.sort(function (a, b) { return rows[a][CAT] - rows[b][CAT] || a - b; });
  var matching = order, rendered = 0, current = -1;
  var keys = {
    record: function (row) { return recordOf(row); },
    question: function (row) { return run.questionText(row); },
    dataset: function (row) { return data.datasets[row[DS]]; },
    model: function (row) { return data.models[row[M]]; },
    outcome: function (row) { return row[CAT]; },
    score: function (row) { return row[SCORE]; },
    reason: function (row) { return data.reasons[row[REASON]]; },
    latency: function (row) { return row[LAT]; },
    warnings: function (row) { return row[WARN]; },
    summary: function (row) { return run.summaryOf(row); }
  };

  function counts() {
    var by = {};
    cats.forEach(function (c) { by[c] = 0; });
    rows.forEach(function (row) { by[category(row)] += 1; });
    tally.textContent = cats.map(function (c) { return run.label(c) + ": " + by[c]; }).join(" · ");
  }

  function detailRowOf(tr) {
    var next = tr.nextSibling;
    return next && next.className === "detail-row" ? next : null;
  }
  function close(tr) {
    var open = detailRowOf(tr);
    if (open) { body.removeChild(open); }
    tr.classList.remove("open");
  }
  function open(tr, row) {
    if (detailRowOf(tr)) { return; }
    var detailRow = el("tr", null, "detail-row");
    var cell = el("td");
    cell.colSpan = table.tHead.rows[0].cells.length;
    cell.appendChild(run.detailOf(row));
    detailRow.appendChild(cell);
    body.insertBefore(detailRow, tr.nextSibling);
    tr.classList.add("open");
  }
  function rowAt(position) {
    return body.querySelector('tr.rec[data-index="' + matching[position] + '"]');
  }
  // Make ``position`` (in the filtered order) the current item: open it, close the last.
  function select(position, scroll) {
    var last = current >= 0 ? rowAt(current) : null;
    if (last) { close(last); last.classList.remove("current"); }
    current = position;
    if (position < 0) { return; }
    while (rendered <= position) { renderMore(); }
    var tr = rowAt(position);
    open(tr, rows[matching[position]]);
    tr.classList.add("current");
    if (scroll !== false) { tr.scrollIntoView({ block: "start" }); }
  }
  function nextFailure(step) {
    for (var k = current + step; k >= 0 && k < matching.length; k += step) {
      if (run.isFailure(rows[matching[k]])) { select(k); return; }
    }
  }

  function rowElement(index) {
    var row = rows[index];
    var cat = category(row);
    var tr = el("tr", null, "rec " + cat);
    tr.setAttribute("data-outcome", cat);
    tr.setAttribute("data-index", String(index));
    tr.appendChild(el("td", recordOf(row), "id"));
    tr.appendChild(el("td", clip(run.questionText(row), 140), "question-cell"));
    tr.appendChild(el("td", data.datasets[row[DS]]));
    tr.appendChild(el("td", data.models[row[M]]));
    tr.appendChild(el("td", cat + (run.detail(row).ep ? " (" + run.detail(row).ep.length +
      " epochs)" : ""), "outcome"));
    tr.appendChild(el("td", fmtScore(row[SCORE]), "num"));
    tr.appendChild(el("td", data.reasons[row[REASON]]));
    if (data.columns.latency) {
      tr.appendChild(el("td", row[LAT] === null ? "–" : row[LAT].toLocaleString("en"), "num"));
    }
    var warnings = run.detail(row).w || [];
    if (data.columns.warnings) {
      var warnCell = el("td", null, warnings.length ? "warn" : "");
      if (warnings.length) {
        warnCell.textContent = "⚠ " + clip(warnings[0], 60) + (warnings.length > 1 ? " (+" +
          (warnings.length - 1) + ")" : "");
        warnCell.title = warnings.join("\n");
      }
      tr.appendChild(warnCell);
    }
    tr.appendChild(el("td", run.summaryOf(row), "summary"));
    tr.addEventListener("click", function () {
      var position = matching.indexOf(index);
      select(position === current ? -1 : position, false);
    });
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
    var phrase = words.value.trim().toLowerCase();
    var wanted = outcome.value;
    var wantedModel = model.value === "" ? -1 : Number(model.value);
    var onlyFlaky = flakyBox !== null && flakyBox.checked;
    matching = order.filter(function (i) {
      var row = rows[i];
      return (!wanted || category(row) === wanted) && (!onlyFlaky || flaky[i] === true) &&
        (wantedModel < 0 || row[M] === wantedModel) &&
        (!needle || filterText[i].indexOf(needle) !== -1) &&
        (!phrase || run.searchText(i).indexOf(phrase) !== -1);
    });
    while (body.firstChild) { body.removeChild(body.firstChild); }
    rendered = 0;
    current = -1;
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
    var values = rows.map(keys[key]);
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
  function debounced(input) {
    var timer = null;
    input.addEventListener("input", function () {
      if (timer !== null) { clearTimeout(timer); }
      timer = setTimeout(apply, 150);
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { if (timer !== null) { clearTimeout(timer); } apply(); }
    });
  }
  debounced(text);
  debounced(words);
  outcome.addEventListener("change", apply);
  model.addEventListener("change", apply);
  more.addEventListener("click", renderMore);
  if (flakyBox) { flakyBox.addEventListener("change", apply); }
  bindKeys(nextFailure, function () { select(-1); }, words);

  // Open one item (record id and model name) in the table: the filters are set to it, so
  // the row is there whatever was filtered before.
  function openItem(record, modelName) {
    var wantedModel = data.models.indexOf(modelName);
    var index = -1;
    for (var i = 0; i < rows.length && index < 0; i += 1) {
      if (recordOf(rows[i]) === record && rows[i][M] === wantedModel) { index = i; }
    }
    if (index < 0) { return false; }
    text.value = record;
    words.value = "";
    outcome.value = "";
    model.value = String(wantedModel);
    if (flakyBox) { flakyBox.checked = false; }
    apply();
    var position = matching.indexOf(index);
    if (position >= 0) { select(position); }
    return position >= 0;
  }

  // ---- sections above and below the table --------------------------------------------
  var flakyLink = document.getElementById("flaky-link");
  if (flakyLink && flakyBox) {
    flakyLink.addEventListener("click", function (event) {
      event.preventDefault();
      text.value = "";
      words.value = "";
      outcome.value = "";
      model.value = "";
      flakyBox.checked = true;
      apply();
      document.getElementById("items").scrollIntoView();
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("#disagreements tr.disagreement"),
    function (tr) {
      var go = function () {
        if (!openItem(tr.getAttribute("data-record"), tr.getAttribute("data-model"))) {
          tr.title = "this item is not in the report's items";
          tr.classList.add("absent");
        }
      };
      tr.addEventListener("click", go);
      tr.addEventListener("keydown", function (event) {
        if (event.key === "Enter") { go(); }
      });
    });

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
      var shownText = MARK[cat];
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
        words.value = "";
        outcome.value = "";
        model.value = String(row[M]);
        apply();
        if (body.rows[0]) { select(0); }
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
        " more (" + (mmatching.length - mrendered) + " not shown)";
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
  // report.html#filter=wrong_answer&search=lease&outcome=failed&model=1&open=first&disagree=1
  // (and &flaky=1: only the flaky items)
  if (hashParam("filter") !== null) { text.value = hashParam("filter"); }
  if (hashParam("search") !== null) { words.value = hashParam("search"); }
  if (hashParam("outcome") !== null) { outcome.value = hashParam("outcome"); }
  if (hashParam("model") !== null) { model.value = hashParam("model"); }
  if (flakyBox && hashParam("flaky") === "1") { flakyBox.checked = true; }
  if (matrix && hashParam("disagree") === "1") { mdisagree.checked = true; }
  counts();
  apply();
  if (matrixApply) { matrixApply(); }
  if (hashParam("open") === "first" && body.rows[0]) { select(0); }
}());
