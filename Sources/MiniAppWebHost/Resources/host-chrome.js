// What a native host shows around its app, made from the dialect and the host profile: a Back control
// (the app's to handle while it overrides it), a tab bar, the host's own navigation (Corva's dashboards
// and asset pages), a file viewer, an audio and a video player (Forem's), the states the app told the
// host (authentication, notifications ready, maximized...), and the notifications it holds back until
// the app is ready for them.
(function () {
  'use strict';
  var host = window.miniappHost, DATA, $ = host.$, node = host.node, clear = host.clear;
  var state = { backOverride: {}, appearance: {}, signals: {}, current: null };

  function hasEvent(name) { return (DATA.events || []).some(function (event) { return event.name === name; }); }
  function recordOfTab(id) {
    var found = null;
    host.frames().forEach(function (record) { if (record.tab && record.tab.id === id) { found = record; } });
    return found;
  }

  // MARK: Back

  function back() {
    var record = host.activeFrame();
    if (!record) { host.status('Nothing to go back to'); return; }
    if (state.backOverride[record.appId] && hasEvent('lifecycle')) {
      host.sendEvent(record, 'lifecycle', JSON.stringify({ purpose: 'lifecycle', id: 'back' }));
      host.status('Back: sent to the mini-app, which handles it');
      return;
    }
    host.post(record, { miniappBridge: 'back' });
  }

  // MARK: Tabs

  function tabTitle(tab) {
    var look = state.appearance[tab.id] || {}, title = look.title !== undefined ? look.title : tab.title;
    if (title && typeof title === 'object') {
      var language = (navigator.language || 'en').split('-')[0], translations = title.translations || {};
      title = translations[navigator.language] || translations[language] || translations.en || title.key;
    }
    return String(title || tab.id);
  }
  function renderTabs() {
    var bar = $('tab-bar'), tabs = DATA.tabs || [], active = host.activeFrame();
    clear(bar);
    tabs.forEach(function (tab) {
      var look = state.appearance[tab.id] || {}, hidden = look.hidden !== undefined ? !!look.hidden : !!tab.hidden;
      if (hidden) { return; }
      var selected = !!(active && active.tab && active.tab.id === tab.id);
      var button = node('button', null, { type: 'button', role: 'tab', 'data-tab': tab.id, 'aria-selected': selected ? 'true' : 'false' });
      var icon = look.icon_name || (look.icon_code_point ? (look.icon_font_name || 'font') + ' ' + look.icon_code_point : tab.icon);
      if (icon) { button.appendChild(node('span', String(icon), { 'class': 'tab-icon', 'data-icon': String(icon) })); }
      button.appendChild(node('span', tabTitle(tab), { 'class': 'tab-title' }));
      button.addEventListener('click', function () { var record = recordOfTab(tab.id); if (record) { host.show(record); } });
      bar.appendChild(button);
    });
    bar.hidden = tabs.length === 0;
    $('main').classList.toggle('with-tabs', tabs.length > 0);
  }
  // `switch_tab`: reset to its launch first (unless `reset` is false), then at `route`; the tab switched
  // to hears of it with the params.
  function switchTab(payload) {
    var record = recordOfTab(payload.id);
    if (!record) { host.status('The host has no tab "' + payload.id + '"'); return; }
    if (record.element && (payload.reset !== false || payload.route)) { host.reloadFrame(record, payload.route || null); }
    host.show(record, payload.route || null);
    if (hasEvent('switch_tab')) {
      var message = { purpose: 'switch_tab' };
      if (payload.params !== undefined && payload.params !== null) { message.params = payload.params; }
      host.sendEvent(record, 'switch_tab', JSON.stringify(message));
    }
    host.status('Switched to the tab ' + payload.id);
  }

  // MARK: The host's navigation (Corva)

  function navigate(path, button) {
    var record = host.activeFrame();
    if (!record) { return; }
    state.current = path;
    Array.prototype.forEach.call($('host-nav').querySelectorAll('button'), function (other) {
      if (other === button) { other.setAttribute('aria-current', 'page'); } else { other.removeAttribute('aria-current'); }
    });
    if (hasEvent('navigateAppTo')) { host.sendEvent(record, 'navigateAppTo', path); } else { host.reloadFrame(record, path); }
    host.status('Navigated to ' + path);
  }
  function renderNavigation() {
    var navigation = DATA.navigation, nav = $('host-nav');
    if (!navigation || (!(navigation.dashboards || []).length && !(navigation.assets || []).length)) { return; }
    clear(nav);
    function entry(parent, label, path) {
      var button = node('button', label, { type: 'button', 'data-path': path });
      if (path === DATA.launch.path) { button.setAttribute('aria-current', 'page'); }
      button.addEventListener('click', function () { navigate(path, button); });
      parent.appendChild(button);
    }
    if ((navigation.dashboards || []).length) {
      nav.appendChild(node('h3', 'Dashboards'));
      navigation.dashboards.forEach(function (dashboard) { entry(nav, dashboard.name || dashboard.id, '/dashboards/' + encodeURIComponent(dashboard.id)); });
    }
    if ((navigation.assets || []).length) {
      nav.appendChild(node('h3', 'Assets'));
      navigation.assets.forEach(function (asset) {
        nav.appendChild(node('div', asset.name || asset.id, { 'class': 'asset' }));
        var pages = node('div');
        (asset.categories || []).forEach(function (category) {
          entry(pages, category, '/assets/' + encodeURIComponent(asset.id) + '/' + encodeURIComponent(category));
        });
        nav.appendChild(pages);
      });
    }
    nav.hidden = false;
  }

  // MARK: States

  function badge(key, label, on, title) {
    var element = node('span', label, { 'class': 'badge', 'data-state': key, 'data-on': on ? 'true' : 'false' });
    if (title) { element.title = title; }
    return element;
  }
  function renderStates() {
    var box = $('host-states'), s = state.signals;
    clear(box);
    if (s.authenticated !== undefined && s.authenticated !== null) { box.appendChild(badge('authenticated', s.authenticated ? 'Signed in' : 'Signed out', s.authenticated)); }
    if (hasEvent('lifecycle') || s.notificationsReady) {
      box.appendChild(badge('notifications', s.notificationsReady ? 'Notifications shown' : 'Notifications held (' + (s.heldNotifications || 0) + ')', !!s.notificationsReady));
    }
    var record = host.activeFrame();
    if (record && state.backOverride[record.appId]) { box.appendChild(badge('back-override', 'Back handled by the app', true)); }
    box.appendChild(badge('online', navigator.onLine && s.online !== false ? 'Online' : 'Offline', navigator.onLine && s.online !== false));
    if (DATA.biometrics) {
      var types = (DATA.biometrics.type || []).join(', ');
      box.appendChild(badge('biometrics', 'Biometrics: ' + DATA.biometrics.status.replace('_', ' ') + (types ? ' (' + types + ')' : ''), DATA.biometrics.status === 'available'));
    }
    if (s.pageLoaded) { box.appendChild(badge('page-loaded', 'Page loaded', true)); }
    if (s.maximized) { box.appendChild(badge('maximized', 'App maximized', true)); }
    if (s.userData !== undefined) {
      var who = null;
      try { var user = JSON.parse(s.userData); who = user && (user.username || user.name || user.id); } catch (e) { who = null; }
      box.appendChild(badge('user', s.userData ? 'User: ' + (who || 'signed in') : 'No user', !!s.userData));
    }
    document.body.dataset.appMaximized = s.maximized ? 'true' : 'false';
  }
  function signal(payload, appId) {
    var s = state.signals;
    switch (payload.signal) {
      case 'authentication': s.authenticated = payload.isAuthenticated; break;
      case 'notificationsReady': s.notificationsReady = payload.ready; break;
      case 'backOverride': state.backOverride[appId] = payload.enabled; break;
      case 'switchTab': switchTab(payload); break;
      case 'tabAppearance':
        Object.keys(payload.tabs || {}).forEach(function (id) {
          var look = state.appearance[id] = state.appearance[id] || {};
          Object.keys(payload.tabs[id]).forEach(function (key) { look[key] = payload.tabs[id][key]; });
        });
        renderTabs();
        break;
      case 'reset': resetApp('The mini-app reloaded itself'); break;
      case 'clearAll': clearApp(payload.token, appId); break;
      case 'haptic':
        $('device').classList.remove('haptic');
        void $('device').offsetWidth;
        $('device').classList.add('haptic');
        host.status('Haptic: ' + payload.style);
        break;
      case 'pageLoaded': s.pageLoaded = true; break;
      case 'maximized': s.maximized = payload.maximized; break;
      case 'userData': s.userData = payload.userData; break;
    }
    renderStates();
  }
  // `reset`: every tab back to its launch, the app's configuration and navigation too.
  function resetApp(message) {
    state.appearance = {};
    state.backOverride = {};
    host.frames().forEach(function (record) { if (record.element) { host.reloadFrame(record); } });
    var first = host.frames().filter(function (record) { return !(record.tab && record.tab.hidden); })[0];
    if (first) { host.show(first); }
    renderTabs();
    host.status(message);
  }
  // `clearall`: the app's own site data goes (the host's answer to a one-time request of its origin
  // clears it), then the app starts again as at its first launch.
  function clearApp(token, appId) {
    var origin = (host.data().origins || {})[appId];
    if (!token || !origin) { resetApp('The mini-app was reset'); return; }
    var clearer = node('iframe', null, { hidden: 'hidden', title: 'clear', src: origin + '/__miniapp/clear?token=' + encodeURIComponent(token) });
    clearer.addEventListener('load', function () {
      clearer.parentNode.removeChild(clearer);
      resetApp('The mini-app was cleared: back to its first launch');
    });
    document.body.appendChild(clearer);
  }

  // MARK: Notifications

  function notification(payload) {
    var list = $('host-notifications');
    var row = node('div', null, { 'class': 'row', 'data-notification': String(payload.id || '') });
    row.appendChild(node('strong', payload.title || 'Notification'));
    if (payload.body) { row.appendChild(node('div', payload.body)); }
    list.insertBefore(row, list.firstChild);
    $('host-notifications-section').hidden = false;
  }

  // MARK: Files

  function openFile(payload) {
    $('file-link').href = payload.url;
    $('file-link').textContent = payload.url;
    $('file-frame').src = payload.url;
    $('miniapp-file').dataset.url = payload.url;
    $('miniapp-file').hidden = false;
  }
  function closeFile() {
    $('miniapp-file').hidden = true;
    $('file-frame').src = 'about:blank';
  }

  // MARK: Players (Forem's): the host page plays, the app hears its state as the native player's.

  var audio = null, video = null, lastTick = 0, videoTick = 0, rate = 1;
  function four(value) { return (Number(value) || 0).toFixed(4); }
  function playerEvent(namespace, message) {
    message.namespace = namespace;
    host.sendEvent(null, namespace, JSON.stringify(message));
  }
  // Plays now, or muted when the browser refuses sound without the user's gesture (the position moves
  // all the same; the user unmutes on the host page).
  function start(element) {
    var playing = element.play();
    if (playing && playing.catch) {
      playing.catch(function (error) {
        if (error && error.name === 'NotAllowedError') {
          element.muted = true;
          host.status('Playing muted: the browser wants a click on the host page for sound');
          element.play().catch(function () {});
        }
      });
    }
  }
  function podcast(values, action) {
    var url = values.url ? new URL(values.url, host.data().appOrigin + '/').href : null;
    $('podcast').hidden = false;
    switch (action) {
      case 'load':
        if (url && audio.dataset.url !== url) { audio.dataset.url = url; audio.src = url; audio.load(); playerEvent('podcast', { action: 'init' }); }
        break;
      case 'play':
        var seconds = Number(values.seconds || 0);
        if (url && audio.dataset.url !== url) { audio.dataset.url = url; audio.src = url; seconds = 0; playerEvent('podcast', { action: 'init' }); }
        if (!audio.paused) { break; }
        try { audio.currentTime = seconds; } catch (e) {}
        audio.playbackRate = rate;
        start(audio);
        break;
      case 'seek': if (!isNaN(Number(values.seconds))) { audio.currentTime = Number(values.seconds); } break;
      case 'rate': rate = Number(values.rate || 1) || 1; audio.playbackRate = rate; break;
      case 'muted': audio.muted = values.muted === 'true'; break;
      case 'volume': audio.volume = Math.max(0, Math.min(1, Number(values.volume || 1))); break;
      case 'pause': audio.pause(); break;
      case 'terminate':
        audio.pause();
        audio.removeAttribute('src');
        delete audio.dataset.url;
        audio.load();
        $('podcast').hidden = true;
        break;
      case 'metadata':
        $('now-playing-episode').textContent = values.episodeName || '';
        $('now-playing-podcast').textContent = values.podcastName || '';
        if (values.podcastImageUrl) { $('now-playing-image').src = values.podcastImageUrl; $('now-playing-image').hidden = false; }
        break;
    }
  }
  function playVideo(values) {
    var url = new URL(values.url, host.data().appOrigin + '/').href;
    $('miniapp-video').hidden = false;
    if (video.dataset.url !== url) { video.dataset.url = url; video.src = url; }
    var seconds = Number(values.seconds || 0);
    var seek = function () { try { video.currentTime = seconds; } catch (e) {} };
    if (video.readyState >= 1) { seek(); } else { video.addEventListener('loadedmetadata', seek, { once: true }); }
    start(video);
  }
  function media(payload) {
    if (payload.player === 'podcast') { podcast(payload.values || {}, payload.action); }
    else if (payload.player === 'video' && payload.action === 'play') { playVideo(payload.values || {}); }
  }
  function setUpPlayers() {
    audio = $('podcast-player');
    video = $('video-player');
    // Every half second while it plays, as the native player's observer: the position and the length.
    audio.addEventListener('timeupdate', function () {
      var now = Date.now();
      if (now - lastTick < 450 || !(audio.currentTime > 0 && audio.duration > 0)) { return; }
      lastTick = now;
      playerEvent('podcast', { action: 'tick', duration: four(audio.duration), currentTime: four(audio.currentTime) });
    });
    video.addEventListener('play', function () { playerEvent('video', { action: 'play' }); });
    video.addEventListener('pause', function () { playerEvent('video', { action: 'pause' }); });
    video.addEventListener('timeupdate', function () {
      var now = Date.now();
      if (now - videoTick < 950 || video.paused) { return; }
      videoTick = now;
      playerEvent('video', { action: 'tick', currentTime: four(video.currentTime) });
    });
    $('video-close').addEventListener('click', function () { video.pause(); $('miniapp-video').hidden = true; });
  }

  // MARK: Wiring

  function reportOnline() {
    host.api('POST', 'online', { online: navigator.onLine }).catch(function () {});
    renderStates();
  }
  host.on('ready', function () {
    DATA = host.data();
    $('host-back').addEventListener('click', back);
    $('file-close').addEventListener('click', closeFile);
    $('sample-profile').hidden = !DATA.sample;
    setUpPlayers();
    renderNavigation();
    renderTabs();
    renderStates();
    reportOnline();
    window.addEventListener('online', reportOnline);
    window.addEventListener('offline', reportOnline);
  });
  host.on('state', function (appState) {
    var signals = appState.signals || {};
    Object.keys(signals).forEach(function (key) {
      if (key === 'backOverride') { state.backOverride[appState.id] = signals.backOverride; } else { state.signals[key] = signals[key]; }
    });
    renderStates();
  });
  host.on('shown', function () { renderTabs(); renderStates(); });
  host.on('backUnused', function () { host.status('Nothing to go back to'); });
  host.on('undelivered', function (record, name, message) {
    // An app without `navigateAppTo` is loaded at the path instead.
    if (name === 'navigateAppTo' && message === state.current) { host.reloadFrame(record, message); }
  });
  host.handle('signal', signal);
  host.handle('media', media);
  host.handle('file', openFile);
  host.handle('notification', notification);
})();
