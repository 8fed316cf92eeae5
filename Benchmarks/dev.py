"""The developer's loop of `miniapp dev`; see Benchmarks/dev."""
import argparse, json, os, statistics, subprocess, time
from bench_browser import chromium
from selenium.webdriver.common.by import By

parser = argparse.ArgumentParser()
for name in ['--bin', '--work', '--out']:
    parser.add_argument(name, required=True)
parser.add_argument('--runs', type=int, default=20)
args = parser.parse_args()
folder = args.work + '/shop'
os.makedirs(folder)
# The app stamps the wall clock (ms) once its page ran with the bridge defined: no polling in the figure.
with open(folder + '/index.html', 'w') as f:
    f.write('<!doctype html><html><head><script src="app.js"></script></head><body><p id="stamp"></p></body></html>')
with open(folder + '/manifest.json', 'w') as f:
    json.dump({'optPermissions': [{'name': 'rakuten.miniapp.user.USER_NAME'}]}, f)


def save(version):
    """Writes app.js; returns the wall clock (ms) just before the write."""
    began = time.time() * 1000
    with open(folder + '/app.js', 'w') as f:
        f.write('document.addEventListener("DOMContentLoaded", function () { if (window.MiniAppBridge) {'
                ' document.getElementById("stamp").textContent = "%d " + Date.now(); } });' % version)
    return began


driver = chromium()
environment = dict(os.environ, XDG_STATE_HOME=args.work + '/state')


def stamp(version):
    """The wall clock (ms) at which the frame's page of `version` ran, waiting for it."""
    while True:
        driver.switch_to.default_content()
        frames = driver.find_elements(By.ID, 'miniapp-frame')
        if frames:
            try:
                driver.switch_to.frame(frames[0])
                text = driver.execute_script('var e = document.getElementById("stamp"); return e ? e.textContent : ""')
                if text and text.split(' ')[0] == str(version):
                    return int(text.split(' ')[1])
            except Exception:
                pass
        time.sleep(0.005)


first, reload = [], []
version = 0
for run in range(args.runs):
    version += 1
    save(version)
    driver.get('about:blank')
    began = time.time() * 1000
    process = subprocess.Popen([args.bin, 'dev', folder, '--quiet'], stdout=subprocess.PIPE, text=True, env=environment)
    url = process.stdout.readline().strip()
    driver.get(url)
    first.append((stamp(version) - began) / 1000)
    if run == 0:
        # The first reload after the start, not timed: the page's poll is under way from then on.
        version += 1
        save(version)
        stamp(version)
    process.terminate()
    process.wait(10)

process = subprocess.Popen([args.bin, 'dev', folder, '--quiet'], stdout=subprocess.PIPE, text=True, env=environment)
url = process.stdout.readline().strip()
driver.get(url)
stamp(version)
for run in range(args.runs):
    version += 1
    # Apart from each other by more than the debounce, as saves from an editor are.
    time.sleep(0.3)
    began = save(version)
    reload.append((stamp(version) - began) / 1000)
process.terminate()
process.wait(10)
driver.quit()

result = {
    'runs': args.runs,
    'firstFrameSeconds': {'runs': first, 'median': statistics.median(first)},
    'saveToReloadedFrameSeconds': {'runs': reload, 'median': statistics.median(reload)},
}
with open(args.out, 'w') as f:
    json.dump(result, f, indent=2)
print(json.dumps({'firstFrameSeconds': result['firstFrameSeconds']['median'], 'saveToReloadedFrameSeconds': result['saveToReloadedFrameSeconds']['median']}))
