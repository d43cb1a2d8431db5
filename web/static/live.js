// Gatehouse live queue: polls /live/queue (an HTML fragment rendered by the
// same template as the page) and merges it in without a reload, keeping the
// cards already shown untouched so a reason being typed is not lost. Also
// counts down each request's time left. The page works without this file.
(function () {
  'use strict';
  var POLL_MS = 3000;
  var skew = 0; // server clock minus this browser's clock, in ms

  function readClock(root) {
    var c = root.querySelector('#live-clock');
    if (c) skew = Number(c.getAttribute('data-now')) - Date.now();
  }

  function fmt(ms) {
    if (ms <= 0) return 'expired';
    var s = Math.floor(ms / 1000), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    s = s % 60;
    return (h ? h + 'h' : '') + (h || m ? m + 'm' : '') + s + 's left';
  }

  function tick() {
    var now = Date.now() + skew;
    document.querySelectorAll('.left[data-expires]').forEach(function (el) {
      el.textContent = fmt(Number(el.getAttribute('data-expires')) - now);
    });
  }

  // merge makes list hold next's items in next's order, reusing the nodes
  // of items it already shows.
  function merge(list, next) {
    var have = {};
    list.querySelectorAll(':scope > li[data-id]').forEach(function (li) { have[li.getAttribute('data-id')] = li; });
    var want = Array.prototype.slice.call(next.querySelectorAll(':scope > li[data-id]'));
    var keep = {};
    want.forEach(function (li, i) {
      var id = li.getAttribute('data-id');
      var node = have[id] || document.adoptNode(li);
      keep[id] = true;
      if (list.children[i] !== node) list.insertBefore(node, list.children[i] || null);
    });
    Object.keys(have).forEach(function (id) { if (!keep[id]) have[id].remove(); });
    return want.length;
  }

  function apply(html) {
    var tpl = document.createElement('template');
    tpl.innerHTML = html;
    var frag = tpl.content;
    readClock(frag);
    var list = document.getElementById('queue'), next = frag.querySelector('#queue');
    if (!list || !next) return;
    var n = merge(list, next);
    var empty = document.getElementById('queue-empty');
    if (empty) empty.hidden = n > 0;
    var recent = document.getElementById('recent'), nextRecent = frag.querySelector('#recent');
    if (recent && nextRecent) recent.replaceWith(document.adoptNode(nextRecent));
    document.title = (n ? '(' + n + ') ' : '') + document.title.replace(/^\(\d+\) /, '');
    tick();
  }

  function status(text) {
    var el = document.getElementById('live-status');
    if (!el) return;
    el.hidden = !text;
    el.textContent = text;
  }

  function poll(url) {
    fetch(url, { credentials: 'same-origin', headers: { 'Accept': 'text/html' }, cache: 'no-store' })
      .then(function (res) {
        if (res.status === 401) { window.location.reload(); return null; }
        if (!res.ok) throw new Error('HTTP ' + res.status);
        return res.text();
      })
      .then(function (html) { if (html !== null) { apply(html); status(''); } })
      .catch(function () { status('Live updates paused: the server did not answer. Retrying…'); })
      .finally(function () { setTimeout(function () { poll(url); }, POLL_MS); });
  }

  document.addEventListener('DOMContentLoaded', function () {
    var live = document.querySelector('[data-live]');
    if (!live) return;
    readClock(document);
    tick();
    setInterval(tick, 1000);
    setTimeout(function () { poll(live.getAttribute('data-live')); }, POLL_MS);
  });
})();
