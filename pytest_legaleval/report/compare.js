// Two runs side by side: one row per item both runs have (or one of them has), the items
// whose verdict changed first; a row opens the question once and both item views.
(function () {
  var pairsData = readData("compare-data");
  if (!pairsData) { return; }
  var runs = [makeRun(readData("report-data-a")), makeRun(readData("report-data-b"))];
  var pairs = pairsData.pairs, changes = pairsData.changes;
  var PAGE = 100;
  var table = document.getElementById("pairs");
  var body = table.tBodies[0];
  var filter = document.getElementById("pair-filter");
  var words = document.getElementById("text-search");
  var change = document.getElementById("change-filter");
  var shown = document.getElementById("pair-count");
  var more = document.getElementById("pairs-more");
  var matching = pairs.map(function (p, i) { return i; }), rendered = 0, current = -1;

  // The side a pair's record is named from: B's when B has the item, else A's.
  function main(pair) { return pair[1] >= 0 ? [runs[1], pair[1]] : [runs[0], pair[0]]; }
  function rowOf(side, pair) {
    var at = pair[side];
    return at >= 0 ? runs[side].rows[at] : null;
  }
  function verdict(side, pair) {
    var row = rowOf(side, pair);
    if (!row) { return "–"; }
    var run = runs[side], cat = run.category(row);
    return MARK[cat] + (row[SCORE] !== null && (cat === "passed" || cat === "failed") ?
      " " + fmtScore(row[SCORE]) : "") + (cat === "error" || cat === "invalid" ? " " +
      run.data.reasons[row[REASON]] : "");
  }
  var filterText = pairs.map(function (pair) {
    var named = main(pair), row = named[0].rows[named[1]];
    return (named[0].recordOf(row) + " " + named[0].data.datasets[row[DS]] + " " +
      named[0].data.models[row[M]]).toLowerCase();
  });
  function searchText(pair) {
    return (pair[0] >= 0 ? runs[0].searchText(pair[0]) : "") + " " +
      (pair[1] >= 0 ? runs[1].searchText(pair[1]) : "");
  }

  function sideView(side, pair) {
    var box = el("div", null, "side side-" + "ab".charAt(side));
    box.appendChild(el("p", "run " + "AB".charAt(side) + " · " + pairsData.runs[side], "side-head"));
    var row = rowOf(side, pair);
    if (!row) { box.appendChild(el("p", "this run has no such item", "cut")); return box; }
    var view = runs[side].detailOf(row, { question: false });
    box.appendChild(view);
    return box;
  }
  function detailOf(pair) {
    var box = el("div", null, "detail pair-detail");
    var named = main(pair);
    var row = named[0].rows[named[1]];
    box.appendChild(named[0].questionView(row, true, false));
    var sides = el("div", null, "sides");
    sides.appendChild(sideView(0, pair));
    sides.appendChild(sideView(1, pair));
    box.appendChild(sides);
    return box;
  }

  function rowAt(position) {
    return body.querySelector('tr.pair[data-pair="' + matching[position] + '"]');
  }
  function select(position, scroll) {
    var last = current >= 0 ? rowAt(current) : null;
    if (last) {
      var open = last.nextSibling;
      if (open && open.className === "detail-row") { body.removeChild(open); }
      last.classList.remove("current", "open");
    }
    current = position;
    if (position < 0) { return; }
    while (rendered <= position) { renderMore(); }
    var tr = rowAt(position);
    var detailRow = el("tr", null, "detail-row");
    var cell = el("td");
    cell.colSpan = table.tHead.rows[0].cells.length;
    cell.appendChild(detailOf(pairs[matching[position]]));
    detailRow.appendChild(cell);
    body.insertBefore(detailRow, tr.nextSibling);
    tr.classList.add("current", "open");
    if (scroll !== false) { tr.scrollIntoView({ block: "start" }); }
  }
  // j/k walk the pairs whose verdict changed (regressed, fixed, changed).
  function nextChanged(step) {
    for (var k = current + step; k >= 0 && k < matching.length; k += step) {
      if (pairs[matching[k]][2] <= 2) { select(k); return; }
    }
  }

  function rowElement(index) {
    var pair = pairs[index], named = main(pair), row = named[0].rows[named[1]];
    var kind = changes[pair[2]];
    var tr = el("tr", null, "pair " + kind.replace(/ /g, "-"));
    tr.setAttribute("data-pair", String(index));
    tr.setAttribute("data-change", kind);
    tr.appendChild(el("td", named[0].recordOf(row), "id"));
    tr.appendChild(el("td", clip(named[0].questionText(row), 120), "question-cell"));
    tr.appendChild(el("td", named[0].data.models[row[M]]));
    tr.appendChild(el("td", verdict(0, pair), "verdict-a"));
    tr.appendChild(el("td", verdict(1, pair), "verdict-b"));
    tr.appendChild(el("td", kind, "change"));
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
    var needle = filter.value.trim().toLowerCase();
    var phrase = words.value.trim().toLowerCase();
    var wanted = change.value;
    matching = [];
    pairs.forEach(function (pair, i) {
      if ((wanted === "" || (wanted === "changed verdicts" ? pair[2] <= 2 : changes[pair[2]] === wanted)) &&
        (!needle || filterText[i].indexOf(needle) !== -1) &&
        (!phrase || searchText(pair).indexOf(phrase) !== -1)) { matching.push(i); }
    });
    while (body.firstChild) { body.removeChild(body.firstChild); }
    rendered = 0;
    current = -1;
    renderMore();
    shown.textContent = matching.length + " of " + pairs.length + " items";
  }
  [filter, words].forEach(function (input) {
    var timer = null;
    input.addEventListener("input", function () {
      if (timer !== null) { clearTimeout(timer); }
      timer = setTimeout(apply, 150);
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { if (timer !== null) { clearTimeout(timer); } apply(); }
    });
  });
  change.addEventListener("change", apply);
  more.addEventListener("click", renderMore);
  bindKeys(nextChanged, function () { select(-1); }, words);
  if (hashParam("filter") !== null) { filter.value = hashParam("filter"); }
  if (hashParam("search") !== null) { words.value = hashParam("search"); }
  if (hashParam("change") !== null) { change.value = hashParam("change"); }
  apply();
  if (hashParam("open") === "first" && body.rows[0]) { select(0); }
}());
