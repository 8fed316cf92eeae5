#!/usr/bin/env python3
"""Writes an nginx-servable copy of a registry's listing: the JSON document `serve` answers for the
app list, so that both servers send the same bytes."""
import json
import sys
import urllib.request

url, out = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(url) as response:
    body = response.read()
json.loads(body)
with open(out, "wb") as handle:
    handle.write(body)
