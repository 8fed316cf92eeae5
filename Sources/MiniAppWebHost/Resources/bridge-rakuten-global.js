// After the methods of Rakuten's action table: the global, the secure storage's readiness, and the
// page's own position, camera and microphone answered as a native Rakuten host answers them.
Object.defineProperty(window, 'MiniAppBridge', { value: bridge, writable: false, configurable: false, enumerable: true });
window.addEventListener('miniappsecurestorageready', function () { bridge.isSecureStorageReady = true; });
window.addEventListener('miniappsecurestorageloaderror', function (event) { bridge.secureStorageLoadError = parseError(event.detail && event.detail.message); });
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
exec('getSecureStorageSize', null, function () {
  bridge.execCustomEventsCallback('miniappsecurestorageready', '');
}, function (error) {
  bridge.execCustomEventsCallback('miniappsecurestorageloaderror', error);
});
