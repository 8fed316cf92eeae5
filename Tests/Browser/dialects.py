#!/usr/bin/python3
"""Drives web apps written for other hosts' bridges in headless Chromium (Debian's chromium and
chromium-driver, Selenium): Liquid State's (`liquidstate://app/...` navigations answered through
`window.communicate`), Forem's (WebKit message handlers, `ForemMobile.injectJSMessage`) and Corva's
(`swiftHandler`, `navigateAppTo`, launched at a route with `native=true&jwt=`), from
Tests/Browser/dialects, under `miniapp run` and `miniapp dev`.

Usage: dialects.py <miniapp> <work-dir>
Checks every event and message of ../shared/spec/host-dialects.md, byte for byte where it gives shapes;
each form of a custom-scheme navigation leaving the frame as it was; the podcast player playing; the
hostile app's attacks made again through each dialect; no console error at load; the host's own web
code linted (it parses, and each dialect's script defines exactly its host's globals). Prints one line
per check and exits non-zero on the first failure.
"""
import base64, json, math, os, re, shutil, struct, subprocess, sys, time, urllib.request, wave, zlib
from selenium.webdriver.common.by import By

import browsing
from browsing import processes, check, miniapp, browser, wait, click, call, stop, status

MINIAPP, WORK = sys.argv[1], sys.argv[2]
browsing.MINIAPP = MINIAPP
HERE = os.path.dirname(os.path.abspath(__file__))
APPS = HERE + '/dialects'
RESOURCES = os.path.normpath(HERE + '/../../Sources/MiniAppWebHost/Resources')
GESTURE = 'user gesture is required'


def copy_app(name):
    folder = WORK + '/' + name
    shutil.copytree(APPS + '/' + name, folder)
    return folder


def write_json(path, document):
    with open(path, 'w') as file:
        json.dump(document, file)
    return path


def sine_wav(path, seconds=30):
    """A sound the players can really play: a 440 Hz tone of `seconds`."""
    tone = wave.open(path, 'wb')
    tone.setnchannels(1)
    tone.setsampwidth(2)
    tone.setframerate(8000)
    tone.writeframes(b''.join(struct.pack('<h', int(3000 * math.sin(2 * math.pi * 440 * i / 8000))) for i in range(8000 * seconds)))
    tone.close()


def png(path, width=84, height=100):
    """A small PNG of `width` x `height`."""
    rows = b''.join(b'\x00' + bytes([200, 30, 30]) * width for _ in range(height))
    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
    with open(path, 'wb') as file:
        file.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0))
                   + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))


def start(command, folder_or_id, extra, errors):
    """`miniapp dev <folder>` or `miniapp run <id>` with `extra`: its host page's URL and port."""
    process = subprocess.Popen([MINIAPP, command, folder_or_id, *extra], stdout=subprocess.PIPE, stderr=open(errors, 'w'), text=True,
                               env=dict(os.environ, XDG_STATE_HOME=WORK + '/state'))
    processes.append(process)
    url = process.stdout.readline().strip()
    check(re.fullmatch(r'http://localhost:\d+/', url) is not None, '%s %s prints its URL first' % (command, os.path.basename(folder_or_id)), url + open(errors).read())
    return url, int(url.rsplit(':', 1)[1].strip('/'))


def expect(predicate, what, seconds=60):
    """Waits for `predicate`, and says so: a check that takes time."""
    value = wait(predicate, what, seconds)
    check(True, what)
    return value


def into_frame(driver, ready='true'):
    """Into the app's frame, once its document is complete and `ready` (a JS expression) holds."""
    driver.switch_to.default_content()
    frame = wait(lambda: driver.find_element(By.ID, 'miniapp-frame'), 'the app frame is shown')
    driver.switch_to.frame(frame)
    wait(lambda: driver.execute_script('return document.readyState === "complete" && !!(%s)' % ready), 'the app\'s page is ready')


def host(driver):
    driver.switch_to.default_content()


def open_page(driver, url):
    """Loads `url` with the console's log read up to now, so that what follows is this page's."""
    driver.get_log('browser')
    driver.get(url)


def loads(driver):
    host(driver)
    frames = driver.find_elements(By.ID, 'miniapp-frame')
    return int(frames[0].get_attribute('data-loads') or 0) if frames else None


def severe(driver, ignoring=()):
    """The console's errors since the last read, but those that contain one of `ignoring`."""
    return [entry['message'] for entry in driver.get_log('browser')
            if entry['level'] == 'SEVERE' and not any(text in entry['message'] for text in ignoring)]


def own_globals(driver, own):
    """The global names the page has beyond a blank page's of the same origin, less the app's own."""
    names = driver.execute_script(
        'var own = arguments[0], blank = document.createElement("iframe"); document.body.appendChild(blank);'
        'var base = Object.getOwnPropertyNames(blank.contentWindow); blank.remove();'
        'return Object.getOwnPropertyNames(window).filter(function (name) { return base.indexOf(name) < 0 && own.indexOf(name) < 0; });', own)
    # What ChromeDriver itself leaves in a page it scripts.
    return sorted(name for name in names if not name.startswith('cdc_') and name != 'ret_nodes')


def panel_event(driver, name, message):
    host(driver)
    select = driver.find_element(By.CSS_SELECTOR, '#miniapp-panel #event-name')
    driver.execute_script('arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event("change"));', select, name)
    field = driver.find_element(By.CSS_SELECTOR, '#miniapp-panel #event-message')
    driver.execute_script('arguments[0].value = arguments[1];', field, message)
    click(lambda: driver.find_element(By.CSS_SELECTOR, '#miniapp-panel #event-send'), 'send ' + name + ' from the panel')


def host_api(driver, method, path, body=None):
    """A host endpoint called as the host page calls it (with its session)."""
    host(driver)
    return call(driver, 'fetch("/api/%s", {method: %s, headers: {"X-Miniapp-Session": document.querySelector(\'meta[name="miniapp-session"]\').content,'
                        ' "Content-Type": "application/json"}, body: %s}).then(function (r) { return r.json(); })'
                % (path, json.dumps(method), 'undefined' if body is None else json.dumps(json.dumps(body))))


# MARK: Lint

def lint(driver):
    """The host's web code parses (each file as the function body it is put in), strict mode included."""
    driver.get('about:blank')
    for name in sorted(os.listdir(RESOURCES)):
        if not name.endswith('.js'):
            continue
        with open(RESOURCES + '/' + name) as file:
            source = file.read()
        parsed = driver.execute_script('try { new Function("\'use strict\';\\n" + arguments[0]); return "ok"; } catch (e) { return String(e); }', source)
        check(parsed == 'ok', 'lint: %s parses in strict mode' % name, parsed)
        check('console.error' not in source, 'lint: %s writes no console errors of its own' % name)
    for name in ['host-page.html', 'host.css', 'panel.css']:
        check(os.path.getsize(RESOURCES + '/' + name) > 0, 'lint: %s is there' % name)


# MARK: Liquid State

LS_EXPECTED_TIMEOUT = 20


def ls_received(driver, count, what):
    return expect(lambda: driver.execute_script('return window.received.length >= %d && window.received.map(function (m) { return JSON.stringify(m); })' % count), what, LS_EXPECTED_TIMEOUT)


def ls_send(driver, form, event, request):
    driver.execute_script('iwa[%s](%s, %s)' % (json.dumps(form), json.dumps(event), json.dumps(request)))


def ls_ask(driver, event, request, expected, form='byLocation', what=None):
    """One request through `form`, and the exact text of what window.communicate received."""
    before = driver.execute_script('return window.received.length')
    ls_send(driver, form, event, request)
    got = ls_received(driver, before + 1, 'an answer to ' + event)[before]
    check(got == expected, what or ('%s answers %s' % (event, expected)), got)


def liquid_state(driver):
    folder = copy_app('liquidstate')
    registry, cache = WORK + '/registry', WORK + '/cache'
    for app_id, source in [('iwa', folder), ('iwa-news', folder)]:
        published = miniapp('publish', source, '--registry', registry, '--app-id', app_id, '--version-tag', '1.0.0', '--key', WORK + '/key.pem')
        check(published.returncode == 0, 'publish ' + app_id, published.stderr)
    profile = write_json(WORK + '/liquidstate.json', {
        'dialect': 'liquidstate', 'userName': 'Aiko',
        'location': {'latitude': 35.6812, 'longitude': 139.7671, 'accuracy': 20},
        'biometrics': {'status': 'available', 'type': ['face']},
        'tabs': [{'id': 'home', 'title': 'Home', 'icon': 'home'},
                 {'id': 'news', 'title': 'News', 'app': 'iwa-news', 'route': '/?tab=news'},
                 {'id': 'more', 'title': 'More', 'route': '/?tab=more'}]})
    url, port = start('run', 'iwa', ['--platform', registry, '--cache-dir', cache, '--host-profile', profile], WORK + '/ls.stderr')
    open_page(driver, url)
    into_frame(driver, 'window.iwa')
    check(severe(driver) == [], 'no console error at load (Liquid State)')
    extra = own_globals(driver, ['communicate', 'received', 'iwa'])
    check(extra == [], 'a Liquid State page has no global of the host\'s (no MiniAppBridge, no webkit)', str(extra))
    origin = driver.execute_script('return location.origin')

    # Every form of a navigation to liquidstate://: answered, the frame as it was, no gesture asked.
    href, frame_loads, windows = driver.execute_script('return location.href'), loads(driver), len(driver.window_handles)
    into_frame(driver, 'window.iwa')
    for number, form in enumerate(['byLocation', 'byAssign', 'byOpen', 'byFrame', 'byMarkup']):
        request = {'request_id': 'form-%d' % number}
        ls_ask(driver, 'online_status', request, json.dumps({'purpose': 'response', 'request_id': request['request_id'], 'event_type': 'online_status',
                                                            'response_data': {'status': True}}, separators=(',', ':')),
               form=form, what='a navigation by %s is answered through window.communicate' % form)
    for link in ['link-online', 'link-blank']:
        before = driver.execute_script('return window.received.length')
        driver.find_element(By.ID, link).click()
        got = ls_received(driver, before + 1, 'the link ' + link)[before]
        check(json.loads(got).get('request_id') in ('from-link', 'from-blank-link'), 'a link (%s) to liquidstate:// is answered' % link, got)
    driver.execute_script('location.replace(iwa.url("online_status", {request_id: "replaced"}))')
    ls_received(driver, driver.execute_script('return window.received.length'), 'location.replace')
    check(driver.execute_script('return location.href') == href, 'the frame stays where it was after every form')
    check(loads(driver) == frame_loads, 'the frame never reloaded')
    check(len(driver.window_handles) == windows, 'no window opened')
    check(not [m for m in severe(driver, ('Content Security Policy',)) if GESTURE in m or 'liquidstate' in m], 'no navigation asked for a user gesture')

    into_frame(driver, 'window.iwa')
    # The two request forms: the data with a request_id, and the envelope; none without a request_id.
    ls_ask(driver, 'online_status', {'request_id': 'e1', 'event_type': 'online_status', 'request_data': {}},
           '{"purpose":"response","request_id":"e1","event_type":"online_status","response_data":{"status":true}}', what='an envelope request echoes its request_id')
    ls_ask(driver, 'online_status', {}, '{"purpose":"response","event_type":"online_status","response_data":{"status":true}}',
           what='a request without request_id is answered without one')
    ls_ask(driver, 'feature_status', {'request_id': 'f1', 'feature': 'biometrics'},
           '{"purpose":"response","request_id":"f1","event_type":"feature_status","response_data":{"status":"available",'
           '"details":{"feature":"biometrics","status":"available","type":["face"]},"detail":{"feature":"biometrics","status":"available","type":["face"]}}}')
    ls_ask(driver, 'feature_status', {'request_id': 'f2', 'feature': 'camera'},
           '{"purpose":"response","request_id":"f2","event_type":"feature_status","response_data":{"status":"unknown"}}')

    # user_location: asked on the host page, answered with numeric strings; refused: nopermission.
    before = driver.execute_script('return window.received.length')
    ls_send(driver, 'byLocation', 'user_location', {'request_id': 'l1'})
    host(driver)
    expect(lambda: driver.find_element(By.ID, 'miniapp-sheet').get_attribute('data-sheet') == 'device' and driver.find_element(By.ID, 'miniapp-sheet').is_displayed(),
         'user_location asks the user on the host page')
    click(lambda: driver.find_element(By.ID, 'sheet-ok'), 'allow the location')
    into_frame(driver, 'window.iwa')
    got = ls_received(driver, before + 1, 'user_location')[before]
    check(got == '{"purpose":"response","request_id":"l1","event_type":"user_location","response_data":{"type":"fine","location":'
                 '{"latitude":"35.6812","longitude":"139.7671","accuracy":"20"}}}', 'user_location answers the position as numeric strings', got)
    host(driver)
    click(lambda: driver.find_element(By.CSS_SELECTOR, '#devices [data-device="location"] button[data-action="denied"]'), 'deny the location on the host page')
    expect(lambda: driver.find_element(By.CSS_SELECTOR, '#devices [data-device="location"]').get_attribute('data-status') == 'denied', 'the location is denied')
    into_frame(driver, 'window.iwa')
    before = driver.execute_script('return window.received.length')
    ls_send(driver, 'byLocation', 'user_location', {'request_id': 'l2'})
    answer = json.loads(ls_received(driver, before + 1, 'user_location refused')[before])
    check(list(answer['response_data'].keys()) == ['type', 'error'] and answer['response_data']['type'] == 'none'
          and answer['response_data']['error']['reason'] == 'nopermission' and answer['response_data']['error']['message'],
          'a refused user_location answers {"type": "none", "error": {"reason": "nopermission", "message"}}', str(answer))

    # open_file: inside the app, and http(s); outside it or climbing out is refused.
    ls_send(driver, 'byLocation', 'open_file', {'path': './files/notes.txt'})
    host(driver)
    expect(lambda: driver.find_element(By.ID, 'miniapp-file').is_displayed(), 'open_file shows the host\'s file viewer')
    check(driver.find_element(By.ID, 'miniapp-file').get_attribute('data-url') == origin + '/files/notes.txt', 'a ./relative file resolves inside the installed app')
    click(lambda: driver.find_element(By.ID, 'file-close'), 'close the viewer')
    for refused in ['./../../etc/passwd', 'file:///etc/passwd', 'ftp://example.com/x']:
        into_frame(driver, 'window.iwa')
        ls_send(driver, 'byLocation', 'open_file', {'path': refused})
        time.sleep(0.5)
        host(driver)
        check(not driver.find_element(By.ID, 'miniapp-file').is_displayed(), 'open_file refuses ' + refused)
    into_frame(driver, 'window.iwa')
    ls_send(driver, 'byLocation', 'open_file', {'path': 'https://example.com/report.pdf'})
    host(driver)
    expect(lambda: driver.find_element(By.ID, 'file-link').get_attribute('href') == 'https://example.com/report.pdf', 'open_file shows an https URL')
    click(lambda: driver.find_element(By.ID, 'file-close'), 'close the viewer again')

    # The states the app tells: authentication, notifications held until ready.
    def state(key):
        host(driver)
        found = driver.find_elements(By.CSS_SELECTOR, '#host-states [data-state="%s"]' % key)
        return found[0].get_attribute('data-on') if found else None
    into_frame(driver, 'window.iwa')
    ls_send(driver, 'byLocation', 'set_authentication_status', {'is_authenticated': True})
    expect(lambda: state('authenticated') == 'true', 'the host shows the user authenticated')
    into_frame(driver, 'window.iwa')
    ls_send(driver, 'byLocation', 'set_authentication_status', {'is_authenticated': False})
    expect(lambda: state('authenticated') == 'false', 'the host shows the user signed out')
    posted = host_api(driver, 'POST', 'apps/iwa/notifications', {'title': 'Held', 'body': 'until ready'})
    check(posted.get('ok', {}).get('shown') is False, 'a notification is held while the app is not ready', str(posted))
    check(not driver.find_elements(By.CSS_SELECTOR, '#host-notifications [data-notification]'), 'no notification is shown before the app is ready')
    into_frame(driver, 'window.iwa')
    ls_send(driver, 'byLocation', 'set_notification_presentation_status', {'is_ready': True})
    host(driver)
    expect(lambda: driver.find_elements(By.CSS_SELECTOR, '#host-notifications [data-notification]'), 'the held notification is shown once the app is ready')
    check(state('notifications') == 'true', 'the host shows notifications presented')

    # Back: the frame's history, or the app's while it overrides it.
    into_frame(driver, 'window.iwa')
    driver.execute_script('location.hash = "#second"')
    host(driver)
    click(lambda: driver.find_element(By.ID, 'host-back'), 'press Back')
    into_frame(driver, 'window.iwa')
    expect(lambda: driver.execute_script('return location.hash') == '', 'Back goes back in the app\'s history')
    ls_send(driver, 'byLocation', 'set_back_override', {'is_enabled': True})
    expect(lambda: state('back-override') == 'true', 'the host shows Back overridden')
    into_frame(driver, 'window.iwa')
    before = driver.execute_script('return window.received.length')
    host(driver)
    click(lambda: driver.find_element(By.ID, 'host-back'), 'press Back while overridden')
    into_frame(driver, 'window.iwa')
    got = ls_received(driver, before + 1, 'lifecycle back')[before]
    check(got == '{"purpose":"lifecycle","id":"back"}', 'Back sends {"purpose":"lifecycle","id":"back"} while the app overrides it', got)
    ls_send(driver, 'byLocation', 'set_back_override', {'is_enabled': False})
    expect(lambda: state('back-override') is None, 'the override ends')

    # The host's dialect is chosen when it starts: a profile saved with another one is refused.
    refused = host_api(driver, 'PUT', 'profile', {'dialect': 'forem'})
    check('chosen when it starts' in str(refused), 'a profile naming another dialect is refused while the host runs', str(refused))

    # The panel's events reach window.communicate.
    into_frame(driver, 'window.iwa')
    before = driver.execute_script('return window.received.length')
    panel_event(driver, 'lifecycle', '{"purpose":"lifecycle","id":"back"}')
    into_frame(driver, 'window.iwa')
    check(ls_received(driver, before + 1, 'the panel\'s event')[before] == '{"purpose":"lifecycle","id":"back"}', 'a host event from the panel reaches window.communicate')

    # Tabs: the host's tab bar, switch_tab with params to another app's tab, set_tab_appearance.
    host(driver)
    check([b.get_attribute('data-tab') for b in driver.find_elements(By.CSS_SELECTOR, '#tab-bar button')] == ['home', 'news', 'more'], 'the tab bar shows the profile\'s tabs')
    into_frame(driver, 'window.iwa')
    ls_send(driver, 'byLocation', 'switch_tab', {'id': 'news', 'params': {'story': 42}})
    host(driver)
    expect(lambda: driver.find_element(By.ID, 'miniapp-frame').get_attribute('data-tab') == 'news', 'switch_tab shows the tab switched to')
    into_frame(driver, 'window.iwa && window.received.length > 0')
    check(driver.execute_script('return location.origin').startswith('http://iwa-news.localhost'), 'the news tab runs its own app')
    check(driver.execute_script('return location.pathname + location.search') == '/?tab=news', 'the tab opens at its route')
    check(ls_received(driver, 1, 'switch_tab')[0] == '{"purpose":"switch_tab","params":{"story":42}}', 'the tab switched to gets {"purpose":"switch_tab","params"}')
    ls_send(driver, 'byLocation', 'set_tab_appearance', {'news': {'title': 'Latest', 'icon_name': 'star'}, 'more': {'hidden': True}})
    host(driver)
    expect(lambda: [b.text.replace('\n', ' ') for b in driver.find_elements(By.CSS_SELECTOR, '#tab-bar button')] == ['home Home', 'star Latest'], 'set_tab_appearance retitles and hides tabs')
    click(lambda: driver.find_element(By.CSS_SELECTOR, '#tab-bar button[data-tab="home"]'), 'tap the home tab')
    into_frame(driver, 'window.iwa')
    check(driver.execute_script('return location.origin') == origin, 'the home tab runs the app again, as it was')

    # reset and clearall: the app starts again; clearall empties what its origin kept.
    driver.execute_script('localStorage.setItem("kept", "yes"); window.marker = 1;')
    frame_loads = loads(driver)
    into_frame(driver, 'window.iwa')
    ls_send(driver, 'byLocation', 'reset', {})
    expect(lambda: loads(driver) > frame_loads, 'reset reloads the app')
    into_frame(driver, 'window.iwa')
    check(driver.execute_script('return window.marker === undefined && localStorage.getItem("kept")') == 'yes', 'reset starts the app again with its storage')
    frame_loads = loads(driver)
    into_frame(driver, 'window.iwa')
    ls_send(driver, 'byLocation', 'clearall', {})
    expect(lambda: loads(driver) > frame_loads, 'clearall reloads the app')
    into_frame(driver, 'window.iwa')
    check(driver.execute_script('return localStorage.getItem("kept")') is None, 'clearall clears what the app kept')
    check(state('authenticated') == 'false', 'clearall keeps the authentication state')

    # A Liquid State app under `dev`, with the sample profile: it answers at once.
    dev_url, _ = start('dev', folder, ['--dialect', 'liquidstate'], WORK + '/ls-dev.stderr')
    open_page(driver, dev_url)
    into_frame(driver, 'window.iwa')
    ls_ask(driver, 'feature_status', {'request_id': 'd1', 'feature': 'biometrics'},
           '{"purpose":"response","request_id":"d1","event_type":"feature_status","response_data":{"status":"available",'
           '"details":{"feature":"biometrics","status":"available","type":["face"]},"detail":{"feature":"biometrics","status":"available","type":["face"]}}}',
           what='dev answers from its sample profile')
    host(driver)
    check(driver.find_element(By.ID, 'sample-profile').is_displayed(), 'the host page says the profile is a sample')
    check('sample host profile' in open(WORK + '/ls-dev.stderr').read(), 'dev says on stderr that the profile is a sample')
    return url, port


# MARK: Forem

def heard(driver, predicate_js, what, seconds=20):
    return expect(lambda: driver.execute_script('return window.heard.filter(function (m) { return %s; })' % predicate_js), what, seconds)


def forem(driver):
    folder = copy_app('forem')
    sine_wav(folder + '/episode.wav')
    png(WORK + '/cover.png')
    with open(WORK + '/not-an-image.png', 'w') as file:
        file.write('plain text')
    profile = write_json(WORK + '/forem.json', {'dialect': 'forem'})
    url, port = start('dev', folder, ['--host-profile', profile], WORK + '/forem.stderr')
    open_page(driver, url)
    into_frame(driver, 'window.forem')
    check(severe(driver) == [], 'no console error at load (Forem)')
    check(driver.execute_script('return foremNative()') is True, 'the page finds itself in ForemWebView (user agent and handlers)')
    check(driver.execute_script('return Object.keys(window.webkit.messageHandlers)') == ['podcast', 'video', 'imageUpload', 'haptic', 'body'],
          'exactly Forem\'s five message handlers exist')
    check(driver.execute_script('return window.webkit.messageHandlers.swiftHandler === undefined && typeof window.MiniAppBridge'), 'no other host\'s handler or bridge exists')
    extra = own_globals(driver, ['heard', 'uploads', 'ForemMobile', 'foremNative', 'forem'])
    check(extra == ['webkit'], 'a Forem page has only WebKit\'s global of the host\'s', str(extra))

    # The podcast player plays on the host page: init, then ticks with the real position.
    driver.find_element(By.ID, 'play').click()
    heard(driver, 'm.namespace === "podcast" && m.action === "init"', 'the player says init')
    ticks = heard(driver, 'm.namespace === "podcast" && m.action === "tick"', 'the player ticks', 30)
    check(sorted(ticks[0].keys()) == ['action', 'currentTime', 'duration', 'namespace'] and re.fullmatch(r'\d+\.\d{4}', ticks[0]['currentTime'])
          and ticks[0]['duration'] == '30.0000', 'a tick carries {action, duration, currentTime, namespace} as the native player writes them', str(ticks[0]))
    first = float(ticks[-1]['currentTime'])
    later = heard(driver, 'm.namespace === "podcast" && m.action === "tick" && Number(m.currentTime) > %f' % (first + 1.0), 'the position advances', 30)
    check(float(later[-1]['currentTime']) > first + 1.0, 'the position advances as it plays')
    host(driver)
    check(driver.find_element(By.ID, 'now-playing-episode').text == 'Episode 1' and driver.find_element(By.ID, 'now-playing-podcast').text == 'The Test Podcast',
          'the metadata shows as now playing')
    into_frame(driver, 'window.forem')
    for message, check_js, what in [
            ({'action': 'seek', 'seconds': '20'}, 'a.currentTime >= 19.5', 'seek moves the player'),
            ({'action': 'rate', 'rate': '1.5'}, 'a.playbackRate === 1.5', 'rate changes the speed'),
            ({'action': 'volume', 'volume': '0.5'}, 'a.volume === 0.5', 'volume changes the volume'),
            ({'action': 'muted', 'muted': 'true'}, 'a.muted === true', 'muted mutes'),
            ({'action': 'pause'}, 'a.paused === true', 'pause pauses'),
            ({'action': 'terminate'}, 'a.paused && !a.getAttribute("src") && document.getElementById("podcast").hidden', 'terminate ends the player')]:
        into_frame(driver, 'window.forem')
        driver.execute_script('forem.podcast(arguments[0])', message)
        host(driver)
        expect(lambda: driver.execute_script('var a = document.getElementById("podcast-player"); return %s;' % check_js), what)

    # The video player: play, with its events.
    into_frame(driver, 'window.forem')
    driver.execute_script('window.heard = []; forem.video({action: "play", url: location.origin + "/episode.wav", seconds: "3"})')
    host(driver)
    expect(lambda: driver.find_element(By.ID, 'miniapp-video').is_displayed(), 'video play shows the host\'s video player')
    into_frame(driver, 'window.forem')
    heard(driver, 'm.namespace === "video" && m.action === "play"', 'the video player says play')
    heard(driver, 'm.namespace === "video" && m.action === "tick" && Number(m.currentTime) >= 3', 'the video player ticks from its start second')
    host(driver)
    click(lambda: driver.find_element(By.ID, 'video-close'), 'close the video')
    into_frame(driver, 'window.forem')
    heard(driver, 'm.namespace === "video" && m.action === "pause"', 'the video player says pause')

    # The image upload: the picker, uploading, then success with a link the host serves.
    driver.find_element(By.ID, 'upload').click()
    host(driver)
    expect(lambda: driver.find_element(By.ID, 'miniapp-sheet').get_attribute('data-sheet') == 'imageUpload', 'imageUpload shows the host\'s image picker')
    check('2.38' in driver.find_element(By.ID, 'sheet-body').text, 'the picker says the crop ratio')
    driver.find_element(By.ID, 'sheet-file').send_keys(WORK + '/cover.png')
    click(lambda: driver.find_element(By.ID, 'sheet-ok'), 'upload the cover')
    into_frame(driver, 'window.forem')
    uploads = expect(lambda: driver.execute_script('return window.uploads.length >= 2 && window.uploads'), 'the upload\'s messages reach the hidden input')
    check(uploads[0] == {'action': 'uploading'} and uploads[1]['action'] == 'success', 'the input gets uploading, then success', str(uploads))
    link = uploads[1]['link']
    check(link.startswith('http://localhost:%d/uploads/' % port), 'the link is one the host serves', link)
    size = expect(lambda: driver.execute_script('var c = document.getElementById("cover"); return c.complete && c.naturalWidth > 0 && [c.naturalWidth, c.naturalHeight]'), 'the uploaded cover loads')
    check(abs(size[0] / size[1] - 100 / 42) < 0.05, 'the cover was cropped to the ratio asked', str(size))
    driver.find_element(By.ID, 'upload').click()
    host(driver)
    expect(lambda: driver.find_element(By.ID, 'miniapp-sheet').is_displayed(), 'the picker again')
    driver.find_element(By.ID, 'sheet-file').send_keys(WORK + '/not-an-image.png')
    click(lambda: driver.find_element(By.ID, 'sheet-ok'), 'upload a file that is no image')
    into_frame(driver, 'window.forem')
    expect(lambda: driver.execute_script('return window.uploads.length >= 4'), 'the failed upload\'s messages arrive')
    last = driver.execute_script('return window.uploads[3]')
    check(last['action'] == 'error' and last['error'], 'a failed upload writes {"action": "error", "error"}', str(last))

    # haptic and body.
    driver.execute_script('forem.haptic("heavy")')
    host(driver)
    expect(lambda: 'Haptic: heavy' in driver.find_element(By.ID, 'status').text, 'a haptic shows as a notice')
    into_frame(driver, 'window.forem')
    driver.execute_script('forem.body()')
    host(driver)
    expect(lambda: driver.find_elements(By.CSS_SELECTOR, '#host-states [data-state="user"]') and 'ben' in driver.find_element(By.CSS_SELECTOR, '#host-states [data-state="user"]').text,
         'body makes the host read the user\'s data again')
    return url, port


# MARK: Corva

def corva(driver):
    folder = copy_app('corva')
    profile = write_json(WORK + '/corva.json', {
        'dialect': 'corva', 'sessionToken': 'jwt-for-corva', 'launch': {'path': '/dashboards/1234'},
        'navigation': {'dashboards': [{'id': '1234', 'name': 'Rig overview'}, {'id': '77', 'name': 'Costs'}],
                       'assets': [{'id': '9', 'name': 'Well 9', 'categories': ['drilling', 'completion']}]}})
    url, port = start('dev', folder, ['--host-profile', profile, '--query', 'theme=dark'], WORK + '/corva.stderr')
    open_page(driver, url)
    into_frame(driver, 'window.navigateAppTo && window.notified.length')
    check(severe(driver) == [], 'no console error at load (Corva)')
    check(driver.execute_script('return location.pathname + location.search') == '/dashboards/1234?native=true&jwt=jwt-for-corva&theme=dark',
          'the app is launched at the profile\'s route with native=true, the jwt and the --query item')
    check(driver.execute_script('return document.getElementById("page-title").textContent') == 'Dashboard 1234', 'the route the app routes itself gets its index.html')
    check(driver.execute_script('return document.getElementById("web-navigation").hidden && document.getElementById("jwt-state").textContent') == 'jwt jwt-for-corva',
          'the app draws no web navigation and has its token')
    check(driver.execute_script('return Object.keys(window.webkit.messageHandlers)') == ['swiftHandler'], 'exactly Corva\'s swiftHandler exists')
    extra = own_globals(driver, ['loads', 'notified', 'routes', 'navigateAppTo'])
    check(extra == ['webkit'], 'a Corva page has only WebKit\'s global of the host\'s', str(extra))
    origin = driver.execute_script('return location.origin')
    host(driver)
    expect(lambda: driver.find_elements(By.CSS_SELECTOR, '#host-states [data-state="page-loaded"]'), 'pageLoaded shows on the host')

    # The host's navigation moves the app with navigateAppTo, without a reload.
    click(lambda: driver.find_element(By.CSS_SELECTOR, '#host-nav button[data-path="/assets/9/completion"]'), 'open an asset page from the host\'s navigation')
    into_frame(driver, 'window.navigateAppTo')
    expect(lambda: driver.execute_script('return document.getElementById("page-title").textContent') == 'Asset 9 · completion', 'navigateAppTo moves the app')
    check(driver.execute_script('return window.loads') == 1, 'navigateAppTo moved the app without a reload')

    # Maximized: the host's chrome hides; restored: it comes back.
    driver.find_element(By.ID, 'maximize').click()
    host(driver)
    expect(lambda: driver.execute_script('return document.body.dataset.appMaximized === "true" && getComputedStyle(document.getElementById("bar")).display === "none"'
                                       ' && getComputedStyle(document.getElementById("host-nav")).display === "none"'), 'appMaximized hides the host\'s chrome')
    into_frame(driver, 'window.navigateAppTo')
    driver.find_element(By.ID, 'restore').click()
    host(driver)
    expect(lambda: driver.execute_script('return document.body.dataset.appMaximized === "false" && getComputedStyle(document.getElementById("bar")).display !== "none"'),
         'appRestored shows it again')

    # A path the app routes itself is its index.html; a missing file is still missing.
    def fetched(path):
        into_frame(driver, 'window.navigateAppTo')
        return call(driver, 'fetch(%s).then(function (r) { return r.text().then(function (t) { return [r.status, t.indexOf("corva.js") >= 0]; }); })' % json.dumps(path))['ok']
    check(fetched('/assets/3/drilling') == [200, True], 'an app path the app routes itself gets its index.html')
    check(fetched('/missing.js')[0] == 404, 'a missing file is not the index')

    # The panel's event: navigateAppTo from the host.
    panel_event(driver, 'navigateAppTo', '/dashboards/77')
    into_frame(driver, 'window.navigateAppTo')
    expect(lambda: driver.execute_script('return document.getElementById("page-title").textContent') == 'Dashboard 77', 'navigateAppTo from the panel moves the app')
    return url, port


# MARK: Hostile apps, through each dialect

def raw(driver, origin_path, capability, action, param):
    return call(driver, 'fetch(%s, {method: "POST", headers: {"Content-Type": "application/json", "X-Miniapp-Capability": %s},'
                        ' body: JSON.stringify({id: "raw", action: %s, param: %s})}).then(function (r) { return r.status; }, function (e) { return "blocked: " + e; })'
                % (json.dumps(origin_path), json.dumps(capability), json.dumps(action), json.dumps(param)))['ok']


def stolen_capability(driver):
    """What a page of the app's origin can learn of the frame's capability: a call of the frame's
    document, watched through `opener`'s fetch."""
    return call(driver, '(function (target) { var original = target.fetch, seen = null;'
                        ' target.fetch = function (url, options) { var h = (options && options.headers) || {}; if (h["X-Miniapp-Capability"]) { seen = h["X-Miniapp-Capability"]; }'
                        ' return original.apply(this, arguments); };'
                        ' return new Promise(function (resolve) { target.__probe(); setTimeout(function () { target.fetch = original; resolve(seen); }, 1500); }); })(window.opener)')['ok']


def hostile(driver, name, url, port, action, param, probe_js, ready, other_origin=None):
    """Through dialect `name`: a popup holds no capability of its own and what it steals ends when the
    app closes; a forged decision and another app's origin are refused."""
    open_page(driver, url)
    into_frame(driver, ready)
    main = driver.current_window_handle
    origin = driver.execute_script('return location.origin')
    driver.execute_script('window.__probe = function () { %s }; window.open("/index.html", "hostile-%s");' % (probe_js, name))
    popup = expect(lambda: [h for h in driver.window_handles if h != main][0], 'the %s app opens a popup' % name)
    driver.switch_to.window(popup)
    expect(lambda: driver.execute_script('return document.readyState === "complete" && !!window.opener'), 'the popup loads')
    check(raw(driver, '/__miniapp/bridge', '0' * 64, action, param) == 403, '%s: a popup has no capability of its own' % name)
    token = stolen_capability(driver)
    check(re.fullmatch(r'[0-9a-f]{64}', token or '') is not None, '%s: the popup reads the frame\'s capability through opener' % name, str(token))
    check(raw(driver, '/__miniapp/bridge', token, action, param) == 200, '%s: the stolen capability works while the app runs' % name)
    # A forged decision: the host's endpoints answer the host page only.
    forged = call(driver, 'fetch("http://localhost:%d/api/prompts/1", {method: "POST", headers: {"Content-Type": "application/json"},'
                          ' body: JSON.stringify({decisions: {"rakuten.miniapp.user.USER_NAME": "ALLOWED"}})}).then(function (r) { return r.status; }, function (e) { return "blocked"; })' % port)['ok']
    check(forged in (403, 'blocked'), '%s: the app cannot answer a prompt of the host\'s' % name, str(forged))
    # Another app's origin: its bridge refuses this app's capability.
    other = call(driver, 'fetch(%s, {method: "POST", headers: {"Content-Type": "application/json", "X-Miniapp-Capability": %s},'
                         ' body: "{}"}).then(function (r) { return r.status; }, function (e) { return "blocked"; })'
                 % (json.dumps((other_origin or 'http://other.localhost:%d' % port) + '/__miniapp/bridge'), json.dumps(token)))['ok']
    check(other in (403, 421, 'blocked'), '%s: another app\'s origin refuses this app\'s capability' % name, str(other))
    # The user closes the app: the frame goes, and with it every capability.
    driver.switch_to.window(main)
    host(driver)
    click(lambda: driver.find_element(By.ID, 'app-close'), 'close the %s app on the host page' % name)
    expect(lambda: not driver.find_elements(By.ID, 'miniapp-frame'), 'the %s app\'s frame is gone' % name)
    driver.switch_to.window(popup)
    expect(lambda: raw(driver, '/__miniapp/bridge', token, action, param) == 403, '%s: after the app closed, the popup\'s stolen capability is refused' % name)
    driver.close()
    driver.switch_to.window(main)
    check(origin.startswith('http://'), 'the %s app ran on its own origin' % name)


def rakuten(driver):
    """Rakuten's bridge, for the console: its page loads without an error either."""
    url, _ = start('dev', copy_app_from(HERE + '/probe', 'probe'), [], WORK + '/rakuten.stderr')
    open_page(driver, url)
    click(lambda: driver.find_element(By.ID, 'gate-allow'), 'allow what the probe requires')
    into_frame(driver, 'window.MiniAppBridge && window.MiniAppBridge.isSecureStorageReady')
    check(severe(driver) == [], 'no console error at load (Rakuten)')
    extra = own_globals(driver, [])
    check(extra == ['MiniAppBridge'], 'a Rakuten page has only MiniAppBridge of the host\'s', str(extra))


def reference_host(driver):
    """The library's browser host in a host service (Examples/HostService, `miniapp-host`): Corva's app
    in the Corva dialect, and an app of the reference host's own dialect (`acme`)."""
    registry = WORK + '/host-registry'
    for app_id, folder in [('corva-app', APPS + '/corva'), ('acme', APPS + '/acme')]:
        published = miniapp('publish', folder, '--registry', registry, '--app-id', app_id, '--version-tag', '1.0.0', '--key', WORK + '/key.pem')
        check(published.returncode == 0, 'publish %s for the reference host' % app_id, published.stderr)
    profiles = {'corva': {'sessionToken': 'jwt-from-the-host', 'launch': {'path': '/dashboards/5'}}, 'acme': {'userName': 'Aiko'}}
    for dialect, app_id in [('corva', 'corva-app'), ('acme', 'acme')]:
        env = dict(os.environ, HOST_PLATFORM=registry, HOST_CACHE_DIR=WORK + '/host-cache-' + dialect, HOST_DIALECT=dialect,
                   HOST_PROFILE=write_json(WORK + '/host-%s.json' % dialect, profiles[dialect]))
        service = subprocess.Popen([os.path.join(os.path.dirname(MINIAPP), 'miniapp-host')], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        processes.append(service)
        lines = [service.stdout.readline().strip() for _ in range(2)]
        api = [line.split(' ')[-1] for line in lines if line.startswith('listening on ')]
        check(len(api) == 1, 'the reference host starts speaking %s' % dialect, str(lines))
        answer = json.load(urllib.request.urlopen(urllib.request.Request(api[0] + 'apps/%s/load' % app_id, method='POST')))
        open_page(driver, answer['page'])
        if dialect == 'corva':
            into_frame(driver, 'window.navigateAppTo && window.notified.length')
            check(driver.execute_script('return location.pathname + location.search') == '/dashboards/5?native=true&jwt=jwt-from-the-host',
                  'the reference host launches Corva\'s app at its profile\'s route with its token')
            sent = urllib.request.urlopen(urllib.request.Request(api[0] + 'apps/corva-app/events/navigateAppTo', method='POST', data=b'/dashboards/6'))
            check(sent.status == 200, 'the reference host sends navigateAppTo')
            expect(lambda: driver.execute_script('return document.getElementById("page-title").textContent') == 'Dashboard 6' and driver.execute_script('return window.loads') == 1,
                   'the reference host\'s navigateAppTo moves the app without a reload')
        else:
            into_frame(driver, 'window.askName')
            check('AcmeHost/2.0' in driver.execute_script('return navigator.userAgent') and driver.execute_script('return location.search') == '?embedded=1',
                  'a dialect of the host\'s own launches its app with its query and user agent')
            check(driver.execute_script('return Object.keys(window.webkit.messageHandlers)') == ['acme'], 'its app has the host\'s own handler only')
            driver.execute_script('askName()')
            time.sleep(1)
            check(driver.execute_script('return window.acmeHeard.length') == 0, 'its gated action answers nothing before the user allows it')
            granted = urllib.request.urlopen(urllib.request.Request(api[0] + 'apps/acme/permissions/USER_NAME/grant', method='POST'))
            check(granted.status == 200, 'the user allows USER_NAME through the reference host')
            driver.execute_script('askName()')
            heard = expect(lambda: driver.execute_script('return window.acmeHeard.length && window.acmeHeard'), 'the host\'s own dialect answers through acmeReceive')
            check(heard == [{'name': 'Aiko'}], 'the answer is the user\'s name, as the dialect declares', str(heard))


def copy_app_from(source, name):
    folder = WORK + '/' + name
    shutil.copytree(source, folder)
    return folder


def main():
    os.makedirs(WORK, exist_ok=True)
    check(miniapp('keygen', '--out', WORK + '/key').returncode == 0, 'keygen')
    driver = browser(console=True)

    def debug():
        """What the host page showed when a wait ran out."""
        try:
            driver.switch_to.default_content()
            return driver.execute_script('return ["states: " + document.getElementById("host-states").textContent, "status: " + document.getElementById("status").textContent,'
                                         ' "log: " + document.getElementById("host-log").textContent.slice(0, 600)].join(" | ")')
        except Exception as error:
            return 'no host page: %s' % error
    browsing.DEBUG = debug
    try:
        lint(driver)
        rakuten(driver)
        ls_url, ls_port = liquid_state(driver)
        forem_url, forem_port = forem(driver)
        corva_url, corva_port = corva(driver)
        reference_host(driver)
        hostile(driver, 'liquidstate', ls_url, ls_port, 'online_status', None, 'location.href = iwa.url("online_status", {});', 'window.iwa',
                'http://iwa-news.localhost:%d' % ls_port)
        hostile(driver, 'forem', forem_url, forem_port, 'haptic', 'light', 'forem.haptic("light");', 'window.forem')
        hostile(driver, 'corva', corva_url, corva_port, 'swiftHandler', 'pageLoaded', 'window.webkit.messageHandlers.swiftHandler.postMessage("pageLoaded");',
                'window.navigateAppTo')
        print('all dialect checks passed')
    finally:
        stop(driver)


if __name__ == '__main__':
    main()
