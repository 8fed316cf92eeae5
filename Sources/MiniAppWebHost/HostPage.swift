import Foundation
import MiniAppBridge
import MiniAppCore

/// The host page: the running app in a frame of its own origin, its permissions with a way to revoke
/// them, the launch gate's question, and the prompts of `requestCustomPermissions`. Everything it shows
/// that comes from an app or a manifest is set as text, never as markup.
///
/// Stable hooks for people and tools: `#miniapp-frame` (the app), `#gate` with `#gate-allow`,
/// `#gate-deny`, `#gate-message`; `#miniapp-prompt` (a waiting prompt, `data-prompt-id`) with one
/// checkbox `input[data-permission="<name>"]` per permission, `#prompt-confirm`, `#prompt-allow-all`,
/// `#prompt-deny-all`; `#miniapp-external` (a page of another site the app opened) with `#external-link` and
/// `#external-close`; `#permissions` rows `[data-permission="<name>"]` with `data-status` and a
/// `button[data-action="allow" | "revoke"]`; `#status` for what happened last; `#miniapp-sheet` (the
/// host's own user interface an app waits on, `data-sheet-id` and `data-sheet`: `share`, `ad`,
/// `purchase`, `login`, `gallery` with `#sheet-file`, `message` with `input[data-contact="<id>"]`,
/// `download`, `html`, `device`) with `#sheet-ok` and `#sheet-cancel`; `#host-log` rows
/// `[data-info="<action>"]` for what apps sent the host; `#devices` rows `[data-device="camera" |
/// "microphone" | "location"]` with `data-status` and `button[data-action="granted" | "denied" |
/// "unknown"]` (the frame is allowed the camera and microphone the user granted here). For an app served
/// from a development folder: `#dev-panel` with `#dev-folder`, `#dev-problems` rows `[data-problem]` (the
/// folder's check, and a manifest.json that cannot be used), `#dev-warnings` rows `[data-warning]` (calls
/// the manifest does not allow for), `#dev-publish` (the command that publishes the folder);
/// `#miniapp-frame`'s `data-loads` counts the frame's loads.
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
        :root{--bg:#f3f4f6;--panel:#fff;--text:#1f2328;--muted:#5f6670;--line:#d8dbe0;--accent:#bf0000;--accent-text:#fff;--code:#f1f2f4;--shade:rgba(15,18,22,.62);--bad:#b42318}
        body[data-theme="dark"]{--bg:#15171a;--panel:#1f2226;--text:#e8eaed;--muted:#a0a6ad;--line:#353a40;--accent:#ff5a4f;--accent-text:#111;--code:#2a2e33;--shade:rgba(0,0,0,.72);--bad:#ff8a80}
        @media (prefers-color-scheme: dark){body:not([data-theme="light"]){--bg:#15171a;--panel:#1f2226;--text:#e8eaed;--muted:#a0a6ad;--line:#353a40;--accent:#ff5a4f;--accent-text:#111;--code:#2a2e33;--shade:rgba(0,0,0,.72);--bad:#ff8a80}}
        *{box-sizing:border-box}
        body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;height:100vh;display:flex;flex-direction:column;background:var(--bg);color:var(--text)}
        button{font:inherit;border:1px solid var(--line);background:var(--panel);color:var(--text);border-radius:8px;padding:5px 12px;cursor:pointer}
        button:hover{border-color:var(--accent)}
        button.primary,#gate-allow,#prompt-confirm,#sheet-ok{background:var(--accent);border-color:var(--accent);color:var(--accent-text)}
        select{font:inherit;background:var(--panel);color:var(--text);border:1px solid var(--line);border-radius:8px;padding:4px 8px}
        a{color:var(--accent)}
        #bar{display:flex;align-items:center;gap:10px;padding:8px 14px;background:var(--panel);border-bottom:1px solid var(--line);flex-wrap:wrap}
        #bar h1{font-size:16px;margin:0;flex:1;min-width:120px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
        #app-icon{width:28px;height:28px;border-radius:7px;object-fit:cover;background:var(--code)}
        #layout{flex:1;display:flex;min-height:0}
        #stage{flex:1;display:flex;align-items:center;justify-content:center;padding:18px;overflow:auto;min-width:0}
        #device{position:relative;background:#000;border-radius:36px;padding:14px;box-shadow:0 10px 40px rgba(0,0,0,.25);width:calc(390px + 28px);height:calc(844px + 28px);max-width:100%;max-height:100%;flex:none}
        #device[data-preset="phone-small"]{width:calc(360px + 28px);height:calc(740px + 28px)}
        #device[data-preset="tablet"]{width:calc(820px + 28px);height:calc(1180px + 28px);border-radius:28px}
        #device[data-rotated="true"]{width:calc(844px + 28px);height:calc(390px + 28px)}
        #device[data-preset="phone-small"][data-rotated="true"]{width:calc(740px + 28px);height:calc(360px + 28px)}
        #device[data-preset="tablet"][data-rotated="true"]{width:calc(1180px + 28px);height:calc(820px + 28px)}
        #device[data-preset="fill"]{width:100%;height:100%;border-radius:0;padding:0;box-shadow:none}
        #main{position:relative;width:100%;height:100%;background:#fff;border-radius:24px;overflow:hidden}
        #device[data-preset="fill"] #main{border-radius:0}
        #miniapp-frame{border:0;width:100%;height:100%;display:block;background:#fff}
        #gate,#miniapp-prompt,#miniapp-external,#miniapp-sheet{position:absolute;inset:0;background:var(--shade);display:flex;align-items:center;justify-content:center;padding:16px;overflow:auto;z-index:2}
        .card{background:var(--panel);color:var(--text);border-radius:16px;padding:18px 18px 14px;width:100%;max-width:440px;max-height:100%;overflow:auto;box-shadow:0 8px 30px rgba(0,0,0,.35)}
        .card h3{margin:0 0 10px;font-size:16px;display:flex;align-items:center;gap:8px}
        .card h3 img{width:28px;height:28px;border-radius:7px}
        .card .actions{display:flex;gap:8px;justify-content:flex-end;flex-wrap:wrap;margin-top:12px}
        .card label{display:flex;gap:8px;align-items:flex-start}
        .permission-name{font-weight:600}
        .permission-id{color:var(--muted);font-size:11px;word-break:break-all}
        #side{width:340px;flex:none;padding:12px 14px;overflow:auto;border-left:1px solid var(--line);background:var(--panel)}
        #side h3{font-size:12px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);margin:16px 0 6px}
        #side .row{display:flex;flex-wrap:wrap;align-items:center;gap:6px;padding:6px 0;border-bottom:1px solid var(--line)}
        #side .row .grow{flex:1;min-width:120px}
        #status{min-height:1.4em;color:var(--muted)}
        .badge{font-size:11px;padding:1px 7px;border-radius:9px;border:1px solid var(--line);color:var(--muted)}
        .badge[data-status="ALLOWED"],.badge[data-status="granted"]{color:#137333;border-color:#137333}
        .badge[data-status="DENIED"],.badge[data-status="denied"]{color:var(--bad);border-color:var(--bad)}
        #sheet-body img{max-width:100%;max-height:240px}
        #dev-problems .row,#dev-warnings .row{color:var(--bad);white-space:pre-wrap}
        pre,#dev-publish{white-space:pre-wrap;word-break:break-all;background:var(--code);padding:6px;border-radius:6px;max-height:200px;overflow:auto}
        .reason{color:var(--muted);font-size:90%;margin:2px 0 8px 24px;white-space:pre-wrap;flex-basis:100%}
        .row{margin:4px 0}
        [hidden]{display:none!important}
        @media (max-width: 900px){#layout{flex-direction:column;overflow:auto}#side{width:auto;border-left:0;border-top:1px solid var(--line);overflow:visible}#stage{min-height:70vh}}
        </style>
        <script src="/host.js"></script>
        <script src="/panel.js"></script>
        </head>
        <body data-app="\(attribute(appId ?? ""))" data-origin="\(attribute(appOrigin ?? ""))" data-apps="\(attribute(apps.joined(separator: " ")))">
        <header id="bar"><img id="app-icon" alt="" hidden><h1 id="app-title"></h1>
        <label>Device <select id="device-preset"><option value="phone">Phone 390 × 844</option><option value="phone-small">Small phone 360 × 740</option>
        <option value="tablet">Tablet 820 × 1180</option><option value="fill">Fill the window</option></select></label>
        <button id="device-rotate" title="Rotate">Rotate</button><button id="theme-toggle" title="Light or dark">Dark</button></header>
        <div id="layout">
        <main id="stage"><div id="device" data-preset="phone" data-rotated="false">
        <div id="main">
        <div id="gate" hidden><div class="card"><h3 id="gate-title">Before this mini-app starts</h3><p>It needs these permissions:</p><div id="gate-items"></div>
        <p id="gate-message"></p><div class="actions"><button id="gate-deny">Deny</button><button id="gate-allow">Allow and start</button></div></div></div>
        <div id="miniapp-external" hidden><div class="card"><h3>The mini-app opens a page of another site</h3>
        <p><a id="external-link" target="_blank" rel="noopener noreferrer"></a></p>
        <div class="actions"><button id="external-close">Back to the mini-app</button></div></div></div>
        <div id="miniapp-prompt" hidden><div class="card"><h3 id="prompt-title"></h3><div id="prompt-items"></div>
        <div class="actions"><button id="prompt-deny-all">Deny all</button><button id="prompt-allow-all">Allow all</button><button id="prompt-confirm">Confirm</button></div></div></div>
        <div id="miniapp-sheet" hidden><div class="card"><h3 id="sheet-title"></h3><div id="sheet-body"></div>
        <div class="actions"><button id="sheet-cancel"></button><button id="sheet-ok"></button></div></div></div>
        </div></div></main>
        <aside id="side"><div id="status" role="status"></div>
        <div id="dev-panel" hidden><h3>Development folder</h3><div id="dev-folder"></div><div id="dev-problems"></div><div id="dev-warnings"></div>
        <p>To publish it:</p><pre id="dev-publish"></pre></div>
        <h3>Permissions</h3><div id="permissions"></div><h3>Device</h3><div id="devices"></div><h3>From the app</h3><div id="host-log"></div>
        <div id="miniapp-panel"></div></aside>
        </div>
        </body></html>
        """
    }

    /// The script, with the readable names of the permissions the SDKs know.
    static let script: String = scriptTemplate.replacingOccurrences(of: "/*LABELS*/{}", with: JSONText.encode(.object(
        Dictionary(uniqueKeysWithValues: KnownPermission.allCases.map { ($0.rawValue, .string(label(of: $0))) })
    )))

    /// What the user reads for a permission, in the host's words.
    static func label(of permission: KnownPermission) -> String {
        switch permission {
        case .userName: "Your name"
        case .profilePhoto: "Your profile photo"
        case .contactList: "Your contacts"
        case .accessToken: "Access to Rakuten services for you"
        case .sendMessage: "Send messages to your contacts"
        case .location: "Your location"
        case .points: "Your points"
        case .fileDownload: "Download files to your device"
        }
    }

    private static let scriptTemplate = #"""
(function () {
  'use strict';
  var session, appId, appOrigin, prompts = [], shown = null, after = 0, sheets = [], sheet = null;
  // Readable names of the custom permissions the SDKs know; other names are shown as they are.
  var LABELS = /*LABELS*/{};
  // The app as the user knows it: its display name and icon once the host said them.
  var appName = null, appIcon = null;
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
  // The capability held by the document in the app's frame, the greetings seen, and the greetings seen
  // at the frame's last load (a load without a greeting is a document without the bridge).
  var grant = null, hellos = 0, hellosAtLoad = 0, externalTarget = null, allowed = '';
  // The nonce of the frame document's last greeting: what the page sends it to ask for a reload.
  var frameNonce = null;
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
    if (box.dataset.source === 'bridge') {
      box.dataset.source = '';
      api('POST', 'apps/' + encodeURIComponent(appId) + '/events', { name: 'miniappwebviewclosed', message: '' }).catch(fail);
      return;
    }
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
    frameNonce = data.nonce;
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
      id: 'miniapp-frame', src: appOrigin + '/', title: appId, allow: allowed,
      sandbox: 'allow-scripts allow-same-origin allow-forms allow-popups allow-modals allow-downloads'
    });
    hellosAtLoad = hellos;
    frame.addEventListener('load', function () {
      frame.dataset.loads = String(Number(frame.dataset.loads || 0) + 1);
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
          api('POST', 'apps/' + encodeURIComponent(appId) + '/devices', { decisions: decisions }).then(function (state) { status(name + ': ' + choice); render(state); }, fail);
        });
        row.appendChild(button);
      });
      list.appendChild(row);
    });
    if (next !== allowed) {
      allowed = next;
      var frame = $('miniapp-frame');
      if (frame) { frame.setAttribute('allow', allowed); frame.src = appOrigin + '/'; }
    }
  }
  // The app asks where the device is: the host page asks its browser, which may ask its user.
  function locate(notice) {
    function send(answer) { api('POST', 'sheets/' + notice.id, { answer: answer }).catch(function () {}); }
    if (!navigator.geolocation) { send({ error: 'this browser has no geolocation' }); return; }
    navigator.geolocation.getCurrentPosition(function (position) {
      send({ latitude: position.coords.latitude, longitude: position.coords.longitude, accuracy: position.coords.accuracy, altitude: position.coords.altitude });
    }, function (error) { send({ error: error.message || ('error ' + error.code) }); }, { timeout: 10000 });
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
    if (state.development) { showDevelopment(state.development); }
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
  // The folder changed: the app's state is read again (the manifest may have changed the gate), and a
  // frame still showing reloads its document, which greets the page and gets a new capability. A
  // document that does not answer (no bridge: not a page of the app) is replaced by a new frame.
  function reloadFrame() {
    var before = $('miniapp-frame');
    api('GET', 'apps/' + encodeURIComponent(appId)).then(function (state) {
      render(state);
      var frame = $('miniapp-frame');
      if (!frame || frame !== before) { return; }
      var loads = frame.dataset.loads;
      if (frameNonce) { frame.contentWindow.postMessage({ miniappBridge: 'reload', nonce: frameNonce }, appOrigin); }
      setTimeout(function () {
        if ($('miniapp-frame') === frame && frame.dataset.loads === loads) { stopFrame(); startFrame(); }
      }, 1000);
    }, fail);
  }
  function fail(error) { status('Failed: ' + error.message); }
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
      var box = node('input', null, { type: 'checkbox', 'data-permission': item.name });
      label.appendChild(box);
      label.appendChild(permissionLabel(item.name, item.required));
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
  // The host's own user interface for a call the app waits on. Everything shown comes from the app:
  // it is set as text, or as an image from a data URL the server made of checked bytes.
  var sheetTitles = {
    share: ['The mini-app shares', 'Share', 'Cancel'], ad: ['Advertisement', 'Watched to the end', 'Close'],
    purchase: ['Buy in the mini-app', 'Buy', 'Cancel'], login: ['Log in to the host', 'Log in', 'Cancel'],
    gallery: ['Choose an image for the mini-app', 'Use this image', 'Cancel'], message: ['Send a message', 'Send', 'Cancel'],
    download: ['The mini-app downloads a file', 'Save', 'Cancel'], html: ['The mini-app shows a page', 'Continue', 'Close'],
    device: ['The mini-app asks for a device permission', 'Allow', "Don't allow"]
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
    } else if (sheet.sheet === 'gallery') {
      body.appendChild(node('input', null, { type: 'file', id: 'sheet-file', accept: 'image/*' }));
      body.appendChild(node('div', 'At most ' + p.maxBytes + ' bytes', { 'class': 'reason' }));
    } else if (sheet.sheet === 'message') {
      var message = p.message || {};
      if (message.text) { body.appendChild(node('pre', message.text)); }
      if (message.caption) { body.appendChild(field('Caption', message.caption)); }
      if (message.action) { body.appendChild(field('Link', message.action)); }
      if (p.mode === 'contact') {
        body.appendChild(field('To', p.contactId));
      } else {
        (p.contacts || []).forEach(function (contact, index) {
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
    $('miniapp-sheet').hidden = false;
  }
  function hideSheet() { sheet = null; $('miniapp-sheet').hidden = true; showNextSheet(); }
  function sendSheet(id, message) {
    hideSheet();
    api('POST', 'sheets/' + id, message).then(function () { status('Answered the mini-app'); return refresh(); }, fail);
  }
  function sheetOK() {
    if (sheet === null) { return; }
    var id = sheet.id, kind = sheet.sheet;
    if (kind === 'gallery') {
      var input = $('sheet-file'), file = input && input.files && input.files[0];
      if (!file) { status('Choose an image first'); return; }
      var reader = new FileReader();
      reader.onload = function () {
        var text = String(reader.result), comma = text.indexOf(',');
        sendSheet(id, { answer: { data: text.slice(comma + 1), mimeType: file.type, filename: file.name } });
      };
      reader.onerror = function () { sendSheet(id, { dismissed: true }); };
      reader.readAsDataURL(file);
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
    if (notice.appId !== appId) { return; }
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
    var row = node('div', null, { 'class': 'row', 'data-info': notice.info });
    row.appendChild(node('strong', notice.info));
    row.appendChild(node('pre', JSON.stringify(notice.payload)));
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
        else if (notice.kind === 'settled') {
          prompts = prompts.filter(function (p) { return p.id !== notice.id; });
          sheets = sheets.filter(function (p) { return p.id !== notice.id; });
          if (shown && shown.id === notice.id) { hidePrompt(); }
          if (sheet && sheet.id === notice.id) { hideSheet(); }
        } else if (notice.kind === 'closed' && notice.appId === appId) { stopFrame(); status('The mini-app closed itself'); }
        else if (notice.kind === 'development' && notice.appId === appId) { if (notice.change === 'reload') { reloadFrame(); } else { refresh(); } }
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
    $('sheet-ok').addEventListener('click', sheetOK);
    $('sheet-cancel').addEventListener('click', sheetCancel);
    setUpView();
    if (!appId) {
      $('app-title').textContent = 'Mini-apps';
      (document.body.getAttribute('data-apps') || '').split(' ').filter(Boolean).forEach(function (id) {
        var link = node('a', id, { href: '/apps/' + encodeURIComponent(id) });
        $('permissions').appendChild(node('div', null, { 'class': 'row' })).appendChild(link);
      });
      return;
    }
    $('app-title').textContent = appId;
    appName = appId;
    refresh();
    poll();
  });
})();
"""#
}
