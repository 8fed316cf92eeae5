import Foundation
import MiniAppBridge

/// The host page: the running app in a frame of its own origin, its permissions with a way to revoke
/// them, the launch gate's question, and the prompts of `requestCustomPermissions`. Everything it shows
/// that comes from an app or a manifest is set as text, never as markup.
///
/// Stable hooks for people and tools: `#miniapp-frame` (the app), `#gate` with `#gate-allow`,
/// `#gate-deny`, `#gate-message`; `#miniapp-prompt` (a waiting prompt, `data-prompt-id`) with one
/// checkbox `input[data-permission="<name>"]` per permission, `#prompt-confirm`, `#prompt-allow-all`,
/// `#prompt-deny-all`; `#miniapp-external` (a page of another site the app opened) with `#external-link` and
/// `#external-close`; `#permissions` rows `[data-permission="<name>"]` with `data-status` and a
/// `button[data-action="allow" | "revoke"]`; `#status` for what happened last.
enum HostPage {
    static func html(appId: String?, appOrigin: String?, apps: [String], session: String) -> String {
        func attribute(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
                .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        }
        return """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="miniapp-session" content="\(session)">
        <meta name="viewport" content="width=device-width,initial-scale=1">
        <title>miniapp host</title>
        <style>
        body{font-family:sans-serif;margin:0;display:flex;height:100vh}
        #side{width:320px;padding:12px;overflow:auto;border-right:1px solid #ccc;box-sizing:border-box}
        #main{flex:1;position:relative}
        #miniapp-frame{border:0;width:100%;height:100%}
        #gate,#miniapp-prompt,#miniapp-external{position:absolute;inset:0;background:rgba(255,255,255,.97);padding:24px;overflow:auto}
        .reason{color:#555;font-size:90%;margin:2px 0 10px 24px;white-space:pre-wrap}
        .row{margin:6px 0}
        [hidden]{display:none!important}
        </style>
        <script src="/host.js"></script>
        </head>
        <body data-app="\(attribute(appId ?? ""))" data-origin="\(attribute(appOrigin ?? ""))" data-apps="\(attribute(apps.joined(separator: " ")))">
        <div id="side"><h2 id="app-title"></h2><div id="status" role="status"></div><h3>Permissions</h3><div id="permissions"></div></div>
        <div id="main">
        <div id="gate" hidden><h3>Before this mini-app starts</h3><p>It needs these permissions:</p><div id="gate-items"></div>
        <button id="gate-allow">Allow and start</button> <button id="gate-deny">Deny</button><p id="gate-message"></p></div>
        <div id="miniapp-external" hidden><h3>The mini-app opens a page of another site</h3>
        <p><a id="external-link" target="_blank" rel="noopener noreferrer"></a></p>
        <button id="external-close">Back to the mini-app</button></div>
        <div id="miniapp-prompt" hidden><h3 id="prompt-title"></h3><div id="prompt-items"></div>
        <button id="prompt-confirm">Confirm</button> <button id="prompt-allow-all">Allow all</button> <button id="prompt-deny-all">Deny all</button></div>
        </div>
        </body></html>
        """
    }

    static let script = #"""
(function () {
  'use strict';
  var session, appId, appOrigin, prompts = [], shown = null, after = 0;
  // The capability held by the document in the app's frame, the greetings seen, and the greetings seen
  // at the frame's last load (a load without a greeting is a document without the bridge).
  var grant = null, hellos = 0, hellosAtLoad = 0, externalTarget = null;
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
  function decide(decisions) { return api('POST', 'apps/' + encodeURIComponent(appId) + '/permissions', { decisions: decisions }); }
  function grantsPath() { return 'apps/' + encodeURIComponent(appId) + '/grants'; }
  function endGrant() {
    if (grant === null) { return; }
    var ended = grant; grant = null;
    api('DELETE', grantsPath() + '/' + ended).catch(function () {});
  }
  // The document in the app's frame greets this page: it gets a capability of its own, and the one
  // of the document before it ends. Greetings from anything else (a popup, a nested page) are ignored.
  // The app's frame asks to show a page of another site (an external web view in a native host): the
  // user opens it in a tab of its own, and going back tells the app it was closed.
  function external(data, target) {
    var url;
    try { url = new URL(data.url); } catch (e) { return; }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') { return; }
    var link = $('external-link');
    link.href = url.href;
    link.textContent = url.href;
    $('miniapp-external').dataset.nonce = data.nonce;
    $('miniapp-external').hidden = false;
    externalTarget = target;
  }
  function closeExternal() {
    var box = $('miniapp-external');
    if (box.hidden) { return; }
    box.hidden = true;
    if (externalTarget) {
      externalTarget.postMessage({ miniappBridge: 'event', nonce: box.dataset.nonce, name: 'miniappwebviewclosed' }, appOrigin);
      externalTarget = null;
    }
  }
  function greeted(event) {
    var frame = $('miniapp-frame'), data = event.data;
    if (!frame || event.source !== frame.contentWindow || event.origin !== appOrigin) { return; }
    if (data && data.miniappBridge === 'external' && typeof data.url === 'string' && typeof data.nonce === 'string') { external(data, event.source); return; }
    if (!data || data.miniappBridge !== 'hello' || typeof data.nonce !== 'string') { return; }
    var number = ++hellos, replaced = grant, target = event.source;
    grant = null;
    api('POST', grantsPath(), { replaces: replaced }).then(function (answer) {
      if (number !== hellos || $('miniapp-frame') !== frame) { api('DELETE', grantsPath() + '/' + answer.capability).catch(function () {}); return; }
      grant = answer.capability;
      target.postMessage({ miniappBridge: 'grant', nonce: data.nonce, capability: answer.capability }, appOrigin);
    }, function (error) {
      if (number === hellos) { target.postMessage({ miniappBridge: 'grant', nonce: data.nonce, error: error.message }, appOrigin); }
    });
  }
  function startFrame() {
    if ($('miniapp-frame')) { return; }
    var frame = node('iframe', null, {
      id: 'miniapp-frame', src: appOrigin + '/', title: appId,
      sandbox: 'allow-scripts allow-same-origin allow-forms allow-popups allow-modals allow-downloads'
    });
    hellosAtLoad = hellos;
    frame.addEventListener('load', function () {
      if (hellos === hellosAtLoad) { endGrant(); }
      hellosAtLoad = hellos;
    });
    $('main').insertBefore(frame, $('main').firstChild);
  }
  function stopFrame() {
    var frame = $('miniapp-frame');
    if (frame) { frame.parentNode.removeChild(frame); }
    $('miniapp-external').hidden = true;
    externalTarget = null;
    endGrant();
  }
  function render(state) {
    var list = $('permissions');
    clear(list);
    state.permissions.forEach(function (permission) {
      var row = node('div', null, { 'class': 'row', 'data-permission': permission.name, 'data-status': permission.status });
      row.appendChild(node('strong', permission.name));
      row.appendChild(node('span', ' ' + permission.status + (permission.required ? ' (required)' : '')));
      var allowed = permission.status === 'ALLOWED';
      var button = node('button', allowed ? 'Revoke' : 'Allow', { 'data-action': allowed ? 'revoke' : 'allow' });
      button.addEventListener('click', function () {
        var decisions = {}; decisions[permission.name] = allowed ? 'DENIED' : 'ALLOWED';
        decide(decisions).then(function (next) { status((allowed ? 'Revoked ' : 'Allowed ') + permission.name); render(next); }, fail);
      });
      row.appendChild(document.createTextNode(' '));
      row.appendChild(button);
      if (permission.reason) { row.appendChild(node('div', permission.reason, { 'class': 'reason' })); }
      list.appendChild(row);
    });
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
      row.appendChild(node('strong', permission.name));
      if (permission.reason) { row.appendChild(node('div', permission.reason, { 'class': 'reason' })); }
      items.appendChild(row);
    });
    $('gate').dataset.missing = state.launch.missing.join(' ');
    $('gate').hidden = false;
  }
  function gateDecision(status) {
    var decisions = {};
    ($('gate').dataset.missing || '').split(' ').filter(Boolean).forEach(function (name) { decisions[name] = status; });
    decide(decisions).then(function (state) {
      render(state);
      if (!state.launch.allowed) {
        $('gate-message').textContent = 'The mini-app stays closed: ' + state.launch.missing.join(', ') + ' not allowed.';
      } else {
        $('gate-message').textContent = '';
      }
    }, fail);
  }
  function refresh() { return api('GET', 'apps/' + encodeURIComponent(appId)).then(render, fail); }
  function fail(error) { status('Failed: ' + error.message); }
  function showNextPrompt() {
    if (shown !== null || prompts.length === 0) { return; }
    shown = prompts.shift();
    var box = $('miniapp-prompt'), items = $('prompt-items');
    clear(items);
    box.dataset.promptId = String(shown.id);
    $('prompt-title').textContent = shown.appId + ' asks for:';
    shown.items.forEach(function (item) {
      var row = node('div', null, { 'class': 'row' });
      var label = node('label');
      var box = node('input', null, { type: 'checkbox', 'data-permission': item.name });
      label.appendChild(box);
      label.appendChild(document.createTextNode(' ' + item.name + (item.required ? ' (required)' : '')));
      row.appendChild(label);
      if (item.reason) { row.appendChild(node('div', item.reason, { 'class': 'reason' })); }
      items.appendChild(row);
    });
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
  function poll() {
    api('GET', 'notices?after=' + after).then(function (batch) {
      after = batch.next;
      batch.notices.forEach(function (notice) {
        if (notice.kind === 'prompt') { prompts.push(notice); }
        else if (notice.kind === 'settled') {
          prompts = prompts.filter(function (p) { return p.id !== notice.id; });
          if (shown && shown.id === notice.id) { hidePrompt(); }
        } else if (notice.kind === 'closed' && notice.appId === appId) { stopFrame(); status('The mini-app closed itself'); }
      });
      showNextPrompt();
      setTimeout(poll, 0);
    }, function () { setTimeout(poll, 1000); });
  }
  window.addEventListener('message', greeted);
  window.addEventListener('pagehide', function () {
    if (grant !== null) {
      fetch('/api/' + grantsPath() + '/' + grant, { method: 'DELETE', keepalive: true, headers: { 'X-Miniapp-Session': session } }).catch(function () {});
      grant = null;
    }
  });
  document.addEventListener('DOMContentLoaded', function () {
    session = document.querySelector('meta[name="miniapp-session"]').getAttribute('content');
    appId = document.body.getAttribute('data-app');
    appOrigin = document.body.getAttribute('data-origin');
    $('gate-allow').addEventListener('click', function () { gateDecision('ALLOWED'); });
    $('gate-deny').addEventListener('click', function () { gateDecision('DENIED'); });
    $('prompt-confirm').addEventListener('click', function () { answerPrompt(); });
    $('prompt-allow-all').addEventListener('click', function () { answerPrompt('ALLOWED'); });
    $('prompt-deny-all').addEventListener('click', function () { answerPrompt('DENIED'); });
    $('external-close').addEventListener('click', closeExternal);
    if (!appId) {
      $('app-title').textContent = 'Mini-apps';
      (document.body.getAttribute('data-apps') || '').split(' ').filter(Boolean).forEach(function (id) {
        var link = node('a', id, { href: '/apps/' + encodeURIComponent(id) });
        $('permissions').appendChild(node('div', null, { 'class': 'row' })).appendChild(link);
      });
      return;
    }
    $('app-title').textContent = appId;
    refresh();
    poll();
  });
})();
"""#
}
