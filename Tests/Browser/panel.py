#!/usr/bin/python3
"""Drives the host page's panel of `miniapp dev <folder>` in headless Chromium (Selenium).

Usage: panel.py <miniapp> <work-dir>
Writes a small mini-app folder in <work-dir>, serves it with `miniapp dev --host-profile`, and checks
what its developer does from the panel, each seen by the app itself: the panel lists a call with its
answer (an access token masked) and filters the list; a denial on the page changes the app's next
answer and the panel says why; a permission reset on the panel makes the app's next request ask again; a profile edit changes getUserName's next answer (a profile the host
cannot use is refused and says why); storage edits on the panel are read back by the app; injected
errors reach the app's error path and are removed again, a silent timeout answering once removed; a
host event sent from the page reaches the app; the app's origin gets 403 from every panel endpoint,
its requests to the host's origin change nothing, and it cannot click the panel. Keeps screenshots of
the host page at 1280x900 and 420x860 in <work-dir> and prints where. Prints one line per check and
exits non-zero on the first failure.
"""
import json, os, subprocess, sys, time, urllib.request
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

import browsing
from browsing import processes, check, browser, wait, click, call, into_app, status, stop

MINIAPP, WORK = sys.argv[1], sys.argv[2]
browsing.MINIAPP = MINIAPP
FOLDER = WORK + '/shop'
USER_NAME = 'rakuten.miniapp.user.USER_NAME'
TOKEN = 'secret-token-for-rae-12345'
PAGE = ('<!doctype html><html><head><title>shop</title><script src="app.js"></script></head>'
        '<body><p id="greeting"></p><p id="event"></p></body></html>')
# The app's own code: its success and error paths show on its page.
APP = '''
function show(id, text) { document.getElementById(id).textContent = text; }
// The SDK rejects some calls with the error's JSON text, others with an error object.
function kind(error) {
  if (error && error.name) { return error.name; }
  try { return JSON.parse(error).type; } catch (e) { return String(error); }
}
window.greet = function () {
  return MiniAppBridge.getUserName().then(function (name) { show('greeting', 'Hello ' + name); return name; },
    function (error) { show('greeting', 'Could not greet: ' + kind(error)); throw error; });
};
window.addEventListener('panel-ping', function (event) { show('event', event.detail.message); });
'''


def write(path, text):
    with open(FOLDER + '/' + path, 'w') as file:
        file.write(text)


def panel(driver, selector):
    driver.switch_to.default_content()
    return driver.find_element(By.CSS_SELECTOR, '#miniapp-panel ' + selector)


def panel_says(driver, text):
    return wait(lambda: text in panel(driver, '#panel-status').text, 'the panel says "%s"' % text, 20)


def greeting(driver):
    into_app(driver)
    call(driver, 'window.greet().catch(function () {})')
    return driver.find_element(By.ID, 'greeting').text


def type_into(element, text):
    element.clear()
    element.send_keys(text)


def main():
    os.makedirs(FOLDER, exist_ok=True)
    write('index.html', PAGE)
    write('app.js', APP)
    write('manifest.json', json.dumps({
        'optPermissions': [{'name': USER_NAME, 'reason': 'To greet you.'}, {'name': 'rakuten.miniapp.user.ACCESS_TOKEN', 'reason': 'To sign in.'}],
        'accessTokenPermissions': [{'audience': 'rae', 'scopes': ['idinfo_read_openid']}]}))
    with open(WORK + '/profile.json', 'w') as file:
        json.dump({'userName': 'Aiko', 'accessTokens': {'rae': TOKEN}}, file)
    process = subprocess.Popen([MINIAPP, 'dev', FOLDER, '--host-profile', WORK + '/profile.json'], stdout=subprocess.PIPE,
                               stderr=open(WORK + '/dev.stderr', 'w'), text=True, env=dict(os.environ, XDG_STATE_HOME=WORK + '/state'))
    processes.append(process)
    url = process.stdout.readline().strip()
    check(url.startswith('http://localhost:'), 'dev prints the host page\'s URL first', url)
    port = int(url.rsplit(':', 1)[1].strip('/'))
    origin = 'http://shop.localhost:%d' % port
    driver = browser()
    try:
        driver.get(url)
        into_app(driver)
        driver.switch_to.default_content()
        for name in [USER_NAME, 'rakuten.miniapp.user.ACCESS_TOKEN']:
            click(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="%s"] button[data-action="allow"]' % name), 'allow ' + name)
            wait(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="%s"]' % name).get_attribute('data-status') == 'ALLOWED', name + ' is allowed')

        # The panel lists the call with its answer, the permission that gated it, and a masked token.
        check(greeting(driver) == 'Hello Aiko', 'the app greets the profile\'s user')
        row = wait(lambda: panel(driver, '#calls [data-action="getUserName"][data-outcome="success"]'), 'the panel lists getUserName', 20)
        check(row.find_element(By.CSS_SELECTOR, '.mp-answer').text == 'Aiko' and row.get_attribute('data-permission') == USER_NAME,
              'the panel shows the answer and the permission that gated it', row.text)
        into_app(driver)
        token = call(driver, 'MiniAppBridge.getAccessToken("rae", ["idinfo_read_openid"])')
        check(token.get('ok', {}).get('token') == TOKEN, 'the app gets the profile\'s token', str(token))
        row = wait(lambda: panel(driver, '#calls [data-action="getAccessToken"][data-outcome="success"]'), 'the panel lists getAccessToken', 20)
        check(TOKEN not in driver.find_element(By.ID, 'miniapp-panel').text and 'masked' in row.text, 'the panel masks the access token', row.text)
        type_into(panel(driver, '#calls-filter'), 'getAccess')
        check(wait(lambda: not driver.find_elements(By.CSS_SELECTOR, '#miniapp-panel #calls [data-action="getUserName"]'), 'the filter leaves out other calls', 10)
              and panel(driver, '#calls [data-action="getAccessToken"]').is_displayed(), 'the filter keeps the calls it matches')
        # A blank filter (typed, so that the page hears it) shows every call again.
        type_into(panel(driver, '#calls-filter'), ' ')
        wait(lambda: panel(driver, '#calls [data-action="getUserName"]').is_displayed(), 'a blank filter shows every call', 10)
        # A busy second's batch is cut to the newest calls the page draws; the others are counted.
        driver.switch_to.default_content()
        batch = driver.execute_async_script('var done = arguments[arguments.length - 1];'
                                            ' var session = document.querySelector(\'meta[name="miniapp-session"]\').getAttribute("content");'
                                            ' Promise.all([0, 1].map(function (limit) { return fetch("/api/apps/shop/calls?after=0" + (limit ? "&limit=1" : ""), {headers: {"X-Miniapp-Session": session}}).then(function (r) { return r.json(); }); }))'
                                            '.then(done, function (e) { done(String(e)); });')
        check(isinstance(batch, list) and len(batch[0]['calls']) >= 2 and batch[0]['skipped'] == 0
              and [c['sequence'] for c in batch[1]['calls']] == [batch[0]['calls'][-1]['sequence']] and batch[1]['skipped'] == len(batch[0]['calls']) - 1,
              'a limited read of the calls keeps the newest and counts the others', str(batch)[:500])

        # A denial on the page: the app's next answer is a refusal, and the panel says why.
        click(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="%s"] button[data-action="revoke"]' % USER_NAME), 'revoke USER_NAME')
        wait(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="%s"]' % USER_NAME).get_attribute('data-status') == 'DENIED', 'USER_NAME is denied')
        check(greeting(driver) == 'Could not greet: userDenied', 'the denial changes the app\'s next answer')
        row = wait(lambda: panel(driver, '#calls [data-action="getUserName"][data-outcome="error"]'), 'the panel lists the refused call', 20)
        check(USER_NAME in row.find_element(By.CSS_SELECTOR, '.mp-refusal').text, 'the panel says which permission refused it', row.text)
        click(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="%s"] button[data-action="allow"]' % USER_NAME), 'allow USER_NAME again')
        wait(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="%s"]' % USER_NAME).get_attribute('data-status') == 'ALLOWED', 'USER_NAME is allowed again')

        # A permission reset on the panel: undecided again, so the app's next request asks the user.
        Select(panel(driver, '#permission-reset-name')).select_by_value(USER_NAME)
        click(lambda: panel(driver, '#permission-reset'), 'reset USER_NAME on the panel')
        panel_says(driver, 'Reset ' + USER_NAME)
        wait(lambda: driver.find_element(By.CSS_SELECTOR, '#permissions [data-permission="%s"]' % USER_NAME).get_attribute('data-status') == 'DENIED',
             'the host page\'s list follows the reset', 20)
        into_app(driver)
        driver.execute_script('window.__asked = null; MiniAppBridge.requestCustomPermissions([{name: arguments[0], description: "app text"}])'
                              '.then(function (answer) { window.__asked = answer; })', USER_NAME)
        driver.switch_to.default_content()
        wait(lambda: driver.find_element(By.CSS_SELECTOR, '#miniapp-prompt input[data-permission="%s"]' % USER_NAME).is_displayed(),
             'after the reset, the app\'s request asks the user again', 20)
        click(lambda: driver.find_element(By.ID, 'prompt-allow-all'), 'allow USER_NAME in the prompt')
        into_app(driver)
        asked = wait(lambda: driver.execute_script('return window.__asked'), 'the request is answered', 20)
        check([p['status'] for p in asked['permissions']] == ['ALLOWED'], 'the user\'s new answer is the app\'s', str(asked))

        # A profile edit: getUserName's next answer changes; a profile the host cannot use is refused.
        editor = panel(driver, '#profile-json')
        profile = json.loads(wait(lambda: editor.get_attribute('value'), 'the panel shows the profile', 20))
        check(profile.get('userName') == 'Aiko' and profile.get('accessTokens') == {'rae': TOKEN}, 'the panel shows the running profile', str(profile))
        type_into(editor, json.dumps({'userName': 'Aiko', 'usrName': 'typo'}))
        click(lambda: panel(driver, '#profile-save'), 'save a misspelt profile')
        error = wait(lambda: panel(driver, '#profile-error').text, 'the panel shows why the profile is refused', 20)
        check('unknown key' in error and 'usrName' in error, 'a misspelt key is refused, named', error)
        check(greeting(driver) == 'Hello Aiko', 'a refused profile changes nothing')
        profile.update({'userName': 'Ken', 'darkMode': True})
        type_into(panel(driver, '#profile-json'), json.dumps(profile))
        click(lambda: panel(driver, '#profile-save'), 'save the edited profile')
        panel_says(driver, 'Saved the host profile')
        check(greeting(driver) == 'Hello Ken', 'a profile edit changes getUserName\'s next answer')
        check(call(driver, 'MiniAppBridge.isDarkMode()') == {'ok': True}, 'and dark mode with it')

        # Secure storage: what the app writes is shown, what the panel edits the app reads back.
        into_app(driver)
        stored = call(driver, 'MiniAppBridge.setSecureStorage({note: "from the app"})')
        check('ok' in stored, 'the app stores a note', str(stored))
        value = wait(lambda: panel(driver, '#storage [data-key="note"] input.mp-value'), 'the panel shows the app\'s item', 20)
        check(value.get_attribute('value') == 'from the app', 'the panel shows the stored value', value.get_attribute('value'))
        type_into(value, 'from the panel')
        click(lambda: panel(driver, '#storage [data-key="note"] button[data-do="edit"]'), 'save the edited item')
        panel_says(driver, 'Saved note')
        into_app(driver)
        check(call(driver, 'MiniAppBridge.getSecureStorageItem("note")') == {'ok': 'from the panel'}, 'the app reads back the panel\'s edit')
        type_into(panel(driver, '#storage-key'), 'added')
        type_into(panel(driver, '#storage-value'), '<b>text</b>')
        click(lambda: panel(driver, '#storage-set'), 'add an item on the panel')
        wait(lambda: panel(driver, '#storage [data-key="added"]'), 'the panel lists the added item', 20)
        into_app(driver)
        check(call(driver, 'MiniAppBridge.getSecureStorageItem("added")') == {'ok': '<b>text</b>'}, 'the app reads the item the panel added')
        click(lambda: panel(driver, '#storage [data-key="added"] button[data-do="remove"]'), 'remove the item on the panel')
        wait(lambda: not driver.find_elements(By.CSS_SELECTOR, '#storage [data-key="added"]'), 'the panel drops the removed item', 20)
        into_app(driver)
        check(call(driver, 'MiniAppBridge.getSecureStorageItem("added")') == {'ok': None}, 'the app no longer reads the removed item')
        click(lambda: panel(driver, '#storage-clear'), 'clear the storage on the panel')
        wait(lambda: not driver.find_elements(By.CSS_SELECTOR, '#storage [data-key]'), 'the panel shows an empty storage', 20)
        into_app(driver)
        check(call(driver, 'MiniAppBridge.getSecureStorageItem("note")') == {'ok': None}, 'the app reads nothing after the panel cleared it')

        # Injected errors reach the app's error path, and go again.
        for kind, name in [('notSupported', 'NotSupportedError'), ('denied', 'userDenied')]:
            type_into(panel(driver, '#inject-action'), 'getUserName')
            Select(panel(driver, '#inject-kind')).select_by_value(kind)
            click(lambda: panel(driver, '#inject-add'), 'inject ' + kind + ' into getUserName')
            wait(lambda: panel(driver, '#injected [data-injected="getUserName"]').get_attribute('data-kind') == kind, 'the panel lists the injected ' + kind, 20)
            check(greeting(driver) == 'Could not greet: ' + name, 'an injected %s reaches the app\'s error path' % kind)
            click(lambda: panel(driver, '#injected [data-injected="getUserName"] button[data-do="remove"]'), 'remove the injected error')
            wait(lambda: not driver.find_elements(By.CSS_SELECTOR, '#injected [data-injected]'), 'the panel drops the injected error', 20)
            check(greeting(driver) == 'Hello Ken', 'getUserName answers again once the error is removed')
        # The panel redraws its list once a second: wait for the injected answer's row to be drawn.
        def injected_rows():
            driver.switch_to.default_content()
            return [row for row in driver.find_elements(By.CSS_SELECTOR, '#miniapp-panel #calls [data-action="getUserName"][data-outcome="error"]')
                    if 'told to answer' in row.text]
        wait(injected_rows, 'the panel shows the injected error as the app got it', 20)
        # A silent timeout: no answer until removed, then the real one.
        type_into(panel(driver, '#inject-action'), 'getUniqueId')
        Select(panel(driver, '#inject-kind')).select_by_value('timeout')
        panel(driver, '#inject-seconds').clear()
        click(lambda: panel(driver, '#inject-add'), 'inject a silent timeout into getUniqueId')
        wait(lambda: panel(driver, '#injected [data-injected="getUniqueId"]').get_attribute('data-kind') == 'timeout', 'the panel lists the timeout', 20)
        into_app(driver)
        driver.execute_script('window.__late = "waiting"; MiniAppBridge.getUniqueId().then(function (id) { window.__late = id; }, function (e) { window.__late = "error " + e; })')
        time.sleep(1.5)
        check(driver.execute_script('return window.__late') == 'waiting', 'a silent timeout does not answer')
        click(lambda: panel(driver, '#injected [data-injected="getUniqueId"] button[data-do="remove"]'), 'remove the timeout')
        into_app(driver)
        late = wait(lambda: (lambda value: value if value != 'waiting' else None)(driver.execute_script('return window.__late')), 'the held call answers once the timeout is removed', 20)
        check(late == call(driver, 'MiniAppBridge.getUniqueId()').get('ok'), 'the held call gets the real answer', late)

        # A host event sent from the page reaches the app.
        type_into(panel(driver, '#event-name'), 'panel-ping')
        type_into(panel(driver, '#event-message'), 'hello from the host')
        click(lambda: panel(driver, '#event-send'), 'send a host event')
        into_app(driver)
        wait(lambda: driver.find_element(By.ID, 'event').text == 'hello from the host', 'the host event reaches the app', 20)

        # The app's origin: 403 from every panel endpoint, nothing it sends the host counts, no clicks.
        endpoints = [('GET', 'profile'), ('PUT', 'profile'), ('GET', 'apps/shop/calls?after=0'), ('GET', 'apps/shop/storage'),
                     ('POST', 'apps/shop/storage'), ('GET', 'apps/shop/faults'), ('POST', 'apps/shop/faults'), ('DELETE', 'apps/shop/faults/getUserName'),
                     ('DELETE', 'apps/shop/permissions/' + USER_NAME)]
        into_app(driver)
        for method, path in endpoints:
            own = call(driver, 'fetch("/api/%s", {method: "%s", headers: {"Content-Type": "application/json"}%s}).then(function (r) { return r.status; })'
                       % (path, method, ', body: "{}"' if method in ('PUT', 'POST') else ''))
            check(own == {'ok': 403}, '%s /api/%s answers 403 on the app\'s origin' % (method, path), str(own))
            forged = status(urllib.request.Request('http://127.0.0.1:%d/api/%s' % (port, path), method=method, data=b'{}' if method in ('PUT', 'POST') else None,
                                                   headers={'Host': 'localhost:%d' % port, 'Origin': origin, 'Content-Type': 'application/json'}))
            check(forged == 403, '%s /api/%s answers 403 to the app\'s Origin on the host' % (method, path), str(forged))
        sent = call(driver, 'Promise.all(['
                    'fetch("http://localhost:%d/api/apps/shop/storage", {method: "POST", mode: "no-cors", body: JSON.stringify({set: {forged: "yes"}})}),'
                    'fetch("http://localhost:%d/api/apps/shop/faults", {method: "POST", mode: "no-cors", body: JSON.stringify({action: "getUniqueId", kind: "denied"})})'
                    ']).then(function () { return "sent"; }, function () { return "refused"; })' % (port, port))
        check('ok' in sent, 'the app sends the host\'s origin a storage write and a fault', str(sent))
        check(call(driver, 'MiniAppBridge.getSecureStorageItem("forged")') == {'ok': None}, 'the app\'s request stored nothing')
        check('ok' in call(driver, 'MiniAppBridge.getUniqueId()'), 'the app\'s request injected no fault')
        clicked = call(driver, 'Promise.resolve().then(function () { window.parent.document.getElementById("storage-clear").click(); return "clicked"; })')
        check('err' in clicked, 'the app cannot reach the panel in its parent document', str(clicked))

        # Screenshots of the host page at two sizes, kept with the test's work.
        driver.switch_to.default_content()
        driver.execute_script('document.getElementById("miniapp-panel").scrollIntoView()')
        shots = []
        for width, height in [(1280, 900), (420, 860)]:
            driver.set_window_size(width, height)
            path = '%s/host-page-%dx%d.png' % (WORK, width, height)
            check(driver.save_screenshot(path) and os.path.getsize(path) > 0, 'a screenshot of the host page at %dx%d' % (width, height))
            shots.append(path)
        print('screenshots of the host page: ' + ' '.join(shots))
    finally:
        stop(driver)
    print('all panel checks passed')


main()
