// Filters the findings table: free text, severity, kind. No libraries, no network.
(function () {
  var table = document.getElementById('findings');
  if (!table) { return; }
  var text = document.getElementById('f-text');
  var kind = document.getElementById('f-kind');
  var sevs = Array.prototype.slice.call(document.querySelectorAll('input.f-sev'));
  var shown = document.getElementById('f-shown');
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  function apply() {
    var q = text.value.toLowerCase();
    var k = kind.value;
    var on = {};
    sevs.forEach(function (c) { on[c.value] = c.checked; });
    var n = 0;
    rows.forEach(function (r) {
      var ok = on[r.dataset.severity] && (!k || r.dataset.kind === k) && (!q || r.textContent.toLowerCase().indexOf(q) >= 0);
      r.hidden = !ok;
      if (ok) { n++; }
    });
    shown.textContent = n + ' of ' + rows.length + ' shown';
  }
  text.addEventListener('input', apply);
  kind.addEventListener('change', apply);
  sevs.forEach(function (c) { c.addEventListener('change', apply); });
  apply();
})();

// Filters the table of every topic (big reports): free text, only faulty ones.
(function () {
  var table = document.getElementById('topics');
  if (!table) { return; }
  var text = document.getElementById('t-text');
  var faulty = document.getElementById('t-faulty');
  var shown = document.getElementById('t-shown');
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  function apply() {
    var q = text.value.toLowerCase();
    var n = 0;
    rows.forEach(function (r) {
      var ok = (!faulty.checked || r.dataset.faulty) && (!q || r.cells[0].textContent.toLowerCase().indexOf(q) >= 0);
      r.hidden = !ok;
      if (ok) { n++; }
    });
    shown.textContent = n + ' of ' + rows.length + ' shown';
  }
  text.addEventListener('input', apply);
  faulty.addEventListener('change', apply);
  apply();
})();
