"""The dialects' transports in a real browser; see Benchmarks/dialects."""
import argparse, json, os, statistics, subprocess, time
from selenium.webdriver.common.by import By
from bench_browser import chromium, percentile, write_app

parser = argparse.ArgumentParser()
for name in ['--host', '--work', '--out']:
    parser.add_argument(name, required=True)
parser.add_argument('--calls', type=int, default=500)
parser.add_argument('--rounds', type=int, default=20)
args = parser.parse_args()
DIALECTS = ['rakuten', 'liquidstate', 'forem', 'corva']

# The app: one call of `benchRead` through its dialect's transport, timed from the call to the answer
# reaching the page as that dialect delivers it; and Liquid State's online_status, a navigation caught
# and answered.
PAGE = '''<!doctype html><html><head><meta charset="utf-8"><title>bench</title><script>
var pending = null;
function settle(value) { var done = pending; pending = null; if (done) { done(value); } }
window.communicate = function (message) { if (message.purpose === 'response') { settle(JSON.stringify(message.response_data)); } };
window.benchDone = function (text) { settle(text); };
function one(kind, number) {
  return new Promise(function (resolve) {
    pending = resolve;
    // An answer that never comes is counted, not waited on for ever.
    setTimeout(function () { if (pending === resolve) { settle('no answer in 10 s'); } }, 10000);
    if (kind === 'rakuten') { MiniAppBridge.executor.exec('benchRead', null, settle, function (e) { settle('error ' + e); }); }
    else if (kind === 'liquidstate') { location.href = 'liquidstate://app/benchRead?request=' + encodeURIComponent(JSON.stringify({ request_id: String(number) })); }
    else if (kind === 'navigation') { location.href = 'liquidstate://app/online_status?request=' + encodeURIComponent(JSON.stringify({ request_id: String(number) })); }
    else { window.webkit.messageHandlers.benchRead.postMessage({ n: number }); }
  });
}
window.bench = function (kind, calls) {
  var times = [], answers = {}, i = 0;
  function next() {
    if (i === calls) { return Promise.resolve({ times: times, answers: answers }); }
    var began = performance.now();
    return one(kind, i++).then(function (answer) {
      times.push(performance.now() - began);
      answers[answer] = (answers[answer] || 0) + 1;
      return next();
    });
  }
  return next();
};
</script></head><body><h1>bench</h1></body></html>'''


write_app(args.work, PAGE)

driver = chromium(console=True)
hosts, windows = [], {}
try:
    for dialect in DIALECTS:
        state = args.work + '/state-' + dialect
        os.makedirs(state, exist_ok=True)
        process = subprocess.Popen([args.host, args.work + '/app', dialect, state], stdout=subprocess.PIPE, text=True)
        hosts.append(process)
        url = process.stdout.readline().strip()
        if dialect != DIALECTS[0]:
            driver.switch_to.new_window('tab')
        driver.get(url)
        windows[dialect] = driver.current_window_handle
        deadline = time.time() + 60
        while not driver.find_elements(By.ID, 'miniapp-frame'):
            if time.time() > deadline:
                raise SystemExit('error: the %s host showed no app' % dialect)
            time.sleep(0.05)
        driver.switch_to.frame(driver.find_element(By.ID, 'miniapp-frame'))
        while not driver.execute_script('return document.readyState === "complete" && !!window.bench'):
            time.sleep(0.05)
    kinds = DIALECTS + ['navigation']
    samples = {kind: [] for kind in kinds}
    # Chromium lets a frame start 200 navigations in 10 seconds and drops the rest (it counts to 200,
    # then looks whether 10 s passed since it last started counting): Liquid State's frame makes at
    # most 190 in a stretch, across both of its kinds, and the next stretch starts 12 s after.
    navigating, warm = min(args.calls, 80), 15
    window_began, window_count = time.monotonic(), 0
    for round_number in range(args.rounds):
        # The contenders take turns within each round, each round in another order, so that the
        # machine's moods (and a tab just brought to the front) fall on all alike; each turn starts with
        # calls that are not counted.
        turn = round_number % len(kinds)
        for kind in kinds[turn:] + kinds[:turn]:
            calls = navigating if kind in ('liquidstate', 'navigation') else args.calls
            if kind in ('liquidstate', 'navigation'):
                if window_count + warm + calls > 190:
                    time.sleep(max(0.0, window_began + 12 - time.monotonic()))
                    window_began, window_count = time.monotonic(), 0
                window_count += warm + calls
            driver.switch_to.window(windows['liquidstate' if kind == 'navigation' else kind])
            driver.switch_to.frame(driver.find_element(By.ID, 'miniapp-frame'))
            driver.execute_async_script('var done = arguments[arguments.length - 1]; window.bench(arguments[0], arguments[1]).then(done);', kind, warm)
            result = driver.execute_async_script('var done = arguments[arguments.length - 1]; window.bench(arguments[0], arguments[1]).then(done);', kind, calls)
            expected = 'hello from the store' if kind in DIALECTS[:1] + ['forem', 'corva'] else ('"hello from the store"' if kind == 'liquidstate' else '{"status":true}')
            if result['answers'] != {expected: calls}:
                console = [entry['message'] for entry in driver.get_log('browser')][-5:]
                raise SystemExit('error: in round %d, %s answered %s, not %d times %s; the console said %s'
                                 % (round_number + 1, kind, result['answers'], calls, expected, console))
            samples[kind].extend(result['times'])
    report = {'calls': args.calls, 'navigatingCalls': navigating, 'rounds': args.rounds,
              'measured': 'from the call to the answer reaching the page, in milliseconds'}
    base = percentile(samples['rakuten'], 0.99)
    for kind in kinds:
        entry = {'p50ms': statistics.median(samples[kind]), 'p99ms': percentile(samples[kind], 0.99)}
        if kind in DIALECTS:
            entry['p99VsRakuten'] = entry['p99ms'] / base
        report[kind] = entry
    report['holds'] = {
        'dialectP99WithinRakuten1.1x': all(report[kind]['p99VsRakuten'] <= 1.1 for kind in DIALECTS),
        'navigationP99Within20ms': report['navigation']['p99ms'] <= 20,
    }
    with open(args.out, 'w') as file:
        json.dump(report, file, indent=2)
    print(json.dumps(report, indent=2))
finally:
    driver.quit()
    for process in hosts:
        process.terminate()
