"""What observers of a browser host cost its apps; see Benchmarks/observers."""
import argparse, json, os, statistics, subprocess, time
from selenium.webdriver.common.by import By
from bench_browser import chromium, percentile, write_app

parser = argparse.ArgumentParser()
for name in ['--host', '--work', '--out']:
    parser.add_argument(name, required=True)
parser.add_argument('--calls', type=int, default=200)
parser.add_argument('--rounds', type=int, default=40)
args = parser.parse_args()

PAGE = '''<!doctype html><html><head><meta charset="utf-8"><title>bench</title><script>
window.bench = function (calls) {
  var times = [], i = 0, failed = 0;
  function next() {
    if (i++ === calls) { return Promise.resolve({ times: times, failed: failed }); }
    var began = performance.now();
    return MiniAppBridge.getUniqueId().then(function () { times.push(performance.now() - began); }, function () { failed++; }).then(next);
  }
  return next();
};
</script></head><body><h1>bench</h1></body></html>'''


write_app(args.work, PAGE)
driver = chromium()
# One host, one tab: the host's observers change between turns (its stdin), so the setups differ in
# their observers only, not in their process or tab.
setups = {'none': 'none', 'observers': 'observers', 'observersAndASlowOne': 'slow'}
state = args.work + '/state'
os.makedirs(state, exist_ok=True)
host = None
phases = {setup: [] for setup in setups}
current = None


def switch(setup):
    """Ends the phase running (keeping what its observers heard) and starts `setup`'s."""
    global current
    host.stdin.write(setups[setup] + '\n')
    host.stdin.flush()
    ended = json.loads(host.stdout.readline())
    if current:
        phases[current].append(ended)
    if host.stdout.readline().strip() != 'ready':
        raise SystemExit('error: the host did not start the phase ' + setup)
    current = setup


try:
    host = subprocess.Popen([args.host, args.work + '/app', state], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    url = host.stdout.readline().strip()
    driver.get(url)
    while not driver.find_elements(By.ID, 'miniapp-frame'):
        time.sleep(0.05)
    driver.switch_to.frame(driver.find_element(By.ID, 'miniapp-frame'))
    while not driver.execute_script('return document.readyState === "complete" && !!window.bench && !!window.MiniAppBridge'):
        time.sleep(0.05)
    samples = {setup: [] for setup in setups}
    names = list(setups)
    for round_number in range(args.rounds):
        # Each round in another order; each turn starts with calls not counted.
        turn = round_number % len(names)
        for setup in names[turn:] + names[:turn]:
            switch(setup)
            driver.execute_async_script('var done = arguments[arguments.length - 1]; window.bench(arguments[0]).then(done);', 20)
            result = driver.execute_async_script('var done = arguments[arguments.length - 1]; window.bench(arguments[0]).then(done);', args.calls)
            if result['failed']:
                raise SystemExit('error: %d calls of %s failed' % (result['failed'], setup))
            samples[setup].extend(result['times'])
    host.stdin.close()
    phases[current].append(json.loads(host.stdout.readline()))
    host.wait(timeout=30)
    report = {'calls': args.calls, 'rounds': args.rounds, 'observers': 100, 'measured': 'getUniqueId from the page in milliseconds'}
    base = percentile(samples['none'], 0.99)
    for setup in setups:
        report[setup] = {'p50ms': statistics.median(samples[setup]), 'p99ms': percentile(samples[setup], 0.99), 'p99VsNone': percentile(samples[setup], 0.99) / base}
    # Every reading observer heard every call of its phase, beside the one that never read.
    report['readersHeardEveryCall'] = all(heard == phase['calls'] for setup in ['observers', 'observersAndASlowOne'] for phase in phases[setup] for heard in phase['heard'])
    report['callsAnswered'] = {setup: sum(phase['calls'] for phase in phases[setup]) for setup in setups}
    report['holds'] = {
        'p99With100ObserversWithin1.1x': report['observers']['p99VsNone'] <= 1.1,
        'aSlowObserverChangesNothingForTheOthers': report['readersHeardEveryCall'] and report['observersAndASlowOne']['p99VsNone'] <= 1.1,
    }
    with open(args.out, 'w') as file:
        json.dump(report, file, indent=2)
    print(json.dumps(report, indent=2))
finally:
    driver.quit()
    if host and host.poll() is None:
        host.terminate()
