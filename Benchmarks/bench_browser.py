"""What the browser benchmarks share: headless Chromium (Debian's, through its chromedriver), the app
folder they serve, and the percentile they report."""
import os
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def chromium(console=False):
    """A headless Chromium whose scripts may run 10 minutes; with `console`, its console log is kept."""
    options = Options()
    options.binary_location = '/usr/bin/chromium'
    for argument in ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']:
        options.add_argument(argument)
    if console:
        options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    driver = webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=options)
    driver.set_script_timeout(600)
    return driver


def write_app(work, page):
    """The folder `work`/app: `page` as its index.html, and a manifest that asks for nothing."""
    os.makedirs(work + '/app', exist_ok=True)
    with open(work + '/app/index.html', 'w') as file:
        file.write(page)
    with open(work + '/app/manifest.json', 'w') as file:
        file.write('{}')


def percentile(samples, fraction):
    """The sample at `fraction` of the sorted samples (nearest rank)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]
