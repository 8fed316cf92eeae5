(function () {
  'use strict';
  var session, appId, after = 0, skipped = 0, MAX_KEPT = 500, MAX_SHOWN = 50;
  function $(id) { return document.getElementById(id); }
  function node(tag, text, attributes) {
    var element = document.createElement(tag);
    if (text !== undefined && text !== null) { element.textContent = text; }
    Object.keys(attributes || {}).forEach(function (key) { element.setAttribute(key, attributes[key]); });
    return element;
  }
  function clear(element) { while (element.firstChild) { element.removeChild(element.firstChild); } }
  function request(method, path, body, raw) {
    return fetch('/api/' + path, {
      method: method, cache: 'no-store',
      headers: { 'X-Miniapp-Session': session, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : (raw ? body : JSON.stringify(body))
    }).then(function (response) {
      return response.json().then(function (json) {
        if (!response.ok) { throw new Error(json.error || ('HTTP ' + response.status)); }
        return json;
      });
    });
  }
  function appPath(rest) { return 'apps/' + encodeURIComponent(appId) + '/' + rest; }
  function say(text) { $('panel-status').textContent = text; }
  function fail(error) { say('Failed: ' + error.message); }
  function section(title, id) {
    var element = node('section', null, id ? { id: id } : {});
    element.appendChild(node('h3', title));
    $('miniapp-panel').appendChild(element);
    return element;
  }
  function button(text, attributes, onClick) {
    var element = node('button', text, attributes || {});
    element.type = 'button';
    element.addEventListener('click', onClick);
    return element;
  }

  // The bridge's calls, newest first.
  // A call matches the filter when its action, parameters, answer, error or permission contain it.
  function matches(call) {
    var filter = $('calls-filter').value.trim().toLowerCase();
    if (filter === '') { return true; }
    var text = [call.action, call.param, call.answer, call.error ? call.error.type + ': ' + call.error.message : '', call.refusal, call.permission].join(' ');
    return text.toLowerCase().indexOf(filter) >= 0;
  }
  function two(number) { return (number < 10 ? '0' : '') + number; }
  function clock(milliseconds) {
    var date = new Date(milliseconds), fraction = String(date.getMilliseconds());
    return two(date.getHours()) + ':' + two(date.getMinutes()) + ':' + two(date.getSeconds()) + '.' + '000'.slice(fraction.length) + fraction;
  }
  function showCall(call) {
    var attributes = { 'class': 'mp-call', 'data-action': call.action, 'data-outcome': call.outcome, 'data-sequence': String(call.sequence) };
    if (call.permission) { attributes['data-permission'] = call.permission; }
    var row = node('div', null, attributes);
    var head = node('div', null, { 'class': 'mp-meta' });
    head.appendChild(node('span', clock(call.time) + ' '));
    head.appendChild(node('strong', call.action));
    head.appendChild(node('span', ' ' + call.milliseconds.toFixed(1) + ' ms'));
    if (call.permission) {
      head.appendChild(node('span', ' · ' + call.permission + (call.permissionDeclared ? '' : ' (not declared)')));
    }
    row.appendChild(head);
    row.appendChild(node('pre', call.param, { 'class': 'mp-param' }));
    if (call.outcome === 'success') {
      row.appendChild(node('pre', call.answer === null ? 'null' : call.answer, { 'class': 'mp-answer' }));
    } else {
      row.appendChild(node('div', call.error.type + ': ' + call.error.message, { 'class': 'mp-error' }));
      if (call.refusal) { row.appendChild(node('div', call.refusal, { 'class': 'mp-refusal' })); }
    }
    return row;
  }
  // The last MAX_KEPT calls are kept here; the page draws only the newest MAX_SHOWN that match the
  // filter, at most once a poll: it shares its process (and main thread) with the app's frame, whose
  // calls would otherwise wait behind the drawing of hundreds of rows.
  var kept = [];
  function showCalls(calls) {
    kept = kept.concat(calls).slice(-MAX_KEPT);
    var fresh = calls.filter(matches).slice(-MAX_SHOWN), list = $('calls'), batch = document.createDocumentFragment();
    fresh.forEach(function (call) { batch.insertBefore(showCall(call), batch.firstChild); });
    list.insertBefore(batch, list.firstChild);
    while (list.children.length > MAX_SHOWN) { list.removeChild(list.lastChild); }
    countCalls();
  }
  function filterCalls() {
    var list = $('calls'), batch = document.createDocumentFragment();
    clear(list);
    kept.filter(matches).slice(-MAX_SHOWN).forEach(function (call) { batch.insertBefore(showCall(call), batch.firstChild); });
    list.appendChild(batch);
    countCalls();
  }
  function countCalls() {
    // Calls the host left out of a busy second's batch are counted, unfiltered.
    var matching = kept.filter(matches).length + ($('calls-filter').value.trim() === '' ? skipped : 0);
    $('calls-count').textContent = matching > MAX_SHOWN ? 'The newest ' + MAX_SHOWN + ' of ' + matching + ' calls' : matching + ' calls';
  }
  function pollCalls() {
    request('GET', appPath('calls?after=' + after + '&limit=' + MAX_SHOWN)).then(function (batch) {
      after = batch.next;
      skipped += batch.skipped || 0;
      var storage = batch.calls.some(function (call) { return call.action.indexOf('SecureStorage') >= 0; });
      showCalls(batch.calls);
      if (storage) { readStorage(); }
      // At most one read a second while the app calls (see showCalls).
      setTimeout(pollCalls, batch.calls.length ? 1000 : 0);
    }, function () { setTimeout(pollCalls, 1000); });
  }

  // The host's profile: the JSON document --host-profile reads, checked by the host when saved.
  function readProfile() {
    return request('GET', 'profile').then(function (profile) {
      $('profile-json').value = JSON.stringify(profile, null, 2);
      $('profile-error').textContent = '';
    }, fail);
  }
  function saveProfile() {
    request('PUT', 'profile', $('profile-json').value, true).then(function (profile) {
      $('profile-json').value = JSON.stringify(profile, null, 2);
      $('profile-error').textContent = '';
      say('Saved the host profile: later calls read it');
    }, function (error) { $('profile-error').textContent = error.message; });
  }

  // A permission forgotten: the app's next request asks the user again. The host page's own list
  // hears of it from the server.
  function readPermissions() {
    request('GET', 'apps/' + encodeURIComponent(appId)).then(function (state) {
      var select = $('permission-reset-name'), chosen = select.value;
      clear(select);
      state.permissions.forEach(function (permission) {
        select.appendChild(node('option', permission.name + (permission.decided ? ' (' + permission.status + ')' : ' (undecided)'), { value: permission.name }));
      });
      if (chosen) { select.value = chosen; }
    }, fail);
  }
  function resetPermission() {
    var name = $('permission-reset-name').value;
    if (!name) { return; }
    request('DELETE', appPath('permissions/' + encodeURIComponent(name))).then(function () { say('Reset ' + name); readPermissions(); }, fail);
  }

  // The app's secure storage.
  function showStorage(state) {
    var list = $('storage');
    clear(list);
    state.items.forEach(function (item) {
      var row = node('div', null, { 'class': 'mp-row', 'data-key': item.key });
      row.appendChild(node('span', item.key, { 'class': 'mp-key' }));
      var value = node('input', null, { 'class': 'mp-value', 'aria-label': 'value of ' + item.key });
      value.value = item.value;
      row.appendChild(value);
      row.appendChild(button('Save', { 'data-do': 'edit' }, function () {
        var items = {}; items[item.key] = value.value;
        changeStorage({ set: items }, 'Saved ' + item.key);
      }));
      row.appendChild(button('Remove', { 'data-do': 'remove' }, function () { changeStorage({ remove: [item.key] }, 'Removed ' + item.key); }));
      list.appendChild(row);
    });
    $('storage-size').textContent = state.used + ' of ' + state.max + ' bytes used';
  }
  function readStorage() { request('GET', appPath('storage')).then(showStorage, fail); }
  function changeStorage(change, done) {
    request('POST', appPath('storage'), change).then(function (state) { showStorage(state); say(done); }, fail);
  }

  // Errors forced on the app's actions.
  function showFaults(state) {
    var list = $('injected');
    clear(list);
    state.faults.forEach(function (fault) {
      var row = node('div', null, { 'class': 'mp-row', 'data-injected': fault.action, 'data-kind': fault.kind });
      var what = fault.kind === 'timeout' ? (fault.seconds === null ? 'no answer until removed' : 'answers after ' + fault.seconds + ' s')
        : fault.kind === 'denied' ? 'denied' : 'not supported';
      row.appendChild(node('span', fault.action, { 'class': 'mp-key' }));
      row.appendChild(node('span', what));
      row.appendChild(button('Remove', { 'data-do': 'remove' }, function () {
        request('DELETE', appPath('faults/' + encodeURIComponent(fault.action))).then(function (next) { showFaults(next); say(fault.action + ' answers again'); }, fail);
      }));
      list.appendChild(row);
    });
  }
  function addFault() {
    var fault = { action: $('inject-action').value.trim(), kind: $('inject-kind').value }, seconds = $('inject-seconds').value.trim();
    if (fault.kind === 'timeout' && seconds !== '') { fault.seconds = Number(seconds); }
    request('POST', appPath('faults'), fault).then(function (state) { showFaults(state); say(fault.action + ' now answers ' + fault.kind); }, fail);
  }

  function build() {
    var panel = $('miniapp-panel');
    var calls = section('Bridge calls', 'calls-section');
    calls.appendChild(node('input', null, { id: 'calls-filter', type: 'search', placeholder: 'Filter calls', 'aria-label': 'Filter calls' }));
    calls.appendChild(node('div', null, { id: 'calls-count', 'class': 'mp-meta' }));
    calls.appendChild(node('div', null, { id: 'calls' }));

    // The host's events, as the dialect's host sends them: Rakuten's of any name (its known ones
    // offered), another dialect's by name, each with an example to edit.
    var data = window.miniappHost ? window.miniappHost.data() : {}, known = data.events || [];
    var events = section('Send the app an event');
    if (data.dialect && !data.dialect.anyEvent) {
      var names = node('select', null, { id: 'event-name', 'aria-label': 'Event' });
      known.forEach(function (event) { names.appendChild(node('option', event.name + ' · ' + event.summary, { value: event.name })); });
      names.addEventListener('change', function () {
        var chosen = known.filter(function (event) { return event.name === names.value; })[0];
        if (chosen) { $('event-message').value = chosen.example; }
      });
      events.appendChild(names);
    } else {
      events.appendChild(node('input', null, { id: 'event-name', placeholder: 'Event name', 'aria-label': 'Event name', list: 'event-names' }));
      var list = node('datalist', null, { id: 'event-names' });
      known.forEach(function (event) { list.appendChild(node('option', event.summary, { value: event.name })); });
      events.appendChild(list);
    }
    events.appendChild(node('input', null, { id: 'event-message', placeholder: 'Message', 'aria-label': 'Event message' }));
    if (known.length && data.dialect && !data.dialect.anyEvent) { $('event-message').value = known[0].example; }
    events.appendChild(button('Send', { id: 'event-send' }, function () {
      var name = $('event-name').value.trim();
      request('POST', appPath('events'), { name: name, message: $('event-message').value }).then(function () { say('Sent ' + name); }, fail);
    }));

    // A notification for the app's user, as the host's push service brings it: held back until the
    // app says it is ready for notifications.
    var notifications = section('Post a notification', 'notification-section');
    notifications.appendChild(node('input', null, { id: 'notification-title', placeholder: 'Title', 'aria-label': 'Notification title' }));
    notifications.appendChild(node('input', null, { id: 'notification-body', placeholder: 'Text', 'aria-label': 'Notification text' }));
    notifications.appendChild(button('Post', { id: 'notification-post' }, function () {
      request('POST', appPath('notifications'), { title: $('notification-title').value.trim(), body: $('notification-body').value }).then(function (answer) {
        say(answer.shown ? 'Shown on the host page' : 'Held until the app is ready for notifications (' + answer.held + ' held)');
        if (window.miniappHost) { window.miniappHost.refresh(); }
      }, fail);
    }));

    var profile = section('Host profile', 'profile-editor');
    profile.appendChild(node('textarea', null, { id: 'profile-json', spellcheck: 'false', 'aria-label': 'Host profile (JSON)' }));
    profile.appendChild(button('Save profile', { id: 'profile-save' }, saveProfile));
    profile.appendChild(node('div', null, { id: 'profile-error', role: 'alert' }));

    var permissions = section('Reset a permission', 'permission-reset-section');
    var reset = node('div', null, { 'class': 'mp-row' });
    var names = node('select', null, { id: 'permission-reset-name', 'aria-label': 'Permission' });
    names.addEventListener('focus', readPermissions);
    reset.appendChild(names);
    reset.appendChild(button('Reset', { id: 'permission-reset' }, resetPermission));
    permissions.appendChild(reset);

    var storage = section('Secure storage', 'storage-section');
    storage.appendChild(node('div', null, { id: 'storage-size', 'class': 'mp-meta' }));
    storage.appendChild(node('div', null, { id: 'storage' }));
    var add = node('div', null, { 'class': 'mp-row' });
    add.appendChild(node('input', null, { id: 'storage-key', placeholder: 'Key', 'aria-label': 'New key' }));
    add.appendChild(node('input', null, { id: 'storage-value', 'class': 'mp-value', placeholder: 'Value', 'aria-label': 'New value' }));
    add.appendChild(button('Set', { id: 'storage-set' }, function () {
      var items = {}, key = $('storage-key').value;
      items[key] = $('storage-value').value;
      changeStorage({ set: items }, 'Saved ' + key);
    }));
    add.appendChild(button('Clear all', { id: 'storage-clear' }, function () { changeStorage({ clear: true }, 'Cleared the storage'); }));
    storage.appendChild(add);

    var inject = section('Make an action fail', 'inject-section');
    var row = node('div', null, { 'class': 'mp-row' });
    row.appendChild(node('input', null, { id: 'inject-action', placeholder: 'Action, e.g. getUserName', 'aria-label': 'Action' }));
    var kind = node('select', null, { id: 'inject-kind', 'aria-label': 'Error' });
    [['notSupported', 'Not supported'], ['denied', 'Denied'], ['timeout', 'Timeout']].forEach(function (option) {
      kind.appendChild(node('option', option[1], { value: option[0] }));
    });
    row.appendChild(kind);
    row.appendChild(node('input', null, { id: 'inject-seconds', type: 'number', min: '1', placeholder: 'after s (empty: never)', 'aria-label': 'Timeout seconds' }));
    row.appendChild(button('Add', { id: 'inject-add' }, addFault));
    inject.appendChild(row);
    inject.appendChild(node('div', null, { id: 'injected' }));

    panel.appendChild(node('div', null, { id: 'panel-status', role: 'status' }));
    $('calls-filter').addEventListener('input', filterCalls);
  }

  document.addEventListener('DOMContentLoaded', function () {
    var panel = $('miniapp-panel');
    appId = document.body.getAttribute('data-app');
    if (!panel || !appId) { return; }
    session = document.querySelector('meta[name="miniapp-session"]').getAttribute('content');
    document.head.appendChild(node('link', null, { rel: 'stylesheet', href: '/panel.css' }));
    build();
    readProfile();
    readPermissions();
    readStorage();
    request('GET', appPath('faults')).then(showFaults, fail);
    pollCalls();
  });
})();
