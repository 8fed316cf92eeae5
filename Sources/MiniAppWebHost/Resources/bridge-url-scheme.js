// A URL scheme the host handles, as a native web view's navigation delegate does: the app navigates to
// `<scheme>://<domain>/<action>?<query>=<URL-encoded JSON>` in any form (`location`, `location.assign`
// or `replace`, a link, `window.open`, an iframe's `src`), and the navigation is caught before it
// leaves the page, so that the frame stays as it was and the browser is never asked to launch anything.
// An answer goes back through the app's own global function as `{"purpose": "response", "request_id",
// "event_type", "response_data"}`. Defines no global.
//   CONFIG.urlScheme: {scheme, domain, query, function}.
(function () {
  var scheme = CONFIG.urlScheme.scheme.toLowerCase() + ':';
  function ours(url) { return typeof url === 'string' && url.slice(0, scheme.length).toLowerCase() === scheme; }
  function text(url) { try { return String(url); } catch (e) { return ''; } }
  // The request a URL carries: the data itself (with an optional `request_id`), or an envelope
  // `{"request_id", "event_type", "request_data"}`. The query item is percent-decoded as a native
  // host's URL parser does (a `+` stays a `+`).
  function handle(url) {
    var rest = url.slice(scheme.length).replace(/^\/\//, ''), slash = rest.indexOf('/');
    var domain = slash < 0 ? rest : rest.slice(0, slash), tail = slash < 0 ? '' : rest.slice(slash + 1);
    var hash = tail.indexOf('#');
    if (hash >= 0) { tail = tail.slice(0, hash); }
    var question = tail.indexOf('?'), event = question < 0 ? tail : tail.slice(0, question), query = question < 0 ? '' : tail.slice(question + 1);
    if (domain.toLowerCase() !== CONFIG.urlScheme.domain) { warn('this host answers ' + scheme + '//' + CONFIG.urlScheme.domain + '/ only, not ' + url); return; }
    try { event = decodeURIComponent(event); } catch (e) { warn('the event of ' + url + ' cannot be decoded'); return; }
    var encoded = null;
    query.split('&').forEach(function (item) {
      var equals = item.indexOf('=');
      if (encoded === null && (equals < 0 ? item : item.slice(0, equals)) === CONFIG.urlScheme.query) { encoded = equals < 0 ? '' : item.slice(equals + 1); }
    });
    var data = null, requestId;
    if (encoded !== null && encoded !== '') {
      try { data = JSON.parse(decodeURIComponent(encoded)); } catch (e) { warn('the request of ' + event + ' is not URL-encoded JSON'); return; }
    }
    if (data && typeof data === 'object' && !Array.isArray(data)) {
      requestId = data.request_id;
      if ('request_data' in data || 'event_type' in data) {
        data = data.request_data === undefined ? null : data.request_data;
      } else if ('request_id' in data) {
        var copy = {};
        Object.keys(data).forEach(function (key) { if (key !== 'request_id') { copy[key] = data[key]; } });
        data = copy;
      }
    }
    var reply = CONFIG.replies[event] || { kind: 'none' };
    request(event, data).then(function (answer) {
      if (reply.kind !== 'transport') { return; }
      var response = {}, parsed = null;
      try { parsed = answer === null ? null : JSON.parse(answer); } catch (e) { parsed = answer; }
      response.purpose = 'response';
      if (requestId !== undefined) { response.request_id = requestId; }
      response.event_type = event;
      response.response_data = parsed;
      var found = resolvePath(CONFIG.urlScheme['function']);
      if (typeof found.target === 'function') { found.target.call(found.owner, response); }
      else { warn('the page has no ' + CONFIG.urlScheme['function'] + '() for the answer to ' + event); }
    }, replied(event, data).failure);
  }
  // `location.href`, `location.assign` and `replace`, links and forms in this frame.
  if (window.navigation) {
    window.navigation.addEventListener('navigate', function (navigation) {
      var url = navigation.destination.url;
      if (!ours(url)) { return; }
      if (navigation.cancelable) { navigation.preventDefault(); }
      handle(url);
    });
  }
  // Links, whatever their target: caught at the click, so that no navigation starts at all (a link
  // opening elsewhere has none of this frame's to catch, and the browser counts every navigation a
  // frame starts: past 200 in 10 seconds, Chromium drops them).
  document.addEventListener('click', function (click) {
    var link = click.target && click.target.closest ? click.target.closest('a[href]') : null;
    if (!link || !ours(link.getAttribute('href') || '') || click.defaultPrevented) { return; }
    click.preventDefault();
    handle(link.href || link.getAttribute('href'));
  }, true);
  // `window.open`: no window opens, as none does in a native web view.
  var open = window.open;
  window.open = function (url) {
    if (ours(text(url))) { handle(text(url)); return null; }
    return open.apply(window, arguments);
  };
  // An iframe's `src`, however it is set: the property, the attribute, or markup parsed into the page.
  var source = Object.getOwnPropertyDescriptor(HTMLIFrameElement.prototype, 'src');
  Object.defineProperty(HTMLIFrameElement.prototype, 'src', {
    configurable: true, enumerable: source.enumerable,
    get: function () { return source.get.call(this); },
    set: function (value) { if (ours(text(value))) { handle(text(value)); return; } source.set.call(this, value); }
  });
  var setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    if (this instanceof HTMLIFrameElement && String(name).toLowerCase() === 'src' && ours(text(value))) { handle(text(value)); return; }
    return setAttribute.apply(this, arguments);
  };
  // Markup parsed into the page starts its frames' loads before any script sees them: the page's
  // policy (`frame-src`, from the host) refuses frames of the scheme, and the request is read here.
  new MutationObserver(function (records) {
    records.forEach(function (record) {
      Array.prototype.forEach.call(record.addedNodes, function (added) {
        var frames = added.tagName === 'IFRAME' ? [added] : (added.querySelectorAll ? Array.prototype.slice.call(added.querySelectorAll('iframe')) : []);
        frames.forEach(function (frame) {
          var value = frame.getAttribute('src');
          if (ours(value || '')) { frame.removeAttribute('src'); handle(value); }
        });
      });
    });
  }).observe(document, { childList: true, subtree: true });
})();
