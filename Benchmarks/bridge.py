"""The bridge's cost in a real browser; see Benchmarks/bridge."""
import argparse, json, os, statistics, subprocess, time
from bench_browser import chromium
from selenium.webdriver.common.by import By

parser = argparse.ArgumentParser()
for name in ['--bin', '--work', '--app', '--out']:
    parser.add_argument(name, required=True)
parser.add_argument('--calls', type=int, default=1000)
parser.add_argument('--rounds', type=int, default=3)
args = parser.parse_args()
registry, cache = args.work + '/registry', args.work + '/cache'
common = ['--platform', registry, '--cache-dir', cache, '--quiet']


def miniapp(*arguments):
    subprocess.run([args.bin, *arguments], check=True, stdout=subprocess.DEVNULL)


miniapp('keygen', '--out', args.work + '/key', '--quiet')
miniapp('publish', args.app, '--registry', registry, '--app-id', 'probe', '--version-tag', '1.0.0', '--key', args.work + '/key.pem', '--quiet')
miniapp('download', 'probe', *common)
miniapp('permissions', 'grant', 'probe', 'USER_NAME', *common)
with open(args.work + '/profile.json', 'w') as f:
    json.dump({'userName': 'Aiko'}, f)

driver = chromium()


def start():
    process = subprocess.Popen([args.bin, 'run', 'probe', *common, '--host-profile', args.work + '/profile.json'], stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def first_frame():
    """Seconds from starting `miniapp run` to the app's page loaded in its frame, bridge defined."""
    driver.get('about:blank')
    began = time.monotonic()
    process, url = start()
    driver.get(url)
    while True:
        frames = driver.find_elements(By.ID, 'miniapp-frame')
        if frames:
            driver.switch_to.frame(frames[0])
            ready = driver.execute_script('return document.readyState === "complete" && !!window.MiniAppBridge && !!document.querySelector("h1")')
            driver.switch_to.default_content()
            if ready:
                break
        time.sleep(0.005)
    elapsed = time.monotonic() - began
    return elapsed, process, url


LOOP = '''
var done = arguments[arguments.length - 1], kind = arguments[0], count = arguments[1], times = [];
function one() {
  if (kind === 'static') { return fetch('/manifest.json', {cache: 'no-store'}).then(function (r) { return r.text(); }); }
  return window.MiniAppBridge[kind]();
}
(async function () {
  for (var i = 0; i < count; i++) { var t = performance.now(); await one(); times.push(performance.now() - t); }
  done(times);
})().catch(function (e) { done(String(e)); });
'''


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


starts = []
process = None
try:
    for _ in range(5):
        elapsed, process, url = first_frame()
        starts.append(elapsed)
        process.terminate()
        process.wait(10)
    _, process, url = first_frame()
    driver.switch_to.frame(driver.find_element(By.ID, 'miniapp-frame'))
    samples = {'static': [], 'getUniqueId': [], 'getUserName': []}
    driver.execute_async_script(LOOP, 'getUniqueId', 100)  # warm-up
    for _ in range(args.rounds):
        for kind in samples:
            times = driver.execute_async_script(LOOP, kind, args.calls)
            assert isinstance(times, list), times
            samples[kind].extend(times)
    # The panel's cost: the same calls with the host page's panel drawing them, and with the page
    # loaded without the panel's script, in alternate rounds.
    panel = {True: [], False: []}
    ratios = []
    driver.execute_cdp_cmd('Network.enable', {})
    for _ in range(args.rounds):
        for drawn in [True, False]:
            driver.switch_to.default_content()
            driver.execute_cdp_cmd('Network.setBlockedURLs', {'urls': [] if drawn else ['*/panel.js']})
            driver.get(url)
            while not driver.find_elements(By.ID, 'miniapp-frame'):
                time.sleep(0.01)
            deadline = time.monotonic() + 10
            while drawn and not driver.execute_script('return !!document.querySelector("#miniapp-panel *")'):
                assert time.monotonic() < deadline, 'the panel is drawn'
                time.sleep(0.01)
            assert drawn or not driver.execute_script('return !!document.querySelector("#miniapp-panel *")'), 'the panel is left out'
            driver.switch_to.frame(driver.find_element(By.ID, 'miniapp-frame'))
            while not driver.execute_script('return document.readyState === "complete" && !!window.MiniAppBridge'):
                time.sleep(0.01)
            driver.execute_async_script(LOOP, 'getUserName', 100)  # warm-up
            times = driver.execute_async_script(LOOP, 'getUserName', args.calls)
            assert isinstance(times, list), times
            panel[drawn].extend(times)
            if not drawn:
                ratios.append(percentile(panel[True][-len(times):], 0.99) / percentile(times, 0.99))
finally:
    driver.quit()
    if process:
        process.terminate()

result = {'calls': args.calls, 'rounds': args.rounds, 'firstFrameSeconds': {'runs': starts, 'median': statistics.median(starts)}}
for kind, times in samples.items():
    result[kind] = {'p50ms': percentile(times, 0.5), 'p99ms': percentile(times, 0.99)}
for kind in ['getUniqueId', 'getUserName']:
    result[kind]['p99VsStatic'] = result[kind]['p99ms'] / result['static']['p99ms']
result['panel'] = {'getUserNameP99msDrawn': percentile(panel[True], 0.99), 'getUserNameP99msWithout': percentile(panel[False], 0.99)}
result['panel']['p99Ratio'] = result['panel']['getUserNameP99msDrawn'] / result['panel']['getUserNameP99msWithout']
result['panel']['medianOfRoundRatios'] = statistics.median(ratios)
result['panel']['rounds'] = len(ratios)
with open(args.out, 'w') as f:
    json.dump(result, f, indent=2)
print(json.dumps(result, indent=2))
