// Rakuten's `window.MiniAppBridge`, as the SDK expects it: each method is the SDK's `exec(action,
// param, onSuccess, onError)` with the same parameters and answer parsing (the methods themselves are
// made from the action table and follow this file); the host's events are DOM `CustomEvent`s.
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
  environment: function (v) { var info = JSON.parse(v); info.platform = CONFIG.platform; return info; },
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
  getPlatform: function () { return CONFIG.platform; }
};
var bridge = {
  executor: executor, platform: CONFIG.platform, isSecureStorageReady: false, secureStorageLoadError: null,
  execSuccessCallback: function (id, value) {
    if (value) { succeed(id, value); } else { bridge.execErrorCallback(id, 'Unknown Error'); }
  },
  execErrorCallback: function (id, error) { fail(id, error); },
  execCustomEventsCallback: function (type, value) { executor.execEvents(new CustomEvent(type, { detail: { message: value } })); },
  execKeyboardEventsCallback: function (type, message, navigationBarHeight, screenHeight, keyboardHeight) {
    executor.execEvents(new CustomEvent(type, { detail: { message: message, navigationBarHeight: navigationBarHeight, screenHeight: screenHeight, keyboardHeight: keyboardHeight } }));
  }
};
hooks.windowEvent = function (name, message) { bridge.execCustomEventsCallback(name, message); };
function define(path, method) {
  var parts = path.split('.'), target = bridge;
  if (parts.length === 2) { target = bridge[parts[0]] || (bridge[parts[0]] = {}); }
  target[parts[parts.length - 1]] = method;
}
