// What Forem's pages do in Forem's native app: they tell they are in it by the user agent and the
// message handlers, post to window.webkit.messageHandlers, and hear the host through
// ForemMobile.injectJSMessage, which dispatches a `ForemMobile` event on document.
window.heard = [];
window.uploads = [];
window.ForemMobile = {
  getUserData: function () { return document.body.dataset.user; },
  injectJSMessage: function (message) {
    var event = new CustomEvent('ForemMobile', { detail: message });
    document.dispatchEvent(event);
  }
};
window.foremNative = function () {
  return /ForemWebView/i.test(navigator.userAgent) && !!(window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers.podcast);
};
document.addEventListener('ForemMobile', function (event) {
  var message = JSON.parse(event.detail);
  window.heard.push(message);
  if (message.namespace === 'podcast' && message.action === 'tick') {
    document.getElementById('podcast-state').textContent = message.currentTime + ' / ' + message.duration;
  }
  var item = document.createElement('li');
  item.textContent = event.detail;
  var list = document.getElementById('heard');
  list.insertBefore(item, list.firstChild);
  while (list.children.length > 20) { list.removeChild(list.lastChild); }
});
document.addEventListener('DOMContentLoaded', function () {
  document.getElementById('play').addEventListener('click', function () {
    forem.podcast({ action: 'metadata', episodeName: 'Episode 1', podcastName: 'The Test Podcast', podcastImageUrl: '' });
    forem.podcast({ action: 'play', url: location.origin + '/episode.wav', seconds: '1' });
  });
  document.getElementById('upload').addEventListener('click', function () { forem.uploadCover(); });
  var input = document.getElementById('native-cover-image-upload-message');
  input.addEventListener('input', function (event) {
    var message = JSON.parse(event.target.value);
    window.uploads.push(message);
    if (message.action === 'uploading') { document.getElementById('upload-state').textContent = 'uploading'; }
    if (message.action === 'error') { document.getElementById('upload-state').textContent = 'error: ' + message.error; }
    if (message.action === 'success') {
      document.getElementById('upload-state').textContent = 'uploaded';
      var cover = document.getElementById('cover');
      cover.src = message.link;
      cover.hidden = false;
    }
  });
});
window.forem = {
  uploadCover: function () {
    window.webkit.messageHandlers.imageUpload.postMessage({ id: 'native-cover-image-upload-message', ratio: String(100.0 / 42.0) });
  },
  podcast: function (message) { window.webkit.messageHandlers.podcast.postMessage(message); },
  video: function (message) { window.webkit.messageHandlers.video.postMessage(message); },
  haptic: function (style) { window.webkit.messageHandlers.haptic.postMessage(style); },
  body: function () { window.webkit.messageHandlers.body.postMessage({}); }
};
