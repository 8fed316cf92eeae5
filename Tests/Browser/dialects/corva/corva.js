// What corva-web-frontend does in a native web view: with ?native=true it draws the page alone (no
// navigation), with ?jwt= it has its user's token; it routes its own paths (/dashboards/<id>,
// /assets/<id>/<category>), tells the host through swiftHandler, and offers window.navigateAppTo.
window.loads = (window.loads || 0) + 1;
window.notified = [];
window.routes = [];
(function () {
  var query = new URLSearchParams(location.search);
  var native = query.get('native') === 'true', jwt = query.get('jwt');
  function notify(event) {
    window.notified.push(event);
    if (window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers.swiftHandler) {
      window.webkit.messageHandlers.swiftHandler.postMessage(event);
    }
  }
  function render() {
    var path = location.pathname, title = 'Home', match;
    if ((match = path.match(/^\/dashboards\/([^/]+)$/))) { title = 'Dashboard ' + decodeURIComponent(match[1]); }
    else if ((match = path.match(/^\/assets\/([^/]+)\/([^/]+)$/))) { title = 'Asset ' + decodeURIComponent(match[1]) + ' · ' + decodeURIComponent(match[2]); }
    window.routes.push(path);
    document.getElementById('page-title').textContent = title;
    document.getElementById('web-navigation').hidden = native;
    document.getElementById('native-state').textContent = native ? 'native' : 'web';
    document.getElementById('jwt-state').textContent = jwt ? 'jwt ' + jwt : 'no jwt';
    notify('pageLoaded');
  }
  window.navigateAppTo = function (path) {
    history.pushState({}, '', path + location.search);
    render();
  };
  document.addEventListener('DOMContentLoaded', function () {
    render();
    document.getElementById('maximize').addEventListener('click', function () { notify({ event: 'appMaximized' }); });
    document.getElementById('restore').addEventListener('click', function () { notify('appRestored'); });
  });
})();
