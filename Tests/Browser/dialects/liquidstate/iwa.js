// What a Liquid State IWA does: it asks its host by navigating to liquidstate://app/<event>, and its
// host answers through window.communicate.
window.received = [];
window.communicate = function (message) {
  window.received.push(message);
  var item = document.createElement('li');
  item.textContent = JSON.stringify(message);
  var list = document.getElementById('received');
  if (list) { list.appendChild(item); }
};
window.iwa = {
  url: function (event, request) {
    return 'liquidstate://app/' + event + '?request=' + encodeURIComponent(JSON.stringify(request || {}));
  },
  // The four ways an IWA navigates to its host.
  byLocation: function (event, request) { window.location.href = iwa.url(event, request); },
  byAssign: function (event, request) { window.location.assign(iwa.url(event, request)); },
  byOpen: function (event, request) { return window.open(iwa.url(event, request)); },
  byFrame: function (event, request) {
    var frame = document.createElement('iframe');
    frame.style.display = 'none';
    frame.src = iwa.url(event, request);
    document.body.appendChild(frame);
    setTimeout(function () { frame.remove(); }, 1000);
  },
  byMarkup: function (event, request) {
    document.body.insertAdjacentHTML('beforeend', '<iframe style="display:none" src="' + iwa.url(event, request).replace(/"/g, '&quot;') + '"></iframe>');
  }
};
document.addEventListener('DOMContentLoaded', function () {
  document.getElementById('tab-route').textContent = location.pathname + location.search;
});
