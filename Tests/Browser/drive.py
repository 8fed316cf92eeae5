#!/usr/bin/python3
"""Drives `miniapp run` in headless Chromium (Debian's chromium and chromium-driver, Selenium).

Usage: drive.py <miniapp> <work-dir> [<real-sample.zip>] [--store <postgres-url>]
The sample also runs in the reference host (miniapp-host, beside <miniapp>) when given.
Publishes the probe mini-app (Tests/Browser/probe) and, when given, Rakuten's real sample into a
registry in <work-dir>, runs them with `miniapp run`, and checks what a user and an app can do. Prints
one line per check and exits non-zero on the first failure.
"""
import json, os, re, subprocess, sys, time, urllib.request, urllib.error
from selenium.webdriver.common.by import By

import browsing
from browsing import processes, check, miniapp, status, browser, wait, click, call, into_app, desktop_view, stop

MINIAPP, WORK = sys.argv[1], sys.argv[2]
browsing.MINIAPP = MINIAPP
REST = sys.argv[3:]
STORE = None
if '--store' in REST:
    STORE = REST[REST.index('--store') + 1]
    REST = REST[:REST.index('--store')]
SAMPLE = REST[0] if REST else None
HERE = os.path.dirname(os.path.abspath(__file__))
PHOTO = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
PROFILE = {"userName": "Aiko Tanaka", "profilePhoto": PHOTO, "locale": "ja-JP", "hostVersion": "3.2.1", "phoneNumber": "+81-3-0000-0000",
           "contacts": [{"id": "c1", "name": "Ken", "email": "ken@example.com"}],
           "points": {"standard": 120, "term": 30, "cash": 5}, "accessTokens": {"rae": "tok-rae"},
           "products": [{"id": "gem-10", "title": "10 gems", "description": "A <b>handful</b>", "productPrice": {"currencyCode": "JPY", "price": "120"}}]}
# What a page of the app's own origin can do to learn the capability its frame's document holds: watch
# that document's bridge send a call (a popup does it through `opener`).
CAPTURE = ('(function (target) { var original = target.fetch, seen = null;'
           ' target.fetch = function (url, options) { var headers = (options && options.headers) || {};'
           ' if (headers["X-Miniapp-Capability"]) { seen = headers["X-Miniapp-Capability"]; } return original.apply(this, arguments); };'
           ' return target.MiniAppBridge.getUniqueId().then(function () { target.fetch = original; return seen; }); })(%s)')


def start_run(app_id, cache, extra=()):
    return browsing.start_run(app_id, cache, WORK + '/registry', WORK + '/profile.json', extra)


def raw_call(driver, action, param, token):
    """A bridge message sent by hand from the current page with `token` as its capability: [status, reply]."""
    return call(driver, 'fetch("/__miniapp/bridge", {method: "POST", headers: {"Content-Type": "application/json", "X-Miniapp-Capability": %s},'
                ' body: JSON.stringify({id: "raw", action: %s, param: %s})}).then(function (r) { return r.json().then(function (j) { return [r.status, j]; }); })'
                % (json.dumps(token), json.dumps(action), json.dumps(param)))['ok']


def refused(answer):
    return answer[0] == 403 and 'AuthorizationFailureError' in answer[1].get('error', '')


def popup_is_refused(driver, popup, main_window, token, after, reader):
    """From `popup`, with the ended capability `token`: a read (`reader`), a storage write and a
    FILE_DOWNLOAD prompt are refused, and no prompt reaches the host page."""
    driver.switch_to.window(popup)
    check(refused(raw_call(driver, reader, None, token)), 'after %s, the popup\'s %s is refused' % (after, reader))
    check(refused(raw_call(driver, 'setSecureStorageItems', {'secureStorageItems': {'stolen': 'after ' + after}}, token)), 'after %s, the popup\'s setSecureStorage is refused' % after)
    asked = raw_call(driver, 'requestCustomPermissions', {'permissions': [{'name': 'rakuten.miniapp.device.FILE_DOWNLOAD', 'description': 'x'}]}, token)
    check(refused(asked), 'after %s, the popup cannot raise a FILE_DOWNLOAD prompt' % after, asked)
    driver.switch_to.window(main_window)
    check(not driver.find_element(By.ID, 'miniapp-prompt').is_displayed(), 'no prompt reaches the host page after ' + after)


def hostile(driver, extra):
    """A hostile app (the probe, as app `hostile`) tries to outlive its close and its gate through a popup,
    to keep a prompt of a closed app, to register a service worker, and a local program forges its
    origin; then a new version runs on the same port."""
    published = miniapp('publish', HERE + '/probe', '--registry', WORK + '/registry', '--app-id', 'hostile', '--version-tag', '1.0.0', '--key', WORK + '/key.pem')
    check(published.returncode == 0, 'publish hostile 1.0.0', published.stderr)
    cache = WORK + '/cache'
    url, port = start_run('hostile', cache, extra)
    run = processes[-1]
    driver.get(url)
    main_window = driver.current_window_handle
    click(lambda: driver.find_element(By.ID, 'gate-allow'), 'click gate-allow (hostile)')
    into_app(driver)

    registered = call(driver, 'navigator.serviceWorker.register("/sw.js").then(function () { return "registered"; }, function (e) { return "refused: " + e; })')
    check(registered.get('ok', '').startswith('refused'), 'a service worker registration is refused', registered)
    workers = call(driver, 'navigator.serviceWorker.getRegistrations().then(function (r) { return r.length; })')
    check(workers == {'ok': 0}, 'no service worker is registered on the app origin', workers)

    # A popup of the app's own origin: its bridge gets no capability of its own, and it steals the frame's.
    driver.execute_script('window.open("/index.html", "hostile-popup")')
    popup = wait(lambda: [handle for handle in driver.window_handles if handle != main_window][0], 'the app opens a popup')
    driver.switch_to.window(popup)
    wait(lambda: driver.execute_script('return !!window.MiniAppBridge && document.readyState === "complete" && !!window.opener'), 'the popup loads with the bridge')
    own = call(driver, 'MiniAppBridge.getUserName()')
    check('AuthorizationFailureError' in (own.get('err') or ''), 'a popup gets no capability of its own', own)
    stored = call(driver, 'MiniAppBridge.setSecureStorage({stolen: "from the popup"})')
    check(stored.get('name') == 'AuthorizationFailureError', 'a popup cannot write secure storage', stored)
    token = call(driver, CAPTURE % 'window.opener')['ok']
    check(re.fullmatch(r'[0-9a-f]{64}', token or '') is not None, 'the popup reads the frame\'s capability through opener', str(token))
    before = raw_call(driver, 'getUserName', None, token)
    check(before[0] == 200 and before[1].get('success') == 'Aiko Tanaka', 'the stolen capability works while the app runs', before)

    # The app closes: the frame goes, and with it every capability.
    driver.switch_to.window(main_window)
    into_app(driver)
    # After the script returns: a frame removed while the driver's script runs in it stalls the driver.
    driver.execute_script('setTimeout(function () { MiniAppBridge.closeMiniApp(false); }, 0)')
    driver.switch_to.default_content()
    wait(lambda: len(driver.find_elements(By.ID, 'miniapp-frame')) == 0, 'closeMiniApp removes the hostile app\'s frame')
    popup_is_refused(driver, popup, main_window, token, 'close', 'getUserName')

    # Open again, steal again, then the user revokes the required permission: the gate closes.
    driver.get(url)
    into_app(driver)
    # The new frame opens a popup of its own.
    driver.execute_script('window.open("/index.html?again", "hostile-popup-2")')
    popup = wait(lambda: [handle for handle in driver.window_handles if handle not in (main_window, popup)][0], 'the app opens a second popup')
    driver.switch_to.window(popup)
    wait(lambda: driver.execute_script('return document.readyState === "complete" && !!window.opener && !!window.opener.MiniAppBridge'), 'the second popup loads')
    token = call(driver, CAPTURE % 'window.opener')['ok']
    check(raw_call(driver, 'getUniqueId', None, token)[0] == 200, 'the popup holds the new frame\'s capability')
    driver.switch_to.window(main_window)
    driver.switch_to.default_content()
    click(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="rakuten.miniapp.user.USER_NAME"] button[data-action="revoke"]'), 'revoke USER_NAME (hostile)')
    wait(lambda: len(driver.find_elements(By.ID, 'miniapp-frame')) == 0 and driver.find_element(By.ID, 'gate').is_displayed(), 'revoking USER_NAME closes the hostile app')
    popup_is_refused(driver, popup, main_window, token, 'revoke', 'getUniqueId')

    # A local program that forges the app's Origin and Host gets nothing without a capability.
    for capability in [None, '0' * 64, token]:
        headers = {'Host': 'hostile.localhost:%d' % port, 'Origin': 'http://hostile.localhost:%d' % port, 'Content-Type': 'application/json'}
        if capability:
            headers['X-Miniapp-Capability'] = capability
        forged = subprocess.run(['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'POST', 'http://127.0.0.1:%d/__miniapp/bridge' % port,
                                 *sum([['-H', '%s: %s' % item] for item in headers.items()], []),
                                 '--data', '{"id":"1","action":"getSecureStorageItem","param":{"secureStorageKey":"greeting"}}'], capture_output=True, text=True)
        check(forged.stdout == '403', 'curl with a forged Origin and Host (capability %s) is refused' % ('none' if not capability else 'forged' if capability == '0' * 64 else 'ended'), forged.stdout)
        events = status(urllib.request.Request('http://127.0.0.1:%d/__miniapp/events' % port, headers=headers))
        check(events == 403, 'the app\'s events are refused to a forged request', str(events))

    # Another local user cannot open a session on the host page (to mint capabilities or decide).
    if os.getuid() == 0:
        for path in ['/', '/apps/hostile', '/api/notices?after=0']:
            other = subprocess.run(['runuser', '-u', 'nobody', '--', 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', 'http://localhost:%d%s' % (port, path)], capture_output=True, text=True)
            check(other.stdout == '403', 'another user\'s curl gets 403 on the host page ' + path, other.stdout + other.stderr)
        own = subprocess.run(['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', 'http://localhost:%d/' % port], capture_output=True, text=True)
        check(own.stdout == '200', 'the user who runs the host gets the host page', own.stdout)
    else:
        print('skipped: another user\'s requests (the test runs as root only)')

    # A pending prompt of an app that closes leaves the host page, and decides nothing.
    click(lambda: driver.find_element(By.ID, 'gate-allow'), 'click gate-allow again (hostile)')
    into_app(driver)
    driver.execute_script('window.__asked = null; MiniAppBridge.requestCustomPermissions([{name: "rakuten.miniapp.device.FILE_DOWNLOAD", description: "x"}])'
                          '.then(function (r) { window.__asked = r; }, function (e) { window.__asked = String(e); })')
    driver.switch_to.default_content()
    wait(lambda: driver.find_element(By.ID, 'miniapp-prompt').is_displayed(), 'the hostile app\'s prompt is shown')
    into_app(driver)
    # After the script returns: a frame removed while the driver's script runs in it stalls the driver.
    driver.execute_script('setTimeout(function () { MiniAppBridge.closeMiniApp(false); }, 0)')
    driver.switch_to.default_content()
    wait(lambda: len(driver.find_elements(By.ID, 'miniapp-frame')) == 0 and not driver.find_element(By.ID, 'miniapp-prompt').is_displayed(), 'the prompt of the closed app disappears')
    shown = json.loads(miniapp('permissions', 'show', 'hostile', '--cache-dir', cache, '--platform', WORK + '/registry', '--json', *extra).stdout)
    download = [p for p in shown if p['name'] == 'rakuten.miniapp.device.FILE_DOWNLOAD']
    check(len(download) == 1 and download[0]['decidedAt'] is None, 'the closed app\'s prompt decided nothing', str(download))

    # Nothing the popup sent was stored.
    driver.get(url)
    into_app(driver)
    check(call(driver, 'MiniAppBridge.getSecureStorageItem("stolen")') == {'ok': None}, 'nothing a refused popup sent is stored')
    for handle in driver.window_handles:
        if handle != main_window:
            driver.switch_to.window(handle)
            driver.close()
    driver.switch_to.window(main_window)

    # A new version on the same port: its own page is served, never the earlier version's.
    run.terminate()
    run.wait(10)
    second = WORK + '/probe-2'
    subprocess.run(['cp', '-r', HERE + '/probe', second], check=True)
    with open(second + '/index.html') as f:
        page = f.read().replace('<h1>Bridge probe</h1>', '<h1>Bridge probe 2.0.0</h1>')
    with open(second + '/index.html', 'w') as f:
        f.write(page)
    published = miniapp('publish', second, '--registry', WORK + '/registry', '--app-id', 'hostile', '--version-tag', '2.0.0', '--key', WORK + '/key.pem')
    check(published.returncode == 0, 'publish hostile 2.0.0', published.stderr)
    url, again = start_run('hostile', cache, (*extra, '--port', str(port)))
    check(again == port, 'version 2.0.0 runs on the same port')
    driver.get(url)
    into_app(driver)
    heading = driver.find_element(By.TAG_NAME, 'h1').text
    check(heading == 'Bridge probe 2.0.0', 'the new version\'s own page is served', heading)


def storage_flood(driver, extra):
    """One app (flood-a) holding 60,000 items floods its secure storage from 48 loops for 10 s while
    another app (flood-b, another run on the same store) writes and its host page decides: the other
    app's calls and decisions never wait behind the flood (a bound 40 times the 50 ms aim, which the
    store-wide lock of each write's sum over the app's rows overran for seconds), and the flood is
    held at its own app's rate."""
    for app_id in ['flood-a', 'flood-b']:
        published = miniapp('publish', HERE + '/probe', '--registry', WORK + '/registry', '--app-id', app_id, '--version-tag', '1.0.0', '--key', WORK + '/key.pem')
        check(published.returncode == 0, 'publish ' + app_id, published.stderr)
    cache = WORK + '/cache'
    url_a, _ = start_run('flood-a', cache, extra)
    url_b, _ = start_run('flood-b', cache, extra)
    main_window = driver.current_window_handle
    driver.get(url_a)
    click(lambda: driver.find_element(By.ID, 'gate-allow'), 'click gate-allow (flood-a)')
    into_app(driver)
    # 60,000 items in one write: minutes on a loaded 2-core machine, not the 60 s of an ordinary call.
    driver.set_script_timeout(300)
    stored = call(driver, '(function () { var items = {}; for (var i = 0; i < 60000; i++) { items["k" + i] = "v" + i; } return MiniAppBridge.setSecureStorage(items); })()')
    driver.set_script_timeout(60)
    check(stored == {'ok': None}, 'flood-a stores 60,000 items', stored)
    driver.execute_script(
        'window.__flood = {writes: 0, busy: 0, other: 0, reads: 0};'
        'var end = Date.now() + 10000;'
        'function loop(n) {'
        '  if (Date.now() > end) { return; }'
        '  var item = {}; item["f" + n] = String(Math.random());'
        '  MiniAppBridge.setSecureStorage(item).then(function () { window.__flood.writes++; }, function (e) {'
        '    if (e && e.name === "SecureStorageBusyError") { window.__flood.busy++; } else { window.__flood.other++; }'
        '  }).then(function () { return MiniAppBridge.getSecureStorageItem("k1").then(function () { window.__flood.reads++; }, function () {}); })'
        '    .then(function () { loop(n); });'
        '}'
        'for (var i = 0; i < 48; i++) { loop(i); }')
    driver.switch_to.new_window('tab')
    driver.get(url_b)
    click(lambda: driver.find_element(By.ID, 'gate-allow'), 'click gate-allow (flood-b)')
    decisions = call(driver, '(function () {'
                     ' var session = document.querySelector("meta[name=\\"miniapp-session\\"]").getAttribute("content"), times = [];'
                     ' function one(i) {'
                     '  if (i >= 10) { return times; }'
                     '  var began = performance.now(), decisions = {"rakuten.miniapp.user.POINTS": i % 2 ? "DENIED" : "ALLOWED"};'
                     '  return fetch("/api/apps/flood-b/permissions", {method: "POST", headers: {"X-Miniapp-Session": session, "Content-Type": "application/json"}, body: JSON.stringify({decisions: decisions})})'
                     '   .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } times.push(performance.now() - began); return new Promise(function (ok) { setTimeout(ok, 100); }); })'
                     '   .then(function () { return one(i + 1); });'
                     ' }'
                     ' return one(0); })()')
    check('ok' in decisions and len(decisions['ok']) == 10 and max(decisions['ok']) < 2000, 'the other app\'s host decisions never wait behind the flood', decisions)
    into_app(driver)
    writes = call(driver, '(function () {'
                  ' var times = [];'
                  ' function one(i) {'
                  '  if (i >= 20) { return times; }'
                  '  var began = performance.now();'
                  '  return MiniAppBridge.setSecureStorage({b: String(i)}).then(function () { times.push(performance.now() - began); return new Promise(function (ok) { setTimeout(ok, 100); }); })'
                  '   .then(function () { return one(i + 1); });'
                  ' }'
                  ' return one(0); })()')
    check('ok' in writes and len(writes['ok']) == 20 and max(writes['ok']) < 2000, 'the other app\'s storage writes never wait behind the flood', writes)
    print('   other app during the flood: decisions max %.0f ms, writes max %.0f ms' % (max(decisions['ok']), max(writes['ok'])))
    driver.close()
    driver.switch_to.window(main_window)
    into_app(driver)
    counts = wait(lambda: (lambda c: c if c['writes'] + c['busy'] > 0 else None)(driver.execute_script('return window.__flood')), 'the flood ran')
    check(counts['other'] == 0, 'the flood got no answer but success or SecureStorageBusyError', counts)
    print('   the flood: %s' % counts)


def main():
    os.makedirs(WORK, exist_ok=True)
    with open(WORK + '/profile.json', 'w') as f:
        json.dump(PROFILE, f)
    check(miniapp('keygen', '--out', WORK + '/key').returncode == 0, 'keygen')
    for app_id in ['probe', 'probe-two']:
        published = miniapp('publish', HERE + '/probe', '--registry', WORK + '/registry', '--app-id', app_id, '--version-tag', '1.0.0', '--key', WORK + '/key.pem')
        check(published.returncode == 0, 'publish ' + app_id, published.stderr)
    cache = WORK + '/cache'
    extra = ('--permission-store', STORE) if STORE else ()
    url, port = start_run('probe', cache, extra)
    driver = browser()
    driver.set_script_timeout(60)
    try:
        driver.get(url)
        gate = wait(lambda: driver.find_element(By.ID, 'gate').is_displayed() and driver.find_element(By.ID, 'gate'), 'the launch gate asks before the app starts')
        check('To greet you by name <b>really</b>.' in gate.text, 'the gate shows the manifest reason as text', gate.text)
        check(len(driver.find_elements(By.ID, 'miniapp-frame')) == 0, 'no frame while the gate is closed')
        click(lambda: driver.find_element(By.ID, 'gate-deny'), 'click gate-deny')
        wait(lambda: 'rakuten.miniapp.user.USER_NAME' in driver.find_element(By.ID, 'gate-message').text, 'a denial says which permission is missing')
        check(len(driver.find_elements(By.ID, 'miniapp-frame')) == 0, 'a denial keeps the app closed')
        files = status(urllib.request.Request('http://127.0.0.1:%d/' % port, headers={'Host': 'probe.localhost:%d' % port}))
        check(files == 403, 'files are refused while the gate is closed', str(files))
        click(lambda: driver.find_element(By.ID, 'gate-allow'), 'click gate-allow')
        # The decision is stored before the frame is made: files are served from then on.
        wait(lambda: driver.find_elements(By.ID, 'miniapp-frame'), 'the gate opens')
        listed = json.loads(miniapp('cache', 'list', '--cache-dir', cache, '--json').stdout)
        folder = [record['path'] for record in listed if record['id'] == 'probe'][0]
        os.symlink('/etc/hostname', folder + '/planted.txt')
        planted = status(urllib.request.Request('http://127.0.0.1:%d/planted.txt' % port, headers={'Host': 'probe.localhost:%d' % port}))
        check(planted == 404, 'a link planted in the installed version is not followed', str(planted))
        os.unlink(folder + '/planted.txt')
        into_app(driver)
        origin = driver.execute_script('return location.origin')
        check(origin == 'http://probe.localhost:%d' % port, 'the app runs on its own origin', origin)

        unique = call(driver, 'MiniAppBridge.getUniqueId()')
        check(re.fullmatch(r'[0-9a-f]{64}', unique.get('ok') or '') is not None, 'getUniqueId', unique)
        info = call(driver, 'MiniAppBridge.getHostEnvironmentInfo()')['ok']
        check(info['hostLocale'] == 'ja-JP' and info['hostVersion'] == '3.2.1' and info['platform'] == 'Web', 'getHostEnvironmentInfo', info)
        check(call(driver, 'MiniAppBridge.getUserName()') == {'ok': 'Aiko Tanaka'}, 'getUserName once USER_NAME is allowed')
        denied = call(driver, 'MiniAppBridge.getContacts()')
        check('err' in denied and 'userDenied' in denied['err'], 'getContacts is denied while CONTACT_LIST is undecided', denied)
        denied = call(driver, 'MiniAppBridge.getPoints()')
        check(denied.get('name') == 'userDenied', 'getPoints is denied (parsed error form)', denied)

        # requestCustomPermissions: the host page asks; the app waits for the user's click.
        driver.execute_script('window.__asked = null; MiniAppBridge.requestCustomPermissions(['
                              '{name: "rakuten.miniapp.user.CONTACT_LIST", description: "<img src=x onerror=alert(1)> trust me"},'
                              '{name: "rakuten.miniapp.device.LOCATION", description: "undeclared"},'
                              '{name: "com.example.UNKNOWN", description: "unknown"}]).then(function (r) { window.__asked = r; })')
        driver.switch_to.default_content()
        prompt = wait(lambda: driver.find_element(By.ID, 'miniapp-prompt').is_displayed() and driver.find_element(By.ID, 'miniapp-prompt'), 'the host page shows the prompt')
        check('To pick a friend to share with.' in prompt.text and 'trust me' not in prompt.text, 'the prompt shows the manifest reason, not the app text', prompt.text)
        check(len(driver.find_elements(By.CSS_SELECTOR, '#prompt-items input[data-permission]')) == 1, 'only the declared undecided permission is asked')

        # The app cannot answer its own prompt: not through the host page's DOM, not through the host's endpoints.
        into_app(driver)
        forged = call(driver, 'Promise.resolve().then(function () { window.parent.document.getElementById("prompt-allow-all").click(); return "clicked"; })')
        check('err' in forged, 'the app cannot click the host prompt', forged)
        own = call(driver, 'fetch("/api/apps/probe/permissions", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({decisions: {"rakuten.miniapp.user.CONTACT_LIST": "ALLOWED"}})}).then(function (r) { return r.status; })')
        check(own == {'ok': 403}, 'host endpoints answer 403 on the app origin', own)
        host = call(driver, 'fetch("http://localhost:%d/api/apps/probe/permissions", {method: "POST", mode: "no-cors", body: JSON.stringify({decisions: {"rakuten.miniapp.user.CONTACT_LIST": "ALLOWED"}})}).then(function () { return "sent"; })' % port)
        check(call(driver, 'Promise.resolve(window.__asked)') == {'ok': None}, 'the request still waits for the user', host)
        decide = status(urllib.request.Request('http://127.0.0.1:%d/api/apps/probe/permissions' % port, method='POST', data=b'{"decisions":{"rakuten.miniapp.user.CONTACT_LIST":"ALLOWED"}}',
                                               headers={'Host': 'localhost:%d' % port, 'Origin': 'http://probe.localhost:%d' % port, 'Content-Type': 'application/json'}))
        check(decide == 403, 'a decision from the app origin gets 403', str(decide))

        flood = call(driver, 'Promise.all(Array.from({length: 300}, function () { return fetch("http://localhost:%d/", {mode: "no-cors"}).catch(function () {}); })).then(function () { return "sent"; })' % port)
        check(flood == {'ok': 'sent'}, 'the app requests the host page 300 times (to push the real session out)')

        driver.switch_to.default_content()
        click(lambda: driver.find_element(By.CSS_SELECTOR, '#prompt-items input[data-permission="rakuten.miniapp.user.CONTACT_LIST"]'), 'tick CONTACT_LIST in the host prompt')
        click(lambda: driver.find_element(By.ID, 'prompt-confirm'), 'click prompt-confirm')
        into_app(driver)
        asked = wait(lambda: driver.execute_script('return window.__asked'), 'requestCustomPermissions is answered after the click')
        statuses = {p['name']: p['status'] for p in asked['permissions']}
        check(statuses == {'rakuten.miniapp.user.CONTACT_LIST': 'ALLOWED', 'rakuten.miniapp.device.LOCATION': 'DENIED', 'com.example.UNKNOWN': 'PERMISSION_NOT_AVAILABLE'},
              'each status is answered as the native SDKs do', statuses)
        contacts = call(driver, 'MiniAppBridge.getContacts()')
        check(contacts == {'ok': [{'id': 'c1', 'name': 'Ken', 'email': 'ken@example.com'}]}, 'getContacts once allowed', contacts)
        shown = miniapp('permissions', 'show', 'probe', '--cache-dir', cache, '--platform', WORK + '/registry', '--json', *extra)
        check('"ALLOWED"' in shown.stdout and 'CONTACT_LIST' in shown.stdout, 'the decision is in the permission store', shown.stdout + shown.stderr)

        # Tokens: gated by ACCESS_TOKEN and by the manifest's audiences and scopes.
        check(call(driver, 'MiniAppBridge.getAccessToken("rae", ["idinfo_read_openid"])').get('name') == 'userDenied', 'getAccessToken is denied while ACCESS_TOKEN is undecided')
        driver.switch_to.default_content()
        click(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="rakuten.miniapp.user.ACCESS_TOKEN"] button[data-action="allow"]'), 'allow ACCESS_TOKEN on the host page')
        wait(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="rakuten.miniapp.user.ACCESS_TOKEN"]').get_attribute('data-status') == 'ALLOWED', 'the host page grants ACCESS_TOKEN')
        into_app(driver)
        token = call(driver, 'MiniAppBridge.getAccessToken("rae", ["idinfo_read_openid"]).then(function (t) { return {token: t.token, date: t.validUntil instanceof Date, scopes: t.scopes}; })')
        check(token.get('ok', {}).get('token') == 'tok-rae' and token['ok']['date'], 'getAccessToken for a listed audience and scope', token)
        scope = call(driver, 'MiniAppBridge.getAccessToken("rae", ["memberinfo_read_point"])')
        check(scope.get('name') == 'ScopesNotSupportedError', 'a scope the manifest lacks is refused', scope)
        audience = call(driver, 'MiniAppBridge.getAccessToken("api-c", ["idinfo_read_openid"])')
        check(audience.get('name') == 'AudienceNotSupportedError', 'an audience the manifest lacks is refused', audience)

        # Secure storage: kept across a reload, limited, and per app.
        check(call(driver, 'MiniAppBridge.setSecureStorage({greeting: "こんにちは", other: "x"})') == {'ok': None}, 'setSecureStorage')
        before_reload = call(driver, CAPTURE % 'window')['ok']
        driver.execute_script('location.reload()')
        time.sleep(0.5)
        into_app(driver)
        check(wait(lambda: refused(raw_call(driver, 'getUniqueId', None, before_reload)), 'the reloaded page\'s old capability ends'), 'the capability of the page a reload replaced is ended')
        wait(lambda: driver.execute_script('return window.MiniAppBridge.isSecureStorageReady'), 'secure storage is ready after a reload')
        check(call(driver, 'MiniAppBridge.getSecureStorageItem("greeting")') == {'ok': 'こんにちは'}, 'secure storage keeps items across a reload')
        check(call(driver, 'MiniAppBridge.getSecureStorageItem("missing")') == {'ok': None}, 'a missing item is null')
        full = call(driver, 'MiniAppBridge.setSecureStorage({big: "x".repeat(1100000)})')
        check(full.get('name') == 'SecureStorageFullError', 'the size limit answers SecureStorageFullError', full)
        size = call(driver, 'MiniAppBridge.getSecureStorageSize()')['ok']
        check(size['max'] == 1048576 and 0 < size['used'] < 100, 'getSecureStorageSize', size)
        big = call(driver, 'MiniAppBridge.setSecureStorage({big: "x".repeat(9000000)})')
        check(big.get('name') == 'MessageTooLargeError', 'an oversized message gets an error', big)
        unknown = call(driver, 'new Promise(function (ok, ko) { MiniAppBridge.executor.exec("noSuchAction", null, ok, ko); })')
        check('UnknownActionError' in unknown.get('err', ''), 'an unknown action is answered with an error', unknown)
        token = call(driver, CAPTURE % 'window')['ok']
        malformed = call(driver, 'fetch("/__miniapp/bridge", {method: "POST", headers: {"Content-Type": "application/json", "X-Miniapp-Capability": "%s"}, body: "{\\"id\\": 5, \\"action\\": [1]"}).then(function (r) { return r.json().then(function (j) { return [r.status, j.error]; }); })' % token)
        check(malformed['ok'][0] == 400 and 'MalformedMessageError' in malformed['ok'][1], 'a malformed message gets an error', malformed)
        check(call(driver, 'MiniAppBridge.getUniqueId()').get('ok') == unique['ok'], 'the host still answers after bad messages')

        # A page of another site is an external web view: the frame stays on the app, the host page offers
        # the page in a tab of its own, and going back tells the app it was closed. (Nothing is fetched.)
        driver.execute_script('window.__closed = null; window.addEventListener("miniappwebviewclosed", function () { window.__closed = true; });'
                              ' location.href = "https://example.com/elsewhere";')
        driver.switch_to.default_content()
        wait(lambda: driver.find_element(By.ID, 'miniapp-external').is_displayed(), 'the host page offers the external page')
        link = driver.find_element(By.ID, 'external-link')
        check(link.get_attribute('href') == 'https://example.com/elsewhere' and link.get_attribute('target') == '_blank', 'the external page opens in a tab of its own', link.get_attribute('outerHTML'))
        into_app(driver)
        stayed = driver.execute_script('return [location.origin, !!document.querySelector("h1")]')
        check(stayed == ['http://probe.localhost:%d' % port, True], 'the app\'s frame stays on the app', stayed)
        driver.switch_to.default_content()
        click(lambda: driver.find_element(By.ID, 'external-close'), 'click external-close')
        into_app(driver)
        check(wait(lambda: driver.execute_script('return window.__closed'), 'the app hears miniappwebviewclosed'), 'the app hears miniappwebviewclosed when the external page is closed')

        # Device permissions are the user's on the host page: the camera granted there is the frame's to
        # ask the browser for (its `allow`), and the app reads the decision.
        check(call(driver, 'MiniAppBridge.utilityManager.getPermissionStatus("camera")') == {'ok': 'unknown'}, 'the camera is undecided at first')
        # Undecided, the app asks the browser for the camera: the host page asks its user, who refuses.
        driver.execute_script('window.__camera = null; navigator.mediaDevices.getUserMedia({video: true}).then(function () { window.__camera = "given"; }, function (e) { window.__camera = e.name; })')
        driver.switch_to.default_content()
        sheet = wait(lambda: driver.find_element(By.ID, 'miniapp-sheet').is_displayed() and driver.find_element(By.ID, 'miniapp-sheet'), 'the host page asks about the camera')
        check(sheet.get_attribute('data-sheet') == 'device' and 'camera' in sheet.text, 'the device sheet names the camera', sheet.text)
        click(lambda: driver.find_element(By.ID, 'sheet-cancel'), 'refuse the camera on the host page')
        into_app(driver)
        check(wait(lambda: driver.execute_script('return window.__camera'), 'the refused camera is answered', 20) == 'NotAllowedError', 'the app is refused the camera the user refused')
        check(call(driver, 'MiniAppBridge.utilityManager.getPermissionStatus("camera")') == {'ok': 'denied'}, 'the app reads the camera as denied')
        # Around the bridge's script (a blank frame of its own): the browser itself refuses the camera.
        # (Chromium answers NotAllowedError, or under load at times NotFoundError: either way no camera.)
        bypass = call(driver, 'new Promise(function (ok) { var f = document.createElement("iframe"); document.body.appendChild(f); '
                              'f.contentWindow.navigator.mediaDevices.getUserMedia({video: true}).then(function (s) { s.getTracks().forEach(function (t) { t.stop(); }); ok("given"); }, function (e) { ok(e.name); }); })')
        check(bypass.get('ok') in ('NotAllowedError', 'NotFoundError'), 'a blank frame of the app\'s own gets no camera from the browser', bypass)
        driver.switch_to.default_content()
        check('camera' not in (driver.find_element(By.ID, 'miniapp-frame').get_attribute('allow') or ''), 'the frame is not allowed the camera the user refused')
        click(lambda: driver.find_element(By.CSS_SELECTOR, '#devices [data-device="camera"] button[data-action="granted"]'), 'allow the camera on the host page after all')
        wait(lambda: 'camera' in (driver.find_element(By.ID, 'miniapp-frame').get_attribute('allow') or ''), 'the frame is allowed the camera once the user allowed it')
        into_app(driver)
        check(call(driver, 'MiniAppBridge.utilityManager.getPermissionStatus("camera")') == {'ok': 'granted'}, 'the app reads the camera as granted')
        camera = call(driver, 'navigator.mediaDevices.getUserMedia({video: true}).then(function (stream) { var kinds = stream.getTracks().map(function (t) { t.stop(); return t.kind; }); return kinds; }, function (e) { return {error: e.name}; })')
        check(camera == {'ok': ['video']}, 'the frame gets the (fake) camera once the user allowed it', camera)
        # The app asks the browser for the microphone itself, undecided: the host page asks its user,
        # then reloads the frame allowed it, where the app gets it.
        driver.execute_script('window.__microphone = null; navigator.mediaDevices.getUserMedia({audio: true}).then(function () { window.__microphone = "given"; }, function (e) { window.__microphone = e.name; })')
        driver.switch_to.default_content()
        sheet = wait(lambda: driver.find_element(By.ID, 'miniapp-sheet').is_displayed() and driver.find_element(By.ID, 'miniapp-sheet'), 'the host page asks about the microphone')
        check(sheet.get_attribute('data-sheet') == 'device' and 'microphone' in sheet.text, 'the device sheet names the microphone', sheet.text)
        click(lambda: driver.find_element(By.ID, 'sheet-ok'), 'allow the microphone on the host page')
        wait(lambda: 'microphone' in (driver.find_element(By.ID, 'miniapp-frame').get_attribute('allow') or ''), 'the frame is allowed the microphone once the user allowed it at the app\'s request')
        into_app(driver)
        microphone = wait(lambda: (lambda answer: answer if answer.get('ok') else None)(call(driver, 'navigator.mediaDevices.getUserMedia({audio: true}).then(function (stream) { return stream.getTracks().map(function (t) { t.stop(); return t.kind; }); })')), 'the reloaded frame gets the microphone', 20)
        check(microphone == {'ok': ['audio']}, 'the app gets the (fake) microphone after the reload', microphone)
        denied = call(driver, 'new Promise(function (ok, ko) { navigator.geolocation.getCurrentPosition(ok, function (e) { ok({code: e.code}); }); })')
        check(denied == {'ok': {'code': 1}}, 'the position is refused while LOCATION is undecided', denied)

        # A purchase: the host page's sheet shows the product as text, the user buys, the receipt is kept
        # until the app consumes it.
        driver.execute_script('window.__bought = null; MiniAppBridge.purchaseProductWith("gem-10").then(function (r) { window.__bought = r; }, function (e) { window.__bought = {error: e.name}; })')
        driver.switch_to.default_content()
        sheet = wait(lambda: driver.find_element(By.ID, 'miniapp-sheet').is_displayed() and driver.find_element(By.ID, 'miniapp-sheet'), 'the host page shows the purchase sheet')
        check(sheet.get_attribute('data-sheet') == 'purchase' and 'A <b>handful</b>' in sheet.text and '120 JPY' in sheet.text, 'the purchase sheet shows the product as text', sheet.text)
        click(lambda: driver.find_element(By.ID, 'sheet-ok'), 'buy on the host page')
        into_app(driver)
        bought = wait(lambda: driver.execute_script('return window.__bought'), 'the purchase is answered')
        check(bought.get('productInfo', {}).get('id') == 'gem-10' and len(bought.get('transactionId', '')) == 36, 'the app gets the purchase', bought)
        again = call(driver, 'MiniAppBridge.purchaseProductWith("gem-10")')
        check(again.get('name') == 'ProductPurchasedAlreadyError', 'an unconsumed purchase cannot be bought again', again)
        consumed = call(driver, 'MiniAppBridge.consumePurchaseWith("gem-10", %s)' % json.dumps(bought['transactionId']))
        check(consumed == {'ok': {'title': '10 gems', 'description': 'A <b>handful</b>'}}, 'the app consumes its purchase', consumed)
        # Preferences are the app's, kept in the store across a reload.
        check(call(driver, 'MiniAppBridge.preferences.set("theme", "dark")') == {'ok': 'SUCCESS'}, 'a preference is kept')

        # The host page goes (another page in its tab): the capability it handed the frame ends with it.
        left = call(driver, CAPTURE % 'window')['ok']
        driver.switch_to.default_content()
        driver.get('about:blank')
        def bridge_status():
            return status(urllib.request.Request('http://127.0.0.1:%d/__miniapp/bridge' % port, method='POST', data=b'{"id":"1","action":"getUniqueId"}',
                                                 headers={'Host': 'probe.localhost:%d' % port, 'Origin': 'http://probe.localhost:%d' % port,
                                                          'Content-Type': 'application/json', 'X-Miniapp-Capability': left}))
        check(wait(lambda: bridge_status() == 403, 'the capability of a host page that went ends'), 'the capability ends when its host page goes')
        driver.get(url)
        into_app(driver)
        check(call(driver, 'MiniAppBridge.preferences.get("theme")') == {'ok': 'dark'}, 'the preference is read back by the app\'s next page')

        # Revoking a required permission closes the gate.
        driver.switch_to.default_content()
        click(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="rakuten.miniapp.user.USER_NAME"] button[data-action="revoke"]'), 'revoke USER_NAME on the host page')
        wait(lambda: len(driver.find_elements(By.ID, 'miniapp-frame')) == 0 and driver.find_element(By.ID, 'gate').is_displayed(), 'revoking USER_NAME closes the app')

        # A second app on the same cache and store: its own origin, its own storage.
        url_two, port_two = start_run('probe-two', cache, extra)
        driver.get(url_two)
        click(lambda: driver.find_element(By.ID, 'gate-allow'), 'click gate-allow')
        into_app(driver)
        check(call(driver, 'MiniAppBridge.getSecureStorageItem("greeting")') == {'ok': None}, 'secure storage is isolated between apps')
        other_id = call(driver, 'MiniAppBridge.getUniqueId()')['ok']
        check(other_id != unique['ok'], 'unique ids differ between apps')
        # The host closes the frame as it answers: the app may not live to see the answer.
        driver.execute_script('setTimeout(function () { MiniAppBridge.closeMiniApp(false); }, 0)')
        driver.switch_to.default_content()
        wait(lambda: len(driver.find_elements(By.ID, 'miniapp-frame')) == 0 and 'closed' in driver.find_element(By.ID, 'status').text, 'closeMiniApp closes the frame on the host page')

        hostile(driver, extra)
        storage_flood(driver, extra)

        if SAMPLE:
            published = miniapp('publish', SAMPLE, '--registry', WORK + '/registry', '--app-id', 'js-sample', '--version-tag', '1.0.0', '--key', WORK + '/key.pem')
            check(published.returncode == 0, 'publish the real sample', published.stderr)
            url_three, _ = start_run('js-sample', cache, extra)
            driver.get(url_three)
            desktop_view(driver)
            wait(lambda: driver.find_element(By.ID, 'gate').is_displayed(), 'the sample asks for its required permissions')
            click(lambda: driver.find_element(By.ID, 'gate-allow'), 'click gate-allow')
            into_app(driver)
            body = wait(lambda: (lambda t: t if 'Ready' in t and '3.2.1' in t else None)(driver.find_element(By.TAG_NAME, 'body').text), 'the sample landing page shows the host answers', 40)
            for expected in ['3.2.1', 'ja-JP', 'Web', 'Ready', '0.1.0']:
                check(expected in body, 'the sample landing page shows ' + expected, body[-600:])
            click(lambda: driver.find_element(By.XPATH, '//*[normalize-space(text())="Fetch Unique ID"]'), 'open the sample\'s Fetch Unique ID page')
            click(lambda: driver.find_element(By.XPATH, '//button[contains(., "MESSAGING") or contains(., "Messaging") or contains(., "UNIQUE") or contains(., "Unique")]'), 'the sample unique-id page')
            wait(lambda: re.search(r'[0-9a-f]{64}', driver.find_element(By.TAG_NAME, 'body').text), 'the sample unique-id page shows an id from the bridge')
            # Its Launch App Settings page shows the host's boolean (an error answer there blanks the app).
            click(lambda: driver.find_element(By.XPATH, '//*[normalize-space(text())="Launch App Settings"]'), 'open the sample\'s Launch App Settings page')
            click(lambda: driver.find_element(By.XPATH, '//button[contains(., "Get Launch App Settings") or contains(., "GET LAUNCH APP SETTINGS")]'), 'the sample launch-app-settings page')
            wait(lambda: 'false' in driver.find_element(By.TAG_NAME, 'body').text, 'the sample shows the host\'s answer to launchAppSettings')
            # Its Event Listener page opens an external web view: the app stays, the host page offers the
            # page, and closing it reaches the app as miniappwebviewclosed.
            click(lambda: driver.find_element(By.XPATH, '//*[normalize-space(text())="Event Listener"]'), 'open the sample\'s Event Listener page')
            before = wait(lambda: (lambda t: t if 'External Webview Closed' in t else None)(driver.find_element(By.TAG_NAME, 'body').text), 'the sample event-listener page')
            click(lambda: driver.find_element(By.XPATH, '//button[contains(., "Open External Webview") or contains(., "OPEN EXTERNAL WEBVIEW")]'), 'the sample opens an external web view')
            driver.switch_to.default_content()
            wait(lambda: driver.find_element(By.ID, 'miniapp-external').is_displayed(), 'the host page offers the sample\'s external page')
            click(lambda: driver.find_element(By.ID, 'external-close'), 'click external-close (sample)')
            into_app(driver)
            after = wait(lambda: (lambda t: t if t != before and 'External Webview Closed' in t else None)(driver.find_element(By.TAG_NAME, 'body').text), 'the sample hears the external web view closed')
            check('External Webview Closed' in after, 'the sample stays and hears miniappwebviewclosed')
            # Its user-details page: name and photo (allowed at the gate), contacts through a prompt.
            click(lambda: driver.find_element(By.XPATH, '//*[normalize-space(text())="User Details"]'), 'open the sample\'s User Details page')
            click(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="fetchNamePhotoButton"]'), 'the sample user-details page')
            wait(lambda: 'Aiko Tanaka' in driver.find_element(By.TAG_NAME, 'body').get_attribute('innerHTML'), 'the sample shows the user name from the bridge')
            click(lambda: driver.find_element(By.XPATH, '//*[@role="tab"][normalize-space(.)="Contacts"]'), 'open the sample\'s Contacts tab')
            click(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="fetchContactsButton"]'), 'the sample contacts tab')
            driver.switch_to.default_content()
            wait(lambda: driver.find_element(By.ID, 'miniapp-prompt').is_displayed(), 'the sample asks for CONTACT_LIST through the host page')
            check('Describe your reason here (optional).' in driver.find_element(By.ID, 'miniapp-prompt').text, 'the prompt shows the sample manifest\'s localised reason')
            click(lambda: driver.find_element(By.ID, 'prompt-allow-all'), 'click prompt-allow-all')
            into_app(driver)
            wait(lambda: 'ken@example.com' in driver.find_element(By.TAG_NAME, 'body').get_attribute('innerHTML'), 'the sample shows the contacts once allowed')
            print('ok: the real sample runs through the bridge')

            # The same sample through the reference host (Examples/HostService) and its browser host.
            env = dict(os.environ, HOST_PLATFORM=WORK + '/registry', HOST_CACHE_DIR=WORK + '/host-cache')
            host = subprocess.Popen([os.path.join(os.path.dirname(MINIAPP), 'miniapp-host')], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
            processes.append(host)
            lines = [host.stdout.readline().strip() for _ in range(2)]
            api = [line.split(' ')[-1] for line in lines if line.startswith('listening on ')]
            check(len(api) == 1 and any(line.startswith('browser host on ') for line in lines), 'the reference host starts with its browser host', str(lines))
            request = urllib.request.Request(api[0] + 'apps/js-sample/load', method='POST')
            try:
                answer = json.load(urllib.request.urlopen(request))
            except urllib.error.HTTPError as error:
                answer = json.load(error)
            check('page' in answer, 'the reference host loads the sample and names its page', str(answer))
            driver.get(answer['page'])
            desktop_view(driver)
            wait(lambda: driver.find_element(By.ID, 'gate').is_displayed(), 'the reference host asks for the required permissions')
            click(lambda: driver.find_element(By.ID, 'gate-allow'), 'click gate-allow')
            into_app(driver)
            body = wait(lambda: (lambda t: t if 'Ready' in t and 'Web' in t else None)(driver.find_element(By.TAG_NAME, 'body').text), 'the sample runs in the reference host', 40)
            check('Ready' in body, 'the sample landing page shows Ready in the reference host')
            driver.execute_script('window.__event = null; window.addEventListener("online_status", function (e) { window.__event = e.detail.message; })')
            sent = urllib.request.urlopen(urllib.request.Request(api[0] + 'apps/js-sample/events/online_status', method='POST', data=b'online'))
            check(sent.status == 200, 'the reference host sends an event')
            wait(lambda: driver.execute_script('return window.__event') == 'online', 'the event reaches the running app as a CustomEvent')
        else:
            print('skipped: the real sample (../shared/real-miniapps is absent)')
    finally:
        stop(driver)
    print('all browser checks passed')


main()
