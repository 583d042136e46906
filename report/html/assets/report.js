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

// The table of every topic (reports of more topics than are drawn). Its rows
// come as data (the topic-data element: render.go, writeTopicData) and only
// those in view become DOM rows, so that a million of them open in seconds.
// Filters: free text and "only topics with findings"; the page's address may
// set them (report.html#q=orders&faulty=1). Columns sort on a click.
(function () {
  var data = document.getElementById('topic-data');
  var scroll = document.getElementById('t-scroll');
  if (!data || !scroll) { return; }
  var d = JSON.parse(data.textContent);
  var n = d.n, cols = d.cols, v = d.v, coded = d.names, restart = d.restart, names = null;
  var anchors = {};
  d.drawn.forEach(function (p) { anchors[p[0]] = p[1]; });
  d = null;
  data.textContent = ''; // the parsed rows are all the page keeps
  // Names are front-coded, each whole again every restart rows: one is
  // decoded from its restart; all of them only when a text filter needs them.
  function nameOf(i) {
    if (names) { return names[i]; }
    var j = i - i % restart, s = coded[2 * j + 1];
    for (j++; j <= i; j++) { s = s.slice(0, coded[2 * j]) + coded[2 * j + 1]; }
    return s;
  }
  function allNames() {
    if (!names) {
      var out = new Array(n), prev = '';
      for (var i = 0; i < n; i++) { prev = prev.slice(0, coded[2 * i]) + coded[2 * i + 1]; out[i] = prev; }
      names = out;
    }
    return names;
  }
  var table = document.getElementById('topics'), body = table.tBodies[0];
  var spacer = document.getElementById('t-spacer');
  var text = document.getElementById('t-text'), faulty = document.getElementById('t-faulty');
  var shown = document.getElementById('t-shown');
  var ROW = 25, MAXH = 4000000; // browsers cap an element's height: past it, scrolling maps proportionally
  var order = null, view = new Int32Array(0), queued = false;
  function num(i, c) { return v[i * cols + c]; }
  function faultyRow(i) { return num(i, 3) > 0 || num(i, 4) > 0 || num(i, 5) > 0; }
  // Most errors, then warnings, then info, then by name (the data's order), as
  // CompareWorst in model.go: a counting sort on the three counts (each capped
  // at 2^17-1, past which counts tie), as a comparison sort of a million rows
  // takes seconds.
  function sortWorst() {
    var score = new Float64Array(n), count = new Map(), cap = 131071, i;
    for (i = 0; i < n; i++) {
      var s = Math.min(num(i, 3), cap) * 17179869184 + Math.min(num(i, 4), cap) * 131072 + Math.min(num(i, 5), cap);
      score[i] = s;
      count.set(s, (count.get(s) || 0) + 1);
    }
    var at = new Map(), pos = 0;
    Array.from(count.keys()).sort(function (a, b) { return b - a; }).forEach(function (k) { at.set(k, pos); pos += count.get(k); });
    for (i = 0; i < n; i++) {
      var p = at.get(score[i]);
      order[p] = i;
      at.set(score[i], p + 1);
    }
  }
  function sortBy(key) {
    order = new Int32Array(n);
    if (key === 'worst') {
      sortWorst();
    } else {
      for (var i = 0; i < n; i++) { order[i] = i; }
      if (key !== 'name') {
        var c = +key;
        order.sort(function (a, b) { return num(b, c) - num(a, c) || a - b; });
      }
    }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.classList.toggle('sorted', th.dataset.sort === key);
    });
  }
  function apply() {
    var q = text.value, re = q ? new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i') : null;
    var only = faulty.checked, out = new Int32Array(n), k = 0, all = re ? allNames() : null;
    for (var j = 0; j < n; j++) {
      var i = order[j];
      if ((only && !faultyRow(i)) || (re && !re.test(all[i]))) { continue; }
      out[k++] = i;
    }
    view = out.subarray(0, k);
    shown.textContent = k + ' of ' + n + ' shown';
    spacer.style.height = Math.min(k * ROW + table.tHead.offsetHeight, MAXH) + 'px';
    scroll.scrollTop = 0;
    draw();
  }
  function cell(tr, s, cls) {
    var td = tr.insertCell();
    td.textContent = s;
    if (cls) { td.className = cls; }
    return td;
  }
  function row(i) {
    var tr = document.createElement('tr'), name = nameOf(i);
    tr.dataset.topic = name;
    if (faultyRow(i)) { tr.dataset.faulty = '1'; }
    var td = tr.insertCell();
    if (anchors[name]) {
      var a = document.createElement('a');
      a.href = '#' + anchors[name];
      a.textContent = name;
      td.appendChild(a);
    } else {
      td.textContent = name;
    }
    td.title = name;
    for (var c = 0; c < 3; c++) { cell(tr, num(i, c), 'num'); }
    cell(tr, num(i, 3), num(i, 3) > 0 ? 'num sev-error' : 'num');
    cell(tr, num(i, 4), num(i, 4) > 0 ? 'num sev-warning' : 'num');
    cell(tr, num(i, 5), 'num');
    var withEntries = num(i, 6), versions = num(i, 8), bad = num(i, 9);
    cell(tr, withEntries > 0 ? num(i, 7) + ' of ' + withEntries : '-', 'num');
    cell(tr, versions > 0 ? versions + (bad > 0 ? ', ' + bad + ' bad' : '') : '-', bad > 0 ? 'num sev-error' : 'num');
    return tr;
  }
  function draw() {
    queued = false;
    var head = table.tHead.offsetHeight, fit = Math.max(1, Math.floor((scroll.clientHeight - head) / ROW));
    var maxScroll = scroll.scrollHeight - scroll.clientHeight, last = Math.max(0, view.length - fit);
    var first = maxScroll > 0 ? Math.min(last, Math.round(scroll.scrollTop / maxScroll * last)) : 0;
    table.style.top = scroll.scrollTop + 'px';
    var frag = document.createDocumentFragment();
    for (var j = first; j < Math.min(view.length, first + fit + 1); j++) { frag.appendChild(row(view[j])); }
    body.textContent = '';
    body.appendChild(frag);
  }
  scroll.addEventListener('scroll', function () {
    if (!queued) { queued = true; window.requestAnimationFrame(draw); }
  });
  var timer = 0;
  text.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(apply, 150); });
  faulty.addEventListener('change', apply);
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    th.addEventListener('click', function () { sortBy(th.dataset.sort); apply(); });
  });
  var hash = new URLSearchParams(location.hash.replace(/^#/, ''));
  if (hash.has('q')) { text.value = hash.get('q'); }
  if (hash.get('faulty') === '1') { faulty.checked = true; }
  sortBy('worst');
  apply();
  scroll.dataset.readyMs = Math.round(performance.now());
})();
