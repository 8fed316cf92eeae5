// The plumbing every dialect's script shares, first in the app's pages: the capability the host page
// grants the document in the app's frame, the calls sent to the app's own origin, the host's events,
// and what reaches the app as its host's dialect says. It defines no global of its own: the dialect's
// transports (the files that follow) define exactly what that host defines.
//
// Runs inside the injected script's function, after `CONFIG` (made from the dialect's declaration):
//   platform, hosts (the host page's origins), events ({name: delivery}), replies ({action: reply}),
//   anyEvent (unknown event names are window events), userAgent (a token to add, or null).
var ENDPOINT = '/__miniapp/bridge', EVENTS = '/__miniapp/events';
var MARK = typeof Symbol === 'function' ? Symbol.for('miniapp.bridge') : '__miniappBridge';
var counter = 0, pending = {};
var capability = null, refusal = null, waiting = [];
var nonce = null, hostOrigin = null;
var hooks = { windowEvent: null, granted: [] };

function errorText(type, message) { return JSON.stringify({ type: type, message: message }); }
function warn(text) { try { console.warn('[miniapp host] ' + text); } catch (e) {} }

// One call: `onSuccess(text)` or `onError(text)` (the error's JSON `{type, message}`, or text).
function exec(action, param, onSuccess, onError) {
  var id = 'mab' + (++counter) + '.' + Date.now().toString(36);
  pending[id] = { onSuccess: onSuccess, onError: onError };
  var body;
  try { body = JSON.stringify({ id: id, action: action, param: param === undefined ? null : param }); }
  catch (e) { fail(id, errorText('MalformedMessageError', 'the parameters cannot be sent: ' + e)); return; }
  if (refusal !== null) { fail(id, errorText('AuthorizationFailureError', refusal)); }
  else if (capability === null) { waiting.push([id, body]); }
  else { post(id, body); }
}
// The same call as a promise of the answer's text, rejected with the error's text.
function request(action, param) {
  return new Promise(function (resolve, reject) { exec(action, param, resolve, reject); });
}
function post(id, body) {
  fetch(ENDPOINT, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Miniapp-Capability': capability }, body: body, cache: 'no-store', credentials: 'same-origin' })
    .then(function (response) { return response.text().then(function (text) { return { status: response.status, text: text }; }); })
    .then(function (result) {
      var reply = null;
      try { reply = JSON.parse(result.text); } catch (e) { reply = null; }
      if (reply && typeof reply.error === 'string') { fail(id, reply.error); }
      else if (reply && (typeof reply.success === 'string' || reply.success === null)) { succeed(id, reply.success); }
      else { fail(id, errorText('HostError', 'the host answered HTTP ' + result.status)); }
    }, function (e) { fail(id, errorText('HostUnreachableError', 'the host cannot be reached: ' + e)); });
}
function succeed(id, value) {
  var callback = pending[id];
  if (!callback) { return; }
  delete pending[id];
  try { callback.onSuccess(value); } catch (e) { callback.onError(errorText('MiniAppError', String(e))); }
}
function fail(id, error) {
  var callback = pending[id];
  if (!callback) { return; }
  delete pending[id];
  callback.onError(error || 'Unknown Error');
}

// What the host sends reaches the app as its dialect delivers it.
function resolvePath(path) {
  var parts = path.split('.'), owner = window, target = window;
  for (var i = 0; i < parts.length; i++) {
    owner = target;
    target = target === null || target === undefined ? undefined : target[parts[i]];
  }
  return { owner: owner, target: target };
}
// Whether the message reached the app.
function deliverWith(delivery, name, message) {
  if (!delivery || delivery.kind === 'windowEvent') {
    if (hooks.windowEvent) { hooks.windowEvent(name, message); }
    else { window.dispatchEvent(new CustomEvent(name, { detail: { message: message } })); }
    return true;
  }
  if (delivery.kind === 'function') {
    var argument = message;
    if (delivery.argument === 'json') {
      try { argument = JSON.parse(message); } catch (e) { warn('the host sent ' + name + ' a message that is not JSON'); return false; }
    }
    var found = resolvePath(delivery.path);
    if (typeof found.target === 'function') { found.target.call(found.owner, argument); return true; }
    if (delivery.otherwise) { document.dispatchEvent(new CustomEvent(delivery.otherwise, { detail: argument })); return true; }
    warn('the page has no ' + delivery.path + '() for the host to call');
    return false;
  }
  if (delivery.kind === 'inputValue') {
    var data;
    try { data = JSON.parse(message); } catch (e) { data = null; }
    if (!data || typeof data.id !== 'string' || typeof data.value !== 'string') { warn('the host sent ' + name + ' without {id, value}'); return false; }
    return writeInput(data.id, data.value);
  }
  return false;
}
function deliver(name, message) {
  var delivery = CONFIG.events[name];
  if (!delivery && !CONFIG.anyEvent) { warn('the host sent an event this page has no way to receive: ' + name); return false; }
  return deliverWith(delivery, name, message);
}
// Writes through the input's own setter, so that a framework tracking the value (React) sees the change.
function writeInput(id, value) {
  var input = document.getElementById(id);
  if (!input) { warn('the page has no input #' + id + ' for the host to write into'); return false; }
  var setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(input), 'value');
  if (setter && setter.set) { setter.set.call(input, value); } else { input.value = value; }
  input.dispatchEvent(new Event('input', { bubbles: true }));
  return true;
}
// An action's answer, as the dialect says the app receives it; a one-way call's refusal is logged.
function replied(action, param) {
  var reply = CONFIG.replies[action] || { kind: 'none' };
  return {
    success: function (text) {
      if (reply.kind !== 'delivery' || typeof text !== 'string') { return; }
      // Into an input, the one the call's `id` names.
      if (reply.delivery.kind === 'inputValue') {
        if (param && typeof param.id === 'string') { writeInput(param.id, text); }
        return;
      }
      deliverWith(reply.delivery, action, text);
    },
    failure: function (error) {
      var parsed = null;
      try { parsed = JSON.parse(error); } catch (e) { parsed = null; }
      warn(action + ' was not carried out: ' + (parsed && parsed.type ? parsed.type + ': ' + parsed.message : String(error)));
    }
  };
}

// The user agent a native host adds its token to.
if (CONFIG.userAgent) {
  try {
    var agent = navigator.userAgent + ' ' + CONFIG.userAgent, version = navigator.appVersion + ' ' + CONFIG.userAgent;
    Object.defineProperty(navigator, 'userAgent', { get: function () { return agent; }, configurable: true });
    Object.defineProperty(navigator, 'appVersion', { get: function () { return version; }, configurable: true });
  } catch (e) {}
}

// The capability: greet the host page (the frame's parent, which must be the top-level host page),
// wait for its grant; calls made meanwhile wait.
function granted(value) {
  capability = value;
  var calls = waiting; waiting = [];
  calls.forEach(function (call) { post(call[0], call[1]); });
  hooks.granted.forEach(function (hook) { hook(); });
  poll();
}
function refused(reason) {
  refusal = reason;
  var calls = waiting; waiting = [];
  calls.forEach(function (call) { fail(call[0], errorText('AuthorizationFailureError', reason)); });
}
function toHost(message) {
  message.nonce = nonce;
  // The host page's origin as the browser names the frame's ancestor: posting to another would be
  // refused by the browser, with an error in the console.
  (hostOrigin ? [hostOrigin] : CONFIG.hosts).forEach(function (origin) { window.parent.postMessage(message, origin); });
}
function fromHost(event) {
  var data = event.data;
  if (event.source !== window.parent || CONFIG.hosts.indexOf(event.origin) < 0 || !data || data.nonce !== nonce) { return; }
  if (data.miniappBridge === 'reload') { location.reload(); return; }
  // The host page saw the frame load (a traversal of this document's own history fires it too): this
  // is still the document it granted.
  if (data.miniappBridge === 'ping') { toHost({ miniappBridge: 'pong' }); return; }
  if (data.miniappBridge === 'event' && typeof data.name === 'string') {
    var message = typeof data.message === 'string' ? data.message : '';
    // The host page falls back on its own when the page has no way to take it (no `navigateAppTo`).
    if (!deliver(data.name, message)) { toHost({ miniappBridge: 'undelivered', name: data.name, message: message }); }
    return;
  }
  if (data.miniappBridge === 'back') {
    // The host's Back control: the frame's own history, as a native web view goes back.
    var before = location.href;
    history.back();
    setTimeout(function () { if (location.href === before) { toHost({ miniappBridge: 'back-unused' }); } }, 300);
    return;
  }
  if (data.miniappBridge !== 'grant' || capability !== null || refusal !== null) { return; }
  if (typeof data.capability === 'string') { granted(data.capability); } else { refused(String(data.error || 'the host refused the bridge')); }
}
function start() {
  if (window.parent !== window && window.parent === window.top) {
    nonce = Array.prototype.map.call(window.crypto.getRandomValues(new Uint8Array(16)), function (b) { return (b + 256).toString(16).substring(1); }).join('');
    var ancestors = location.ancestorOrigins;
    if (ancestors && ancestors.length && CONFIG.hosts.indexOf(ancestors[0]) >= 0) { hostOrigin = ancestors[0]; }
    window.addEventListener('message', fromHost);
    toHost({ miniappBridge: 'hello' });
    // A page of another site is an external web view in a native host: the app's frame stays where it
    // is, and the host page offers the page in a tab of its own, then tells the app it was closed.
    if (window.navigation) {
      window.navigation.addEventListener('navigate', function (event) {
        var target;
        try { target = new URL(event.destination.url); } catch (e) { return; }
        if (target.origin === location.origin || !event.cancelable || (target.protocol !== 'http:' && target.protocol !== 'https:')) { return; }
        event.preventDefault();
        toHost({ miniappBridge: 'external', url: target.href });
      });
    }
    setTimeout(function () { if (capability === null && refusal === null) { refused('the host page did not grant this page the bridge'); } }, 15000);
  } else {
    refused('only the page the host opened in the mini-app\'s frame may use the bridge');
  }
}

var after = 0;
function poll() {
  fetch(EVENTS + '?after=' + after, { cache: 'no-store', credentials: 'same-origin', headers: { 'X-Miniapp-Capability': capability } })
    .then(function (response) {
      if (response.status === 403) { return null; }
      if (!response.ok) { throw new Error('HTTP ' + response.status); }
      return response.json();
    })
    .then(function (batch) {
      // An ended capability gets no more events: the page stops asking.
      if (batch === null) { return; }
      after = batch.next;
      (batch.events || []).forEach(function (event) { deliver(String(event.name), String(event.message)); });
      setTimeout(poll, 0);
    }, function () { setTimeout(poll, 1000); });
}
