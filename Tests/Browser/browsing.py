"""What the browser drivers share: running `miniapp`, a headless Chromium, and waiting on pages."""
import json, os, re, subprocess, time, urllib.request, urllib.error
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

MINIAPP = None
processes = []
DEBUG = None


def check(condition, what, detail=''):
    if not condition:
        print('FAIL:', what, detail)
        raise SystemExit(1)
    print('ok:', what)


def miniapp(*args, **kwargs):
    return subprocess.run([MINIAPP, *args], capture_output=True, text=True, **kwargs)


def start_run(app_id, cache, registry, profile, extra=()):
    env = dict(os.environ)
    process = subprocess.Popen([MINIAPP, 'run', app_id, '--platform', registry, '--cache-dir', cache,
                                *(['--host-profile', profile] if profile else []), *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    processes.append(process)
    url = process.stdout.readline().strip()
    check(re.fullmatch(r'http://localhost:\d+/', url) is not None, 'run %s prints its URL first' % app_id, url + process.stderr.read() if not url else url)
    return url, int(url.rsplit(':', 1)[1].strip('/'))


def status(request):
    """The HTTP status `request` (a urllib Request, sent straight to 127.0.0.1) gets."""
    try:
        return urllib.request.urlopen(request).status
    except urllib.error.HTTPError as error:
        return error.code


def browser(console=False):
    """Headless Chromium; with `console`, its console messages can be read (`driver.get_log('browser')`)."""
    options = Options()
    options.binary_location = '/usr/bin/chromium'
    for argument in ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1280,900',
                     # A camera and a microphone, as a phone has, and the browser's own prompt for them
                     # answered yes: what decides is then the host page, through the frame's `allow`.
                     '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream']:
        options.add_argument(argument)
    if console:
        options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
        # The driver's console log covers the top-level page's process only: with every site in one
        # process, the app's frame (another origin) is covered too.
        options.add_argument('--disable-site-isolation-trials')
        options.add_argument('--disable-features=IsolateOrigins,site-per-process')
    return webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=options)


def wait(predicate, what, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception:
            pass
        time.sleep(0.1)
    check(False, what, '(timed out)' + (' ' + DEBUG() if DEBUG else ''))


def click(find, what, seconds=60):
    """Clicks the element `find()` returns once it is shown and enabled: a page may still be drawing it
    (under load, the second app's gate was found before it could be clicked)."""
    def attempt():
        element = find()
        if not (element.is_displayed() and element.is_enabled()):
            return False
        element.click()
        return True
    wait(attempt, what, seconds)


def call(driver, expression):
    """Runs `expression` (a promise) in the current frame; returns {'ok': value} or {'err': text, 'name': ...}."""
    return driver.execute_async_script(
        'var done = arguments[arguments.length - 1];'
        'Promise.resolve().then(function () { return ' + expression + '; })'
        '.then(function (v) { done({ok: v === undefined ? null : v}); },'
        ' function (e) { done({err: typeof e === "string" ? e : String(e && e.message), name: e && e.name}); });')


def into_app(driver):
    driver.switch_to.default_content()
    frame = wait(lambda: driver.find_element(By.ID, 'miniapp-frame'), 'the app frame is shown')
    driver.switch_to.frame(frame)
    wait(lambda: driver.execute_script('return !!window.MiniAppBridge && document.readyState === "complete"'), 'the bridge is defined in the app')


def stop(driver):
    """Quits the browser, then ends every process started (killed when it does not end in 10 s)."""
    driver.quit()
    for process in processes:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def desktop_view(driver):
    """Shows the app filling the host page (the host page shows a phone by default): for pages written
    for a desktop layout, such as the sample's drawer."""
    driver.switch_to.default_content()
    wait(lambda: driver.execute_script(
        'var s = document.getElementById("device-preset"); if (!s) { return false; }'
        ' s.value = "fill"; s.dispatchEvent(new Event("change")); return document.getElementById("device").dataset.preset === "fill";'),
        'the host page fills the window with the app')
