// The host page: the running app in frames of its own origin (one per tab of the host's tab bar), its
// permissions with a way to revoke them, the launch gate's question, the prompts and sheets the app
// waits on. Everything it shows that comes from an app or a manifest is set as text, never as markup.
// `window.miniappHost` is what host-chrome.js (the dialect's chrome) and panel.js build on.
(function () {
  'use strict';
  var session, appId, appOrigin, prompts = [], shown = null, after = 0, sheets = [], sheet = null;
  // What the server says of the page: the dialect, the launch, the tabs, the apps' origins, the
  // permissions' readable names (replaced when the page is served).
  var DATA = {};
  var LABELS = {};
  // The app as the user knows it: its display name and icon once the host said them.
  var appName = null, appIcon = null;
  // The frames: one per tab (one when the host has no tabs), each with the capability its document
  // holds, its greetings, and what waits for its next document.
  var frames = [], activeFrame = null, allowed = '', externalTarget = null, closed = false;
  var handlers = {};
  function nameOf(permission) { return LABELS[permission] || permission; }
  function permissionLabel(name, required) {
    var label = node('span', null, { 'class': 'grow' });
    label.appendChild(node('div', nameOf(name) + (required ? ' (required)' : ''), { 'class': 'permission-name' }));
    if (LABELS[name]) { label.appendChild(node('div', name, { 'class': 'permission-id' })); }
    return label;
  }
  function titled(element, text) {
    clear(element);
    if (appIcon) { element.appendChild(node('img', null, { src: appIcon, alt: '' })); }
    element.appendChild(node('span', text));
  }
  function api(method, path, body) {
    return fetch('/api/' + path, {
      method: method, cache: 'no-store',
      headers: { 'X-Miniapp-Session': session, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (response) {
      return response.json().then(function (json) {
        if (!response.ok) { throw new Error(json.error || ('HTTP ' + response.status)); }
        return json;
      });
    });
  }
  function node(tag, text, attributes) {
    var element = document.createElement(tag);
    if (text !== undefined && text !== null) { element.textContent = text; }
    Object.keys(attributes || {}).forEach(function (key) { element.setAttribute(key, attributes[key]); });
    return element;
  }
  function $(id) { return document.getElementById(id); }
  function status(text) { $('status').textContent = text; }
  function clear(element) { while (element.firstChild) { element.removeChild(element.firstChild); } }
  function appPath(id, rest) { return 'apps/' + encodeURIComponent(id) + (rest ? '/' + rest : ''); }
  function decide(decisions) { return api('POST', appPath(appId, 'permissions'), { decisions: decisions }); }
  function fail(error) { status('Failed: ' + error.message); }

  // MARK: Frames

  function originOf(id) { return id === appId ? appOrigin : (DATA.origins || {})[id] || null; }
  // Where a frame's document is loaded: the launch path (or the tab's route, or `route`), with the
  // launch query.
  function launchURL(record, route) {
    var own = function (path) { return typeof path === 'string' && /^\/(?!\/)/.test(path) ? path : null; };
    var path = own(route) || own(record.tab && record.tab.route) || own(DATA.launch.path) || '/';
    return record.origin + path + (DATA.launch.query ? (path.indexOf('?') >= 0 ? '&' : '?') + DATA.launch.query : '');
  }
  function makeRecord(tab) {
    var id = tab && tab.app ? tab.app : appId;
    return { tab: tab, appId: id, origin: originOf(id), element: null, grant: null, hellos: 0, hellosAtLoad: 0, nonce: null, loaded: false, granted: false, waiting: [] };
  }
  function recordOf(source) {
    for (var i = 0; i < frames.length; i++) { if (frames[i].element && frames[i].element.contentWindow === source) { return frames[i]; } }
    return null;
  }
  function endGrant(record) {
    if (record.grant === null) { return; }
    var ended = record.grant; record.grant = null;
    api('DELETE', appPath(record.appId, 'grants/' + ended)).catch(function () {});
  }
  // Sends the document in `record`'s frame a message, at once when it greeted and loaded, else once it did.
  function post(record, message) {
    if (!record.element || !record.loaded || !record.granted || !record.nonce) { record.waiting.push(message); return; }
    message.nonce = record.nonce;
    record.element.contentWindow.postMessage(message, record.origin);
  }
  function flush(record) {
    if (!record.loaded || !record.granted) { return; }
    var waiting = record.waiting; record.waiting = [];
    waiting.forEach(function (message) { post(record, message); });
  }
  // An event of the dialect to the app's document in `record` (every frame of the app without one).
  function sendEvent(record, name, message) {
    (record ? [record] : frames.filter(function (r) { return r.appId === appId && r.element; })).forEach(function (target) {
      post(target, { miniappBridge: 'event', name: name, message: message });
    });
  }
  // The app's frame asks to show a page of another site (an external web view in a native host): the
  // user opens it in a tab of its own, and going back tells the app it was closed.
  function external(data, record) {
    var url;
    try { url = new URL(data.url); } catch (e) { return; }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') { return; }
    var link = $('external-link');
    link.href = url.href;
    link.textContent = url.href;
    $('miniapp-external').hidden = false;
    externalTarget = record;
  }
  function closeExternal() {
    var box = $('miniapp-external');
    if (box.hidden) { return; }
    box.hidden = true;
    var hasEvent = (DATA.events || []).some(function (event) { return event.name === 'miniappwebviewclosed'; });
    if (box.dataset.source === 'bridge') {
      box.dataset.source = '';
      if (hasEvent) { api('POST', appPath(appId, 'events'), { name: 'miniappwebviewclosed', message: '' }).catch(fail); }
      return;
    }
    if (externalTarget && hasEvent) { sendEvent(externalTarget, 'miniappwebviewclosed', ''); }
    externalTarget = null;
  }
  // The document in an app's frame greets this page: it gets a capability of its own, and the one of
  // the document before it ends. Greetings from anything else (a popup, a nested page) are ignored.
  function greeted(event) {
    var record = recordOf(event.source), data = event.data;
    if (!record || event.origin !== record.origin || !data || typeof data.nonce !== 'string') { return; }
    if (data.miniappBridge === 'external' && typeof data.url === 'string') { if (data.nonce === record.nonce) { external(data, record); } return; }
    if (data.miniappBridge === 'pong') { if (data.nonce === record.nonce) { record.pongs = record.pings; } return; }
    if (data.miniappBridge === 'back-unused') { if (data.nonce === record.nonce) { call('backUnused', record); } return; }
    if (data.miniappBridge === 'undelivered' && typeof data.name === 'string') { if (data.nonce === record.nonce) { call('undelivered', record, data.name, String(data.message)); } return; }
    if (data.miniappBridge !== 'hello') { return; }
    var frame = record.element, number = ++record.hellos, replaced = record.grant, target = event.source;
    record.nonce = data.nonce;
    record.grant = null;
    record.granted = false;
    api('POST', appPath(record.appId, 'grants'), { replaces: replaced }).then(function (answer) {
      if (number !== record.hellos || record.element !== frame) { api('DELETE', appPath(record.appId, 'grants/' + answer.capability)).catch(function () {}); return; }
      record.grant = answer.capability;
      target.postMessage({ miniappBridge: 'grant', nonce: data.nonce, capability: answer.capability }, record.origin);
      record.granted = true;
      flush(record);
    }, function (error) {
      if (number === record.hellos) { target.postMessage({ miniappBridge: 'grant', nonce: data.nonce, error: error.message }, record.origin); }
    });
  }
  function createFrame(record, route) {
    var frame = node('iframe', null, {
      src: launchURL(record, route), title: record.tab ? (record.tab.title || record.tab.id) : appId, allow: record.appId === appId ? allowed : '',
      sandbox: 'allow-scripts allow-same-origin allow-forms allow-popups allow-modals allow-downloads', 'data-active': 'false'
    });
    if (record.tab) { frame.dataset.tab = record.tab.id; }
    record.element = frame;
    record.hellosAtLoad = record.hellos;
    record.loaded = false;
    frame.addEventListener('load', function () {
      frame.dataset.loads = String(Number(frame.dataset.loads || 0) + 1);
      // A load without a greeting is a document without the bridge, whose grant ends, unless the
      // document that greeted answers still (a traversal of its own history fires a load as well).
      if (record.hellos === record.hellosAtLoad && record.grant !== null && record.nonce) {
        var number = record.hellos, asked = record.pings = (record.pings || 0) + 1;
        record.element.contentWindow.postMessage({ miniappBridge: 'ping', nonce: record.nonce }, record.origin);
        setTimeout(function () { if (record.pings === asked && record.pongs !== asked && record.hellos === number) { endGrant(record); } }, 1000);
      } else if (record.hellos === record.hellosAtLoad) {
        endGrant(record);
      }
      record.hellosAtLoad = record.hellos;
      record.loaded = true;
      flush(record);
      call('frameLoaded', record);
    });
    $('frames').appendChild(frame);
    return frame;
  }
  // Loads `record`'s frame again (at `route`, or its launch): a new document, greeted anew.
  function reloadFrame(record, route) {
    if (!record.element) { return; }
    record.loaded = false;
    record.granted = false;
    record.element.src = launchURL(record, route);
  }
  // Shows `record`'s frame (made at its launch, or `route`, the first time): it becomes `#miniapp-frame`.
  function show(record, route) {
    if (closed) { return; }
    if (!record.element) { createFrame(record, route); }
    frames.forEach(function (other) {
      if (!other.element) { return; }
      var on = other === record;
      other.element.dataset.active = on ? 'true' : 'false';
      if (on) { other.element.id = 'miniapp-frame'; } else if (other.element.id === 'miniapp-frame') { other.element.removeAttribute('id'); }
    });
    activeFrame = record;
    call('shown', record);
  }
  function startFrame() {
    if (closed) { return; }
    if (frames.length === 0) {
      var tabs = DATA.tabs || [];
      frames = tabs.length ? tabs.map(makeRecord) : [makeRecord(null)];
    }
    if (activeFrame && activeFrame.element) { return; }
    var first = frames.filter(function (record) { return !(record.tab && record.tab.hidden); })[0] || frames[0];
    show(first);
  }
  function stopFrame() {
    frames.forEach(function (record) {
      if (record.element) { record.element.parentNode.removeChild(record.element); }
      record.element = null;
      record.loaded = false;
      record.granted = false;
      record.waiting = [];
      endGrant(record);
    });
    activeFrame = null;
    $('miniapp-external').hidden = true;
    externalTarget = null;
  }
  // The user closes the app, as a native host's close control does: every frame goes, with its grant.
  function closeApp() {
    api('POST', appPath(appId, 'close')).catch(function () {});
    stopFrame();
    closed = true;
    $('app-close').hidden = true;
    $('app-open').hidden = false;
    status('Closed the mini-app');
    call('closed');
  }
  function openApp() {
    closed = false;
    $('app-close').hidden = false;
    $('app-open').hidden = true;
    refresh();
  }
  // The device features the user granted become the frame's `allow`: the browser then asks its user as
  // for any page. A change reaches the frame when its document loads again.
  function renderDevices(devices) {
    var list = $('devices'), next = ['camera', 'microphone'].filter(function (name) { return devices[name] === 'granted'; }).join('; ');
    clear(list);
    Object.keys(devices).sort().forEach(function (name) {
      var row = node('div', null, { 'class': 'row', 'data-device': name, 'data-status': devices[name] });
      row.appendChild(node('strong', name));
      row.appendChild(node('span', ' ' + devices[name] + ' '));
      ['granted', 'denied', 'unknown'].filter(function (choice) { return choice !== devices[name]; }).forEach(function (choice) {
        var button = node('button', choice === 'granted' ? 'Allow' : choice === 'denied' ? 'Deny' : 'Reset', { 'data-action': choice });
        button.addEventListener('click', function () {
          var decisions = {}; decisions[name] = choice;
          api('POST', appPath(appId, 'devices'), { decisions: decisions }).then(function (state) { status(name + ': ' + choice); render(state); }, fail);
        });
        row.appendChild(button);
      });
      list.appendChild(row);
    });
    if (next !== allowed) {
      allowed = next;
      frames.forEach(function (record) {
        if (record.appId !== appId || !record.element) { return; }
        record.element.setAttribute('allow', allowed);
        reloadFrame(record);
      });
    }
  }
  // The app asks where the device is: the host page asks its browser, which may ask its user.
  function locate(notice) {
    function send(answer) { api('POST', 'sheets/' + notice.id, { answer: answer }).catch(function () {}); }
    if (!navigator.geolocation) { send({ error: 'this browser has no geolocation', code: 0 }); return; }
    navigator.geolocation.getCurrentPosition(function (position) {
      send({ latitude: position.coords.latitude, longitude: position.coords.longitude, accuracy: position.coords.accuracy, altitude: position.coords.altitude });
    }, function (error) { send({ error: error.message || ('error ' + error.code), code: error.code }); }, { timeout: 10000 });
  }
  function render(state) {
    if (state.devices) { renderDevices(state.devices); }
    appName = state.displayName || appId;
    appIcon = state.icon || null;
    $('app-title').textContent = appName;
    document.title = appName + ' · miniapp host';
    if (appIcon) { $('app-icon').src = appIcon; $('app-icon').hidden = false; }
    var list = $('permissions');
    clear(list);
    state.permissions.forEach(function (permission) {
      var row = node('div', null, { 'class': 'row', 'data-permission': permission.name, 'data-status': permission.status });
      row.appendChild(permissionLabel(permission.name, permission.required));
      row.appendChild(node('span', permission.decided ? permission.status : 'NOT DECIDED', { 'class': 'badge', 'data-status': permission.decided ? permission.status : 'undecided' }));
      var allowedNow = permission.status === 'ALLOWED';
      var button = node('button', allowedNow ? 'Revoke' : 'Allow', { 'data-action': allowedNow ? 'revoke' : 'allow' });
      button.addEventListener('click', function () {
        var decisions = {}; decisions[permission.name] = allowedNow ? 'DENIED' : 'ALLOWED';
        decide(decisions).then(function (next) { status((allowedNow ? 'Revoked ' : 'Allowed ') + permission.name); render(next); }, fail);
      });
      row.appendChild(document.createTextNode(' '));
      row.appendChild(button);
      if (permission.reason) { row.appendChild(node('div', permission.reason, { 'class': 'reason' })); }
      list.appendChild(row);
    });
    if (state.development) { showDevelopment(state.development); }
    call('state', state);
    if (state.launch.allowed) {
      $('gate').hidden = true;
      startFrame();
    } else {
      stopFrame();
      showGate(state);
    }
  }
  function showGate(state) {
    var items = $('gate-items');
    clear(items);
    state.permissions.filter(function (p) { return state.launch.missing.indexOf(p.name) >= 0; }).forEach(function (permission) {
      var row = node('div', null, { 'class': 'row', 'data-permission': permission.name });
      row.appendChild(permissionLabel(permission.name, false));
      if (permission.reason) { row.appendChild(node('div', permission.reason, { 'class': 'reason' })); }
      items.appendChild(row);
    });
    titled($('gate-title'), 'Before ' + appName + ' starts');
    $('gate').dataset.missing = state.launch.missing.join(' ');
    $('gate').hidden = false;
  }
  function gateDecision(choice) {
    var decisions = {};
    ($('gate').dataset.missing || '').split(' ').filter(Boolean).forEach(function (name) { decisions[name] = choice; });
    decide(decisions).then(function (state) {
      render(state);
      if (!state.launch.allowed) {
        $('gate-message').textContent = 'The mini-app stays closed: ' + state.launch.missing.join(', ') + ' not allowed.';
      } else {
        $('gate-message').textContent = '';
      }
    }, fail);
  }
  function refresh() { return api('GET', appPath(appId)).then(render, fail); }
  // A development folder: what its check found, the warnings about its calls, how to publish it.
  function showDevelopment(development) {
    $('dev-folder').textContent = development.folder;
    $('dev-publish').textContent = development.publish;
    var problems = $('dev-problems'), warnings = $('dev-warnings');
    clear(problems);
    clear(warnings);
    if (development.manifestError) { problems.appendChild(node('div', development.manifestError + ' (the last good manifest.json stays in force)', { 'class': 'row', 'data-problem': 'manifest' })); }
    development.problems.forEach(function (problem) { problems.appendChild(node('div', problem, { 'class': 'row', 'data-problem': 'check' })); });
    development.warnings.forEach(function (warning) { warnings.appendChild(node('div', warning, { 'class': 'row', 'data-warning': warning.split(' ')[0] })); });
    $('dev-panel').hidden = false;
  }
  // The folder changed: the app's state is read again (the manifest may have changed the gate), and
  // each frame still showing reloads its document, which greets the page and gets a new capability. A
  // document that does not answer (no bridge: not a page of the app) is replaced by a new frame.
  function reloadDevelopment() {
    var before = activeFrame && activeFrame.element;
    api('GET', appPath(appId)).then(function (state) {
      render(state);
      frames.forEach(function (record) {
        var frame = record.element;
        if (!frame || record.appId !== appId) { return; }
        var loads = frame.dataset.loads;
        if (record.nonce) { post(record, { miniappBridge: 'reload' }); }
        setTimeout(function () {
          if (record.element === frame && frame.dataset.loads === loads) {
            var active = activeFrame === record;
            frame.parentNode.removeChild(frame);
            record.element = null;
            endGrant(record);
            if (active) { show(record); }
          }
        }, 1000);
      });
      if (!before) { startFrame(); }
    }, fail);
  }
  function showNextPrompt() {
    if (shown !== null || prompts.length === 0) { return; }
    shown = prompts.shift();
    var box = $('miniapp-prompt'), items = $('prompt-items');
    clear(items);
    box.dataset.promptId = String(shown.id);
    titled($('prompt-title'), (shown.appId === appId ? appName : shown.appId) + ' asks for:');
    shown.items.forEach(function (item) {
      var row = node('div', null, { 'class': 'row' });
      var label = node('label');
      var check = node('input', null, { type: 'checkbox', 'data-permission': item.name });
      label.appendChild(check);
      label.appendChild(permissionLabel(item.name, item.required));
      row.appendChild(label);
      if (item.reason) { row.appendChild(node('div', item.reason, { 'class': 'reason' })); }
      items.appendChild(row);
    });
    showUpdate('prompt-update', shown.id);
    box.hidden = false;
  }
  function answerPrompt(choose) {
    if (shown === null) { return; }
    var decisions = {};
    Array.prototype.forEach.call(document.querySelectorAll('#prompt-items input[data-permission]'), function (input) {
      decisions[input.getAttribute('data-permission')] = choose === undefined ? (input.checked ? 'ALLOWED' : 'DENIED') : choose;
    });
    var id = shown.id;
    hidePrompt();
    api('POST', 'prompts/' + id, { decisions: decisions }).then(function () { status('Answered the request'); return refresh(); }, fail);
  }
  function hidePrompt() { shown = null; $('miniapp-prompt').hidden = true; showNextPrompt(); }
  // What the host updated on a prompt or sheet while it waits: a message, a progress.
  var updates = {};
  function showUpdate(box, id) {
    var update = updates[id], element = $(box);
    if (!update) { element.hidden = true; return; }
    element.querySelector('.update-message').textContent = update.message || '';
    var bar = element.querySelector('progress');
    if (typeof update.progress === 'number') { bar.value = update.progress; bar.hidden = false; } else { bar.hidden = true; }
    element.dataset.updateFor = String(id);
    element.hidden = false;
  }
  function updated(notice) {
    updates[notice.id] = { message: notice.message, progress: notice.progress };
    if (shown && shown.id === notice.id) { showUpdate('prompt-update', notice.id); }
    if (sheet && sheet.id === notice.id) { showUpdate('sheet-update', notice.id); }
  }
  // The host's own user interface for a call the app waits on. Everything shown comes from the app:
  // it is set as text, or as an image from a data URL the server made of checked bytes.
  var sheetTitles = {
    share: ['The mini-app shares', 'Share', 'Cancel'], ad: ['Advertisement', 'Watched to the end', 'Close'],
    purchase: ['Buy in the mini-app', 'Buy', 'Cancel'], login: ['Log in to the host', 'Log in', 'Cancel'],
    gallery: ['Choose an image for the mini-app', 'Use this image', 'Cancel'], message: ['Send a message', 'Send', 'Cancel'],
    download: ['The mini-app downloads a file', 'Save', 'Cancel'], html: ['The mini-app shows a page', 'Continue', 'Close'],
    device: ['The mini-app asks for a device permission', 'Allow', "Don't allow"],
    imageUpload: ['Upload an image', 'Upload', 'Cancel']
  };
  function field(label, value) {
    var row = node('div', null, { 'class': 'row' });
    row.appendChild(node('strong', label + ': '));
    row.appendChild(node('span', value));
    return row;
  }
  function showNextSheet() {
    if (sheet !== null || sheets.length === 0) { return; }
    sheet = sheets.shift();
    var p = sheet.payload || {}, body = $('sheet-body'), titles = sheetTitles[sheet.sheet] || [sheet.sheet, 'OK', 'Cancel'];
    clear(body);
    $('miniapp-sheet').dataset.sheetId = String(sheet.id);
    $('miniapp-sheet').dataset.sheet = sheet.sheet;
    $('sheet-title').textContent = titles[0];
    $('sheet-ok').textContent = titles[1];
    $('sheet-cancel').textContent = titles[2];
    if (sheet.sheet === 'share') {
      body.appendChild(node('pre', p.content));
      if (p.url) { body.appendChild(field('Link', p.url)); }
      if (p.image) { body.appendChild(node('img', null, { src: p.image, alt: 'shared image' })); }
      else if (p.imageBytes) { body.appendChild(field('Data', p.imageBytes + ' bytes')); }
    } else if (sheet.sheet === 'ad') {
      body.appendChild(field('Kind', p.adType));
      body.appendChild(field('Ad unit', p.adUnitId));
      if (p.reward) { body.appendChild(field('Reward', (p.reward.amount === undefined ? '' : p.reward.amount + ' ') + (p.reward.type || ''))); }
    } else if (sheet.sheet === 'purchase') {
      var product = p.product || {};
      body.appendChild(field('Product', product.title + ' (' + product.id + ')'));
      body.appendChild(node('div', product.description, { 'class': 'reason' }));
      if (product.productPrice) { body.appendChild(field('Price', product.productPrice.price + ' ' + product.productPrice.currencyCode)); }
    } else if (sheet.sheet === 'login') {
      body.appendChild(field('User', p.userName || 'the host profile names no user'));
    } else if (sheet.sheet === 'gallery' || sheet.sheet === 'imageUpload') {
      body.appendChild(node('input', null, { type: 'file', id: 'sheet-file', accept: 'image/*' }));
      if (p.ratio) { body.appendChild(field('Cropped to', Number(p.ratio).toFixed(2) + ' : 1')); }
      body.appendChild(node('div', 'At most ' + p.maxBytes + ' bytes', { 'class': 'reason' }));
    } else if (sheet.sheet === 'message') {
      var message = p.message || {};
      if (message.text) { body.appendChild(node('pre', message.text)); }
      if (message.caption) { body.appendChild(field('Caption', message.caption)); }
      if (message.action) { body.appendChild(field('Link', message.action)); }
      if (p.mode === 'contact') {
        body.appendChild(field('To', p.contactId));
      } else {
        (p.contacts || []).forEach(function (contact) {
          var label = node('label', null, { 'class': 'row' });
          label.appendChild(node('input', null, { type: p.mode === 'several' ? 'checkbox' : 'radio', name: 'contact', 'data-contact': contact.id }));
          label.appendChild(document.createTextNode(' ' + (contact.name || contact.id)));
          body.appendChild(label);
          body.appendChild(node('br'));
        });
        if (!(p.contacts || []).length) { body.appendChild(node('div', 'The host profile has no contacts.', { 'class': 'reason' })); }
      }
    } else if (sheet.sheet === 'download') {
      body.appendChild(field('File', p.filename));
      body.appendChild(node('a', p.url, { id: 'sheet-download', href: p.url, download: p.filename, target: '_blank', rel: 'noopener noreferrer' }));
    } else if (sheet.sheet === 'html') {
      body.appendChild(node('pre', p.html));
      body.appendChild(field('Goes on to', p.callbackUrl));
    } else if (sheet.sheet === 'device') {
      body.appendChild(field('Permission', p.permission));
    }
    showUpdate('sheet-update', sheet.id);
    $('miniapp-sheet').hidden = false;
  }
  function hideSheet() { sheet = null; $('miniapp-sheet').hidden = true; showNextSheet(); }
  function sendSheet(id, message) {
    hideSheet();
    api('POST', 'sheets/' + id, message).then(function () { status('Answered the mini-app'); return refresh(); }, fail);
  }
  // An image as the answer carries it: its bytes in base64, cropped at the centre to `ratio` (width
  // over height) when one is asked, as a native picker's crop does.
  function readImage(file, ratio, done) {
    var reader = new FileReader();
    reader.onerror = function () { done(null); };
    reader.onload = function () {
      var text = String(reader.result), comma = text.indexOf(',');
      if (!ratio) { done({ data: text.slice(comma + 1), mimeType: file.type, filename: file.name }); return; }
      var image = new Image();
      // Not an image the browser can draw: it goes as it is, for the host to take or refuse.
      image.onerror = function () { done({ data: text.slice(comma + 1), mimeType: file.type, filename: file.name }); };
      image.onload = function () {
        var width = image.naturalWidth, height = image.naturalHeight, cropWidth = width, cropHeight = Math.round(width / ratio);
        if (cropHeight > height) { cropHeight = height; cropWidth = Math.round(height * ratio); }
        var canvas = document.createElement('canvas');
        canvas.width = Math.max(1, cropWidth);
        canvas.height = Math.max(1, cropHeight);
        canvas.getContext('2d').drawImage(image, (width - cropWidth) / 2, (height - cropHeight) / 2, cropWidth, cropHeight, 0, 0, cropWidth, cropHeight);
        var cropped = canvas.toDataURL('image/png');
        done({ data: cropped.slice(cropped.indexOf(',') + 1), mimeType: 'image/png', filename: file.name.replace(/\.[^.]*$/, '') + '.png' });
      };
      image.src = text;
    };
    reader.readAsDataURL(file);
  }
  function sheetOK() {
    if (sheet === null) { return; }
    var id = sheet.id, kind = sheet.sheet;
    if (kind === 'gallery' || kind === 'imageUpload') {
      var input = $('sheet-file'), file = input && input.files && input.files[0];
      if (!file) { status('Choose an image first'); return; }
      readImage(file, kind === 'imageUpload' ? Number(sheet.payload.ratio) || null : null, function (image) {
        sendSheet(id, image ? { answer: image } : { dismissed: true });
      });
      return;
    }
    var answer = {};
    if (kind === 'share') { answer.shared = true; }
    else if (kind === 'ad') { answer.watched = true; }
    else if (kind === 'purchase') { answer.confirmed = true; }
    else if (kind === 'login') { answer.loggedIn = true; }
    else if (kind === 'html') { answer.continued = true; }
    else if (kind === 'device') { answer.allowed = true; }
    else if (kind === 'download') { answer.saved = true; $('sheet-download').click(); }
    else if (kind === 'message') {
      answer.sent = sheet.payload.mode === 'contact' ? [sheet.payload.contactId]
        : Array.prototype.filter.call(document.querySelectorAll('#sheet-body input[data-contact]'), function (box) { return box.checked; })
          .map(function (box) { return box.getAttribute('data-contact'); });
    }
    sendSheet(id, { answer: answer });
  }
  function sheetCancel() {
    if (sheet === null) { return; }
    sendSheet(sheet.id, sheet.sheet === 'device' ? { answer: { allowed: false } } : { dismissed: true });
  }
  function info(notice) {
    if (notice.appId !== appId && !frames.some(function (record) { return record.appId === notice.appId; })) { return; }
    if (notice.info === 'browser') {
      var url;
      try { url = new URL(notice.payload.url); } catch (e) { return; }
      var link = $('external-link');
      link.href = url.href;
      link.textContent = url.href;
      $('miniapp-external').dataset.source = 'bridge';
      $('miniapp-external').hidden = false;
      return;
    }
    if (notice.info === 'forceLogout') { status('The mini-app logged the user out'); return; }
    if (handlers[notice.info]) { handlers[notice.info](notice.payload, notice.appId); if (notice.info !== 'signal') { return; } }
    log(notice.info, notice.payload);
  }
  // A row of what an app told the host, newest first.
  function log(kind, payload) {
    var row = node('div', null, { 'class': 'row', 'data-info': kind === 'signal' && payload && payload.signal ? payload.signal : kind });
    row.appendChild(node('strong', kind === 'signal' && payload && payload.signal ? payload.signal : kind));
    row.appendChild(node('pre', JSON.stringify(payload)));
    $('host-log').insertBefore(row, $('host-log').firstChild);
    while ($('host-log').childNodes.length > 50) { $('host-log').removeChild($('host-log').lastChild); }
  }
  function poll() {
    api('GET', 'notices?after=' + after).then(function (batch) {
      after = batch.next;
      batch.notices.forEach(function (notice) {
        if (notice.kind === 'prompt') { prompts.push(notice); }
        else if (notice.kind === 'sheet' && notice.sheet === 'location') { if (notice.appId === appId) { locate(notice); } }
        else if (notice.kind === 'sheet') { if (notice.appId === appId) { sheets.push(notice); } }
        else if (notice.kind === 'info') { info(notice); }
        else if (notice.kind === 'updated') { updated(notice); }
        else if (notice.kind === 'settled') {
          prompts = prompts.filter(function (p) { return p.id !== notice.id; });
          sheets = sheets.filter(function (p) { return p.id !== notice.id; });
          delete updates[notice.id];
          if (shown && shown.id === notice.id) { hidePrompt(); }
          if (sheet && sheet.id === notice.id) { hideSheet(); }
        } else if (notice.kind === 'closed' && notice.appId === appId) { stopFrame(); status('The mini-app closed itself'); }
        else if (notice.kind === 'development' && notice.appId === appId) { if (notice.change === 'reload') { reloadDevelopment(); } else { refresh(); } }
      });
      showNextPrompt();
      showNextSheet();
      setTimeout(poll, 0);
    }, function () { setTimeout(poll, 1000); });
  }
  // The device the app is shown in and the page's theme: the user's last choice, kept by the browser.
  function remember(key, value) { try { localStorage.setItem('miniapp.' + key, value); } catch (e) {} }
  function recall(key) { try { return localStorage.getItem('miniapp.' + key); } catch (e) { return null; } }
  function setUpView() {
    var device = $('device'), preset = $('device-preset');
    var presets = ['phone', 'phone-small', 'tablet', 'fill'];
    if (presets.indexOf(recall('device')) >= 0) { preset.value = recall('device'); }
    device.dataset.preset = preset.value;
    device.dataset.rotated = recall('rotated') === 'true' ? 'true' : 'false';
    preset.addEventListener('change', function () { device.dataset.preset = preset.value; remember('device', preset.value); });
    $('device-rotate').addEventListener('click', function () {
      device.dataset.rotated = device.dataset.rotated === 'true' ? 'false' : 'true';
      remember('rotated', device.dataset.rotated);
    });
    var dark = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
    function theme(name) {
      document.body.dataset.theme = name;
      $('theme-toggle').textContent = name === 'dark' ? 'Light' : 'Dark';
    }
    theme(recall('theme') || (dark ? 'dark' : 'light'));
    $('theme-toggle').addEventListener('click', function () {
      var next = document.body.dataset.theme === 'dark' ? 'light' : 'dark';
      theme(next);
      remember('theme', next);
    });
  }
  function call(kind) {
    var rest = Array.prototype.slice.call(arguments, 1);
    (hooks[kind] || []).forEach(function (hook) { hook.apply(null, rest); });
  }
  var hooks = {};
  // What host-chrome.js and panel.js build on.
  window.miniappHost = {
    data: function () { return DATA; },
    appId: function () { return appId; },
    session: function () { return session; },
    api: api, node: node, $: $, clear: clear, status: status, fail: fail, log: log, appPath: appPath,
    frames: function () { return frames; },
    activeFrame: function () { return activeFrame; },
    show: show, reloadFrame: reloadFrame, sendEvent: sendEvent, post: post, launchURL: launchURL, refresh: refresh,
    // A notice of what an app told the host (`info` of `kind`): `handler(payload, appId)`.
    handle: function (kind, handler) { handlers[kind] = handler; },
    // The page's own moments: `shown`, `frameLoaded`, `state`, `closed`, `backUnused`.
    on: function (kind, hook) { (hooks[kind] = hooks[kind] || []).push(hook); }
  };
  window.addEventListener('message', greeted);
  window.addEventListener('pagehide', function () {
    frames.forEach(function (record) {
      if (record.grant !== null) {
        fetch('/api/' + appPath(record.appId, 'grants/' + record.grant), { method: 'DELETE', keepalive: true, headers: { 'X-Miniapp-Session': session } }).catch(function () {});
        record.grant = null;
      }
    });
  });
  document.addEventListener('DOMContentLoaded', function () {
    session = document.querySelector('meta[name="miniapp-session"]').getAttribute('content');
    DATA = JSON.parse($('host-data').textContent);
    LABELS = DATA.labels || {};
    appId = document.body.getAttribute('data-app');
    appOrigin = document.body.getAttribute('data-origin');
    $('gate-allow').addEventListener('click', function () { gateDecision('ALLOWED'); });
    $('gate-deny').addEventListener('click', function () { gateDecision('DENIED'); });
    $('prompt-confirm').addEventListener('click', function () { answerPrompt(); });
    $('prompt-allow-all').addEventListener('click', function () { answerPrompt('ALLOWED'); });
    $('prompt-deny-all').addEventListener('click', function () { answerPrompt('DENIED'); });
    $('external-close').addEventListener('click', closeExternal);
    $('sheet-ok').addEventListener('click', sheetOK);
    $('sheet-cancel').addEventListener('click', sheetCancel);
    $('app-close').addEventListener('click', closeApp);
    $('app-open').addEventListener('click', openApp);
    setUpView();
    if (!appId) {
      $('app-title').textContent = 'Mini-apps';
      $('host-back').hidden = true;
      $('app-close').hidden = true;
      (document.body.getAttribute('data-apps') || '').split(' ').filter(Boolean).forEach(function (id) {
        var link = node('a', id, { href: '/apps/' + encodeURIComponent(id) });
        $('permissions').appendChild(node('div', null, { 'class': 'row' })).appendChild(link);
      });
      return;
    }
    $('app-title').textContent = appId;
    appName = appId;
    call('ready');
    refresh();
    poll();
  });
})();
