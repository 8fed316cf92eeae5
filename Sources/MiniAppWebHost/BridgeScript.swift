import MiniAppBridge
import MiniAppCore

/// The script a browser host puts first in every HTML page of a mini-app: it defines
/// `window.MiniAppBridge` as the SDK expects (each method is the SDK's `exec(action, param, onSuccess,
/// onError)` with the same parameters and answer parsing), sends each call to the app's own origin, and
/// turns the host's events into DOM `CustomEvent`s.
///
/// Calls go out only with the capability the host page hands the document in the app's frame: the
/// script greets the host page (`{miniappBridge: "hello", nonce}`, posted to the frame's parent, which
/// must be the top-level host page) and waits for `{miniappBridge: "grant", nonce, capability}` from
/// it; calls made meanwhile wait. A page that is not that frame's document (a popup, a new tab, a page
/// nested in the app) gets no capability, and its calls fail with `AuthorizationFailureError`.
enum BridgeScript {
    /// The script, reporting `platform`, for a host page on `port`.
    static func source(platform: String, port: Int) -> String {
        let hosts = JSONText.encode(.array(["http://localhost:\(port)", "http://127.0.0.1:\(port)"].map { .string($0) }))
        return "(function(){var PLATFORM=" + JSONText.encode(.string(platform)) + ", HOSTS=" + hosts + ";\n" + head + "\n" + methods + tail + "})();\n"
    }

    /// The bridge's methods, one per script method of every declared action (``BridgeDispatcher``'s
    /// table), each a function sending its action with the SDK's parameter shape; a method with several
    /// paths is one function under each.
    static let methods: String = {
        var text = "function define(path, method) {\n"
            + "  var parts = path.split('.'), target = bridge;\n"
            + "  if (parts.length === 2) { target = bridge[parts[0]] || (bridge[parts[0]] = {}); }\n"
            + "  target[parts[parts.length - 1]] = method;\n"
            + "}\n"
        for declaration in BridgeDispatcher.declarationList {
            for method in declaration.methods {
                let name = JSONText.encode(.string(declaration.name))
                text += "(function (method) { " + method.paths.map { "define(" + JSONText.encode(.string($0)) + ", method);" }.joined(separator: " ") + " })("
                    + "function (\(method.arguments)) { return call(\(name), \(method.param), '\(method.form.rawValue)', \(method.parsesErrors)); });\n"
            }
        }
        return text
    }()

    /// Before the methods: the calls' plumbing and the bridge object without its methods.
    private static let head = #"""
'use strict';
if (window.MiniAppBridge) { return; }
var ENDPOINT = '/__miniapp/bridge', EVENTS = '/__miniapp/events';
var counter = 0, pending = {};
var capability = null, refusal = null, waiting = [];
function errorText(type, message) { return JSON.stringify({ type: type, message: message }); }
function parseError(text) {
  var input;
  try { input = JSON.parse(text); } catch (e) { input = null; }
  if (!input || typeof input !== 'object') { input = { type: 'MiniAppError', message: String(text) }; }
  var error = new Error(input.message);
  error.name = input.type || 'MiniAppError';
  error.errorInput = input;
  return error;
}
function booleanValue(value) {
  if (typeof value === 'boolean') { return value; }
  var text = String(value).toLowerCase();
  return text === 'true' || text === '1';
}
function exec(action, param, onSuccess, onError) {
  var id = 'mab' + (++counter) + '.' + Date.now().toString(36);
  pending[id] = { onSuccess: onSuccess, onError: onError };
  var body;
  try { body = JSON.stringify({ id: id, action: action, param: param === undefined ? null : param }); }
  catch (e) { bridge.execErrorCallback(id, errorText('MalformedMessageError', 'the parameters cannot be sent: ' + e)); return; }
  if (refusal !== null) { bridge.execErrorCallback(id, errorText('AuthorizationFailureError', refusal)); }
  else if (capability === null) { waiting.push([id, body]); }
  else { send(id, body); }
}
function send(id, body) {
  fetch(ENDPOINT, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Miniapp-Capability': capability }, body: body, cache: 'no-store', credentials: 'same-origin' })
    .then(function (response) { return response.text().then(function (text) { return { status: response.status, text: text }; }); })
    .then(function (result) {
      var reply = null;
      try { reply = JSON.parse(result.text); } catch (e) { reply = null; }
      if (reply && typeof reply.error === 'string') { bridge.execErrorCallback(id, reply.error); }
      else if (reply && (typeof reply.success === 'string' || reply.success === null)) { answer(id, reply.success); }
      else { bridge.execErrorCallback(id, errorText('HostError', 'the host answered HTTP ' + result.status)); }
    }, function (e) { bridge.execErrorCallback(id, errorText('HostUnreachableError', 'the host cannot be reached: ' + e)); });
}
function answer(id, value) {
  var callback = pending[id];
  if (!callback) { return; }
  delete pending[id];
  try { callback.onSuccess(value); } catch (e) { callback.onError(errorText('MiniAppError', String(e))); }
}
var convert = {
  raw: function (v) { return v; },
  json: function (v) { return JSON.parse(v); },
  bool: booleanValue,
  none: function () { return undefined; },
  nullable: function (v) { return v !== 'null' && v !== null ? v : null; },
  jsonNullable: function (v) { return v !== 'null' && v !== null ? JSON.parse(v) : null; },
  token: function (v) {
    var data = JSON.parse(v);
    return { token: data.token, validUntil: new Date(data.validUntil), scopes: data.scopes };
  },
  environment: function (v) { var info = JSON.parse(v); info.platform = PLATFORM; return info; },
  unlessCancelled: function (v) { return v === 'CANCELLED' ? null : v; }
};
function call(action, param, kind, parsedErrors) {
  return new Promise(function (resolve, reject) {
    exec(action, param, function (value) {
      try { resolve(convert[kind](value)); } catch (e) { reject(parsedErrors ? parseError(errorText('MiniAppError', String(e))) : String(e)); }
    }, function (error) { reject(parsedErrors ? parseError(error) : error); });
  });
}
function trimBanner(text) { return text && text.length > 128 ? text.substring(0, 127) + '\u2026' : (text === undefined ? null : text); }
function withBanner(message) { var copy = Object.assign({}, message); copy.bannerMessage = trimBanner(message && message.bannerMessage); return copy; }
var executor = {
  exec: exec,
  execEvents: function (event) { window.dispatchEvent(event); },
  getPlatform: function () { return PLATFORM; }
};
var bridge = {
  executor: executor, platform: PLATFORM, isSecureStorageReady: false, secureStorageLoadError: null,
  execSuccessCallback: function (id, value) {
    if (value) { answer(id, value); } else { bridge.execErrorCallback(id, 'Unknown Error'); }
  },
  execErrorCallback: function (id, error) {
    var callback = pending[id];
    if (!callback) { return; }
    delete pending[id];
    callback.onError(error || 'Unknown Error');
  },
  execCustomEventsCallback: function (type, value) { executor.execEvents(new CustomEvent(type, { detail: { message: value } })); },
  execKeyboardEventsCallback: function (type, message, navigationBarHeight, screenHeight, keyboardHeight) {
    executor.execEvents(new CustomEvent(type, { detail: { message: message, navigationBarHeight: navigationBarHeight, screenHeight: screenHeight, keyboardHeight: keyboardHeight } }));
  }
};
"""#

    /// After the methods: the global, the capability's greeting, the events.
    private static let tail = #"""
Object.defineProperty(window, 'MiniAppBridge', { value: bridge, writable: false, configurable: false, enumerable: true });
window.addEventListener('miniappsecurestorageready', function () { bridge.isSecureStorageReady = true; });
// The position comes as a native host gives it, through the bridge (LOCATION, then the user's device
// decision on the host page): the frame itself is never allowed the browser's geolocation.
if (navigator.geolocation) {
  var watches = 0;
  var locate = function (success, failure, options) {
    call('getCurrentPosition', { locationOptions: options === undefined ? null : options }, 'json', false).then(function (position) {
      if (typeof success === 'function') { success(position); }
    }, function (error) {
      var input;
      try { input = JSON.parse(error); } catch (e) { input = { message: String(error) }; }
      var code = input.type === 'POSITION_UNAVAILABLE' || input.type === 'NotSupportedError' ? 2 : input.type === 'TIMEOUT' ? 3 : 1;
      if (typeof failure === 'function') { failure({ code: code, message: String(input.message || error), PERMISSION_DENIED: 1, POSITION_UNAVAILABLE: 2, TIMEOUT: 3 }); }
    });
  };
  try {
    Object.defineProperty(navigator.geolocation, 'getCurrentPosition', { value: function (success, failure, options) { locate(success, failure, options); }, configurable: true });
    Object.defineProperty(navigator.geolocation, 'watchPosition', { value: function (success, failure, options) { locate(success, failure, options); return ++watches; }, configurable: true });
    Object.defineProperty(navigator.geolocation, 'clearWatch', { value: function () {}, configurable: true });
  } catch (e) {}
}
// The camera and the microphone, as a native host gives them: the user decides on the host page (asked
// there when undecided), and only then does the host page let the frame ask the browser (the frame's
// `allow`, which takes effect when the host page reloads the frame). Until then the browser refuses.
if (navigator.mediaDevices && typeof navigator.mediaDevices.getUserMedia === 'function') {
  var userMedia = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
  var mediaRefusal = function (message) { try { return new DOMException(message, 'NotAllowedError'); } catch (e) { var error = new Error(message); error.name = 'NotAllowedError'; return error; } };
  var allowedByFrame = function (name) { var policy = document.featurePolicy; return !!(policy && policy.allowsFeature(name)); };
  try {
    Object.defineProperty(navigator.mediaDevices, 'getUserMedia', { configurable: true, value: function (constraints) {
      var wanted = [];
      if (constraints && constraints.video) { wanted.push('camera'); }
      if (constraints && constraints.audio) { wanted.push('microphone'); }
      var missing = wanted.filter(function (name) { return !allowedByFrame(name); });
      if (!missing.length) { return userMedia(constraints); }
      return missing.reduce(function (asked, name) {
        return asked.then(function () { return call('requestPermission', { permission: name }, 'raw', false); });
      }, Promise.resolve()).then(function () {
        // Allowed: the host page reloads the frame with the device in its `allow`; this document goes.
        return new Promise(function (resolve, reject) { setTimeout(function () { reject(mediaRefusal('Allowed on the host page: the app reloads to use it')); }, 5000); });
      }, function () { throw mediaRefusal('Permission denied'); });
    } });
  } catch (e) {}
}
window.addEventListener('miniappsecurestorageloaderror', function (event) { bridge.secureStorageLoadError = parseError(event.detail && event.detail.message); });
function granted(value) {
  capability = value;
  var calls = waiting; waiting = [];
  calls.forEach(function (call) { send(call[0], call[1]); });
  poll();
}
function refused(reason) {
  refusal = reason;
  var calls = waiting; waiting = [];
  calls.forEach(function (call) { bridge.execErrorCallback(call[0], errorText('AuthorizationFailureError', reason)); });
}
if (window.parent !== window && window.parent === window.top) {
  var nonce = Array.prototype.map.call(window.crypto.getRandomValues(new Uint8Array(16)), function (b) { return (b + 256).toString(16).substring(1); }).join('');
  window.addEventListener('message', function (event) {
    var data = event.data;
    if (event.source !== window.parent || HOSTS.indexOf(event.origin) < 0 || !data || data.nonce !== nonce) { return; }
    if (data.miniappBridge === 'reload') {
      // A development folder changed: the host page asks for the document again.
      location.reload();
      return;
    }
    if (data.miniappBridge === 'event' && typeof data.name === 'string') {
      // The host page's side of the app: an external page it showed was closed.
      bridge.execCustomEventsCallback(data.name, typeof data.message === 'string' ? data.message : '');
      return;
    }
    if (data.miniappBridge !== 'grant' || capability !== null || refusal !== null) { return; }
    if (typeof data.capability === 'string') { granted(data.capability); } else { refused(String(data.error || 'the host refused the bridge')); }
  });
  HOSTS.forEach(function (origin) { window.parent.postMessage({ miniappBridge: 'hello', nonce: nonce }, origin); });
  // A page of another site is an external web view in a native host: the app's frame stays where it
  // is, and the host page offers the page in a tab of its own, then tells the app it was closed.
  if (window.navigation) {
    window.navigation.addEventListener('navigate', function (event) {
      var target;
      try { target = new URL(event.destination.url); } catch (e) { return; }
      if (target.origin === location.origin || !event.cancelable || (target.protocol !== 'http:' && target.protocol !== 'https:')) { return; }
      event.preventDefault();
      HOSTS.forEach(function (origin) { window.parent.postMessage({ miniappBridge: 'external', nonce: nonce, url: target.href }, origin); });
    });
  }
  setTimeout(function () { if (capability === null && refusal === null) { refused('the host page did not grant this page the bridge'); } }, 15000);
} else {
  refused('only the page the host opened in the mini-app\'s frame may use the bridge');
}
exec('getSecureStorageSize', null, function () {
  bridge.execCustomEventsCallback('miniappsecurestorageready', '');
}, function (error) {
  bridge.execCustomEventsCallback('miniappsecurestorageloaderror', error);
});
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
      (batch.events || []).forEach(function (event) { bridge.execCustomEventsCallback(String(event.name), String(event.message)); });
      setTimeout(poll, 0);
    }, function () { setTimeout(poll, 1000); });
}
"""#
}
