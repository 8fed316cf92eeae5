#!/usr/bin/python3
"""Drives every page of Rakuten's sample mini-app under `miniapp run` in headless Chromium, in four
setups: every permission granted up front, allowed at the prompts, denied at the prompts, and with no
host profile.

Usage: sample_pages.py <miniapp> <work-dir> <real-sample.zip> [<setup> ...]
SAMPLE_FROM=<page> starts at that page; SAMPLE_DUMP=1 prints each page's text once its buttons were pressed.
A fifth setup, `reference-host`, runs the sample in the reference host (miniapp-host, beside <miniapp>,
which has no host profile) and answers as `allowed-at-prompts`.
On each page it presses the page's buttons one by one, answers what the host page shows (permission
prompts and the host's sheets: allowed, or denied and cancelled, as the setup says; links opened in a
tab are closed again), and checks that the app is still there and drawn, that nothing failed uncaught,
and that the host's sheets showed what the app sent. Prints one line per check and exits non-zero on
the first failure.
"""
import json, os, re, subprocess, sys, time, urllib.error, urllib.request, zipfile
from selenium.webdriver.common.by import By

import browsing
from browsing import check, miniapp, browser, wait, click, into_app, processes, desktop_view

MINIAPP, WORK, SAMPLE = sys.argv[1], sys.argv[2], sys.argv[3]
SETUPS = sys.argv[4:] or ['granted', 'allowed-at-prompts', 'denied-at-prompts', 'no-profile', 'reference-host']
browsing.MINIAPP = MINIAPP
PHOTO = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
PROFILE = {"userName": "Aiko Tanaka", "profilePhoto": PHOTO, "locale": "ja-JP", "hostVersion": "3.2.1", "phoneNumber": "+81-3-0000-0000",
           "contacts": [{"id": "c1", "name": "Ken", "email": "ken@example.com"}, {"id": "c2", "name": "田中 愛子"}],
           "points": {"standard": 120, "term": 30, "cash": 5}, "accessTokens": {"rae": "tok-rae"},
           "ads": {"fill": True, "reward": {"type": "coin", "amount": 10}},
           "products": [{"id": "gem-10", "title": "10 gems", "description": "A handful", "productPrice": {"currencyCode": "JPY", "price": "120"}}],
           "cookies": [{"name": "host-cookie", "value": "from-the-profile"}],
           "location": {"latitude": 35.6812, "longitude": 139.7671, "accuracy": 20}}
# What a page must show after its buttons were pressed, per setup (what a real host lets it show):
# the profile's values, the host's answers, and the SDK's errors for what the user refused. `re:` is a
# regular expression.
ALLOWED_SHOWN = {
    'Home': ['ja-JP', '3.2.1', '+81-3-0000-0000'],
    'Fetch Unique ID': ['re:[0-9a-f]{64}'],
    'Device Location': ['139.7671', '35.6812'],
    'Access token': ['Token: tok-rae'],
    'Message': ['Message is sent to contact Id: c'],
    'Event Listener': ['External Webview Closed: 1'],
    'Ads': ['Rewarded point: 10'],
    'Universal Bridge': ['"SUCCESS"'],
    'Image Upload': ['Image selected successfully!'],
    'Log Event': ['Event logged successfully'],
    'Trigger Login UI': ['Login successful: true'],
    'Deeplink Handler': ['Deeplink is NOT supported by the application'],
    'E Sim': ['Esim supported is not available'],
}
DENIED_SHOWN = {
    'Device Location': ['User denied location permission'],
    'Access token': ['has not allowed rakuten.miniapp.user.ACCESS_TOKEN'],
    'Exchange Token': ['has not allowed rakuten.miniapp.user.ACCESS_TOKEN'],
    'Message': ['Message not sent'],
    'Camera': ['denied'],
    'File Download': ['"FILE_DOWNLOAD" permission not granted.'],
    'Image Upload': ['the user picked no image'],
    'Ads': ['the user closed the ad before its end: no reward'],
    'Trigger Login UI': ['Login successful: true'],
}
# Without a profile (the reference host has none): the host's defaults, and NotSupportedError for user data.
NO_PROFILE_SHOWN = {
    'Home': ['en-US', 'UNKNOWN'],
    'Fetch Unique ID': ['re:[0-9a-f]{64}'],
    'Device Location': ['Error'],
    'Access token': ["does not support 'getAccessToken'"],
    'Message': ['Message not sent'],
    'Event Listener': ['External Webview Closed: 1'],
    'Universal Bridge': ['"SUCCESS"'],
    'Image Upload': ['Image selected successfully!'],
    'Log Event': ['Event logged successfully'],
    'Trigger Login UI': ['Login successful: true'],
    'E Sim': ['Esim supported is not available'],
}
SHOWN = dict([((setup, page), texts) for setup, table in [('allowed-at-prompts', ALLOWED_SHOWN), ('granted', ALLOWED_SHOWN), ('denied-at-prompts', DENIED_SHOWN),
                                                          ('no-profile', NO_PROFILE_SHOWN), ('reference-host', NO_PROFILE_SHOWN)]
              for page, texts in table.items()])
# The sample's pages, as its drawer names them.
PAGES = ['Home', 'Local Storage', 'Fetch Unique ID', 'Device Location', 'Access token', 'User Details', 'Message', 'Window Actions',
         'URI Schemes', 'Event Listener', 'Media', 'Share', 'Ads', 'Camera', 'File Download', 'File Upload', "GIF's & WebP", 'SecureStorage',
         'Close Feature', 'Universal Bridge', 'Color Theme', 'Cookie Manager', 'MiniApp Preference', 'Feature List', 'Analytics',
         'Deeplink Handler', 'Image Upload', 'Web View Config', 'Log Event', 'Trigger Login UI', 'Exchange Token', 'E Sim',
         'Permission Status', 'Launch App Settings', 'Scroll To Anchor', 'OneClick']

# In the app's frame: the drawer entry named arguments[0] is clicked.
OPEN_PAGE = '''
var label = arguments[0];
var found = Array.prototype.filter.call(document.querySelectorAll('.MuiDrawer-root *'), function (e) {
  return e.children.length === 0 && e.textContent.trim() === label;
});
if (!found.length) { return false; }
found[0].click();
return true;
'''
# In the app's frame: the page's own buttons (not the drawer's, not the toolbar's), shown and enabled.
BUTTONS = '''
return Array.prototype.filter.call(document.querySelectorAll('button'), function (b) {
  return !b.closest('.MuiDrawer-root') && !b.closest('header') && !b.disabled && b.offsetParent !== null;
}).map(function (b, i) { b.setAttribute('data-sample-button', String(i)); return (b.textContent || b.getAttribute('aria-label') || '').trim(); });
'''


def app_alive(driver):
    """The app's frame is there and its page draws the sample's toolbar."""
    into_app(driver)
    return wait(lambda: driver.execute_script('return !!document.querySelector("header") && document.body.innerText.trim().length > 0'),
                'the app is drawn', 20)


def answer_host(driver, setup, seen):
    """Answers whatever the host page shows, as `setup` says; returns once nothing waits."""
    driver.switch_to.default_content()
    for _ in range(40):
        prompt = driver.find_element(By.ID, 'miniapp-prompt')
        sheet = driver.find_element(By.ID, 'miniapp-sheet')
        external = driver.find_element(By.ID, 'miniapp-external')
        if prompt.is_displayed():
            seen.append('prompt')
            driver.find_element(By.ID, 'prompt-deny-all' if setup == 'denied-at-prompts' else 'prompt-allow-all').click()
        elif sheet.is_displayed():
            kind = sheet.get_attribute('data-sheet')
            seen.append('sheet:' + kind + ':' + driver.find_element(By.ID, 'sheet-body').text[:200])
            if setup == 'denied-at-prompts':
                driver.find_element(By.ID, 'sheet-cancel').click()
            elif kind == 'gallery':
                driver.find_element(By.ID, 'sheet-file').send_keys(os.path.join(WORK, 'picked.png'))
                driver.find_element(By.ID, 'sheet-ok').click()
            elif kind == 'message':
                for box in driver.find_elements(By.CSS_SELECTOR, '#sheet-body input[data-contact]'):
                    box.click()
                driver.find_element(By.ID, 'sheet-ok').click()
            elif kind == 'download':
                # Nothing is fetched from the network in the tests: the download is declined.
                driver.find_element(By.ID, 'sheet-cancel').click()
            else:
                driver.find_element(By.ID, 'sheet-ok').click()
        elif external.is_displayed():
            seen.append('external:' + driver.find_element(By.ID, 'external-link').get_attribute('href'))
            driver.find_element(By.ID, 'external-close').click()
        else:
            return
        time.sleep(0.3)
    check(False, 'the host page settles', str(seen[-5:]))


CONSOLE_ERRORS = []
# Console lines that carry an error the host answered (the sample logs some and shows others).
BRIDGE_ERRORS = []
BRIDGE_ERROR_TYPES = ['NotSupportedError', 'MiniAppError', 'InvalidParametersError', 'UnknownActionError', 'AuthorizationFailureError', 'userDenied']
# What fails only because the test machine has no internet (the sample loads a video player and
# pictures from other sites): not the host's doing.
OFFLINE = ['player script could not be downloaded', 'ERR_NAME_NOT_RESOLVED', 'ERR_INTERNET_DISCONNECTED', 'picsum.photos', 'Failed to fetch',
           'Network location provider']
# What the user refused a device (the browser's error for it): the sample logs it and shows "denied".
REFUSED = ['NotAllowedError']
# The SDK's errors a host answers for what its user, profile or catalogue decided, which the sample logs
# itself; not among them: the host refusing the app's bridge, not knowing an action, refusing the SDK's
# own parameters, or failing its store.
ANSWERED = ['NotSupportedError', 'MiniAppError', 'userDenied', 'DENIED', 'PERMISSION_DENIED', 'POSITION_UNAVAILABLE', 'UserCancelledPurchaseError',
            'ProductNotFoundError', 'ProductPurchasedAlreadyError', 'ConsumeFailedError', 'DownloadFailedError', 'ScopesNotSupportedError', 'AudienceNotSupportedError']


def uncaught(driver):
    """The console's uncaught errors since the last call; every error line is kept in CONSOLE_ERRORS."""
    entries = driver.get_log('browser')
    severe = [entry['message'] for entry in entries if entry['level'] == 'SEVERE']
    BRIDGE_ERRORS.extend(entry['message'] for entry in entries if any(kind in entry['message'] for kind in BRIDGE_ERROR_TYPES))
    CONSOLE_ERRORS.extend(severe)
    return [message for message in severe if 'Uncaught' in message and not any(cause in message for cause in OFFLINE)]


def start_reference_host(cache):
    """Starts miniapp-host on the registry and has it load the sample; returns the sample's host page."""
    env = dict(os.environ, HOST_PLATFORM=os.path.join(WORK, 'registry'), HOST_CACHE_DIR=cache)
    host = subprocess.Popen([os.path.join(os.path.dirname(MINIAPP), 'miniapp-host')], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    processes.append(host)
    lines = [host.stdout.readline().strip() for _ in range(2)]
    api = [line.split(' ')[-1] for line in lines if line.startswith('listening on ')]
    check(len(api) == 1, 'the reference host starts', str(lines))
    try:
        answer = json.load(urllib.request.urlopen(urllib.request.Request(api[0] + 'apps/js-sample/load', method='POST')))
    except urllib.error.HTTPError as error:
        # 403 while the launch gate waits for the user: the page is where the user decides.
        answer = json.load(error)
    check('page' in answer, 'the reference host loads the sample', str(answer))
    return answer['page']


def run_setup(driver, setup, port_cache):
    cache = os.path.join(WORK, 'cache-' + setup)
    profile = None if setup == 'no-profile' else os.path.join(WORK, 'profile.json')
    if setup == 'granted':
        with zipfile.ZipFile(SAMPLE) as archive:
            manifest = json.loads(archive.read('manifest.json'))
        names = [p['name'] for p in manifest.get('reqPermissions', []) + manifest.get('optPermissions', [])]
        granted = miniapp('permissions', 'grant', 'js-sample', *names, '--cache-dir', cache)
        check(granted.returncode == 0, 'grant every permission up front', granted.stderr)
    # How the user answers the host page: the reference host's user allows, as at the prompts.
    mode = 'allowed-at-prompts' if setup == 'reference-host' else setup
    if setup == 'reference-host':
        url = start_reference_host(cache)
    else:
        url, _ = browsing.start_run('js-sample', cache, os.path.join(WORK, 'registry'), profile)
    driver.get(url)
    desktop_view(driver)
    if setup != 'granted':
        click(lambda: driver.find_element(By.ID, 'gate-allow'), 'click gate-allow')
    app_alive(driver)
    wait(lambda: 'Ready' in driver.find_element(By.TAG_NAME, 'body').text, 'the landing page is ready', 40)
    uncaught(driver)
    # The check below must see the app's frame: an error thrown there on purpose is seen.
    into_app(driver)
    driver.execute_script('setTimeout(function () { throw new Error("sample-pages-probe"); }, 0);')
    check(wait(lambda: [m for m in uncaught(driver) if 'sample-pages-probe' in m], 'an uncaught error in the frame is seen', 10), 'the console of the app\'s frame is read')
    del CONSOLE_ERRORS[:]
    seen = []
    for page in PAGES[PAGES.index(os.environ['SAMPLE_FROM']):] if os.environ.get('SAMPLE_FROM') else PAGES:
        into_app(driver)
        check(driver.execute_script(OPEN_PAGE, page), '%s: open %s' % (setup, page))
        time.sleep(0.4)
        labels = driver.execute_script(BUTTONS)
        for index, label in enumerate(labels[:6]):
            into_app(driver)
            button = driver.find_elements(By.CSS_SELECTOR, '[data-sample-button="%d"]' % index)
            if not button or not button[0].is_displayed() or not button[0].is_enabled():
                continue
            # The browser's own dialogs stop the driver while they are open: they are answered as a user
            # who accepts them would, and counted.
            driver.execute_script('window.__dialogs = window.__dialogs || [];'
                                  ' window.alert = function (m) { window.__dialogs.push(String(m)); };'
                                  ' window.confirm = function (m) { window.__dialogs.push(String(m)); return true; };'
                                  ' window.prompt = function (m, d) { window.__dialogs.push(String(m)); return d === undefined ? "" : d; };')
            try:
                button[0].click()
            except Exception:
                continue
            time.sleep(float(os.environ.get('SAMPLE_SETTLE', '0.5')))
            answer_host(driver, mode, seen)
            driver.switch_to.default_content()
            if not driver.find_elements(By.ID, 'miniapp-frame'):
                # The app closed itself (closeMiniApp): the host page starts it again.
                seen.append('closed by ' + page)
                driver.get(url)
                desktop_view(driver)
            app_alive(driver)
            errors = uncaught(driver)
            check(not errors, '%s: %s / %s leaves no uncaught error' % (setup, page, label), str(errors))
        if labels:
            # A call may reach the host page after the last look (the sample's share first turns a
            # picture into 2 MB of numbers): one more look once it had time to.
            time.sleep(1.2)
            answer_host(driver, mode, seen)
            app_alive(driver)
        if os.environ.get('SAMPLE_DUMP'):
            into_app(driver)
            print('page: %s: %s: %s' % (setup, page, json.dumps(driver.find_element(By.TAG_NAME, 'body').text[:1500], ensure_ascii=False)))
        for expected in SHOWN.get((setup, page), []):
            into_app(driver)
            shows = (lambda text: re.search(expected[3:], text)) if expected.startswith('re:') else (lambda text: expected in text)
            wait(lambda: shows(driver.find_element(By.TAG_NAME, 'body').text), '%s: %s shows %s' % (setup, page, expected), 20)
            print('ok: %s: %s shows %s' % (setup, page, expected))
        print('ok: %s: %s (%d buttons)' % (setup, page, len(labels)))
    return seen


def main():
    os.makedirs(WORK, exist_ok=True)
    with open(os.path.join(WORK, 'profile.json'), 'w') as f:
        json.dump(PROFILE, f)
    with open(os.path.join(WORK, 'picked.png'), 'wb') as f:
        import base64
        f.write(base64.b64decode(PHOTO.split(',', 1)[1]))
    check(miniapp('keygen', '--out', WORK + '/key').returncode == 0, 'keygen')
    published = miniapp('publish', SAMPLE, '--registry', WORK + '/registry', '--app-id', 'js-sample', '--version-tag', '1.0.0', '--key', WORK + '/key.pem')
    check(published.returncode == 0, 'publish the real sample', published.stderr)
    driver = browser(console=True)
    driver.set_script_timeout(30)
    try:
        for setup in SETUPS:
            seen = run_setup(driver, setup, None)
            sheets = sorted(set(item.split(':')[1] for item in seen if item.startswith('sheet:')))
            print('ok: %s: the host page showed %s' % (setup, ', '.join(sheets) or 'no sheet'))
            for message in CONSOLE_ERRORS:
                print('console: %s: %s' % (setup, message[:300]))
            # An error may reach the console only when it is the SDK's error the host answered (the
            # sample logs some of those itself), the user's refusal, or for want of internet.
            unexplained = [message for message in CONSOLE_ERRORS
                           if not any(cause in message for cause in OFFLINE + ANSWERED + REFUSED)]
            check(not unexplained, '%s: every console error is an SDK error the host answered, a refusal, or for want of internet' % setup, '\n'.join(unexplained)[:2000])
            del CONSOLE_ERRORS[:]
            for message in BRIDGE_ERRORS:
                print('bridge error: %s: %s' % (setup, message[:300]))
            del BRIDGE_ERRORS[:]
            if setup == 'allowed-at-prompts':
                for kind in ['share', 'ad', 'login', 'gallery']:
                    check(kind in sheets, '%s: the host page showed the %s sheet' % (setup, kind), str(sheets))
            for process in processes:
                process.terminate()
    finally:
        driver.quit()
        for process in processes:
            process.terminate()
    print('all sample pages passed')


main()
