// Gatehouse pages, small helpers; every page works without this file.
//  - Keyboard shortcuts on the queue (j/k move, a approve, r reject,
//    o or Enter open) and on a request page (a, r), never while typing.
//  - Approving on a critical route asks to confirm in place (the server
//    asks on a page of its own when this script does not run).
//  - Charts open scrolled to the latest day.
(function () {
  'use strict';
  var KEEP = 'gatehouse.selected'; // the queue position to come back to after a verdict

  function cards() {
    return Array.prototype.slice.call(document.querySelectorAll('#queue > li.card'));
  }

  function selected() {
    return document.querySelector('#queue > li.card.selected');
  }

  function select(i) {
    var all = cards();
    if (!all.length) return null;
    i = Math.max(0, Math.min(i, all.length - 1));
    all.forEach(function (li) { li.classList.remove('selected'); });
    var li = all[i];
    li.classList.add('selected');
    li.setAttribute('tabindex', '-1');
    li.focus({ preventScroll: true });
    li.scrollIntoView({ block: 'nearest' });
    return li;
  }

  function move(step) {
    var all = cards(), cur = selected();
    select(cur ? all.indexOf(cur) + step : 0);
  }

  // press clicks the verdict button of the selected card (or of the only
  // form on a request page), which submits its form.
  function press(verdict) {
    var scope = selected();
    if (!scope) {
      if (document.getElementById('queue')) return; // choose a card first (j)
      scope = document;
    } else {
      sessionStorage.setItem(KEEP, String(cards().indexOf(scope)));
    }
    var b = scope.querySelector('form.decide button[name=verdict][value=' + verdict + ']');
    if (b) b.click();
  }

  function typing(t) {
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }

  document.addEventListener('keydown', function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    switch (e.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'a': press('approve'); break;
      case 'r': press('reject'); break;
      case 'o':
      case 'Enter': {
        var li = selected(), a = li && li.querySelector('.sentence a');
        // Enter on a focused button or link is that control's own.
        if (!a || (e.key === 'Enter' && e.target !== li && e.target !== document.body)) return;
        window.location.href = a.href;
        break;
      }
      default: return;
    }
    e.preventDefault();
  });

  // A critical route's approval is confirmed before it is sent.
  document.addEventListener('submit', function (e) {
    var form = e.target, b = e.submitter;
    if (!form.matches('form.decide[data-critical]') || !b || b.value === 'reject') return;
    if (form.querySelector('input[name=confirmed]')) return;
    if (!window.confirm('Approve a critical call?\n\n' + form.getAttribute('data-critical'))) {
      e.preventDefault();
      sessionStorage.removeItem(KEEP);
      return;
    }
    var c = document.createElement('input');
    c.type = 'hidden';
    c.name = 'confirmed';
    c.value = '1';
    form.appendChild(c);
  });

  document.addEventListener('DOMContentLoaded', function () {
    document.querySelectorAll('.chartbox').forEach(function (box) { box.scrollLeft = box.scrollWidth; });
    var keep = sessionStorage.getItem(KEEP);
    if (keep !== null) {
      sessionStorage.removeItem(KEEP);
      select(Number(keep));
    }
  });
})();
