// WebKit's message handlers, as a native host built on WKWebView declares them: exactly the dialect's
// names under `window.webkit.messageHandlers` (an app tests for a handler's existence), each post the
// action of the handler's name with the posted body as its parameters. A post returns at once, as
// WebKit's does; what the host sends back comes as the dialect's events.
//   CONFIG.messageHandlers: the handlers' names; CONFIG.reads: {action: what the call adds of the page}.
(function () {
  // What a call adds of the page before it leaves: the user's data as the page holds it (Forem's host
  // reads `ForemMobile.getUserData()` when asked to read the user's data again).
  var reads = {
    userData: function () {
      var mobile = window.ForemMobile;
      try {
        if (mobile && typeof mobile.getUserData === 'function') { var data = mobile.getUserData(); return data === undefined || data === null ? null : String(data); }
      } catch (e) {}
      return document.body && document.body.dataset.user !== undefined ? String(document.body.dataset.user) : null;
    }
  };
  function handler(name) {
    return Object.freeze({
      postMessage: function (body) {
        if (arguments.length === 0) { throw new TypeError("Failed to execute 'postMessage': 1 argument required, but only 0 present."); }
        var param;
        try { param = body === undefined ? null : JSON.parse(JSON.stringify(body)); }
        catch (e) { throw new DOMException("Failed to execute 'postMessage': the message cannot be serialized.", 'DataCloneError'); }
        if (param === undefined) { param = null; }
        var read = CONFIG.reads[name];
        if (read && reads[read]) {
          var extra = {};
          extra.message = param;
          extra[read] = reads[read]();
          param = extra;
        }
        var answer = replied(name, param);
        request(name, param).then(answer.success, answer.failure);
      }
    });
  }
  var handlers = {};
  CONFIG.messageHandlers.forEach(function (name) { handlers[name] = handler(name); });
  var webkit = window.webkit && typeof window.webkit === 'object' ? window.webkit : {};
  Object.defineProperty(webkit, 'messageHandlers', { value: Object.freeze(handlers), enumerable: true, configurable: false, writable: false });
  if (window.webkit !== webkit) { Object.defineProperty(window, 'webkit', { value: webkit, enumerable: true, configurable: false, writable: false }); }
})();
