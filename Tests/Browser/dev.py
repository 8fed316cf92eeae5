#!/usr/bin/python3
"""Drives `miniapp dev <folder>` in headless Chromium (Debian's chromium and chromium-driver, Selenium).

Usage: dev.py <miniapp> <work-dir>
Writes a small mini-app folder in <work-dir>, serves it with `miniapp dev`, and checks what its developer
sees: the app's frame reloads after one write, and once after a burst of 200 writes; a manifest that
requires a new permission closes the launch gate until it is allowed; a manifest that does not parse
keeps the last good one and says why; a call of an action the manifest does not declare is flagged on
the host page and on stderr; the page says how to publish the folder. Prints one line per check and
exits non-zero on the first failure.
"""
import json, os, subprocess, sys, time
from selenium.webdriver.common.by import By

import browsing
from browsing import processes, check, browser, wait, click, call, into_app, stop

MINIAPP, WORK = sys.argv[1], sys.argv[2]
browsing.MINIAPP = MINIAPP
FOLDER = WORK + '/shop'
PAGE = '<!doctype html><html><head><title>shop</title><script src="app.js"></script></head><body><p id="version"></p></body></html>'


def write(path, text):
    with open(FOLDER + '/' + path, 'w') as file:
        file.write(text)


def app_version(version):
    write('app.js', 'window.APP_VERSION = %s; document.addEventListener("DOMContentLoaded", function () {'
                    ' document.getElementById("version").textContent = "version " + window.APP_VERSION; });' % json.dumps(version))


def manifest(document):
    write('manifest.json', json.dumps(document))


def loads(driver):
    driver.switch_to.default_content()
    frames = driver.find_elements(By.ID, 'miniapp-frame')
    return int(frames[0].get_attribute('data-loads') or 0) if frames else None


def shows(driver, version):
    """The app's frame shows `version`, with the bridge defined."""
    into_app(driver)
    return wait(lambda: driver.find_element(By.ID, 'version').text == 'version ' + version, 'the app shows version ' + version, 20)


def main():
    os.makedirs(FOLDER + '/gen', exist_ok=True)
    write('index.html', PAGE)
    app_version('1')
    manifest({'optPermissions': [{'name': 'rakuten.miniapp.user.USER_NAME', 'reason': 'To greet you.'}]})
    errors = open(WORK + '/dev.stderr', 'w+')
    process = subprocess.Popen([MINIAPP, 'dev', FOLDER], stdout=subprocess.PIPE, stderr=errors, text=True,
                               env=dict(os.environ, XDG_STATE_HOME=WORK + '/state'))
    processes.append(process)
    url = process.stdout.readline().strip()
    check(url.startswith('http://localhost:'), 'dev prints the host page\'s URL first', url)
    driver = browser()
    try:
        driver.get(url)
        shows(driver, '1')
        check(loads(driver) == 1, 'the app\'s frame loaded once')
        publish = driver.find_element(By.ID, 'dev-publish').text
        check(publish.startswith('miniapp publish ' + FOLDER + ' --registry') and '--app-id shop' in publish and '--key' in publish,
              'the host page says how to publish the folder', publish)

        # One write: one reload, with a new capability for the new document.
        into_app(driver)
        before = call(driver, 'MiniAppBridge.getUniqueId()')
        app_version('2')
        wait(lambda: loads(driver) == 2, 'one write reloads the app\'s frame', 20)
        shows(driver, '2')
        after = call(driver, 'MiniAppBridge.getUniqueId()')
        check('ok' in after and after == before, 'the reloaded document is granted the bridge again', str(after))

        # A burst of 200 writes: one reload.
        for number in range(199):
            write('gen/chunk-%d.js' % number, '// chunk %d' % number)
        app_version('3')
        wait(lambda: loads(driver) == 3, 'a burst of 200 writes reloads the app\'s frame', 20)
        shows(driver, '3')
        time.sleep(2)
        check(loads(driver) == 3, 'a burst of 200 writes reloads it once', str(loads(driver)))

        # A call the manifest does not allow for: flagged on the page and on stderr.
        into_app(driver)
        refused = call(driver, 'MiniAppBridge.getContacts(true)')
        check('err' in refused, 'getContacts is refused without CONTACT_LIST in the manifest', str(refused))
        warning = 'getContacts needs rakuten.miniapp.user.CONTACT_LIST in reqPermissions or optPermissions'
        driver.switch_to.default_content()
        row = wait(lambda: driver.find_element(By.CSS_SELECTOR, '#dev-warnings [data-warning="getContacts"]'), 'the host page flags the undeclared call', 20)
        check(row.text == warning, 'the host page names the permission the call needs', row.text)
        wait(lambda: errors.seek(0) == 0 and warning in errors.read(), 'stderr names the permission the call needs', 20)

        # A manifest that requires a new permission: the gate closes until it is allowed.
        manifest({'reqPermissions': [{'name': 'rakuten.miniapp.user.USER_NAME', 'reason': 'To greet you.'}],
                  'optPermissions': [{'name': 'rakuten.miniapp.user.CONTACT_LIST', 'reason': 'To pick a friend.'}]})
        wait(lambda: driver.find_element(By.ID, 'gate').is_displayed() and not driver.find_elements(By.ID, 'miniapp-frame'),
             'a newly required permission closes the launch gate', 20)
        check(driver.find_element(By.ID, 'gate').get_attribute('data-missing') == 'rakuten.miniapp.user.USER_NAME', 'the gate asks for USER_NAME')
        click(lambda: driver.find_element(By.ID, 'gate-allow'), 'allow USER_NAME at the gate')
        shows(driver, '3')
        check(call(driver, 'MiniAppBridge.getUniqueId()') == after, 'the app runs again once the gate is allowed')

        # A manifest that does not parse: the last good one stays, and the page and stderr say why.
        write('manifest.json', '{"reqPermissions": [')
        driver.switch_to.default_content()
        problem = wait(lambda: driver.find_element(By.CSS_SELECTOR, '#dev-problems [data-problem="manifest"]'), 'a broken manifest is shown on the page', 20)
        check('last good manifest.json' in problem.text, 'the page says the last good manifest stays', problem.text)
        check(not driver.find_element(By.ID, 'gate').is_displayed() and driver.find_elements(By.ID, 'miniapp-frame'), 'the app keeps running under the last good manifest')
        wait(lambda: errors.seek(0) == 0 and 'the last good manifest.json stays in force' in errors.read(), 'stderr says the last good manifest stays', 20)
    finally:
        stop(driver)
    print('all dev checks passed')


main()
