import MiniAppBridge

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
        return "(function(){var PLATFORM=" + JSONText.encode(.string(platform)) + ", HOSTS=" + hosts + ";\n" + body + "})();\n"
    }

    private static let body = #"""
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
  environment: function (v) { var info = JSON.parse(v); info.platform = PLATFORM; return info; }
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
var preferences = {
  set: function (key, value) { return call('setMiniAppPreference', { preferenceKey: key, preferenceValue: value }, 'raw', true); },
  get: function (key) { return call('getMiniAppPreference', { preferenceKey: key }, 'raw', true); },
  remove: function (key) { return call('removeMiniAppPreference', { preferenceKey: key }, 'raw', true); },
  clearMiniAppPreferences: function () { return call('clearMiniAppPreferences', null, 'raw', true); }
};
var browserManager = {
  launchExternalBrowser: function (url) { return call('launchExternalBrowser', { url: url }, 'bool', true); },
  launchInternalBrowser: function (url) { return call('launchInternalBrowser', { url: url }, 'bool', true); },
  loadUsingHTMLString: function (html) { return call('loadUsingHTMLString', { htmlString: html }, 'bool', true); }
};
var userProfileManager = {
  isLoggedIn: function () { return call('isLoggedIn', null, 'bool', true); },
  triggerLoginUI: function () { return call('triggerLoginUI', null, 'bool', true); },
  forceLogout: function () { return call('forceLogout', null, 'bool', true); }
};
var webviewConfigManager = {
  allowBackForwardNavigationGestures: function (allow) { return call('allowBackForwardNavigationGestures', { shouldAllowNavigationGestures: allow }, 'bool', true); },
  forceInternalWebView: function (force) { return call('forceInternalWebView', { shouldOpenInNativeWebView: force }, 'bool', true); }
};
var utilityManager = {
  logEvent: function (message, type) { return call('logEvent', { logMessage: message, logType: type === undefined ? 'debug' : type }, 'bool', true); },
  getPermissionStatus: function (name) { return call('getPermissionStatus', { permissionName: name }, 'raw', true); },
  launchAppSettings: function () { return call('launchAppSettings', null, 'bool', true); },
  launchAppUsingDeeplink: function (url) { return call('launchAppUsingDeeplink', { url: url }, 'bool', true); },
  launchAppUsingPackageName: function (name) { return call('launchAppUsingPackageName', { packageName: name }, 'bool', true); },
  isAppInstalledInDevice: function (target) {
    return call('isAppInstalledInDevice', String(target).indexOf('://') >= 0 ? { url: target } : { packageName: target }, 'bool', true);
  }
};
var notificationBridge = {
  shouldClearNotifications: function (type) { return call('shouldClearNotifications', { notificationType: type }, 'bool', true); },
  shouldUpdateBadgeNumber: function (count) { return call('shouldUpdateBadgeNumber', { badgeNumber: count }, 'bool', true); },
  shouldUpdateNotificationInfo: function (info) { return call('shouldUpdateNotificationInfo', { notificationInfo: info }, 'bool', true); }
};
var galleryManager = { getImageFromGallery: function () { return call('getImageFromGallery', null, 'raw', true); } };
var oneClickSdk = { startICChipKyc: function (config) { return call('startICChipKyc', config, 'bool', true); } };
var executor = {
  exec: exec,
  execEvents: function (event) { window.dispatchEvent(event); },
  getPlatform: function () { return PLATFORM; }
};
var bridge = {
  executor: executor, platform: PLATFORM, isSecureStorageReady: false, secureStorageLoadError: null,
  preferences: preferences, browserManager: browserManager, userProfileManager: userProfileManager,
  webviewConfigManager: webviewConfigManager, utilityManager: utilityManager, notificationBridge: notificationBridge,
  galleryManager: galleryManager, oneClickSdk: oneClickSdk,
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
  },
  getUniqueId: function () { return call('getUniqueId', null, 'raw', false); },
  getMessagingUniqueId: function () { return call('getMessagingUniqueId', null, 'raw', false); },
  getMauid: function () { return call('getMauid', null, 'raw', false); },
  requestPermission: function (permission) { return call('requestPermission', { permission: permission }, 'raw', false); },
  showInterstitialAd: function (id) { return call('showAd', { adType: 0, adUnitId: id }, 'raw', false); },
  loadInterstitialAd: function (id) { return call('loadAd', { adType: 0, adUnitId: id }, 'raw', false); },
  loadRewardedAd: function (id) { return call('loadAd', { adType: 1, adUnitId: id }, 'raw', false); },
  showRewardedAd: function (id) { return call('showAd', { adType: 1, adUnitId: id }, 'json', false); },
  requestCustomPermissions: function (permissions) { return call('requestCustomPermissions', { permissions: permissions }, 'json', false); },
  shareInfo: function (info) { return call('shareInfo', { shareInfo: info }, 'raw', false); },
  getUserName: function () { return call('getUserName', null, 'raw', false); },
  getProfilePhoto: function () { return call('getProfilePhoto', null, 'raw', false); },
  getContacts: function (encoded) { return call('getContacts', { isContactsEncodingRequired: encoded }, 'json', false); },
  getAccessToken: function (audience, scopes) { return call('getAccessToken', { audience: audience, scopes: scopes }, 'token', true); },
  getExchangeToken: function (audience, scopes) { return call('getExchangeToken', { audience: audience, scopes: scopes }, 'token', true); },
  setScreenOrientation: function (action) { return call('setScreenOrientation', { action: action }, 'raw', false); },
  sendMessageToContact: function (message) { return call('sendMessageToContact', { messageToContact: withBanner(message) }, 'nullable', false); },
  sendMessageToContactId: function (id, message) { return call('sendMessageToContactId', { contactId: id, messageToContact: withBanner(message) }, 'nullable', false); },
  sendMessageToMultipleContacts: function (message) { return call('sendMessageToMultipleContacts', { messageToContact: withBanner(message) }, 'jsonNullable', false); },
  getPoints: function () { return call('getPoints', null, 'json', true); },
  getHostEnvironmentInfo: function () { return call('getHostEnvironmentInfo', null, 'environment', false); },
  downloadFile: function (filename, url, headers) { return call('downloadFile', { filename: filename, url: url, headers: headers }, 'nullable', true); },
  setSecureStorage: function (items) { return call('setSecureStorageItems', { secureStorageItems: items }, 'none', true); },
  getSecureStorageItem: function (key) { return call('getSecureStorageItem', { secureStorageKey: key }, 'raw', true); },
  removeSecureStorageItems: function (keys) { return call('removeSecureStorageItems', { secureStorageKeyList: keys }, 'none', true); },
  clearSecureStorage: function () { return call('clearSecureStorage', null, 'none', true); },
  getSecureStorageSize: function () { return call('getSecureStorageSize', null, 'json', true); },
  setCloseAlert: function (info) { return call('setCloseAlert', { closeAlertInfo: info }, 'raw', true); },
  sendJsonToHostapp: function (info) { return call('sendJsonToHostapp', { jsonInfo: info }, 'raw', true); },
  sendInfoToHostapp: function (info) { return call('sendInfoToHostapp', { universalBridgeInfo: info }, 'raw', true); },
  closeMiniApp: function (withAlert) { return call('closeMiniApp', { withConfirmationAlert: withAlert }, 'raw', true); },
  miniAppFinishedLoading: function () { return call('miniAppFinishedLoading', null, 'raw', false); },
  getAllProducts: function () { return call('getAllProducts', null, 'json', true); },
  purchaseProductWith: function (id) { return call('purchaseProductWith', { productId: id }, 'json', true); },
  consumePurchaseWith: function (id, transactionId) { return call('consumeProductWith', { productId: id, productTransactionId: transactionId }, 'json', true); },
  getHostAppThemeColors: function () { return call('getHostAppThemeColors', null, 'json', true); },
  isDarkMode: function () { return call('isDarkMode', null, 'bool', true); },
  sendAnalytics: function (info) { return call('sendAnalytics', { analyticsInfo: info }, 'raw', true); },
  configureAnalytics: function (config) { return call('configureAnalytics', config, 'raw', true); },
  getAllCookies: function () { return call('getAllCookies', null, 'json', true); },
  getCookies: function (names) { return call('getCookies', { cookieList: names }, 'json', true); },
  set: preferences.set, get: preferences.get, remove: preferences.remove, clearMiniAppPreferences: preferences.clearMiniAppPreferences,
  shouldClearNotifications: notificationBridge.shouldClearNotifications,
  shouldUpdateBadgeNumber: notificationBridge.shouldUpdateBadgeNumber,
  shouldUpdateNotificationInfo: notificationBridge.shouldUpdateNotificationInfo,
  getFeatureList: function () { return call('getFeatureList', null, 'json', true); },
  getPhoneNumber: function () { return call('getPhoneNumber', null, 'raw', false); },
  canOpenAppDeeplink: function (url) { return call('canOpenAppDeeplink', { deeplinkURL: url }, 'bool', false); },
  isAppDeeplinkSupported: function (url) { return call('isAppDeeplinkSupported', { deeplinkURL: url }, 'bool', false); },
  launchExternalBrowser: browserManager.launchExternalBrowser,
  launchInternalBrowser: browserManager.launchInternalBrowser,
  getImageFromGallery: galleryManager.getImageFromGallery,
  isLoggedIn: userProfileManager.isLoggedIn,
  triggerLoginUI: userProfileManager.triggerLoginUI,
  allowBackForwardNavigationGestures: webviewConfigManager.allowBackForwardNavigationGestures,
  forceInternalWebView: webviewConfigManager.forceInternalWebView,
  logEvent: utilityManager.logEvent,
  isEsimSupported: function () { return call('isEsimSupported', null, 'bool', true); },
  setupAndInstallEsim: function (config) { return call('setupAndInstallEsim', { eSimConfig: config }, 'bool', true); },
  launchAppUsingDeeplink: utilityManager.launchAppUsingDeeplink,
  launchAppUsingPackageName: utilityManager.launchAppUsingPackageName,
  isAppInstalledInDevice: utilityManager.isAppInstalledInDevice
};
Object.defineProperty(window, 'MiniAppBridge', { value: bridge, writable: false, configurable: false, enumerable: true });
window.addEventListener('miniappsecurestorageready', function () { bridge.isSecureStorageReady = true; });
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
    if (event.source !== window.parent || HOSTS.indexOf(event.origin) < 0 || !data || data.miniappBridge !== 'grant' || data.nonce !== nonce) { return; }
    if (capability !== null || refusal !== null) { return; }
    if (typeof data.capability === 'string') { granted(data.capability); } else { refused(String(data.error || 'the host refused the bridge')); }
  });
  HOSTS.forEach(function (origin) { window.parent.postMessage({ miniappBridge: 'hello', nonce: nonce }, origin); });
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
