// Filtering, counting and sorting of the per-record table. Reads data- attributes only.
(function () {
  "use strict";
  var table = document.getElementById("records");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var text = document.getElementById("record-filter");
  var outcome = document.getElementById("outcome-filter");
  var shown = document.getElementById("shown-count");
  var counts = document.getElementById("outcome-counts");

  function tally() {
    var byOutcome = {};
    rows.forEach(function (row) {
      var key = row.getAttribute("data-outcome");
      byOutcome[key] = (byOutcome[key] || 0) + 1;
    });
    counts.textContent = Object.keys(byOutcome).sort().map(function (key) {
      return key + ": " + byOutcome[key];
    }).join(" · ");
  }

  function apply() {
    var needle = text.value.trim().toLowerCase();
    var wanted = outcome.value;
    var visible = 0;
    rows.forEach(function (row) {
      var keep = (!wanted || row.getAttribute("data-outcome") === wanted) &&
        (!needle || row.getAttribute("data-search").indexOf(needle) !== -1);
      row.classList.toggle("hidden", !keep);
      if (keep) { visible += 1; }
    });
    shown.textContent = visible + " of " + rows.length + " records shown";
    shown.setAttribute("data-visible", String(visible));
  }

  function sortBy(index) {
    var th = table.tHead.rows[0].cells[index];
    var ascending = th.getAttribute("data-sort") !== "asc";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      cell.removeAttribute("data-sort");
    });
    th.setAttribute("data-sort", ascending ? "asc" : "desc");
    rows.sort(function (a, b) {
      var x = a.cells[index].textContent, y = b.cells[index].textContent;
      var nx = parseFloat(x.replace(/,/g, "")), ny = parseFloat(y.replace(/,/g, ""));
      var cmp = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return ascending ? cmp : -cmp;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell, index) {
    cell.addEventListener("click", function () { sortBy(index); });
  });
  text.addEventListener("input", apply);
  outcome.addEventListener("change", apply);
  // A filter can be preset through the address: report.html#filter=wrong_answer
  var preset = /[#&]filter=([^&]*)/.exec(window.location.hash);
  if (preset) { text.value = decodeURIComponent(preset[1]); }
  var presetOutcome = /[#&]outcome=([^&]*)/.exec(window.location.hash);
  if (presetOutcome) { outcome.value = decodeURIComponent(presetOutcome[1]); }
  tally();
  apply();
}());
